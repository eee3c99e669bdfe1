/* mpilab-pathmigd: the per-node path migration agent (the paper's asynchronous event
 * thread). One event loop: kernel MPTCP events, link events, UDP probes between agents,
 * commands on a unix socket, and timers (asleep until the next probe or verdict is due).
 * See docs/pathmig.md. */
#include "mpilab/pathmig.h"
#include "pathmig/pm_nl.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <ifaddrs.h>
#include <inttypes.h>
#include <net/if.h>
#include <netinet/in.h>
#include <poll.h>
#include <sched.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>
#include <linux/mptcp.h>

#include "mpilab/version.h"

#define MSG_MAGIC 0x4d504c50u /* "MPLP" */
enum { MSG_PROBE = 1, MSG_REPLY = 2, MSG_DOWN = 3 };
#define MSG_LEN 20
#define GOOD_REPLIES 3   /* consecutive replies that bring a dead path back */
#define SLOW_FACTOR 10   /* probe interval multiplier for peers without connections */
#define SM_TICK 0.050    /* the state machines' timers (load timeout, retry): checked this often */

typedef struct {
    char name[64];
    uint32_t addr[MPILAB_PM_MAX_RAILS]; /* network order, 0 = none */
} node_t;

typedef struct {
    int alive;
    int good;            /* consecutive replies while dead */
    double last_reply;   /* monotonic */
    double last_sent;
    double hold_until;   /* replies ignored until then (after a DOWN notice) */
    double fast_since;   /* fast probing (the peer has connections) since then */
    double last_proof;   /* passive: the path's TCP subflows last showed it working */
    double last_skip;    /* a probe last left out for a passive proof */
    uint64_t proof_dump; /* the dump that last proved the path (counted once per dump) */
    uint64_t settle_dump; /* the dump that last listed a subflow of the path... */
    int unsettled;        /* ...and how many of them had something at stake then */
    uint32_t seq;
    int suspect;         /* silent past its limit, a verdict waiting for another rail */
} probe_t;

/* what the agent costs: counted for the `stats` in status and the `stop` record */
typedef struct {
    uint64_t wakeups;     /* returns from poll */
    uint64_t ticks;       /* probe rounds (deadline reached) */
    uint64_t ticks_early; /* of which run early, at a wake-up with something else */
    uint64_t probes_sent, replies_sent, notices_sent, msgs_received;
    /* replies received: read at a wake-up something else caused (deferred), or on a
     * reply socket polled because a reply was urgent (mpilab_pm_reply_urgent) */
    uint64_t replies_received, replies_deferred, replies_urgent;
    /* what caused each wake-up (one cause each, the first of: kernel (MPTCP or link
     * events), control, notice, probe, reply (urgent), tick (a deadline), other) */
    uint64_t wake_kernel, wake_control, wake_notice, wake_probe, wake_reply, wake_tick,
        wake_other;
    uint64_t probes_rail[MPILAB_PM_MAX_RAILS];
    /* passive liveness: sock_diag dumps, the sockets they listed on our paths, proofs
     * (a path shown alive by a dump) and the probes left out for them */
    uint64_t diag_dumps, diag_sockets, diag_errors;
    uint64_t neigh_renewed; /* unresolved neighbours forgotten when a link came back */
    uint64_t proofs_rail[MPILAB_PM_MAX_RAILS], skipped_rail[MPILAB_PM_MAX_RAILS];
    uint64_t settled_rail[MPILAB_PM_MAX_RAILS]; /* dumps that found a path settled */
} stats_t;

/* one TCP socket on one of our paths, as the last sock_diag dump showed it */
typedef struct {
    uint64_t cookie;
    mpilab_pm_tcp_sample s;
} tcp_seen_t;

/* Join listeners. An MP_JOIN must reach a listening socket on the address it is sent to.
 * Open MPI listens on the wildcard address, so a join to the peer's other rail finds its
 * listener; UCX (MPICH) binds its listener to one rail's address, and every join there was
 * refused. For each port a server-side connection was accepted on, the agent holds an
 * MPTCP listener at that port on each of its other rails' addresses: a join arriving there
 * is matched to its connection by token and never queued for accept. Where the address is
 * taken already (a wildcard listener), nothing is needed. */
typedef struct {
    uint16_t port;
    int refs;                       /* server-side connections accepted on the port */
    int fd[MPILAB_PM_MAX_RAILS];    /* -1: none (the accepting rail, in use, or failed) */
} joinl_t;

/* the actions of one step of many connections, carried out together */
typedef struct {
    pm_nl_cmd *cmd;
    size_t *conn; /* index into ag->conn */
    mpilab_pm_subflow *sub; /* as logged */
    int *tries; /* earlier attempts of the same command (retries of set_backup) */
    size_t n, cap;
} batch_t;

/* A priority change the kernel refused with "subflow not found" although the subflow had
 * just been announced established: the kernel lists a new subflow among the connection's
 * subflows a little after it says so. Tried again at the next state-machine tick, up to
 * SETB_TRIES times; the refusals before the last are logged as moot. */
#define SETB_TRIES 4
#define SETB_MAX 64
typedef struct {
    uint32_t token;
    mpilab_pm_subflow sub;
    int backup, tries;
} setb_retry_t;

typedef struct {
    /* configuration */
    const char *node_name, *peers_path, *ctl_path, *log_path, *pid_path, *alt_spec;
    double interval, timeout;
    int port;
    int join_listeners; /* --no-join-listeners: 0 */
    /* nodes */
    node_t nodes[MPILAB_PM_MAX_PEERS];
    int nnodes, self, nrails;
    /* local rails */
    int ifindex[MPILAB_PM_MAX_RAILS];
    int link_ok[MPILAB_PM_MAX_RAILS];
    int udp[MPILAB_PM_MAX_RAILS];  /* probes and notices (port): wake the agent */
    int rep[MPILAB_PM_MAX_RAILS];  /* replies (port + 1): read at every wake-up */
    double drained_at;             /* when the last drain of the reply sockets began */
    double view_at[MPILAB_PM_MAX_PEERS]; /* arrival of the last decider's view adopted */
    probe_t probe[MPILAB_PM_MAX_PEERS][MPILAB_PM_MAX_RAILS];
    int conns_to[MPILAB_PM_MAX_PEERS];
    unsigned used[MPILAB_PM_MAX_PEERS]; /* paths_in_use, valid unless used_dirty */
    int used_dirty;
    pm_nl_tcp_id *q; /* the primary subflows on those paths (looked up for proofs) */
    size_t nq, capq;
    /* passive liveness (--no-passive: off): the sockets of the last dump, by cookie */
    int passive;
    tcp_seen_t *seen, *seen_next;
    size_t nseen, nseen_next, capseen;
    double last_dump;
    int diag_failed; /* a lookup failed before: logged once */
    /* state machine */
    mpilab_pm_ctx ctx;
    mpilab_pm_conn *conn;
    size_t nconn, capconn;
    pm_nl nl;
    int ctl;
    FILE *log;
    int stop;
    uint64_t actions_failed;
    uint64_t actions_moot; /* the connection was gone or not yet ready */
    joinl_t *jl;
    size_t njl, capjl;
    uint64_t jl_opened, jl_taken, jl_failed; /* listeners opened; addresses taken already */
    stats_t st;
    double next_probe; /* earliest probe or verdict due (0: at once) */
    double started;
    batch_t batch;                 /* step_all's actions, its buffers kept between ticks */
    setb_retry_t retry[SETB_MAX];  /* priority changes to try again at the next tick */
    size_t nretry;
} agent_t;

static volatile sig_atomic_t g_signal;
static void on_signal(int sig) { g_signal = sig; }

