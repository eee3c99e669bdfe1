/* The path migration agent's configuration: the peers file, the --alt map, the kernel's
 * MPTCP settings and the local interface of each rail. */
#include "pathmig/pm_agent.h"

#include <arpa/inet.h>
#include <errno.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>

int pma_locate(const agent_t *ag, uint32_t addr, int *rail)
{
    for (int n = 0; n < ag->nnodes; n++)
        for (int r = 0; r < ag->nrails; r++)
            if (ag->nodes[n].addr[r] == addr) {
                if (rail)
                    *rail = r;
                return n;
            }
    if (rail)
        *rail = -1;
    return -1;
}

/* fopen for reading, of a regular file only: a FIFO would block the agent's start and
   /dev/zero would never end. NULL with errno set (EINVAL: not a regular file). */
static FILE *fopen_regular(const char *path)
{
    struct stat st;
    if (stat(path, &st) != 0)
        return NULL;
    if (!S_ISREG(st.st_mode)) {
        errno = S_ISDIR(st.st_mode) ? EISDIR : EINVAL;
        return NULL;
    }
    return fopen(path, "r");
}

static const char *open_error(int e)
{
    return e == EINVAL ? "not a regular file" : strerror(e);
}

int pma_read_peers(agent_t *ag, char *err, size_t errlen)
{
    FILE *f = fopen_regular(ag->peers_path);
    if (!f) {
        snprintf(err, errlen, "%s: %s", ag->peers_path, open_error(errno));
        return -1;
    }
    char line[512];
    int lineno = 0;
    ag->self = -1;
    while (fgets(line, sizeof(line), f)) {
        lineno++;
        char *save = NULL, *tok = strtok_r(line, " \t\r\n", &save);
        if (!tok || tok[0] == '#')
            continue;
        if (ag->nnodes >= MPILAB_PM_MAX_PEERS) {
            snprintf(err, errlen, "%s:%d: more than %d nodes", ag->peers_path, lineno,
                     MPILAB_PM_MAX_PEERS);
            fclose(f);
            return -1;
        }
        node_t *n = &ag->nodes[ag->nnodes];
        snprintf(n->name, sizeof(n->name), "%s", tok);
        int r = 0;
        while ((tok = strtok_r(NULL, " \t\r\n", &save))) {
            struct in_addr in;
            if (r >= MPILAB_PM_MAX_RAILS || (strcmp(tok, "-") != 0 &&
                                             inet_pton(AF_INET, tok, &in) != 1)) {
                snprintf(err, errlen, "%s:%d: '%s': expected an IPv4 address or '-' per rail "
                         "(at most %d)", ag->peers_path, lineno, tok, MPILAB_PM_MAX_RAILS);
                fclose(f);
                return -1;
            }
            n->addr[r++] = strcmp(tok, "-") == 0 ? 0 : in.s_addr;
        }
        if (r == 0) {
            snprintf(err, errlen, "%s:%d: node %s has no address", ag->peers_path, lineno,
                     n->name);
            fclose(f);
            return -1;
        }
        if (ag->nrails && r != ag->nrails) {
            snprintf(err, errlen, "%s:%d: node %s has %d rails, earlier nodes %d",
                     ag->peers_path, lineno, n->name, r, ag->nrails);
            fclose(f);
            return -1;
        }
        ag->nrails = r;
        if (strcmp(n->name, ag->node_name) == 0)
            ag->self = ag->nnodes;
        ag->nnodes++;
    }
    fclose(f);
    if (ag->self < 0) {
        snprintf(err, errlen, "%s: node %s is not listed", ag->peers_path, ag->node_name);
        return -1;
    }
    return 0;
}

/* --alt: "default" (the next rail), "auto" (first healthy rail) or a file of lines
 * "PEER PRIMARY_RAIL ALT_RAIL" (user map; unlisted pairs keep the default) */
