/* The path migration agent's connections: each MPTCP connection's state machine
 * (pm_sm.c) driven by events, its actions carried out in batches over netlink, and the
 * priority changes tried again. */
#include "pathmig/pm_agent.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

mpilab_pm_conn *pma_find_conn(agent_t *ag, uint32_t token)
{
    for (size_t i = 0; i < ag->nconn; i++)
        if (ag->conn[i].token == token)
            return &ag->conn[i];
    return NULL;
}

mpilab_pm_conn *pma_new_conn(agent_t *ag, uint32_t token, int server_side, uint32_t raddr)
{
    if (ag->nconn == ag->capconn) {
        size_t cap = ag->capconn ? 2 * ag->capconn : 64;
        mpilab_pm_conn *c = realloc(ag->conn, cap * sizeof(*c));
        if (!c)
            return NULL;
        ag->conn = c;
        ag->capconn = cap;
    }
    int rail = -1, peer = pma_locate(ag, raddr, &rail);
    int managed = peer >= 0 && peer != ag->self && ag->nrails > 1;
    mpilab_pm_conn *c = &ag->conn[ag->nconn++];
    mpilab_pm_conn_init(c, token, server_side, managed, managed ? peer : -1);
    ag->used_dirty = 1;
    if (managed && ag->conns_to[peer]++ == 0) {
        /* switch to fast probing: the timeout counts from now, probe at once */
        double now = pma_mono();
        for (int r = 0; r < ag->nrails; r++) {
            ag->probe[peer][r].fast_since = now;
            ag->probe[peer][r].last_sent = 0;
        }
        ag->next_probe = 0;
    }
    return c;
}

void pma_forget_conn(agent_t *ag, mpilab_pm_conn *c)
{
    pma_joinl_release(ag, c);
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
        static const char *const names[] = {"create", "set_backup", "destroy"};
        json_t *sub = pma_sub_json(ag, &b->sub[i]);
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
        pma_log_obj(ag, "action", o);
        if (m->rc == 0 || unlisted || c->state == MPILAB_PM_CLOSED)
            continue;
        if (gone) {
            /* the kernel no longer knows the connection (closed, or fell back to TCP,
             * without an event we saw): forget it at the next tick */
            pma_log_transition(ag, c, c->state, MPILAB_PM_CLOSED, "unknown to the kernel");
            c->state = MPILAB_PM_CLOSED;
        } else if (m->kind == PM_NL_CREATE) {
            mpilab_pm_event ev = {.kind = not_ready ? MPILAB_PM_EV_LOAD_NOT_READY
                                                    : MPILAB_PM_EV_LOAD_FAILED,
                                  .now = now};
            mpilab_pm_result r2;
            mpilab_pm_step(&ag->ctx, c, &ev, &r2);
            ag->used_dirty = 1;
            if (r2.from != r2.to)
                pma_log_transition(ag, c, r2.from, r2.to, r2.cause);
        }
    }
    b->n = 0;
}

void pma_batch_free(batch_t *b)
{
    free(b->cmd);
    free(b->conn);
    free(b->tries);
    free(b->sub);
    memset(b, 0, sizeof(*b));
}

/* run one event through a connection's state machine, log the transition, act */
int pma_step(agent_t *ag, mpilab_pm_conn *c, const mpilab_pm_event *ev, char *err,
             size_t errlen)
{
    mpilab_pm_result res;
    int rc = mpilab_pm_step(&ag->ctx, c, ev, &res);
    ag->used_dirty = 1; /* a kernel event or a command: the subflows may have changed */
    if (rc != 0 && err)
        snprintf(err, errlen, "%s", res.err);
    if (res.from != res.to)
        pma_log_transition(ag, c, res.from, res.to, res.cause);
    batch_t b = {0};
    add_results(&b, ag, (size_t)(c - ag->conn), &res);
    batch_run(ag, &b, ev->now);
    pma_batch_free(&b);
    return rc;
}

/* one event for every managed connection (of one peer): their actions in one batch */
void pma_step_all(agent_t *ag, mpilab_pm_event_kind kind, int only_peer)
{
    batch_t *b = &ag->batch;
    mpilab_pm_event ev = {.kind = kind, .now = pma_mono()};
    for (size_t i = 0; i < ag->nconn; i++) {
        mpilab_pm_conn *c = &ag->conn[i];
        if (!c->managed || (only_peer >= 0 && c->peer != only_peer))
            continue;
        mpilab_pm_result res;
        mpilab_pm_step(&ag->ctx, c, &ev, &res);
        if (res.from != res.to || res.nact > 0)
            ag->used_dirty = 1; /* a transition or action changes the subflows */
        if (res.from != res.to)
            pma_log_transition(ag, c, res.from, res.to, res.cause);
        add_results(b, ag, i, &res);
    }
    batch_run(ag, b, ev.now);
}

/* the priority changes refused for a subflow the kernel did not list yet, once more */
void pma_retry_run(agent_t *ag, double now)
{
    if (!ag->nretry)
        return;
    setb_retry_t todo[SETB_MAX];
    size_t n = ag->nretry;
    memcpy(todo, ag->retry, n * sizeof(todo[0]));
    ag->nretry = 0;
    batch_t *b = &ag->batch;
    for (size_t i = 0; i < n; i++) {
        mpilab_pm_conn *c = pma_find_conn(ag, todo[i].token);
        if (!c || c->state == MPILAB_PM_CLOSED)
            continue; /* gone meanwhile: nothing to change */
        mpilab_pm_action a = {.kind = MPILAB_PM_ACT_SET_BACKUP, .sub = todo[i].sub,
                              .backup = todo[i].backup};
        batch_add(b, ag, (size_t)(c - ag->conn), &a, todo[i].tries);
    }
    batch_run(ag, b, now);
}
