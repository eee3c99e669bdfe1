/* The per-connection path migration state machine (pure: no I/O). See pathmig.h. */
#include "mpilab/pathmig.h"

#include <stdio.h>
#include <string.h>

/* a requested alternate that has not been established this long is given up (and retried
 * at the next opportunity): a join SYN into a dead path is retried by the kernel for
 * much longer */
#define LOAD_TIMEOUT_S 3.0
/* pause between automatic load attempts after one failed */
#define LOAD_RETRY_S 1.0
/* ...and after the kernel answered ENOTCONN: an MPTCP connection takes joins only once it
 * is fully established (the first data acknowledged at the MPTCP level), which follows the
 * ESTABLISHED event by a round trip or two when the application sends at once */
#define LOAD_SOON_S 0.05

const char *mpilab_pm_state_name(mpilab_pm_state s)
{
    switch (s) {
    case MPILAB_PM_MIGRATED: return "MIGRATED";
    case MPILAB_PM_REARM: return "REARM";
    case MPILAB_PM_ARMED: return "ARMED";
    case MPILAB_PM_CLOSED: return "CLOSED";
    }
    return "?";
}

void mpilab_pm_conn_init(mpilab_pm_conn *c, uint32_t token, int server_side, int managed,
                         int peer)
{
    memset(c, 0, sizeof(*c));
    c->token = token;
    c->server_side = server_side;
    c->managed = managed;
    c->peer = peer;
    c->state = MPILAB_PM_MIGRATED;
    c->loading_rail = -1;
    c->armed_rail = -1;
}

static int rail_ok(int r) { return r >= 0 && r < MPILAB_PM_MAX_RAILS; }

static int path_ok(const mpilab_pm_ctx *ctx, const mpilab_pm_conn *c, const mpilab_pm_subflow *s)
{
    if (c->peer < 0 || c->peer >= MPILAB_PM_MAX_PEERS || !rail_ok(s->rrail) || !rail_ok(s->lrail))
        return 0;
    return ctx->path_up[c->peer][s->rrail] != 0;
}

int mpilab_pm_alternate(const mpilab_pm_ctx *ctx, int peer, int primary_rail)
{
    if (peer < 0 || peer >= MPILAB_PM_MAX_PEERS || !rail_ok(primary_rail))
        return -1;
    if (ctx->alt_auto) {
        for (int k = 1; k < ctx->nrails; k++) {
            int r = (primary_rail + k) % ctx->nrails;
            if (ctx->path_up[peer][r])
                return r;
        }
        return -1;
    }
    int r = ctx->alt_rail[peer][primary_rail];
    if (!rail_ok(r) || r >= ctx->nrails || r == primary_rail || !ctx->path_up[peer][r])
        return -1;
    return r;
}

static int same_subflow(const mpilab_pm_subflow *a, const mpilab_pm_subflow *b)
{
    return a->laddr == b->laddr && a->raddr == b->raddr && a->lport == b->lport &&
           a->rport == b->rport;
}

static int find_sub(const mpilab_pm_conn *c, const mpilab_pm_subflow *s)
{
    for (int i = 0; i < c->nsub; i++)
        if (same_subflow(&c->sub[i], s))
            return i;
    return -1;
}

static void drop_sub(mpilab_pm_conn *c, int i)
{
    c->sub[i] = c->sub[c->nsub - 1];
    c->nsub--;
}

static void add_action(mpilab_pm_result *res, mpilab_pm_action_kind kind,
                       const mpilab_pm_subflow *s, int backup)
{
    if (res->nact >= MPILAB_PM_MAX_ACTIONS)
        return;
    mpilab_pm_action *a = &res->act[res->nact++];
    a->kind = kind;
    a->sub = *s;
    a->backup = backup;
}

static void go(mpilab_pm_conn *c, mpilab_pm_result *res, mpilab_pm_state to, const char *cause)
{
    if (c->state == to)
        return;
    if (res->from == res->to) /* first transition of this step */
        res->from = c->state;
    c->state = to;
    res->to = to;
    res->cause = cause;
}

/* a transition whose cause names a rail: "<what> (rail R)<rest>" */
static void go_rail(mpilab_pm_conn *c, mpilab_pm_result *res, mpilab_pm_state to,
                    const char *what, int rail, const char *rest)
{
    if (c->state == to)
        return;
    if (rail >= 0)
        snprintf(res->cause_buf, sizeof(res->cause_buf), "%s (rail %d)%s", what, rail, rest);
    else
        snprintf(res->cause_buf, sizeof(res->cause_buf), "%s%s", what, rest);
    go(c, res, to, res->cause_buf);
}