static double mono(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static double realtime(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static const char *ip(uint32_t a, char *buf)
{
    struct in_addr in = {a};
    inet_ntop(AF_INET, &in, buf, INET_ADDRSTRLEN);
    return buf;
}

/* ---- the event log: one JSON object per line, CLOCK_REALTIME `time` and
 * CLOCK_MONOTONIC `monotonic` (the testbed fault log's clocks) ---- */

static void log_obj(agent_t *ag, const char *event, json_t *o)
{
    json_object_set_new(o, "time", json_real(realtime()));
    json_object_set_new(o, "monotonic", json_real(mono()));
    json_object_set_new(o, "node", json_string(ag->node_name));
    json_object_set_new(o, "event", json_string(event));
    if (ag->log) {
        json_dumpf(o, ag->log, JSON_COMPACT | JSON_PRESERVE_ORDER);
        fputc('\n', ag->log); /* flushed before the main loop waits (log_flush) */
    }
    json_decref(o);
}

static json_t *sub_json(const agent_t *ag, const mpilab_pm_subflow *s)
{
    char a[INET_ADDRSTRLEN], b[INET_ADDRSTRLEN];
    (void)ag;
    return json_pack("{s:s,s:i,s:s,s:i,s:i,s:i,s:b}", "local", ip(s->laddr, a), "lport",
                     (int)s->lport, "remote", ip(s->raddr, b), "rport", (int)s->rport,
                     "rail", s->rrail, "backup", s->backup, "established", s->established);
}

/* ---- nodes and rails ---- */

static int locate(const agent_t *ag, uint32_t addr, int *rail)
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

static void refresh_paths(agent_t *ag)
{
    for (int p = 0; p < ag->nnodes; p++)
        for (int r = 0; r < ag->nrails; r++)
            ag->ctx.path_up[p][r] = (unsigned char)(p != ag->self && ag->link_ok[r] &&
                                                    ag->probe[p][r].alive &&
                                                    ag->nodes[p].addr[r] != 0);
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

static int read_peers(agent_t *ag, char *err, size_t errlen)
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
static int read_alt(agent_t *ag, char *err, size_t errlen)
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

/* ---- UDP probes and notices between agents ---- */

static void put32(unsigned char *b, uint32_t v)
{
    b[0] = (unsigned char)(v >> 24); b[1] = (unsigned char)(v >> 16);
    b[2] = (unsigned char)(v >> 8); b[3] = (unsigned char)v;
}

static uint32_t get32(const unsigned char *b)
{
    return (uint32_t)b[0] << 24 | (uint32_t)b[1] << 16 | (uint32_t)b[2] << 8 | b[3];
}

/* Who decides whether a path between two nodes is dead: the node with the lower index
 * (the decider) judges by its probes; the other (the follower) reports what it suspects
 * and takes the decider's view, which every probe and reply carries as a bitmap of rails.
 * One judge per pair of nodes: two agents acting on different false alarms could
 * otherwise close a connection's last two subflows from both ends at once. A link seen
 * down locally is certain and acted on at once by either side. */
static int decides(const agent_t *ag, int peer) { return ag->self < peer; }

static unsigned view_bits(const agent_t *ag, int peer)
{
    unsigned bits = 0;
    for (int r = 0; r < ag->nrails; r++)
        if (ag->probe[peer][r].alive)
            bits |= 1u << r;
    return bits;
}

static void send_msg(agent_t *ag, int rail, int peer, int type, int about_rail, uint32_t seq)
{
    if (ag->udp[rail] < 0 || !ag->nodes[peer].addr[rail])
        return;
    unsigned char m[MSG_LEN] = {0};
    put32(m, MSG_MAGIC);
    m[4] = (unsigned char)type;
    m[5] = (unsigned char)about_rail;
    m[6] = (unsigned char)ag->self;
    m[7] = (unsigned char)view_bits(ag, peer);
    put32(m + 8, seq);
    int port = type == MSG_REPLY ? ag->port + 1 : ag->port; /* replies: the quiet socket */
    struct sockaddr_in to = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port),
                             .sin_addr = {ag->nodes[peer].addr[rail]}};
    if (sendto(ag->udp[rail], m, sizeof(m), MSG_DONTWAIT, (struct sockaddr *)&to,
               sizeof(to)) == (ssize_t)sizeof(m)) {
        if (type == MSG_PROBE) {
            ag->st.probes_sent++;
            ag->st.probes_rail[rail]++;
        }
        else if (type == MSG_REPLY)
            ag->st.replies_sent++;
        else
            ag->st.notices_sent++;
    }
}

static void path_event(agent_t *ag, int peer, int rail, int up, const char *cause)
{
    log_obj(ag, "path", json_pack("{s:s,s:i,s:b,s:s}", "peer", ag->nodes[peer].name, "rail",
                                  rail, "up", up, "cause", cause));
}

static void step_all(agent_t *ag, mpilab_pm_event_kind kind, int only_peer);

/* tell a peer (or every peer), over every other rail, that our path on `rail` is dead */
static void notify_down(agent_t *ag, int rail, int only_peer)
{
    for (int p = 0; p < ag->nnodes; p++) {
        if (p == ag->self || (only_peer >= 0 && p != only_peer))
            continue;
        for (int r = 0; r < ag->nrails; r++)
            if (r != rail && ag->link_ok[r])
                for (int k = 0; k < 2; k++)
                    send_msg(ag, r, p, MSG_DOWN, rail, 0);
    }
}

static void set_alive(agent_t *ag, int p, int r, int alive, const char *cause)
{
    probe_t *pr = &ag->probe[p][r];
    pr->good = 0;
    if (pr->alive == alive)
        return;
    pr->alive = alive;
    path_event(ag, p, r, alive, cause);
}

/* One message from a peer on `rail`, handled at `now` (monotonic; for a reply read late,
 * its arrival), which arrived at `arrived` (its kernel stamp). Returns its type (0: not
 * ours). */
static int on_msg(agent_t *ag, int rail, const unsigned char *m, ssize_t n, double now,
                  double arrived)
{
    if (n != MSG_LEN || get32(m) != MSG_MAGIC || m[6] >= ag->nnodes || m[6] == ag->self)
        return 0;
    ag->st.msgs_received++;
    int p = m[6], type = m[4], about = m[5], changed = 0;
    probe_t *pr = &ag->probe[p][rail];
    if (type == MSG_REPLY)
        ag->st.replies_received++;
    if ((type == MSG_PROBE || type == MSG_REPLY) && now > pr->last_reply)
        pr->last_reply = now; /* any message proves the path works both ways... */
    if (type == MSG_PROBE)
        send_msg(ag, rail, p, MSG_REPLY, rail, get32(m + 8));
    if ((type == MSG_PROBE || type == MSG_REPLY) && !decides(ag, p)) {
        /* ...but the decider's view is what counts: the latest to arrive (a reply read
         * late never overrides a probe that arrived after it, one socket to the other) */
        if (arrived < ag->view_at[p])
            return type;
        ag->view_at[p] = arrived;
        for (int r = 0; r < ag->nrails; r++) {
            /* a rail whose link is down here stays dead whatever the decider last saw
               (its view may predate our link event: adopting it would load an alternate
               into a dead link, and a failed load waits LOAD_RETRY before the next) */
            int up = ((m[7] >> r) & 1) && ag->link_ok[r];
            if (ag->probe[p][r].alive != up) {
                set_alive(ag, p, r, up, up ? "peer sees the path again"
                                           : "peer judged the path dead");
                changed = 1;
            }
        }
    } else if (type == MSG_REPLY && now >= pr->hold_until && !pr->alive &&
               ++pr->good >= GOOD_REPLIES) {
        set_alive(ag, p, rail, 1, "probe replies resumed");
        changed = 1;
    } else if (type == MSG_DOWN && about < ag->nrails) {
        ag->probe[p][about].hold_until = now + ag->timeout;
        if (ag->probe[p][about].alive) {
            set_alive(ag, p, about, 0, decides(ag, p) ? "peer reported the path dead"
                                                      : "peer judged the path dead");
            changed = 1;
        }
    }
    if (changed) {
        if (decides(ag, p)) /* our new view reaches the peer ahead of any join */
            for (int r = 0; r < ag->nrails; r++)
                send_msg(ag, r, p, MSG_PROBE, r, ++ag->probe[p][r].seq);
        refresh_paths(ag);
        step_all(ag, MPILAB_PM_EV_PATH, p);
    }
    return type >= MSG_PROBE && type <= MSG_DOWN ? type : 0;
}

/* one datagram and its kernel receive stamp (SO_TIMESTAMPNS: CLOCK_REALTIME seconds;
 * *has 0 without one) */
static ssize_t recv_stamped(int fd, unsigned char *m, size_t len, int *has, double *stamp)
{
    union {
        char buf[CMSG_SPACE(sizeof(struct timespec))];
        struct cmsghdr align;
    } ctl;
    struct iovec iov = {m, len};
    struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = ctl.buf,
                        .msg_controllen = sizeof(ctl.buf)};
    *has = 0;
    *stamp = 0;
    ssize_t n = recvmsg(fd, &mh, MSG_DONTWAIT);
    if (n < 0)
        return n;
    for (struct cmsghdr *c = CMSG_FIRSTHDR(&mh); c; c = CMSG_NXTHDR(&mh, c))
        if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_TIMESTAMPNS &&
            c->cmsg_len >= CMSG_LEN(sizeof(struct timespec))) {
            struct timespec ts;
            memcpy(&ts, CMSG_DATA(c), sizeof(ts));
            *stamp = (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
            *has = 1;
        }
    return n;
}

/* the probe socket of a rail (probes, notices; it wakes the agent): answered at once.
 * Returns a bit (1 << type) per type of message read. */
static unsigned on_udp(agent_t *ag, int rail)
{
    unsigned char m[64];
    unsigned types = 0;
    for (;;) {
        int has;
        double stamp;
        ssize_t n = recv_stamped(ag->udp[rail], m, sizeof(m), &has, &stamp);
        if (n < 0)
            return types;
        double now = mono();
        types |= 1u << on_msg(ag, rail, m, n, now,
                              mpilab_pm_rx_time(has, stamp, now - realtime(), 0, now));
    }
}

/* Read every reply queued on the reply sockets (port + 1), each at its kernel receive
 * stamp (SO_TIMESTAMPNS, CLOCK_REALTIME, converted to the monotonic clock by an offset read
 * now; mpilab_pm_rx_time). Called at every wake-up before anything else, so before any
 * verdict or probe schedule is evaluated: a path's last reply is when the reply arrived,
 * as if it had woken the agent. `urgent`: the sockets were polled (their replies counted
 * as urgent, not deferred). Returns the number of replies read. */
static size_t drain_replies(agent_t *ag, int urgent)
{
    double lo = ag->drained_at, hi = mono();
    double off = hi - realtime();
    ag->drained_at = hi;
    size_t got = 0;
    for (int r = 0; r < ag->nrails; r++) {
        if (ag->rep[r] < 0)
            continue;
        for (;;) {
            unsigned char m[64];
            int has;
            double stamp;
            ssize_t n = recv_stamped(ag->rep[r], m, sizeof(m), &has, &stamp);
            if (n < 0)
                break;
            double at = mpilab_pm_rx_time(has, stamp, off, lo, hi);
            if (on_msg(ag, r, m, n, at, at) == MSG_REPLY) {
                got++;
                if (urgent)
                    ag->st.replies_urgent++;
                else
                    ag->st.replies_deferred++;
            }
        }
    }
    return got;
}

/* whether the reply sockets must wake the agent now (mpilab_pm_reply_urgent on any path) */
static int replies_urgent(const agent_t *ag)
{
    for (int p = 0; p < ag->nnodes; p++)
        for (int r = 0; p != ag->self && r < ag->nrails; r++) {
            const probe_t *pr = &ag->probe[p][r];
            if (mpilab_pm_reply_urgent(decides(ag, p), pr->alive, pr->good, GOOD_REPLIES,
                                       pr->suspect))
                return 1;
        }
    return 0;
}

/* Which paths carry traffic: a bit per rail and peer, set when some managed connection
 * to that peer has its primary (non-backup) subflow to the peer's address on that rail.
 * Cached: recomputed only after a connection or one of its subflows changed (used_dirty,
 * set where the state machines run and where connections come and go). */
