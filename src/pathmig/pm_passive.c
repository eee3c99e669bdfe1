/* The path migration agent's passive liveness: the kernel's counters of the primary TCP
 * subflows on the paths in use (sock_diag lookups) prove a path alive without a probe. */
#include "pathmig/pm_agent.h"

#include <stdlib.h>
#include <string.h>

/* Which paths carry traffic: a bit per rail and peer, set when some managed connection
 * to that peer has its primary (non-backup) subflow to the peer's address on that rail.
 * Cached: recomputed only after a connection or one of its subflows changed (used_dirty,
 * set where the state machines run and where connections come and go). */
const unsigned *pma_paths_in_use(agent_t *ag)
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
        mpilab_pm_path_kernel_reset(&pr->kernel);
        pr->kernel_at = dc->now;
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
                                    t->last_data_recv_ms, t->unacked, t->notsent, t->rtt_us,
                                    t->rttvar_us, t->rto_us, t->retransmits, t->backoff};
    mpilab_pm_path_kernel_add(&pr->kernel, &cur->s); /* the verdict's kernel evidence */
    const tcp_seen_t *prev = ag->nseen ? bsearch(cur, ag->seen, ag->nseen, sizeof(*cur),
                                                 seen_cmp)
                                       : NULL;
    double t_proof = mpilab_pm_tcp_proof(prev ? &prev->s : NULL, &cur->s, ag->last_dump,
                                         dc->now, !pma_decides(ag, p));
    if (t_proof > 0 && pr->proof_dump != ag->st.diag_dumps) { /* once per path and dump */
        ag->st.proofs_rail[r]++;
        pr->proof_dump = ag->st.diag_dumps;
    }
    if (t_proof > pr->last_proof)
        pr->last_proof = t_proof;
    if (mpilab_pm_tcp_settled(prev ? &prev->s : NULL, &cur->s, !pma_decides(ag, p)))
        pr->unsettled--;
}

/* After a dump: a live path in use whose every primary subflow the dump listed was
 * settled (mpilab_pm_tcp_settled: nothing at stake) needs no probe now; it counts as
 * proven at this dump. One unsettled subflow (data unacknowledged, or arriving to the
 * decider) and the path is judged by acknowledgements and probes as before. */
static void pma_settle_paths(agent_t *ag, double now)
{
    const unsigned *used = pma_paths_in_use(ag);
    for (int p = 0; p < ag->nnodes; p++)
        for (int r = 0; p != ag->self && r < ag->nrails; r++) {
            probe_t *pr = &ag->probe[p][r];
            if (pr->settle_dump == ag->st.diag_dumps) { /* what a recovery may learn */
                pr->stall_dumps++;
                if (pr->kernel.at_stake && pr->kernel.ack_age > pr->stall)
                    pr->stall = pr->kernel.ack_age;
            }
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
 * LOOKUP_MAX such subflows passive liveness is off (pma_dump_needed) and probes alone judge:
 * the lookups of hundreds of subflows every period would cost more than the probes they
 * save. A failure is logged once; probing then goes on alone. */
#define LOOKUP_MAX 64

void pma_diag_dump(agent_t *ag, double now)
{
    char err[200];
    dump_ctx dc = {ag, now};
    ag->nseen_next = 0;
    ag->st.diag_dumps++; /* numbers this dump for on_tcp */
    pma_paths_in_use(ag);
    int n = pm_nl_query_tcp(&ag->nl, ag->q, ag->nq, on_tcp, &dc, err, sizeof(err));
    if (n < 0) {
        ag->st.diag_errors++;
        ag->nseen = 0; /* no baseline: the next dump proves nothing, only sets it */
        if (!ag->diag_failed) {
            ag->diag_failed = 1;
            pma_log_obj(ag, "error", json_pack("{s:s,s:s}", "what", "passive liveness", "error",
                                            err));
        }
        ag->last_dump = now;
        return;
    }
    pma_settle_paths(ag, now);
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
int pma_dump_needed(agent_t *ag, double now)
{
    if (!ag->passive)
        return 0;
    pma_paths_in_use(ag);
    if (ag->nq > LOOKUP_MAX)
        return 0;
    int want = 0;
    for (int p = 0; p < ag->nnodes; p++) {
        if (p == ag->self || ag->conns_to[p] <= 0)
            continue;
        for (int r = 0; r < ag->nrails; r++) {
            sched_t d;
            pma_path_schedule(ag, p, r, &d);
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
