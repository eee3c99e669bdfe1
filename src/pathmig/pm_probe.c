/* The path migration agent's probes: UDP probes, replies and notices between agents, who
 * decides a path's fate, each path's probe schedule and the verdicts on silent paths. */
#include "pathmig/pm_agent.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

void pma_refresh_paths(agent_t *ag)
{
    for (int p = 0; p < ag->nnodes; p++)
        for (int r = 0; r < ag->nrails; r++)
            ag->ctx.path_up[p][r] = (unsigned char)(p != ag->self && ag->link_ok[r] &&
                                                    ag->probe[p][r].alive &&
                                                    ag->nodes[p].addr[r] != 0);
}

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
int pma_decides(const agent_t *ag, int peer) { return ag->self < peer; }

static unsigned view_bits(const agent_t *ag, int peer)
{
    unsigned bits = 0;
    for (int r = 0; r < ag->nrails; r++)
        if (ag->probe[peer][r].alive)
            bits |= 1u << r;
    return bits;
}

static void send_msg(agent_t *ag, int rail, int peer, int type, int about_rail, uint32_t seq,
                     int evidence)
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
    m[MSG_EVIDENCE] = (unsigned char)(evidence != 0);
    if (type == MSG_PROBE) { /* the reply that echoes seq times the path's round trip */
        ag->probe[peer][rail].probe_seq = seq;
        ag->probe[peer][rail].probe_at = pma_mono();
    }
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

void pma_send_msg(agent_t *ag, int rail, int peer, int type, int about_rail, uint32_t seq)
{
    send_msg(ag, rail, peer, type, about_rail, seq, 0);
}

static void path_event(agent_t *ag, int peer, int rail, int up, const char *cause)
{
    pma_log_obj(ag, "path", json_pack("{s:s,s:i,s:b,s:s}", "peer", ag->nodes[peer].name, "rail",
                                      rail, "up", up, "cause", cause));
}

/* tell a peer (or every peer), over every other rail, that our path on `rail` is dead
 * (`evidence`: judged so by mpilab_pm_judge; 0: its link went down here) */
void pma_notify_down(agent_t *ag, int rail, int only_peer, int evidence)
{
    for (int p = 0; p < ag->nnodes; p++) {
        if (p == ag->self || (only_peer >= 0 && p != only_peer))
            continue;
        for (int r = 0; r < ag->nrails; r++)
            if (r != rail && ag->link_ok[r])
                for (int k = 0; k < 2; k++)
                    send_msg(ag, r, p, MSG_DOWN, rail, 0, evidence);
    }
}