static const unsigned *paths_in_use(agent_t *ag)
{
    if (!ag->used_dirty)
        return ag->used;
    memset(ag->used, 0, sizeof(ag->used));
    ag->nq = 0;
    for (size_t i = 0; i < ag->nconn; i++) {
        const mpilab_pm_conn *c = &ag->conn[i];
        if (!c->managed || c->peer < 0 || c->peer >= MPILAB_PM_MAX_PEERS)
            continue;
        for (int k = 0; k < c->nsub; k++) {
            const mpilab_pm_subflow *sb = &c->sub[k];
            if (!sb->established || sb->backup || sb->rrail < 0)
                continue;
            ag->used[c->peer] |= 1u << sb->rrail;
            if (ag->nq == ag->capq) {
                size_t cap = ag->capq ? 2 * ag->capq : 64;
                pm_nl_tcp_id *q = realloc(ag->q, cap * sizeof(*q));
                if (!q)
                    continue; /* this subflow proves nothing; probes cover its path */
                ag->q = q;
                ag->capq = cap;
            }
            ag->q[ag->nq++] = (pm_nl_tcp_id){sb->laddr, sb->raddr, sb->lport, sb->rport};
        }
    }
    ag->used_dirty = 0;
    return ag->used;
}

/* the last sign of life on a path: a message from the peer on it, or (while the path is
 * alive) a passive proof by its TCP subflows. A dead path comes back by probe replies
 * only (GOOD_REPLIES), never by the counters of subflows that may still linger on it. */
static double heard(const probe_t *pr)
{
    return pr->alive && pr->last_proof > pr->last_reply ? pr->last_proof : pr->last_reply;
}

static double path_since(const probe_t *pr)
{
    double h = heard(pr);
    return h > pr->fast_since ? h : pr->fast_since;
}

/* A path in use silent for this many fast periods: the decider probes the peer's other
 * paths now (at most once a period), so that their answers are fresh if a verdict comes. */
#define CONFIRM_AFTER 2.0
#define NEVER 1e300

/* One path's schedule, shared by probe_tick (which acts on it) and probe_deadline.
 * Period and silence limit: fast (--probe-interval, --probe-timeout) for a path to a peer
 * with connections that carries a primary subflow, or that is dead (its healing is seen
 * within a few intervals); slow (SLOW_FACTOR times both) for every other path, i.e. the
 * idle alternates and peers without connections. Probes (mpilab_pm_probe_due): the
 * decider of a pair probes every period, the follower only answers while the decider's
 * probes (or passive proofs) keep coming; a passive proof stands for a probe answered.
 * An alternate is probed at once when a path in use to the same peer falls silent
 * (CONFIRM_AFTER), so a verdict on the primary never waits for the slow period. */
typedef struct {
    int active;      /* the path exists (both addresses, a socket) */
    int used;        /* carries a primary subflow */
    double iv, limit;
    double due;      /* next probe */
    double due_blind; /* next probe if passive proofs did not count (probes_skipped) */
    double since;    /* silent since (last sign of life, or fast probing began) */
    double verdict;  /* judged when silent until then (alive paths), else NEVER */
    double confirm;  /* the decider probes the peer's other paths from then, or NEVER */
} sched_t;

static void path_schedule(agent_t *ag, int p, int r, sched_t *d)
{
    const probe_t *pr = &ag->probe[p][r];
    const unsigned *used = paths_in_use(ag);
    memset(d, 0, sizeof(*d));
    d->active = ag->nodes[p].addr[r] && ag->udp[r] >= 0;
    d->used = used[p] >> r & 1u;
    int fast = ag->conns_to[p] > 0 && (d->used || !pr->alive);
    d->iv = fast ? ag->interval : ag->interval * SLOW_FACTOR;
    d->limit = fast ? ag->timeout : ag->timeout * SLOW_FACTOR;
    int dec = decides(ag, p);
    double proof = pr->alive ? pr->last_proof : 0;
    d->due = mpilab_pm_probe_due(dec, pr->last_sent, pr->last_reply, proof, d->iv);
    d->due_blind = mpilab_pm_probe_due(dec, pr->last_sent > pr->last_skip ? pr->last_sent
                                                                          : pr->last_skip,
                                       pr->last_reply, 0, d->iv);
    d->since = path_since(pr);
    d->verdict = pr->alive ? d->since + d->limit : NEVER;
    /* the follower confirms too: a settled path (settle_paths) is not probed by the
     * decider, so when the follower's own data stalls on it the follower alone notices,
     * and its verdict needs a fresh answer on another rail. It waits half a period past
     * its own first probe, which its dumps of a settled path always precede */
    d->confirm = ag->conns_to[p] > 0 && d->used && pr->alive
                     ? d->since + (dec ? CONFIRM_AFTER : MPILAB_PM_FOLLOW_FACTOR + 0.5) *
                                      ag->interval
                     : NEVER;
}

/* ---- passive liveness: the kernel's TCP subflows on our paths ---- */

static int seen_cmp(const void *a, const void *b)
{
    uint64_t x = ((const tcp_seen_t *)a)->cookie, y = ((const tcp_seen_t *)b)->cookie;
    return x < y ? -1 : x > y;
}

typedef struct {
    agent_t *ag;
    double now;
} dump_ctx;

static void on_tcp(void *arg, const pm_nl_tcp *t)
{
    dump_ctx *dc = arg;
    agent_t *ag = dc->ag;
    /* a path is (peer, rail): our address on rail r to the peer's address on rail r */
    int r = -1, p = -1;
    for (int k = 0; k < ag->nrails; k++)
        if (ag->nodes[ag->self].addr[k] == t->laddr)
            r = k;
    if (r < 0)
        return;
    for (int k = 0; k < ag->nnodes; k++)
        if (k != ag->self && ag->nodes[k].addr[r] == t->raddr)
            p = k;
    if (p < 0)
        return;
    ag->st.diag_sockets++;
    probe_t *pr = &ag->probe[p][r];
    if (pr->settle_dump != ag->st.diag_dumps) {
        pr->settle_dump = ag->st.diag_dumps;
        pr->unsettled = 0;
    }
    pr->unsettled++; /* until this subflow is found settled below (not if out of memory) */
    if (ag->nseen_next == ag->capseen) {
        size_t cap = ag->capseen ? 2 * ag->capseen : 64;
        tcp_seen_t *a = realloc(ag->seen, cap * sizeof(*a));
        if (!a)
            return;
        ag->seen = a;
        tcp_seen_t *b = realloc(ag->seen_next, cap * sizeof(*b));
        if (!b)
            return;
        ag->seen_next = b;
        ag->capseen = cap;
    }
    tcp_seen_t *cur = &ag->seen_next[ag->nseen_next++];
    cur->cookie = t->cookie;
    cur->s = (mpilab_pm_tcp_sample){t->bytes_acked, t->bytes_received, t->last_ack_recv_ms,
                                    t->last_data_recv_ms, t->unacked, t->notsent};
    const tcp_seen_t *prev = ag->nseen ? bsearch(cur, ag->seen, ag->nseen, sizeof(*cur),
                                                 seen_cmp)
                                       : NULL;
    double t_proof = mpilab_pm_tcp_proof(prev ? &prev->s : NULL, &cur->s, ag->last_dump,
                                         dc->now, !decides(ag, p));
    if (t_proof > 0 && pr->proof_dump != ag->st.diag_dumps) { /* once per path and dump */
        ag->st.proofs_rail[r]++;
        pr->proof_dump = ag->st.diag_dumps;
    }
    if (t_proof > pr->last_proof)
        pr->last_proof = t_proof;
    if (mpilab_pm_tcp_settled(prev ? &prev->s : NULL, &cur->s, !decides(ag, p)))
        pr->unsettled--;
}

/* After a dump: a live path in use whose every primary subflow the dump listed was
 * settled (mpilab_pm_tcp_settled: nothing at stake) needs no probe now; it counts as
 * proven at this dump. One unsettled subflow (data unacknowledged, or arriving to the
 * decider) and the path is judged by acknowledgements and probes as before. */
static void settle_paths(agent_t *ag, double now)
{
    const unsigned *used = paths_in_use(ag);
    for (int p = 0; p < ag->nnodes; p++)
        for (int r = 0; p != ag->self && r < ag->nrails; r++) {
            probe_t *pr = &ag->probe[p][r];
            if (!(used[p] >> r & 1u) || !pr->alive || pr->settle_dump != ag->st.diag_dumps ||
                pr->unsettled)
                continue;
            ag->st.settled_rail[r]++;
            if (now > pr->last_proof)
                pr->last_proof = now;
        }
}

/* Read the counters of the primary subflows on the paths in use and record the paths they
 * prove alive: exact lookups of those sockets (the kernel finds each in its hash; a dump
 * would walk the host's whole TCP hash table, ~2 ms per dump here). With more than
 * LOOKUP_MAX such subflows passive liveness is off (dump_needed) and probes alone judge:
 * the lookups of hundreds of subflows every period would cost more than the probes they
 * save. A failure is logged once; probing then goes on alone. */
#define LOOKUP_MAX 64
static void diag_dump(agent_t *ag, double now)
{
    char err[200];
    dump_ctx dc = {ag, now};
    ag->nseen_next = 0;
    ag->st.diag_dumps++; /* numbers this dump for on_tcp */
    paths_in_use(ag);
    int n = pm_nl_query_tcp(&ag->nl, ag->q, ag->nq, on_tcp, &dc, err, sizeof(err));
    if (n < 0) {
        ag->st.diag_errors++;
        ag->nseen = 0; /* no baseline: the next dump proves nothing, only sets it */
        if (!ag->diag_failed) {
            ag->diag_failed = 1;
            log_obj(ag, "error", json_pack("{s:s,s:s}", "what", "passive liveness", "error",
                                            err));
        }
        ag->last_dump = now;
        return;
    }
    settle_paths(ag, now);
    qsort(ag->seen_next, ag->nseen_next, sizeof(*ag->seen_next), seen_cmp);
    tcp_seen_t *t = ag->seen;
    ag->seen = ag->seen_next;
    ag->seen_next = t;
    ag->nseen = ag->nseen_next;
    ag->last_dump = now;
}