/* the primary: an established non-backup subflow, preferring one on a healthy path */
static int primary_of(const mpilab_pm_ctx *ctx, const mpilab_pm_conn *c)
{
    int best = -1;
    for (int i = 0; i < c->nsub; i++) {
        if (!c->sub[i].established || c->sub[i].backup)
            continue;
        if (best < 0 || (!path_ok(ctx, c, &c->sub[best]) && path_ok(ctx, c, &c->sub[i])))
            best = i;
    }
    return best;
}

/* a loaded alternate: an established backup subflow on a healthy path other than the
 * primary's rail */
static int alternate_of(const mpilab_pm_ctx *ctx, const mpilab_pm_conn *c, int primary)
{
    for (int i = 0; i < c->nsub; i++) {
        const mpilab_pm_subflow *s = &c->sub[i];
        if (!s->established || !s->backup || !path_ok(ctx, c, s))
            continue;
        if (primary >= 0 && s->rrail == c->sub[primary].rrail)
            continue;
        return i;
    }
    return -1;
}

static int has_rail(const mpilab_pm_conn *c, int rail)
{
    for (int i = 0; i < c->nsub; i++)
        if (c->sub[i].rrail == rail)
            return 1;
    return 0;
}

/* try to load an alternate: returns 1 when a subflow creation was requested */
static int load_alternate(const mpilab_pm_ctx *ctx, mpilab_pm_conn *c, mpilab_pm_result *res,
                          int primary, double now, int user)
{
    if (c->server_side || primary < 0 || c->loading_rail >= 0 || (!user && now < c->next_load))
        return 0;
    int alt = mpilab_pm_alternate(ctx, c->peer, c->sub[primary].rrail);
    if (alt < 0 || has_rail(c, alt))
        return 0;
    mpilab_pm_subflow s;
    memset(&s, 0, sizeof(s));
    s.lrail = alt;
    s.rrail = alt;
    s.backup = 1;
    add_action(res, MPILAB_PM_ACT_CREATE, &s, 1);
    c->loading_rail = alt;
    c->loading_since = now;
    return 1;
}

/* The subflow bookkeeping of a kernel event or a load result. Returns 1 when the
 * connection closed (nothing more to decide). */
static int track(mpilab_pm_conn *c, const mpilab_pm_event *ev, mpilab_pm_result *res)
{
    int i;
    switch (ev->kind) {
    case MPILAB_PM_EV_ESTABLISHED:
        c->established = 1;
        /* the event names the initial subflow */
        __attribute__((fallthrough));
    case MPILAB_PM_EV_SUB_ESTABLISHED:
        i = find_sub(c, &ev->sub);
        if (i < 0 && c->nsub < MPILAB_PM_MAX_SUBFLOWS)
            i = c->nsub++;
        if (i >= 0) {
            c->sub[i] = ev->sub;
            c->sub[i].established = 1;
            /* the kernel reports the peer's priority; ours is backup for what we loaded */
            if (c->loading_rail >= 0 && ev->sub.rrail == c->loading_rail)
                c->sub[i].backup = 1;
        }
        if (c->loading_rail >= 0 && ev->sub.rrail == c->loading_rail)
            c->loading_rail = -1;
        break;
    case MPILAB_PM_EV_SUB_CLOSED:
        i = find_sub(c, &ev->sub);
        if (i >= 0)
            drop_sub(c, i);
        if (c->loading_rail >= 0 && ev->sub.rrail == c->loading_rail) {
            c->loading_rail = -1; /* the join was refused or timed out */
            c->next_load = ev->now + LOAD_RETRY_S;
        }
        break;
    case MPILAB_PM_EV_SUB_PRIORITY:
        i = find_sub(c, &ev->sub);
        if (i >= 0)
            c->sub[i].backup = ev->sub.backup;
        break;
    case MPILAB_PM_EV_CLOSED:
        c->nsub = 0;
        c->loading_rail = -1;
        go(c, res, MPILAB_PM_CLOSED, "connection closed");
        return 1;
    case MPILAB_PM_EV_LOAD_FAILED:
        c->loading_rail = -1;
        c->next_load = ev->now + LOAD_RETRY_S;
        break;
    case MPILAB_PM_EV_LOAD_NOT_READY:
        c->loading_rail = -1;
        c->next_load = ev->now + LOAD_SOON_S;
        break;
    default:
        break;
    }
    return 0;
}