void pma_set_alive(agent_t *ag, int p, int r, int alive, const char *cause)
{
    probe_t *pr = &ag->probe[p][r];
    pr->good = 0;
    if (pr->alive == alive)
        return;
    pr->alive = alive;
    if (alive)
        pr->told_dead = 0;
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
    if (type == MSG_REPLY) {
        ag->st.replies_received++;
        if (get32(m + 8) == pr->probe_seq && arrived >= pr->probe_at && pr->probe_at > 0) {
            mpilab_pm_rtt_add(&pr->rtt, arrived - pr->probe_at);
            pr->probe_at = 0; /* one sample per probe */
        }
    }
    if ((type == MSG_PROBE || type == MSG_REPLY) && now > pr->last_reply)
        pr->last_reply = now; /* any message proves the path works both ways... */
    if (type == MSG_PROBE)
        pma_send_msg(ag, rail, p, MSG_REPLY, rail, get32(m + 8));
    if ((type == MSG_PROBE || type == MSG_REPLY) && !pma_decides(ag, p)) {
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
                pma_set_alive(ag, p, r, up, up ? "peer sees the path again"
                                           : "peer judged the path dead");
                changed = 1;
            }
        }
    } else if (type == MSG_REPLY && now >= pr->hold_until && !pr->alive &&
               (pr->dead_at <= 0 || now >= pr->dead_at + ag->hold_down) &&
               ++pr->good >= GOOD_REPLIES) {
        pma_set_alive(ag, p, rail, 1, "probe replies resumed");
        changed = 1;
    } else if (type == MSG_DOWN && about < ag->nrails) {
        ag->probe[p][about].hold_until = now + ag->timeout;
        if (ag->probe[p][about].alive) {
            /* the peer's verdict on evidence is held down as ours is; its link going down
               is not (the path is used again as soon as it answers) */
            ag->probe[p][about].dead_at = m[MSG_EVIDENCE] ? now : 0;
            pma_set_alive(ag, p, about, 0, pma_decides(ag, p) ? "peer reported the path dead"
                                                      : "peer judged the path dead");
            changed = 1;
        }
    }
    if (changed) {
        if (pma_decides(ag, p)) /* our new view reaches the peer ahead of any join */
            for (int r = 0; r < ag->nrails; r++)
                pma_send_msg(ag, r, p, MSG_PROBE, r, ++ag->probe[p][r].seq);
        pma_refresh_paths(ag);
        pma_step_all(ag, MPILAB_PM_EV_PATH, p);
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
unsigned pma_on_udp(agent_t *ag, int rail)
{
    unsigned char m[64];
    unsigned types = 0;
    for (;;) {
        int has;
        double stamp;
        ssize_t n = recv_stamped(ag->udp[rail], m, sizeof(m), &has, &stamp);
        if (n < 0)
            return types;
        double now = pma_mono();
        types |= 1u << on_msg(ag, rail, m, n, now,
                              mpilab_pm_rx_time(has, stamp, now - pma_realtime(), 0, now));
    }
}

/* Read every reply queued on the reply sockets (port + 1), each at its kernel receive
 * stamp (SO_TIMESTAMPNS, CLOCK_REALTIME, converted to the monotonic clock by an offset read
 * now; mpilab_pm_rx_time). Called at every wake-up before anything else, so before any
 * verdict or probe schedule is evaluated: a path's last reply is when the reply arrived,
 * as if it had woken the agent. `urgent`: the sockets were polled (their replies counted
 * as urgent, not deferred). Returns the number of replies read. */
size_t pma_drain_replies(agent_t *ag, int urgent)
{
    double lo = ag->drained_at, hi = pma_mono();
    double off = hi - pma_realtime();
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
int pma_replies_urgent(const agent_t *ag)
{
    for (int p = 0; p < ag->nnodes; p++)
        for (int r = 0; p != ag->self && r < ag->nrails; r++) {
            const probe_t *pr = &ag->probe[p][r];
            if (mpilab_pm_reply_urgent(pma_decides(ag, p), pr->alive, pr->good, GOOD_REPLIES,
                                       pr->suspect))
                return 1;
        }
    return 0;
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

/* what the verdict on path (p, r) rests on at `now` (freshest: the latest sign of life on
 * another live rail to p); the kernel's view only if the last dump listed the path's
 * subflows (it is made before any verdict is due: pma_dump_needed) */
static void evidence_of(const agent_t *ag, int p, int r, const sched_t *d, double now,
                        double freshest, mpilab_pm_evidence *ev)
{
    const probe_t *pr = &ag->probe[p][r];
    memset(ev, 0, sizeof(*ev));
    ev->now = now;
    ev->since = d->since;
    ev->awake_since = ag->awake_since;
    ev->limit = d->limit;
    ev->interval = ag->interval;
    ev->freshest = freshest;
    ev->probe_rtt = &pr->rtt;
    ev->recovered = ag->recovered[p][0] > ag->recovered[p][1] ? ag->recovered[p][0]
                                                               : ag->recovered[p][1];
    for (int k = 0; k < ag->nrails; k++)
        if (k != r && ag->probe[p][k].alive && ag->probe[p][k].back_at > ev->back_at)
            ev->back_at = ag->probe[p][k].back_at;
    if (ag->passive && pr->settle_dump == ag->st.diag_dumps && pr->kernel.nsub > 0) {
        ev->kernel = &pr->kernel;
        ev->kernel_at = pr->kernel_at;
    }
}

void pma_path_schedule(agent_t *ag, int p, int r, sched_t *d)
{
    const probe_t *pr = &ag->probe[p][r];
    const unsigned *used = pma_paths_in_use(ag);
    memset(d, 0, sizeof(*d));
    d->active = ag->nodes[p].addr[r] && ag->udp[r] >= 0;
    d->used = used[p] >> r & 1u;
    int fast = ag->conns_to[p] > 0 && (d->used || !pr->alive);
    d->iv = fast ? ag->interval : ag->interval * SLOW_FACTOR;
    d->limit = fast ? ag->timeout : ag->timeout * SLOW_FACTOR;
    int dec = pma_decides(ag, p);
    double proof = pr->alive ? pr->last_proof : 0;
    d->due = mpilab_pm_probe_due(dec, pr->last_sent, pr->last_reply, proof, d->iv);
    d->due_blind = mpilab_pm_probe_due(dec, pr->last_sent > pr->last_skip ? pr->last_sent
                                                                          : pr->last_skip,
                                       pr->last_reply, 0, d->iv);
    d->since = path_since(pr);
    /* the timeout adapts to the measured round trips (mpilab_pm_path_timeout), and the
       silence counts only while the agent's own loop ran on time */
    mpilab_pm_evidence ev;
    evidence_of(ag, p, r, d, 0, 0, &ev);
    d->timeout = mpilab_pm_path_timeout(&ev);
    d->verdict = pr->alive ? (d->since > ag->awake_since ? d->since : ag->awake_since) +
                                 d->timeout
                           : NEVER;
    /* the follower confirms too: a settled path (pma_settle_paths) is not probed by the
     * decider, so when the follower's own data stalls on it the follower alone notices,
     * and its verdict needs a fresh answer on another rail. It waits half a period past
     * its own first probe, which its dumps of a settled path always precede */
    d->confirm = ag->conns_to[p] > 0 && d->used && pr->alive
                     ? d->since + (dec ? CONFIRM_AFTER : MPILAB_PM_FOLLOW_FACTOR + 0.5) *
                                      ag->interval
                     : NEVER;
}

/* A silence on a live path that ended with a sign of life (a reply, a proof): the path was
 * slow, not dead, for that long (a stalled machine, a congested network). Any path silent
 * for two of its own periods and back marks when it came back (back_at: the verdicts on the
 * peer's other paths count their silence from then at the earliest); on a path in use, the
 * longest such silence in the last one or two RECOVERY_WINDOWs stretches the peer's
 * timeouts (mpilab_pm_judge's `recovered`). */
#define RECOVERY_WINDOW 15.0

static void note_recovery(agent_t *ag, int p, int r, const sched_t *d, double now)
{
    probe_t *pr = &ag->probe[p][r];
    mpilab_pm_seen prev = pr->seen;
    double watch = pma_decides(ag, p) ? d->iv : MPILAB_PM_FOLLOW_FACTOR * d->iv;
    pr->seen = (mpilab_pm_seen){.since = d->since, .heard = heard(pr) >= d->since,
                                .period = d->iv, .watch = watch, .used = d->used};
    if (now - ag->recovered_at[p] > RECOVERY_WINDOW) {
        ag->recovered[p][1] = ag->recovered[p][0];
        ag->recovered[p][0] = 0;
        ag->recovered_at[p] = now;
    }
    double kstall = pr->stall_dumps ? pr->stall : -1;
    if (pr->seen.since > prev.since) { /* a new silence begins: the kernel's view of it */
        pr->stall = 0;
        pr->stall_dumps = 0;
    }
    if (!pr->alive)
        return;
    int back;
    double gap = mpilab_pm_recovery(&prev, &pr->seen, ag->interval, kstall, &back);
    if (back)
        pr->back_at = d->since;
    if (gap > ag->recovered[p][0]) {
        ag->recovered[p][0] = gap;
        if (gap > d->timeout / MPILAB_PM_RECOVERED_FACTOR)
            pma_log_obj(ag, "recovered",
                        json_pack("{s:s,s:i,s:f,s:s,s:i,s:f}", "peer", ag->nodes[p].name,
                                  "rail", r, "silent_ms", gap * 1e3, "ended_by",
                                  pr->last_reply >= pr->last_proof ? "message" : "proof",
                                  "at_stake", pr->kernel.at_stake,
                                  "kernel_stall_ms", kstall * 1e3));
    }
}

/* The verdict on a live path whose silence outlasted its timeout (mpilab_pm_judge): dead
 * only on evidence a starved agent cannot fake; otherwise it waits (replies wake the agent
 * while it does: another rail's answer may complete the evidence). The decider acts on
 * its verdict and tells the peer; the follower tells the decider, which acts on it.
 * Returns 1 when the path was judged dead here. */
static int judge(agent_t *ag, int p, int r, const sched_t *d, double now, double freshest,
                 double *next)
{
    probe_t *pr = &ag->probe[p][r];
    mpilab_pm_evidence ev;
    mpilab_pm_verdict v;
    evidence_of(ag, p, r, d, now, freshest, &ev);
    mpilab_pm_judge(&ev, &v);
    if (v.kind != MPILAB_PM_V_DEAD) {
        if (v.kind == MPILAB_PM_V_WAIT) {
            pr->suspect = 1;
            ag->st.verdicts_waited++;
        }
        if (v.recheck < *next)
            *next = v.recheck > now ? v.recheck : now + ag->interval / 2;
        return 0;
    }
    int dec = pma_decides(ag, p);
    if (!dec && pr->told_dead && now - pr->hold_until <= d->limit)
        return 0; /* told the decider already; again after a while if it stays alive */
    pma_log_obj(ag, "verdict", json_pack("{s:s,s:i,s:s,s:f,s:f,s:s}", "peer", ag->nodes[p].name,
                                         "rail", r, "verdict", "dead", "silent_ms",
                                         (now - d->since) * 1e3, "timeout_ms", v.timeout * 1e3,
                                         "evidence", v.why));
    pma_notify_down(ag, r, p, 1);
    if (!dec) {
        pr->told_dead = 1;
        pr->hold_until = now;
        return 0;
    }
    pma_set_alive(ag, p, r, 0, "probe timeout");
    pr->dead_at = now;
    return 1;
}

/* Send the probes that are due (and those due within a quarter period, so that one
 * wake-up serves every path), confirm alternates, judge paths silent for too long;
 * returns when the next probe or verdict is due. */
double pma_probe_tick(agent_t *ag, double now)
{
    int changed = 0;
    double next = now + SM_TICK;
    sched_t d;
    if (pma_dump_needed(ag, now))
        pma_diag_dump(ag, now);
    for (int p = 0; p < ag->nnodes; p++) {
        if (p == ag->self)
            continue;
        int confirm = 0;
        double freshest = 0; /* the latest sign of life on any rail that is alive */
        for (int r = 0; r < ag->nrails; r++) {
            pma_path_schedule(ag, p, r, &d);
            note_recovery(ag, p, r, &d, now); /* before any verdict of this round */
            if (d.confirm <= now)
                confirm = 1;
            if (ag->probe[p][r].alive && heard(&ag->probe[p][r]) > freshest)
                freshest = heard(&ag->probe[p][r]);
        }
        for (int r = 0; r < ag->nrails; r++) {
            probe_t *pr = &ag->probe[p][r];
            pma_path_schedule(ag, p, r, &d);
            if (!d.active)
                continue;
            int idle_alt = confirm && !d.used;
            if (d.due <= now + d.iv / 4 ||
                (idle_alt && now - pr->last_sent >= ag->interval)) {
                pma_send_msg(ag, r, p, MSG_PROBE, r, ++pr->seq);
                pr->last_sent = now;
            } else if (d.due_blind <= now + d.iv / 4) {
                /* a probe that only the passive proof made unnecessary */
                ag->st.skipped_rail[r]++;
                pr->last_skip = now;
            }
            pma_path_schedule(ag, p, r, &d);
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
                if (now > d.since + d.timeout && pr->rearmed_for != d.since) {
                    /* silent long enough, but the agent itself was late meanwhile */
                    pr->rearmed_for = d.since;
                    ag->st.verdicts_rearmed++;
                }
                continue;
            }
            if (ag->done) /* the job is done: no verdicts (command "done") */
                continue;
            if (judge(ag, p, r, &d, now, freshest, &next))
                changed = 1;
        }
    }
    if (changed) {
        pma_refresh_paths(ag);
        pma_step_all(ag, MPILAB_PM_EV_PATH, -1);
    }
    return next;
}

/* pma_probe_tick's next deadline without acting (after a message moved it) */
double pma_probe_deadline(agent_t *ag)
{
    double now = pma_mono(), next = now + SM_TICK;
    for (int p = 0; p < ag->nnodes; p++) {
        if (p == ag->self)
            continue;
        for (int r = 0; r < ag->nrails; r++) {
            sched_t d;
            pma_path_schedule(ag, p, r, &d);
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

/* per rail: the probe socket (port: probes and notices, polled) and the reply socket
 * (port + 1: replies, read at every wake-up, see pma_drain_replies); both stamp each datagram
 * with its arrival (SO_TIMESTAMPNS) */
int pma_open_udp(agent_t *ag, char *err, size_t errlen)
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