/* Whether this tick needs fresh counters: a path in use that is alive, a probe or verdict
 * of which is due within the quarter period (a proof could postpone it), and no dump in
 * the last half period (unless a verdict is due: never judged on old counters). */
static int dump_needed(agent_t *ag, double now)
{
    if (!ag->passive)
        return 0;
    paths_in_use(ag);
    if (ag->nq > LOOKUP_MAX)
        return 0;
    int want = 0;
    for (int p = 0; p < ag->nnodes; p++) {
        if (p == ag->self || ag->conns_to[p] <= 0)
            continue;
        for (int r = 0; r < ag->nrails; r++) {
            sched_t d;
            path_schedule(ag, p, r, &d);
            if (!d.active || !d.used || !ag->probe[p][r].alive)
                continue;
            if (d.verdict <= now && ag->last_dump < now)
                return 1;
            if (d.due_blind <= now + d.iv / 4 || d.due <= now + d.iv / 4)
                want = 1;
        }
    }
    return want && now - ag->last_dump >= ag->interval / 2;
}

/* Send the probes that are due (and those due within a quarter period, so that one
 * wake-up serves every path), confirm alternates, judge paths silent for too long;
 * returns when the next probe or verdict is due. */
static double probe_tick(agent_t *ag, double now)
{
    int changed = 0;
    double next = now + SM_TICK;
    sched_t d;
    if (dump_needed(ag, now))
        diag_dump(ag, now);
    for (int p = 0; p < ag->nnodes; p++) {
        if (p == ag->self)
            continue;
        int confirm = 0;
        double freshest = 0; /* the latest sign of life on any rail that is alive */
        for (int r = 0; r < ag->nrails; r++) {
            path_schedule(ag, p, r, &d);
            if (d.confirm <= now)
                confirm = 1;
            if (ag->probe[p][r].alive && heard(&ag->probe[p][r]) > freshest)
                freshest = heard(&ag->probe[p][r]);
        }
        for (int r = 0; r < ag->nrails; r++) {
            probe_t *pr = &ag->probe[p][r];
            path_schedule(ag, p, r, &d);
            if (!d.active)
                continue;
            int idle_alt = confirm && !d.used;
            if (d.due <= now + d.iv / 4 ||
                (idle_alt && now - pr->last_sent >= ag->interval)) {
                send_msg(ag, r, p, MSG_PROBE, r, ++pr->seq);
                pr->last_sent = now;
            } else if (d.due_blind <= now + d.iv / 4) {
                /* a probe that only the passive proof made unnecessary */
                ag->st.skipped_rail[r]++;
                pr->last_skip = now;
            }
            path_schedule(ag, p, r, &d);
            if (d.due < next)
                next = d.due;
            if (d.confirm > now && d.confirm + 1e-4 < next)
                next = d.confirm + 1e-4;
            pr->suspect = 0;
            if (!pr->alive)
                continue;
            if (now <= d.verdict) { /* the verdict is due then, unless a reply comes */
                if (d.verdict + 1e-4 < next)
                    next = d.verdict + 1e-4;
                continue;
            }
            /* dead: silent for the timeout while another rail to the same peer answered
             * since (if every rail went quiet together, this machine or the peer stalled:
             * nothing to migrate to anyway) */
            if (!mpilab_pm_path_silent(now, d.since, d.limit, freshest, ag->interval)) {
                pr->suspect = 1; /* replies wake the agent until it is judged */
                if (now + ag->interval / 2 < next) /* judged again once another answers */
                    next = now + ag->interval / 2;
                continue;
            }
            if (decides(ag, p)) {
                set_alive(ag, p, r, 0, "probe timeout");
                notify_down(ag, r, p);
                changed = 1;
            } else if (now - pr->hold_until > d.limit) {
                notify_down(ag, r, p); /* suspect: the decider judges */
                pr->hold_until = now;
            }
        }
    }
    if (changed) {
        refresh_paths(ag);
        step_all(ag, MPILAB_PM_EV_PATH, -1);
    }
    return next;
}

/* probe_tick's next deadline without acting (after a message moved it) */
static double probe_deadline(agent_t *ag)
{
    double now = mono(), next = now + SM_TICK;
    for (int p = 0; p < ag->nnodes; p++) {
        if (p == ag->self)
            continue;
        for (int r = 0; r < ag->nrails; r++) {
            sched_t d;
            path_schedule(ag, p, r, &d);
            if (!d.active)
                continue;
            if (d.due < next)
                next = d.due;
            if (d.verdict + 1e-4 < next) /* in the past while suspect: at once */
                next = d.verdict + 1e-4;
            if (d.confirm + 1e-4 < next)
                next = d.confirm + 1e-4;
        }
    }
    return next;
}

/* ---- connections ---- */

static mpilab_pm_conn *find_conn(agent_t *ag, uint32_t token)
{
    for (size_t i = 0; i < ag->nconn; i++)
        if (ag->conn[i].token == token)
            return &ag->conn[i];
    return NULL;
}

static mpilab_pm_conn *new_conn(agent_t *ag, uint32_t token, int server_side, uint32_t raddr)
{
    if (ag->nconn == ag->capconn) {
        size_t cap = ag->capconn ? 2 * ag->capconn : 64;
        mpilab_pm_conn *c = realloc(ag->conn, cap * sizeof(*c));
        if (!c)
            return NULL;
        ag->conn = c;
        ag->capconn = cap;
    }
    int rail = -1, peer = locate(ag, raddr, &rail);
    int managed = peer >= 0 && peer != ag->self && ag->nrails > 1;
    mpilab_pm_conn *c = &ag->conn[ag->nconn++];
    mpilab_pm_conn_init(c, token, server_side, managed, managed ? peer : -1);
    ag->used_dirty = 1;
    if (managed && ag->conns_to[peer]++ == 0) {
        /* switch to fast probing: the timeout counts from now, probe at once */
        double now = mono();
        for (int r = 0; r < ag->nrails; r++) {
            ag->probe[peer][r].fast_since = now;
            ag->probe[peer][r].last_sent = 0;
        }
        ag->next_probe = 0;
    }
    return c;
}

static joinl_t *find_joinl(agent_t *ag, uint16_t port)
{
    for (size_t i = 0; i < ag->njl; i++)
        if (ag->jl[i].port == port)
            return &ag->jl[i];
    return NULL;
}

/* a server-side connection accepted on `port` via our rail `lrail`: listeners on the others */
static void joinl_add(agent_t *ag, mpilab_pm_conn *c, uint16_t port, int lrail)
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
        log_obj(ag, "join_listener", json_pack("{s:s,s:i,s:i,s:s}", "addr", ip(addr, a),
                                               "port", (int)port, "rail", r, "result",
                                               result));
    }
}

static void joinl_close(joinl_t *j)
{
    for (int r = 0; r < MPILAB_PM_MAX_RAILS; r++)
        if (j->fd[r] >= 0)
            close(j->fd[r]);
}

static void joinl_release(agent_t *ag, mpilab_pm_conn *c)
{
    joinl_t *j = c->accept_port ? find_joinl(ag, c->accept_port) : NULL;
    c->accept_port = 0;
    if (!j || --j->refs > 0)
        return;
    joinl_close(j);
    *j = ag->jl[--ag->njl];
}

static void forget_conn(agent_t *ag, mpilab_pm_conn *c)
{
    joinl_release(ag, c);
    if (c->managed && c->peer >= 0)
        ag->conns_to[c->peer]--;
    *c = ag->conn[--ag->nconn];
    ag->used_dirty = 1;
}

/* the initial subflow's remote port is the peer's listening port: joins go there */
static uint16_t join_port(const mpilab_pm_conn *c, const agent_t *ag)
{
    (void)ag;
    for (int i = 0; i < c->nsub; i++)
        if (c->sub[i].established)
            return c->sub[i].rport;
    return 0;
}

static void log_transition(agent_t *ag, const mpilab_pm_conn *c, mpilab_pm_state from,
                           mpilab_pm_state to, const char *cause)
{
    char tok[16];
    snprintf(tok, sizeof(tok), "%08" PRIx32, c->token);
    log_obj(ag, "state", json_pack("{s:s,s:s,s:s,s:s,s:s}", "token", tok, "peer",
                                   c->peer >= 0 ? ag->nodes[c->peer].name : "", "from",
                                   mpilab_pm_state_name(from), "to", mpilab_pm_state_name(to),
                                   "cause", cause ? cause : ""));
}

static void batch_add(batch_t *b, const agent_t *ag, size_t ci, const mpilab_pm_action *a,
                      int tries)
{
    if (b->n == b->cap) {
        size_t cap = b->cap ? 2 * b->cap : 64;
        pm_nl_cmd *c = realloc(b->cmd, cap * sizeof(*c));
        size_t *ix = realloc(b->conn, cap * sizeof(*ix));
        mpilab_pm_subflow *sb = realloc(b->sub, cap * sizeof(*sb));
        int *tr = realloc(b->tries, cap * sizeof(*tr));
        if (c)
            b->cmd = c;
        if (ix)
            b->conn = ix;
        if (sb)
            b->sub = sb;
        if (tr)
            b->tries = tr;
        if (!c || !ix || !sb || !tr)
            return; /* out of memory: the action is dropped, the next tick retries */
        b->cap = cap;
    }
    const mpilab_pm_conn *c = &ag->conn[ci];
    mpilab_pm_subflow s = a->sub;
    pm_nl_cmd *m = &b->cmd[b->n];
    memset(m, 0, sizeof(*m));
    m->token = c->token;
    if (a->kind == MPILAB_PM_ACT_CREATE) {
        s.laddr = ag->nodes[ag->self].addr[s.lrail];
        s.raddr = ag->nodes[c->peer].addr[s.rrail];
        s.rport = join_port(c, ag);
        m->kind = PM_NL_CREATE;
        m->loc_id = (uint8_t)(s.lrail + 1);
        m->laddr = s.laddr;
        m->raddr = s.raddr;
        m->rport = s.rport;
        m->backup = 1;
    } else {
        m->kind = a->kind == MPILAB_PM_ACT_SET_BACKUP ? PM_NL_SET_BACKUP : PM_NL_DESTROY;
        m->laddr = s.laddr;
        m->lport = s.lport;
        m->raddr = s.raddr;
        m->rport = s.rport;
        m->backup = a->backup;
    }
    b->sub[b->n] = s;
    b->tries[b->n] = tries;
    b->conn[b->n++] = ci;
}