/* a load in progress whose path died, or that took too long, is given up */
static void check_loading(const mpilab_pm_ctx *ctx, mpilab_pm_conn *c, double now)
{
    if (c->loading_rail >= 0 && c->peer >= 0 && c->peer < MPILAB_PM_MAX_PEERS &&
        !ctx->path_up[c->peer][c->loading_rail]) {
        c->loading_rail = -1; /* its path died while loading: give up at once */
        c->next_load = now + LOAD_RETRY_S;
    }
    if (c->loading_rail >= 0 && now - c->loading_since > LOAD_TIMEOUT_S) {
        c->loading_rail = -1;
        c->next_load = now + LOAD_RETRY_S;
    }
}

/* a user's migrate request: the loaded alternate becomes the primary */
static int migrate(mpilab_pm_conn *c, mpilab_pm_result *res, int p, int a)
{
    if (c->state != MPILAB_PM_ARMED || a < 0) {
        snprintf(res->err, sizeof(res->err),
                 "connection %08x is %s: no loaded alternate to migrate to", c->token,
                 mpilab_pm_state_name(c->state));
        return -1;
    }
    add_action(res, MPILAB_PM_ACT_SET_BACKUP, &c->sub[a], 0);
    c->sub[a].backup = 0;
    if (p >= 0) {
        add_action(res, MPILAB_PM_ACT_SET_BACKUP, &c->sub[p], 1);
        c->sub[p].backup = 1;
    }
    go(c, res, MPILAB_PM_MIGRATED, "user request");
    return 0;
}

/* automatic migration: every subflow on a dead path is closed at once (its unacked data
 * is then re-sent on the others), as long as one on a healthy path remains; if the
 * primary was among them, the best healthy subflow becomes the primary. Then, with no
 * primary left (closed by the peer or the kernel), a healthy backup is promoted. *p and
 * *a: the primary and alternate subflows, updated. */
static void auto_migrate(const mpilab_pm_ctx *ctx, mpilab_pm_conn *c, mpilab_pm_result *res,
                         int *p, int *a)
{
    if (ctx->auto_migrate) {
        int live = -1;
        for (int k = 0; k < c->nsub; k++)
            if (c->sub[k].established && path_ok(ctx, c, &c->sub[k]) &&
                (live < 0 || (c->sub[live].backup && !c->sub[k].backup)))
                live = k;
        if (live >= 0) {
            int primary_dead = *p >= 0 && !path_ok(ctx, c, &c->sub[*p]);
            int dead_rail = *p >= 0 ? c->sub[*p].rrail : -1;
            mpilab_pm_subflow keep = c->sub[live];
            if (primary_dead && keep.backup) {
                add_action(res, MPILAB_PM_ACT_SET_BACKUP, &keep, 0);
                keep.backup = 0;
            }
            for (int k = c->nsub - 1; k >= 0; k--)
                if (c->sub[k].established && !path_ok(ctx, c, &c->sub[k])) {
                    add_action(res, MPILAB_PM_ACT_DESTROY, &c->sub[k], 0);
                    drop_sub(c, k);
                }
            int i = find_sub(c, &keep);
            if (i >= 0)
                c->sub[i].backup = keep.backup;
            if (primary_dead)
                go_rail(c, res, MPILAB_PM_MIGRATED, "fault on the primary path", dead_rail, "");
            *p = primary_of(ctx, c);
            *a = alternate_of(ctx, c, *p);
        }
    }
    if (*p < 0 && *a >= 0) {
        add_action(res, MPILAB_PM_ACT_SET_BACKUP, &c->sub[*a], 0);
        c->sub[*a].backup = 0;
        go_rail(c, res, MPILAB_PM_MIGRATED, "primary closed; alternate promoted", c->sub[*a].rrail,
                "");
        *p = *a;
        *a = alternate_of(ctx, c, *p);
    }
}

/* The rail whose loss left an ARMED connection without an alternate, when no rule above
 * named it: the rail of the subflow the kernel just closed, else a rail of the peer that is
 * judged dead (the armed one first), else the armed rail. Never a rail that is known to
 * work while another one died. */
