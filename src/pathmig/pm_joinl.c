/* The path migration agent's join listeners: MPTCP listeners on this node's other rails'
 * addresses at the ports connections were accepted on (see joinl_t in pm_agent.h). */
#include "pathmig/pm_agent.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

static joinl_t *find_joinl(agent_t *ag, uint16_t port)
{
    for (size_t i = 0; i < ag->njl; i++)
        if (ag->jl[i].port == port)
            return &ag->jl[i];
    return NULL;
}

/* a server-side connection accepted on `port` via our rail `lrail`: listeners on the others */
void pma_joinl_add(agent_t *ag, mpilab_pm_conn *c, uint16_t port, int lrail)
{
    if (!ag->join_listeners || !port || c->accept_port)
        return;
    joinl_t *j = find_joinl(ag, port);
    if (j) {
        j->refs++;
        c->accept_port = port;
        return;
    }
    if (ag->njl == ag->capjl) {
        size_t cap = ag->capjl ? 2 * ag->capjl : 16;
        joinl_t *n = realloc(ag->jl, cap * sizeof(*n));
        if (!n)
            return;
        ag->jl = n;
        ag->capjl = cap;
    }
    j = &ag->jl[ag->njl++];
    j->port = port;
    j->refs = 1;
    c->accept_port = port;
    for (int r = 0; r < MPILAB_PM_MAX_RAILS; r++)
        j->fd[r] = -1;
    for (int r = 0; r < ag->nrails; r++) {
        uint32_t addr = ag->nodes[ag->self].addr[r];
        if (r == lrail || !addr)
            continue;
        struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons(port),
                                 .sin_addr.s_addr = addr};
        int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, IPPROTO_MPTCP);
        int e = 0;
        if (fd < 0 || bind(fd, (struct sockaddr *)&sa, sizeof(sa)) != 0 || listen(fd, 8) != 0)
            e = errno;
        const char *result = "open";
        if (e) {
            if (fd >= 0)
                close(fd);
            fd = -1;
            if (e == EADDRINUSE) {
                result = "taken"; /* a listener there already (wildcard): joins reach it */
                ag->jl_taken++;
            } else {
                result = strerror(e);
                ag->jl_failed++;
            }
        } else {
            ag->jl_opened++;
        }
        j->fd[r] = fd;
        char a[INET_ADDRSTRLEN];
        pma_log_obj(ag, "join_listener", json_pack("{s:s,s:i,s:i,s:s}", "addr", pma_ip(addr, a),
                                                   "port", (int)port, "rail", r, "result",
                                                   result));
    }
}

void pma_joinl_close(joinl_t *j)
{
    for (int r = 0; r < MPILAB_PM_MAX_RAILS; r++)
        if (j->fd[r] >= 0)
            close(j->fd[r]);
}

void pma_joinl_release(agent_t *ag, mpilab_pm_conn *c)
{
    joinl_t *j = c->accept_port ? find_joinl(ag, c->accept_port) : NULL;
    c->accept_port = 0;
    if (!j || --j->refs > 0)
        return;
    pma_joinl_close(j);
    *j = ag->jl[--ag->njl];
}