static void add_results(batch_t *b, const agent_t *ag, size_t ci, const mpilab_pm_result *res)
{
    for (int i = 0; i < res->nact; i++)
        batch_add(b, ag, ci, &res->act[i], 0);
}

/* Carry the batch out in the state machines' order, connection after connection (each
 * connection's priority change then its destroy: the first connections are whole again
 * before the last are started, rather than every connection waiting for all priority
 * changes), a few system calls for the lot. Each action is logged with the kernel's
 * answer, as before batching. */
static void batch_run(agent_t *ag, batch_t *b, double now)
{
    if (!b->n)
        return;
    pm_nl_run_batch(&ag->nl, b->cmd, b->n);
    for (size_t i = 0; i < b->n; i++) {
        pm_nl_cmd *m = &b->cmd[i];
        mpilab_pm_conn *c = &ag->conn[b->conn[i]];
        char tok[16];
        snprintf(tok, sizeof(tok), "%08" PRIx32, c->token);
        static const char *names[] = {"create", "set_backup", "destroy"};
        json_t *sub = sub_json(ag, &b->sub[i]);
        json_t *o = json_pack("{s:s,s:s,s:o,s:b}", "token", tok, "action", names[m->kind],
                              "subflow", sub, "ok", m->rc == 0);
        if (m->kind == PM_NL_SET_BACKUP)
            json_object_set_new(o, "backup", json_integer(m->backup));
        /* moot, not failed: the kernel no longer knows the connection (it closed before
         * the action reached it), or a join came before the connection was fully
         * established (ENOTCONN; retried within LOAD_SOON_S) */
        int gone = m->rc != 0 && strstr(m->err, "invalid token") != NULL;
        int not_ready = m->rc == -ENOTCONN && m->kind == PM_NL_CREATE;
        int unlisted = m->rc != 0 && m->kind == PM_NL_SET_BACKUP &&
                       strstr(m->err, "subflow not found") != NULL &&
                       b->tries[i] + 1 < SETB_TRIES && ag->nretry < SETB_MAX;
        if (m->rc != 0) {
            json_object_set_new(o, "error", json_string(m->err));
            if (unlisted) {
                json_object_set_new(o, "moot", json_string("subflow not yet listed: tried "
                                                           "again at the next tick"));
                ag->retry[ag->nretry++] = (setb_retry_t){.token = c->token, .sub = b->sub[i],
                                                         .backup = m->backup,
                                                         .tries = b->tries[i] + 1};
                ag->actions_moot++;
            } else if (gone || not_ready) {
                json_object_set_new(o, "moot", json_string(gone ? "connection gone"
                                                                 : "connection not ready"));
                ag->actions_moot++;
            } else {
                ag->actions_failed++;
            }
        }
        log_obj(ag, "action", o);
        if (m->rc == 0 || unlisted || c->state == MPILAB_PM_CLOSED)
            continue;
        if (gone) {
            /* the kernel no longer knows the connection (closed, or fell back to TCP,
             * without an event we saw): forget it at the next tick */
            log_transition(ag, c, c->state, MPILAB_PM_CLOSED, "unknown to the kernel");
            c->state = MPILAB_PM_CLOSED;
        } else if (m->kind == PM_NL_CREATE) {
            mpilab_pm_event ev = {.kind = not_ready ? MPILAB_PM_EV_LOAD_NOT_READY
                                                    : MPILAB_PM_EV_LOAD_FAILED,
                                  .now = now};
            mpilab_pm_result r2;
            mpilab_pm_step(&ag->ctx, c, &ev, &r2);
            ag->used_dirty = 1;
            if (r2.from != r2.to)
                log_transition(ag, c, r2.from, r2.to, r2.cause);
        }
    }
    b->n = 0;
}

static void batch_free(batch_t *b)
{
    free(b->cmd);
    free(b->conn);
    free(b->tries);
    free(b->sub);
    memset(b, 0, sizeof(*b));
}

/* run one event through a connection's state machine, log the transition, act */
static int step(agent_t *ag, mpilab_pm_conn *c, const mpilab_pm_event *ev, char *err,
                size_t errlen)
{
    mpilab_pm_result res;
    int rc = mpilab_pm_step(&ag->ctx, c, ev, &res);
    ag->used_dirty = 1; /* a kernel event or a command: the subflows may have changed */
    if (rc != 0 && err)
        snprintf(err, errlen, "%s", res.err);
    if (res.from != res.to)
        log_transition(ag, c, res.from, res.to, res.cause);
    batch_t b = {0};
    add_results(&b, ag, (size_t)(c - ag->conn), &res);
    batch_run(ag, &b, ev->now);
    batch_free(&b);
    return rc;
}

/* one event for every managed connection (of one peer): their actions in one batch */
static void step_all(agent_t *ag, mpilab_pm_event_kind kind, int only_peer)
{
    batch_t *b = &ag->batch;
    mpilab_pm_event ev = {.kind = kind, .now = mono()};
    for (size_t i = 0; i < ag->nconn; i++) {
        mpilab_pm_conn *c = &ag->conn[i];
        if (!c->managed || (only_peer >= 0 && c->peer != only_peer))
            continue;
        mpilab_pm_result res;
        mpilab_pm_step(&ag->ctx, c, &ev, &res);
        if (res.from != res.to || res.nact > 0)
            ag->used_dirty = 1; /* a transition or action changes the subflows */
        if (res.from != res.to)
            log_transition(ag, c, res.from, res.to, res.cause);
        add_results(b, ag, i, &res);
    }
    batch_run(ag, b, ev.now);
}

/* the priority changes refused for a subflow the kernel did not list yet, once more */
static void retry_run(agent_t *ag, double now)
{
    if (!ag->nretry)
        return;
    setb_retry_t todo[SETB_MAX];
    size_t n = ag->nretry;
    memcpy(todo, ag->retry, n * sizeof(todo[0]));
    ag->nretry = 0;
    batch_t *b = &ag->batch;
    for (size_t i = 0; i < n; i++) {
        mpilab_pm_conn *c = find_conn(ag, todo[i].token);
        if (!c || c->state == MPILAB_PM_CLOSED)
            continue; /* gone meanwhile: nothing to change */
        mpilab_pm_action a = {.kind = MPILAB_PM_ACT_SET_BACKUP, .sub = todo[i].sub,
                              .backup = todo[i].backup};
        batch_add(b, ag, (size_t)(c - ag->conn), &a, todo[i].tries);
    }
    batch_run(ag, b, now);
}

static void fill_sub(const agent_t *ag, const pm_nl_event *e, mpilab_pm_subflow *s)
{
    memset(s, 0, sizeof(*s));
    s->laddr = e->saddr;
    s->raddr = e->daddr;
    s->lport = e->sport;
    s->rport = e->dport;
    s->backup = e->backup;
    locate(ag, e->saddr, &s->lrail);
    locate(ag, e->daddr, &s->rrail);
}

static void on_kernel_event(void *arg, const pm_nl_event *e)
{
    agent_t *ag = arg;
    char tok[16], a[INET_ADDRSTRLEN], b[INET_ADDRSTRLEN];
    snprintf(tok, sizeof(tok), "%08" PRIx32, e->token);
    json_t *o = json_pack("{s:s,s:s}", "type", pm_nl_event_name(e->type), "token", tok);
    if (e->saddr) {
        json_object_set_new(o, "saddr", json_string(ip(e->saddr, a)));
        json_object_set_new(o, "daddr", json_string(ip(e->daddr, b)));
        json_object_set_new(o, "sport", json_integer(e->sport));
        json_object_set_new(o, "dport", json_integer(e->dport));
        json_object_set_new(o, "backup", json_integer(e->backup));
        json_object_set_new(o, "server_side", json_integer(e->server_side));
    }
    if (e->error)
        json_object_set_new(o, "error", json_integer(e->error));
    log_obj(ag, "kernel", o);

    mpilab_pm_conn *c = find_conn(ag, e->token);
    mpilab_pm_event ev;
    memset(&ev, 0, sizeof(ev));
    ev.now = mono();
    fill_sub(ag, e, &ev.sub);
    switch (e->type) {
    case MPTCP_EVENT_CREATED:
        if (!c)
            c = new_conn(ag, e->token, e->server_side, e->daddr);
        if (c && c->managed && c->server_side)
            joinl_add(ag, c, e->sport, ev.sub.lrail);
        return;
    case MPTCP_EVENT_ESTABLISHED:
        if (!c)
            c = new_conn(ag, e->token, e->server_side, e->daddr);
        if (!c)
            return;
        if (c->managed && c->server_side)
            joinl_add(ag, c, e->sport, ev.sub.lrail);
        ev.sub.backup = 0;
        ev.kind = MPILAB_PM_EV_ESTABLISHED;
        break;
    case MPTCP_EVENT_SUB_ESTABLISHED: ev.kind = MPILAB_PM_EV_SUB_ESTABLISHED; break;
    case MPTCP_EVENT_SUB_CLOSED: ev.kind = MPILAB_PM_EV_SUB_CLOSED; break;
    case MPTCP_EVENT_SUB_PRIORITY: ev.kind = MPILAB_PM_EV_SUB_PRIORITY; break;
    case MPTCP_EVENT_CLOSED: ev.kind = MPILAB_PM_EV_CLOSED; break;
    default: return;
    }
    if (!c)
        return;
    step(ag, c, &ev, NULL, 0);
    if (ev.kind == MPILAB_PM_EV_CLOSED)
        forget_conn(ag, c);
}