static int lost_rail(const mpilab_pm_ctx *ctx, const mpilab_pm_conn *c, const mpilab_pm_event *ev)
{
    if (ev->kind == MPILAB_PM_EV_SUB_CLOSED && rail_ok(ev->sub.rrail))
        return ev->sub.rrail;
    if (c->peer < 0 || c->peer >= MPILAB_PM_MAX_PEERS)
        return c->armed_rail;
    if (rail_ok(c->armed_rail) && !ctx->path_up[c->peer][c->armed_rail])
        return c->armed_rail;
    for (int r = 0; r < ctx->nrails && r < MPILAB_PM_MAX_RAILS; r++)
        if (!ctx->path_up[c->peer][r])
            return r;
    return c->armed_rail;
}

/* An ARMED connection without a loaded alternate any more: the cause names what happened
 * and to which path. The peer promoting the alternate (its MP_PRIO, seen as a kernel
 * priority event) means the peer left the primary path, usually because that path failed
 * before our own verdict: the path that failed is the primary's, not the alternate's. */
static void alternate_gone(const mpilab_pm_ctx *ctx, mpilab_pm_conn *c,
                           const mpilab_pm_event *ev, mpilab_pm_result *res)
{
    if (ev->kind == MPILAB_PM_EV_SUB_PRIORITY && !ev->sub.backup && c->armed_rail >= 0 &&
        ev->sub.rrail == c->armed_rail) {
        int prim = -1;
        for (int i = 0; i < c->nsub; i++)
            if (c->sub[i].established && !c->sub[i].backup && c->sub[i].rrail != c->armed_rail)
                prim = c->sub[i].rrail;
        char rest[48];
        snprintf(rest, sizeof(rest), " left by the peer for rail %d", c->armed_rail);
        go_rail(c, res, MPILAB_PM_MIGRATED, "primary path", prim, rest);
    } else if (ev->kind == MPILAB_PM_EV_SUB_CLOSED && ev->sub.rrail == c->armed_rail) {
        go_rail(c, res, MPILAB_PM_MIGRATED, "alternate subflow closed", c->armed_rail, "");
    } else if (c->armed_rail >= 0 && c->peer >= 0 && c->peer < MPILAB_PM_MAX_PEERS &&
               rail_ok(c->armed_rail) && !ctx->path_up[c->peer][c->armed_rail]) {
        go_rail(c, res, MPILAB_PM_MIGRATED, "alternate path failed", c->armed_rail, "");
    } else {
        go_rail(c, res, MPILAB_PM_MIGRATED, "alternate lost", lost_rail(ctx, c, ev), "");
    }
}

/* the alternate's fate: lost, established, or (re-)loaded on request or automatically */
static int rearm(const mpilab_pm_ctx *ctx, mpilab_pm_conn *c, const mpilab_pm_event *ev,
                 mpilab_pm_result *res, int p, int a)
{
    switch (c->state) {
    case MPILAB_PM_ARMED:
        if (a < 0)
            alternate_gone(ctx, c, ev, res);
        break;
    case MPILAB_PM_REARM:
        if (a >= 0)
            go_rail(c, res, MPILAB_PM_ARMED, "alternate established", c->sub[a].rrail, "");
        else if (c->loading_rail < 0)
            go(c, res, MPILAB_PM_MIGRATED, "alternate could not be loaded");
        break;
    default:
        break;
    }
    if (c->state == MPILAB_PM_MIGRATED && res->from == res->to && c->server_side && a >= 0 &&
        ev->kind == MPILAB_PM_EV_SUB_ESTABLISHED) {
        /* the client's agent loaded the alternate: observed, also in manual mode */
        go_rail(c, res, MPILAB_PM_ARMED, "alternate loaded by the peer", c->sub[a].rrail, "");
    } else if (c->state == MPILAB_PM_MIGRATED && res->from == res->to &&
               (ev->kind == MPILAB_PM_EV_ARM || ctx->auto_rearm)) {
        if (a >= 0)
            go_rail(c, res, MPILAB_PM_ARMED, "alternate already established", c->sub[a].rrail,
                    "");
        else if (load_alternate(ctx, c, res, p, ev->now, ev->kind == MPILAB_PM_EV_ARM))
            go(c, res, MPILAB_PM_REARM, "loading alternate");
        else if (ev->kind == MPILAB_PM_EV_ARM) {
            if (c->server_side)
                snprintf(res->err, sizeof(res->err),
                         "connection %08x: server side; the client's agent loads its alternate",
                         c->token);
            else
                snprintf(res->err, sizeof(res->err),
                         "connection %08x: no alternate path available (primary rail %d)",
                         c->token, p >= 0 ? c->sub[p].rrail : -1);
            return -1;
        }
    }
    return 0;
}