int pma_read_alt(agent_t *ag, char *err, size_t errlen)
{
    for (int p = 0; p < MPILAB_PM_MAX_PEERS; p++)
        for (int r = 0; r < MPILAB_PM_MAX_RAILS; r++)
            ag->ctx.alt_rail[p][r] = ag->nrails > 1 ? (r + 1) % ag->nrails : -1;
    if (!ag->alt_spec || strcmp(ag->alt_spec, "default") == 0)
        return 0;
    if (strcmp(ag->alt_spec, "auto") == 0) {
        ag->ctx.alt_auto = 1;
        return 0;
    }
    FILE *f = fopen_regular(ag->alt_spec);
    if (!f) {
        snprintf(err, errlen, "--alt %s: %s (expected default, auto or a map file)",
                 ag->alt_spec, open_error(errno));
        return -1;
    }
    char line[256], name[64], extra[8];
    int lineno = 0, pr, ar;
    while (fgets(line, sizeof(line), f)) {
        lineno++;
        char *s = line + strspn(line, " \t");
        if (*s == '#' || *s == '\n' || *s == 0)
            continue;
        int k = sscanf(s, "%63s %d %d %7s", name, &pr, &ar, extra);
        int p = -1;
        for (int i = 0; i < ag->nnodes; i++)
            if (strcmp(ag->nodes[i].name, name) == 0)
                p = i;
        if (k != 3 || p < 0 || pr < 0 || pr >= ag->nrails || ar < 0 || ar >= ag->nrails ||
            pr == ar) {
            snprintf(err, errlen, "%s:%d: expected 'PEER PRIMARY_RAIL ALT_RAIL' with a known "
                     "node and two different rails below %d", ag->alt_spec, lineno, ag->nrails);
            fclose(f);
            return -1;
        }
        ag->ctx.alt_rail[p][pr] = ar;
    }
    fclose(f);
    return 0;
}

static int read_sysctl(const char *path)
{
    FILE *f = fopen(path, "r");
    int v = -1;
    if (f) {
        if (fscanf(f, "%d", &v) != 1)
            v = -1;
        fclose(f);
    }
    return v;
}

int pma_check_kernel(char *err, size_t errlen)
{
    int en = read_sysctl("/proc/sys/net/mptcp/enabled");
    if (en < 0) {
        snprintf(err, errlen, "this kernel has no MPTCP (/proc/sys/net/mptcp/enabled missing)");
        return -1;
    }
    if (en == 0) {
        snprintf(err, errlen, "MPTCP is disabled in this network namespace "
                 "(net.mptcp.enabled = 0)");
        return -1;
    }
    if (read_sysctl("/proc/sys/net/mptcp/pm_type") != 1) {
        FILE *f = fopen("/proc/sys/net/mptcp/pm_type", "w");
        int ok = f && fputs("1\n", f) >= 0;
        if (f && fclose(f) != 0)
            ok = 0;
        if (!ok || read_sysctl("/proc/sys/net/mptcp/pm_type") != 1) {
            snprintf(err, errlen, "cannot select the userspace MPTCP path manager "
                     "(net.mptcp.pm_type = 1): %s", strerror(errno));
            return -1;
        }
    }
    return 0;
}

int pma_find_ifaces(agent_t *ag, char *err, size_t errlen)
{
    struct ifaddrs *ifa, *i;
    if (getifaddrs(&ifa) != 0) {
        snprintf(err, errlen, "getifaddrs: %s", strerror(errno));
        return -1;
    }
    for (int r = 0; r < ag->nrails; r++) {
        ag->ifindex[r] = 0;
        uint32_t want = ag->nodes[ag->self].addr[r];
        for (i = ifa; i && want; i = i->ifa_next)
            if (i->ifa_addr && i->ifa_addr->sa_family == AF_INET &&
                ((struct sockaddr_in *)i->ifa_addr)->sin_addr.s_addr == want) {
                ag->ifindex[r] = (int)if_nametoindex(i->ifa_name);
                ag->link_ok[r] = (i->ifa_flags & IFF_UP) && (i->ifa_flags & IFF_RUNNING);
            }
        if (want && !ag->ifindex[r]) {
            char a[INET_ADDRSTRLEN];
            snprintf(err, errlen, "rail %d: address %s (from %s) is on no interface here", r,
                     pma_ip(want, a), ag->peers_path);
            freeifaddrs(ifa);
            return -1;
        }
    }
    freeifaddrs(ifa);
    return 0;
}