static void on_link(void *arg, const pm_nl_link *l)
{
    agent_t *ag = arg;
    for (int r = 0; r < ag->nrails; r++) {
        if (ag->ifindex[r] != l->ifindex || ag->link_ok[r] == l->up)
            continue;
        ag->link_ok[r] = l->up;
        log_obj(ag, "link", json_pack("{s:i,s:s,s:b}", "rail", r, "ifname", l->name, "up",
                                      l->up));
        if (!l->up) {
            for (int p = 0; p < ag->nnodes; p++)
                if (p != ag->self)
                    set_alive(ag, p, r, 0, "local link down");
            notify_down(ag, r, -1);
        } else {
            /* back: resolve its neighbours now (not at the next ARP retry, up to 1 s
               away), and probe every peer on it at once, follower or decider, so that both
               ends' next hops are resolved and the replies that heal the paths start */
            char err[200];
            int n = pm_nl_renew_neighbours(l->ifindex, err, sizeof(err));
            ag->st.neigh_renewed += n > 0 ? (uint64_t)n : 0;
            if (n < 0)
                log_obj(ag, "error", json_pack("{s:s,s:i,s:s}", "what", "neighbour renewal",
                                                "rail", r, "error", err));
            else
                log_obj(ag, "neighbours", json_pack("{s:i,s:i}", "rail", r, "renewed", n));
            for (int p = 0; p < ag->nnodes; p++)
                if (p != ag->self) {
                    send_msg(ag, r, p, MSG_PROBE, r, ++ag->probe[p][r].seq);
                    ag->probe[p][r].last_sent = mono();
                }
        }
        refresh_paths(ag);
        step_all(ag, MPILAB_PM_EV_PATH, -1);
    }
}

/* ---- what the agent costs ---- */

static json_t *stats_json(const agent_t *ag)
{
    struct rusage ru;
    memset(&ru, 0, sizeof(ru));
    getrusage(RUSAGE_SELF, &ru);
    double up = mono() - ag->started;
    json_t *per_rail = json_array(), *proofs = json_array(), *skipped = json_array();
    uint64_t nproofs = 0, nskipped = 0;
    for (int r = 0; r < ag->nrails; r++) {
        json_array_append_new(per_rail, json_integer((json_int_t)ag->st.probes_rail[r]));
        json_array_append_new(proofs, json_integer((json_int_t)ag->st.proofs_rail[r]));
        json_array_append_new(skipped, json_integer((json_int_t)ag->st.skipped_rail[r]));
        nproofs += ag->st.proofs_rail[r];
        nskipped += ag->st.skipped_rail[r];
    }
    json_t *o = json_pack("{s:f,s:f,s:f,s:I,s:I,s:I,s:I,s:I,s:o,s:I,s:I,s:I}", "uptime_s", up,
                     "cpu_user_s", (double)ru.ru_utime.tv_sec + ru.ru_utime.tv_usec * 1e-6,
                     "cpu_sys_s", (double)ru.ru_stime.tv_sec + ru.ru_stime.tv_usec * 1e-6,
                     "voluntary_switches", (json_int_t)ru.ru_nvcsw,
                     "involuntary_switches", (json_int_t)ru.ru_nivcsw,
                     "wakeups", (json_int_t)ag->st.wakeups, "probe_rounds",
                     (json_int_t)ag->st.ticks, "probes_sent", (json_int_t)ag->st.probes_sent,
                     "probes_sent_per_rail", per_rail,
                     "replies_sent", (json_int_t)ag->st.replies_sent, "notices_sent",
                     (json_int_t)ag->st.notices_sent, "messages_received",
                     (json_int_t)ag->st.msgs_received);
    json_object_update_new(o, json_pack(
        "{s:I,s:I,s:I,s:I,s:{s:I,s:I,s:I,s:I,s:I,s:I,s:I}}", "probe_rounds_early",
        (json_int_t)ag->st.ticks_early, "replies_received",
        (json_int_t)ag->st.replies_received, "replies_deferred",
        (json_int_t)ag->st.replies_deferred, "replies_urgent",
        (json_int_t)ag->st.replies_urgent, "wakeups_by_cause", "tick",
        (json_int_t)ag->st.wake_tick, "probe", (json_int_t)ag->st.wake_probe, "notice",
        (json_int_t)ag->st.wake_notice, "reply", (json_int_t)ag->st.wake_reply, "kernel",
        (json_int_t)ag->st.wake_kernel, "control", (json_int_t)ag->st.wake_control, "other",
        (json_int_t)ag->st.wake_other));
    json_object_update_new(o, json_pack(
        "{s:b,s:I,s:o,s:I,s:o,s:I,s:I,s:I}", "passive", ag->passive, "passive_proofs",
        (json_int_t)nproofs, "passive_proofs_per_rail", proofs, "probes_skipped",
        (json_int_t)nskipped, "probes_skipped_per_rail", skipped, "diag_dumps",
        (json_int_t)ag->st.diag_dumps, "diag_sockets", (json_int_t)ag->st.diag_sockets,
        "diag_errors", (json_int_t)ag->st.diag_errors));
    json_object_set_new(o, "neighbours_renewed", json_integer((json_int_t)ag->st.neigh_renewed));
    json_t *settled = json_array();
    uint64_t nsettled = 0;
    for (int r = 0; r < ag->nrails; r++) {
        json_array_append_new(settled, json_integer((json_int_t)ag->st.settled_rail[r]));
        nsettled += ag->st.settled_rail[r];
    }
    json_object_set_new(o, "paths_settled", json_integer((json_int_t)nsettled));
    json_object_set_new(o, "paths_settled_per_rail", settled);
    json_object_update_new(o, json_pack("{s:b,s:I,s:I,s:I,s:I}", "join_listeners",
                                        ag->join_listeners, "join_listeners_open",
                                        (json_int_t)ag->njl, "join_listeners_opened",
                                        (json_int_t)ag->jl_opened, "join_listeners_taken",
                                        (json_int_t)ag->jl_taken, "join_listeners_failed",
                                        (json_int_t)ag->jl_failed));
    return o;
}

/* ---- commands on the control socket ---- */

static json_t *status_json(agent_t *ag)
{
    json_t *conns = json_array(), *paths = json_array();
    for (int p = 0; p < ag->nnodes; p++)
        for (int r = 0; p != ag->self && r < ag->nrails; r++)
            json_array_append_new(paths, json_pack("{s:s,s:i,s:b}", "peer", ag->nodes[p].name,
                                                   "rail", r, "up", ag->ctx.path_up[p][r]));
    for (size_t i = 0; i < ag->nconn; i++) {
        mpilab_pm_conn *c = &ag->conn[i];
        char tok[16];
        snprintf(tok, sizeof(tok), "%08" PRIx32, c->token);
        json_t *subs = json_array();
        for (int k = 0; k < c->nsub; k++)
            json_array_append_new(subs, sub_json(ag, &c->sub[k]));
        json_array_append_new(conns, json_pack(
            "{s:s,s:s,s:s,s:b,s:b,s:o}", "token", tok, "peer",
            c->peer >= 0 ? ag->nodes[c->peer].name : "", "state",
            c->managed ? mpilab_pm_state_name(c->state) : "UNMANAGED", "server_side",
            c->server_side, "established", c->established, "subflows", subs));
    }
    return json_pack("{s:s,s:b,s:b,s:o,s:o,s:I,s:I,s:o}", "node", ag->node_name,
                     "auto_migrate", ag->ctx.auto_migrate, "auto_rearm", ag->ctx.auto_rearm,
                     "paths", paths, "connections", conns, "actions_failed",
                     (json_int_t)ag->actions_failed, "actions_moot",
                     (json_int_t)ag->actions_moot, "stats", stats_json(ag));
}

static json_t *request(agent_t *ag, mpilab_pm_event_kind kind, const char *target)
{
    const char *what = kind == MPILAB_PM_EV_ARM ? "arm" : "migrate";
    mpilab_pm_event ev = {.kind = kind, .now = mono()};
    char err[200];
    if (strcmp(target, "all") == 0) {
        int done = 0, refused = 0;
        json_t *errs = json_array();
        for (size_t i = 0; i < ag->nconn; i++) {
            mpilab_pm_conn *c = &ag->conn[i];
            /* `all` means every connection this agent can act on */
            if (!c->managed || !c->established || c->state == MPILAB_PM_CLOSED ||
                (kind == MPILAB_PM_EV_ARM && c->state != MPILAB_PM_MIGRATED) ||
                (kind == MPILAB_PM_EV_MIGRATE && c->state != MPILAB_PM_ARMED))
                continue;
            if (step(ag, c, &ev, err, sizeof(err)) == 0) {
                done++;
            } else if (!(kind == MPILAB_PM_EV_ARM && c->server_side)) {
                refused++;
                json_array_append_new(errs, json_string(err));
            }
        }
        log_obj(ag, "command", json_pack("{s:s,s:s,s:i,s:i}", "command", what, "target", "all",
                                         "done", done, "refused", refused));
        return json_pack("{s:b,s:i,s:i,s:o}", "ok", 1, "done", done, "refused", refused,
                         "errors", errs);
    }
    char *end;
    unsigned long t = strtoul(target, &end, 16);
    if (!*target || *end || t > 0xffffffffUL)
        return json_pack("{s:s}", "error", "expected a connection token (8 hex digits) or 'all'");
    mpilab_pm_conn *c = find_conn(ag, (uint32_t)t);
    if (!c) {
        snprintf(err, sizeof(err), "no connection with token %s on node %s", target,
                 ag->node_name);
        return json_pack("{s:s}", "error", err);
    }
    if (step(ag, c, &ev, err, sizeof(err)) != 0)
        return json_pack("{s:s}", "error", err);
    log_obj(ag, "command", json_pack("{s:s,s:s}", "command", what, "target", target));
    return json_pack("{s:b,s:i,s:s}", "ok", 1, "done", 1, "state",
                     mpilab_pm_state_name(c->state));
}