int mpilab_pm_step(const mpilab_pm_ctx *ctx, mpilab_pm_conn *c, const mpilab_pm_event *ev,
                   mpilab_pm_result *res)
{
    memset(res, 0, sizeof(*res));
    res->from = res->to = c->state;
    int request = ev->kind == MPILAB_PM_EV_ARM || ev->kind == MPILAB_PM_EV_MIGRATE;
    if (c->state == MPILAB_PM_CLOSED) {
        if (request)
            snprintf(res->err, sizeof(res->err), "connection %08x is closed", c->token);
        return request ? -1 : 0;
    }
    if (track(c, ev, res))
        return 0;
    if (!c->managed) {
        if (request)
            snprintf(res->err, sizeof(res->err),
                     "connection %08x: its peer is not a known node (not managed)", c->token);
        return request ? -1 : 0;
    }
    if (!c->established) {
        if (request)
            snprintf(res->err, sizeof(res->err), "connection %08x is not established yet",
                     c->token);
        return request ? -1 : 0;
    }
    check_loading(ctx, c, ev->now);
    int p = primary_of(ctx, c);
    int a = alternate_of(ctx, c, p);
    if (ev->kind == MPILAB_PM_EV_MIGRATE)
        return migrate(c, res, p, a);
    auto_migrate(ctx, c, res, &p, &a);
    int rc = rearm(ctx, c, ev, res, p, a);
    if (c->state == MPILAB_PM_ARMED) {
        int k = alternate_of(ctx, c, primary_of(ctx, c));
        c->armed_rail = k >= 0 ? c->sub[k].rrail : c->armed_rail;
    }
    return rc;
}

double mpilab_pm_probe_due(int decider, double last_sent, double last_heard, double last_proof,
                           double interval)
{
    if (decider) /* a proof stands for a probe sent and answered */
        return (last_proof > last_sent ? last_proof : last_sent) + interval;
    /* the follower: a proof stands for a message heard from the peer */
    double heard = last_proof > last_heard ? last_proof : last_heard;
    double next = last_sent + interval, silent = heard + MPILAB_PM_FOLLOW_FACTOR * interval;
    return silent > next ? silent : next;
}

static double proven_at(double prev_at, double now, uint32_t ago_ms)
{
    double t = now - (double)ago_ms * 1e-3;
    if (t < prev_at)
        t = prev_at; /* the counter moved after the last sample: not earlier */
    return t > now ? now : t;
}

double mpilab_pm_tcp_proof(const mpilab_pm_tcp_sample *prev, const mpilab_pm_tcp_sample *cur,
                           double prev_at, double now, int accept_received)
{
    if (!prev || !cur || !(now > prev_at))
        return 0;
    double t = 0;
    if (cur->bytes_acked > prev->bytes_acked)
        t = proven_at(prev_at, now, cur->last_ack_recv_ms);
    if (accept_received && cur->bytes_received > prev->bytes_received) {
        double r = proven_at(prev_at, now, cur->last_data_recv_ms);
        if (r > t)
            t = r;
    }
    return t;
}

int mpilab_pm_tcp_settled(const mpilab_pm_tcp_sample *prev, const mpilab_pm_tcp_sample *cur,
                          int accept_received)
{
    if (!prev || !cur || cur->unacked != 0 || cur->notsent != 0)
        return 0;
    return accept_received || cur->bytes_received == prev->bytes_received;
}

int mpilab_pm_path_silent(double now, double since, double limit, double freshest,
                          double interval)
{
    return now - since > limit && freshest > since + interval;
}

double mpilab_pm_rx_time(int has_stamp, double stamp, double mono_minus_real, double lo,
                         double hi)
{
    if (!has_stamp)
        return hi;
    double t = stamp + mono_minus_real;
    if (t > hi)
        t = hi;
    if (t < lo)
        t = lo;
    return t;
}

int mpilab_pm_reply_urgent(int decider, int alive, int good, int good_needed, int suspect)
{
    if (suspect)
        return 1;
    return decider && !alive && good + 1 >= good_needed;
}