static json_t *command(agent_t *ag, char *line)
{
    char *save = NULL, *verb = strtok_r(line, " \t\r\n", &save);
    char *arg = verb ? strtok_r(NULL, " \t\r\n", &save) : NULL;
    if (!verb)
        return json_pack("{s:s}", "error", "empty command");
    if (strcmp(verb, "status") == 0)
        return status_json(ag);
    if ((strcmp(verb, "arm") == 0 || strcmp(verb, "migrate") == 0) && arg)
        return request(ag, verb[0] == 'a' ? MPILAB_PM_EV_ARM : MPILAB_PM_EV_MIGRATE, arg);
    if (strcmp(verb, "auto") == 0 && arg && (!strcmp(arg, "on") || !strcmp(arg, "off"))) {
        ag->ctx.auto_migrate = ag->ctx.auto_rearm = strcmp(arg, "on") == 0;
        log_obj(ag, "command", json_pack("{s:s,s:s}", "command", "auto", "target", arg));
        if (ag->ctx.auto_migrate)
            step_all(ag, MPILAB_PM_EV_TICK, -1);
        return json_pack("{s:b,s:b}", "ok", 1, "auto", ag->ctx.auto_migrate);
    }
    if (strcmp(verb, "stop") == 0) {
        ag->stop = 1;
        return json_pack("{s:b}", "ok", 1);
    }
    return json_pack("{s:s}", "error", "unknown command (status, arm TOKEN|all, "
                     "migrate TOKEN|all, auto on|off, stop)");
}

static void on_ctl(agent_t *ag)
{
    int fd = accept4(ag->ctl, NULL, NULL, SOCK_CLOEXEC);
    if (fd < 0)
        return;
    struct timeval tv = {2, 0};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
    char line[512];
    size_t n = 0;
    while (n + 1 < sizeof(line)) {
        ssize_t k = read(fd, line + n, sizeof(line) - 1 - n);
        if (k <= 0)
            break;
        n += (size_t)k;
        if (memchr(line, '\n', n))
            break;
    }
    line[n] = 0;
    json_t *reply = command(ag, line);
    if (ag->log) /* what the command did is in the log before the answer arrives */
        fflush(ag->log);
    char *text = json_dumps(reply, JSON_COMPACT | JSON_PRESERVE_ORDER);
    json_decref(reply);
    if (text) {
        size_t len = strlen(text), off = 0;
        while (off < len) {
            ssize_t w = write(fd, text + off, len - off);
            if (w <= 0)
                break;
            off += (size_t)w;
        }
        if (write(fd, "\n", 1) < 0) { /* client gone */ }
        free(text);
    }
    close(fd);
}

/* ---- set-up ---- */

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

static int check_kernel(char *err, size_t errlen)
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

static int find_ifaces(agent_t *ag, char *err, size_t errlen)
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
                     ip(want, a), ag->peers_path);
            freeifaddrs(ifa);
            return -1;
        }
    }
    freeifaddrs(ifa);
    return 0;
}

/* per rail: the probe socket (port: probes and notices, polled) and the reply socket
 * (port + 1: replies, read at every wake-up, see drain_replies); both stamp each datagram
 * with its arrival (SO_TIMESTAMPNS) */
static int open_udp(agent_t *ag, char *err, size_t errlen)
{
    for (int r = 0; r < ag->nrails; r++)
        ag->udp[r] = ag->rep[r] = -1;
    for (int r = 0; r < ag->nrails; r++) {
        uint32_t a = ag->nodes[ag->self].addr[r];
        if (!a)
            continue;
        for (int k = 0; k < 2; k++) {
            int port = ag->port + k;
            int fd = socket(AF_INET, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
            struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port),
                                     .sin_addr = {a}};
            int one = 1, prio = 6;
            if (fd >= 0) {
                setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
                setsockopt(fd, SOL_SOCKET, SO_PRIORITY, &prio, sizeof(prio));
                setsockopt(fd, SOL_SOCKET, SO_TIMESTAMPNS, &one, sizeof(one));
            }
            if (fd < 0 || bind(fd, (struct sockaddr *)&sa, sizeof(sa)) != 0) {
                snprintf(err, errlen, "UDP port %d on rail %d: %s", port, r, strerror(errno));
                if (fd >= 0)
                    close(fd);
                return -1;
            }
            if (k == 0)
                ag->udp[r] = fd;
            else
                ag->rep[r] = fd;
        }
    }
    return 0;
}

static int open_ctl(agent_t *ag, char *err, size_t errlen)
{
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    if (strlen(ag->ctl_path) >= sizeof(sa.sun_path)) {
        snprintf(err, errlen, "--control %s: path longer than %zu bytes", ag->ctl_path,
                 sizeof(sa.sun_path) - 1);
        return -1;
    }
    snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", ag->ctl_path);
    unlink(ag->ctl_path);
    ag->ctl = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (ag->ctl < 0 || bind(ag->ctl, (struct sockaddr *)&sa, sizeof(sa)) != 0 ||
        listen(ag->ctl, 16) != 0) {
        snprintf(err, errlen, "--control %s: %s", ag->ctl_path, strerror(errno));
        return -1;
    }
    return 0;
}

static void usage(FILE *f)
{
    fprintf(f,
            "usage: mpilab-pathmigd --node NAME --peers FILE [options]\n"
            "Path migration agent for MPTCP connections of one node (run one per node).\n"
            "  --node NAME          this node's name in FILE\n"
            "  --peers FILE         lines 'NAME ADDR_RAIL0 ADDR_RAIL1 ...' for every node\n"
            "  --control PATH       unix socket for commands (status, arm, migrate, auto, stop)\n"
            "  --log PATH           append the event log (JSON lines) here (default: stderr)\n"
            "  --pidfile PATH       write the pid once ready\n"
            "  --alt default|auto|MAP  alternate path: the next rail (default), the first\n"
            "                       healthy one (auto), or MAP lines 'PEER RAIL ALT_RAIL'\n"
            "  --manual             no automatic migration or re-arming (commands only)\n"
            "  --probe-interval MS  probe period per peer and rail, milliseconds (default 10)\n"
            "  --probe-timeout MS   path dead after this long without a reply, ms (default 50)\n"
            "  --port N             UDP port of the probes (default 47990)\n"
            "  --no-realtime        stay at normal scheduling (default: SCHED_FIFO priority 5\n"
            "                       where permitted, so a busy machine does not delay probes)\n"
            "  --no-passive         probe every path in use; by default a path whose TCP\n"
            "                       subflows show it working (tcp_info over sock_diag) is\n"
            "                       not probed while that evidence is fresh\n"
            "  --no-join-listeners  open no listeners for joins; by default, for each port a\n"
            "                       connection was accepted on, an MPTCP listener at that\n"
            "                       port on this node's other rails' addresses, where free\n"
            "                       (for applications listening on one address, as UCX)\n"
            "  -h, --help, --version\n");
}

static int parse_ms(const char *s, double lo, double hi, double *out)
{
    char *end;
    double v = strtod(s, &end);
    if (!*s || *end || !(v >= lo && v <= hi))
        return -1;
    *out = v / 1e3;
    return 0;
}

int mpilab_pathmig_agent_main(int argc, char **argv)
{
    static const struct option opts[] = {
        {"node", required_argument, NULL, 'n'}, {"peers", required_argument, NULL, 'p'},
        {"control", required_argument, NULL, 'c'}, {"log", required_argument, NULL, 'l'},
        {"pidfile", required_argument, NULL, 'P'}, {"alt", required_argument, NULL, 'a'},
        {"manual", no_argument, NULL, 'm'}, {"probe-interval", required_argument, NULL, 'i'},
        {"probe-timeout", required_argument, NULL, 't'}, {"port", required_argument, NULL, 'o'},
        {"no-realtime", no_argument, NULL, 'R'}, {"no-passive", no_argument, NULL, 'N'},
        {"no-join-listeners", no_argument, NULL, 'J'},
        {"help", no_argument, NULL, 'h'}, {"version", no_argument, NULL, 'V'},
        {NULL, 0, NULL, 0}};
    int realtime_prio = 5;
    static agent_t agent;
    agent_t *ag = &agent;
    memset(ag, 0, sizeof(*ag));
    ag->interval = 0.010;
    ag->timeout = 0.050;
    ag->port = 47990;
    ag->ctl = -1;
    ag->ctx.auto_migrate = ag->ctx.auto_rearm = 1;
    ag->passive = 1;
    ag->join_listeners = 1;
    ag->used_dirty = 1;
    ag->started = mono();
    int c;
    opterr = 0;
    optind = 1;
    while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
        char *end;
        long v;
        switch (c) {
        case 'n': ag->node_name = optarg; break;
        case 'p': ag->peers_path = optarg; break;
        case 'c': ag->ctl_path = optarg; break;
        case 'l': ag->log_path = optarg; break;
        case 'P': ag->pid_path = optarg; break;
        case 'a': ag->alt_spec = optarg; break;
        case 'm': ag->ctx.auto_migrate = ag->ctx.auto_rearm = 0; break;
        case 'i':
            if (parse_ms(optarg, 1, 10000, &ag->interval)) {
                fprintf(stderr, "mpilab-pathmigd: --probe-interval %s: expected 1..10000 ms\n",
                        optarg);
                return 2;
            }
            break;
        case 't':
            if (parse_ms(optarg, 2, 60000, &ag->timeout)) {
                fprintf(stderr, "mpilab-pathmigd: --probe-timeout %s: expected 2..60000 ms\n",
                        optarg);
                return 2;
            }
            break;
        case 'o':
            v = strtol(optarg, &end, 10);
            if (!*optarg || *end || v < 1 || v > 65534) { /* replies go to port + 1 */
                fprintf(stderr, "mpilab-pathmigd: --port %s: expected 1..65534 (replies use "
                        "the next port)\n", optarg);
                return 2;
            }
            ag->port = (int)v;
            break;
        case 'R': realtime_prio = 0; break;
        case 'N': ag->passive = 0; break;
        case 'J': ag->join_listeners = 0; break;
        case 'h': usage(stdout); return 0;
        case 'V': printf("mpilab-pathmigd %s\n", MPILAB_VERSION_STRING); return 0;
        default:
            fprintf(stderr, "mpilab-pathmigd: unknown or incomplete option '%s' (see --help)\n",
                    argv[optind - 1]);
            return 2;
        }
    }
    if (optind < argc) {
        fprintf(stderr, "mpilab-pathmigd: unexpected argument '%s'\n", argv[optind]);
        return 2;
    }
    if (!ag->node_name || !ag->peers_path) {
        fprintf(stderr, "mpilab-pathmigd: --node and --peers are required (see --help)\n");
        return 2;
    }
    if (ag->timeout < 2 * ag->interval) {
        fprintf(stderr, "mpilab-pathmigd: --probe-timeout must be at least twice "
                "--probe-interval\n");
        return 2;
    }
    char err[300];
    if (read_peers(ag, err, sizeof(err)) || read_alt(ag, err, sizeof(err)) ||
        check_kernel(err, sizeof(err)) || find_ifaces(ag, err, sizeof(err))) {
        fprintf(stderr, "mpilab-pathmigd: %s\n", err);
        return 2;
    }
    if (ag->nrails < 2) {
        fprintf(stderr, "mpilab-pathmigd: %s: one rail per node; no alternate path can exist\n",
                ag->peers_path);
        return 2;
    }
    ag->ctx.nrails = ag->nrails;
    if (ag->log_path) {
        ag->log = fopen(ag->log_path, "a");
        if (!ag->log) {
            fprintf(stderr, "mpilab-pathmigd: --log %s: %s\n", ag->log_path, strerror(errno));
            return 2;
        }
        /* a fault on hundreds of connections logs thousands of lines: one write per
         * turn of the main loop, not one per line */
        setvbuf(ag->log, NULL, _IOFBF, 1 << 18);
    } else {
        ag->log = stderr;
    }
    if (pm_nl_open(&ag->nl, err, sizeof(err)) || open_udp(ag, err, sizeof(err)) ||
        (ag->ctl_path && open_ctl(ag, err, sizeof(err)))) {
        fprintf(stderr, "mpilab-pathmigd: %s\n", err);
        return 2;
    }
    double now = mono();
    for (int p = 0; p < ag->nnodes; p++)
        for (int r = 0; r < ag->nrails; r++) {
            ag->probe[p][r].alive = 1; /* optimistic until a probe times out */
            ag->probe[p][r].last_reply = now;
        }
    refresh_paths(ag);
    pm_nl_dump_links(&ag->nl);
    struct sigaction sa;
    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = on_signal;
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);
    signal(SIGPIPE, SIG_IGN);
    json_t *nodes = json_array();
    for (int p = 0; p < ag->nnodes; p++) {
        json_t *addrs = json_array();
        char a[INET_ADDRSTRLEN];
        for (int r = 0; r < ag->nrails; r++)
            json_array_append_new(addrs, json_string(ip(ag->nodes[p].addr[r], a)));
        json_array_append_new(nodes, json_pack("{s:s,s:o}", "name", ag->nodes[p].name,
                                               "addrs", addrs));
    }
    log_obj(ag, "start", json_pack("{s:i,s:i,s:i,s:f,s:f,s:b,s:b,s:s,s:o}", "pid",
                                   (int)getpid(), "rails", ag->nrails, "nodes", ag->nnodes,
                                   "probe_interval", ag->interval, "probe_timeout",
                                   ag->timeout, "auto", ag->ctx.auto_migrate, "passive",
                                   ag->passive, "alt",
                                   ag->alt_spec ? ag->alt_spec : "default", "peers", nodes));
    if (ag->pid_path) {
        /* written to a temporary name and renamed: only onto a regular file or a new
           name (a FIFO or device would be replaced by a regular file) */
        struct stat pst;
        if (stat(ag->pid_path, &pst) == 0 && !S_ISREG(pst.st_mode)) {
            fprintf(stderr, "mpilab-pathmigd: --pidfile %s: not a regular file\n",
                    ag->pid_path);
            return 2;
        }
        char tmp[4200];
        snprintf(tmp, sizeof(tmp), "%s.tmp", ag->pid_path);
        FILE *f = fopen(tmp, "w");
        if (!f || fprintf(f, "%d\n", (int)getpid()) < 0 || fclose(f) != 0 ||
            rename(tmp, ag->pid_path) != 0) {
            fprintf(stderr, "mpilab-pathmigd: --pidfile %s: %s\n", ag->pid_path,
                    strerror(errno));
            return 2;
        }
    }
    if (realtime_prio > 0) {
        struct sched_param sp = {.sched_priority = realtime_prio};
        int ok = sched_setscheduler(0, SCHED_FIFO, &sp) == 0;
        if (ok)
            mlockall(MCL_CURRENT | MCL_FUTURE);
        log_obj(ag, "sched", json_pack("{s:s,s:i}", "policy", ok ? "fifo" : "other",
                                       "priority", ok ? realtime_prio : 0));
    }
    double next_sm = mono();
    ag->next_probe = 0;
    while (!ag->stop && !g_signal) {
        struct pollfd pf[3 + 2 * MPILAB_PM_MAX_RAILS];
        int n = 0;
        pf[n++] = (struct pollfd){pm_nl_ev_fd(&ag->nl), POLLIN, 0};
        pf[n++] = (struct pollfd){pm_nl_link_fd(&ag->nl), POLLIN, 0};
        pf[n++] = (struct pollfd){ag->ctl, POLLIN, 0};
        for (int r = 0; r < ag->nrails; r++)
            pf[n++] = (struct pollfd){ag->udp[r], POLLIN, 0};
        /* replies wake the agent only while one is urgent (a path one reply short of
         * healing, a verdict waiting for another rail's answer); otherwise they are read
         * at the next wake-up, whatever causes it (drain_replies) */
        int urgent = replies_urgent(ag);
        for (int r = 0; r < ag->nrails; r++)
            pf[n++] = (struct pollfd){urgent ? ag->rep[r] : -1, POLLIN, 0};
        now = mono();
        /* asleep until the next probe or verdict is due, or the state machines' timers */
        double wake = ag->next_probe < next_sm ? ag->next_probe : next_sm;
        int wait_ms = (int)((wake - now) * 1e3 + 0.999);
        if (wait_ms < 0)
            wait_ms = 0;
        if (ag->log)
            fflush(ag->log);
        int k = poll(pf, (nfds_t)n, wait_ms);
        if (k < 0 && errno != EINTR)
            break;
        ag->st.wakeups++;
        /* first the replies that came since the last wake-up, at their arrival: before any
         * message, command, verdict or probe schedule is looked at */
        size_t replies = drain_replies(ag, urgent);
        unsigned types = 0;
        if (k > 0) {
            if (pf[0].revents & POLLIN && pm_nl_read_events(&ag->nl, on_kernel_event, ag) < 0)
                log_obj(ag, "error", json_pack("{s:s}", "what",
                                                "MPTCP events lost (netlink overrun)"));
            if (pf[1].revents & POLLIN)
                pm_nl_read_links(&ag->nl, on_link, ag);
            if (pf[2].revents & POLLIN)
                on_ctl(ag);
            for (int r = 0; r < ag->nrails; r++)
                if (pf[3 + r].revents & POLLIN)
                    types |= on_udp(ag, r);
        }
        now = mono();
        int reply_woke = 0;
        for (int r = 0; urgent && r < ag->nrails; r++)
            reply_woke |= pf[3 + ag->nrails + r].revents & POLLIN;
        if (k > 0 && (pf[0].revents | pf[1].revents) & POLLIN)
            ag->st.wake_kernel++;
        else if (k > 0 && pf[2].revents & POLLIN)
            ag->st.wake_control++;
        else if (types & 1u << MSG_DOWN)
            ag->st.wake_notice++;
        else if (types & 1u << MSG_PROBE)
            ag->st.wake_probe++;
        else if (reply_woke || types & 1u << MSG_REPLY)
            ag->st.wake_reply++;
        else if (k == 0)
            ag->st.wake_tick++;
        else
            ag->st.wake_other++;
        /* a message moves the deadlines (a reply postpones a verdict; the decider's probe
         * a follower's own probe): recomputed after every wake-up, sending nothing early */
        if (now >= ag->next_probe) {
            ag->st.ticks++;
            ag->next_probe = probe_tick(ag, now);
        } else if (k > 0 && ag->next_probe <= now + ag->interval / 4) {
            /* awake anyway (a peer's probe, an event) with our own round due within a
             * quarter period: run it now (probe_tick sends what is due within a quarter
             * period and judges only what is due), saving that wake-up; the rounds of
             * agents that probe each other lock onto one phase */
            ag->st.ticks++;
            ag->st.ticks_early++;
            ag->next_probe = probe_tick(ag, now);
        } else if (k > 0 || replies > 0) {
            ag->next_probe = probe_deadline(ag);
        }
        if (now >= next_sm) {
            retry_run(ag, now);
            step_all(ag, MPILAB_PM_EV_TICK, -1);
            for (size_t i = ag->nconn; i-- > 0;)
                if (ag->conn[i].state == MPILAB_PM_CLOSED)
                    forget_conn(ag, &ag->conn[i]);
            next_sm = now + SM_TICK;
        }
    }
    json_t *stats = stats_json(ag);
    json_object_set_new(stats, "why", json_string(g_signal ? "signal" : "stop command"));
    log_obj(ag, "stop", stats);
    if (ag->ctl_path)
        unlink(ag->ctl_path);
    if (ag->pid_path)
        unlink(ag->pid_path);
    if (ag->log && ag->log != stderr)
        fclose(ag->log);
    pm_nl_close(&ag->nl);
    for (size_t i = 0; i < ag->njl; i++)
        joinl_close(&ag->jl[i]);
    free(ag->jl);
    batch_free(&ag->batch);
    free(ag->conn);
    free(ag->seen);
    free(ag->seen_next);
    free(ag->q);
    return 0;
}
