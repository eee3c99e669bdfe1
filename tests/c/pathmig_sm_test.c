/* The path migration state machine on event sequences: hand-written ones covering every
 * transition, and event logs recorded by mpilab-pathmigd on the live testbed (replayed:
 * the transitions must come out as the agent logged them). Usage: pathmig_sm_test
 * [RECORDED.jsonl...] */
#include "mpilab/pathmig.h"

#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "kit.h"


static mpilab_pm_ctx ctx;
static mpilab_pm_result res;

static void ctx_init(void)
{
    memset(&ctx, 0, sizeof(ctx));
    ctx.nrails = 2;
    ctx.auto_migrate = ctx.auto_rearm = 1;
    for (int p = 0; p < MPILAB_PM_MAX_PEERS; p++) {
        ctx.alt_rail[p][0] = 1;
        ctx.alt_rail[p][1] = 0;
        ctx.path_up[p][0] = ctx.path_up[p][1] = 1;
    }
}

static mpilab_pm_subflow sf(int rail, uint16_t lport, int backup)
{
    mpilab_pm_subflow s;
    memset(&s, 0, sizeof(s));
    s.laddr = htonl(0x0a4d0002u + ((uint32_t)rail << 9));     /* 10.77.(2r).2 */
    s.raddr = htonl(0x0a4d0102u + ((uint32_t)rail << 9));     /* 10.77.(2r+1).2 */
    s.lport = lport;
    s.rport = 5000;
    s.lrail = s.rrail = rail;
    s.backup = backup;
    s.established = 1;
    return s;
}

static int step(mpilab_pm_conn *c, mpilab_pm_event_kind kind, mpilab_pm_subflow s, double now)
{
    mpilab_pm_event ev = {.kind = kind, .sub = s, .now = now};
    return mpilab_pm_step(&ctx, c, &ev, &res);
}

static int has_action(mpilab_pm_action_kind kind, int rail, int backup)
{
    for (int i = 0; i < res.nact; i++)
        if (res.act[i].kind == kind && res.act[i].sub.rrail == rail &&
            (kind != MPILAB_PM_ACT_SET_BACKUP || res.act[i].backup == backup))
            return 1;
    return 0;
}

static mpilab_pm_subflow none;

/* client: load, fault on rail 0, heal, re-arm on the old primary, second fault on rail 1 */
MPILAB_TEST(client_lifecycle)
{
    ctx_init();
    mpilab_pm_conn c;
    mpilab_pm_conn_init(&c, 0x1234, 0, 1, 1);
    CHECK(c.state == MPILAB_PM_MIGRATED);
    step(&c, MPILAB_PM_EV_ESTABLISHED, sf(0, 40000, 0), 1.0);
    CHECK(c.state == MPILAB_PM_REARM && res.from == MPILAB_PM_MIGRATED);
    CHECK(res.nact == 1 && has_action(MPILAB_PM_ACT_CREATE, 1, 1));
    CHECK(res.act[0].sub.lrail == 1 && res.act[0].backup == 1);
    /* the kernel reports the peer's priority (0) for our backup subflow */
    step(&c, MPILAB_PM_EV_SUB_ESTABLISHED, sf(1, 41000, 0), 1.01);
    CHECK(c.state == MPILAB_PM_ARMED && res.nact == 0);
    CHECK(strcmp(res.cause, "alternate established (rail 1)") == 0);
    step(&c, MPILAB_PM_EV_TICK, none, 1.02);
    CHECK(c.state == MPILAB_PM_ARMED && res.nact == 0 && res.from == res.to);

    /* fault on rail 0: promote the alternate, close the dead primary */
    ctx.path_up[1][0] = 0;
    step(&c, MPILAB_PM_EV_PATH, none, 2.0);
    CHECK(c.state == MPILAB_PM_MIGRATED && res.from == MPILAB_PM_ARMED);
    CHECK(has_action(MPILAB_PM_ACT_SET_BACKUP, 1, 0) && has_action(MPILAB_PM_ACT_DESTROY, 0, 0));
    CHECK(res.nact == 2 && res.act[0].kind == MPILAB_PM_ACT_SET_BACKUP); /* promote first */
    CHECK(c.nsub == 1 && c.sub[0].rrail == 1 && c.sub[0].backup == 0);
    /* no alternate while rail 0 is down: ticks do nothing, arm is refused */
    step(&c, MPILAB_PM_EV_TICK, none, 2.1);
    CHECK(c.state == MPILAB_PM_MIGRATED && res.nact == 0);
    CHECK(step(&c, MPILAB_PM_EV_ARM, none, 2.2) == -1 && strstr(res.err, "no alternate path"));
    /* the kernel's own close of the dead subflow changes nothing more */
    step(&c, MPILAB_PM_EV_SUB_CLOSED, sf(0, 40000, 0), 2.3);
    CHECK(c.state == MPILAB_PM_MIGRATED && res.nact == 0);

    /* healed: re-arm on the old primary's rail */
    ctx.path_up[1][0] = 1;
    step(&c, MPILAB_PM_EV_PATH, none, 3.0);
    CHECK(c.state == MPILAB_PM_REARM && has_action(MPILAB_PM_ACT_CREATE, 0, 1));
    step(&c, MPILAB_PM_EV_SUB_ESTABLISHED, sf(0, 42000, 0), 3.05);
    CHECK(c.state == MPILAB_PM_ARMED);

    /* second fault, on the other rail */
    ctx.path_up[1][1] = 0;
    step(&c, MPILAB_PM_EV_PATH, none, 4.0);
    CHECK(c.state == MPILAB_PM_MIGRATED);
    CHECK(has_action(MPILAB_PM_ACT_SET_BACKUP, 0, 0) && has_action(MPILAB_PM_ACT_DESTROY, 1, 0));
    CHECK(c.nsub == 1 && c.sub[0].rrail == 0 && c.sub[0].backup == 0);

    step(&c, MPILAB_PM_EV_CLOSED, none, 5.0);
    CHECK(c.state == MPILAB_PM_CLOSED && res.nact == 0);
    CHECK(step(&c, MPILAB_PM_EV_MIGRATE, none, 5.1) == -1 && strstr(res.err, "closed"));
}

/* manual migration swaps the priorities; the old primary is the next alternate */
MPILAB_TEST(manual)
{
    ctx_init();
    ctx.auto_rearm = 1;
    mpilab_pm_conn c;
    mpilab_pm_conn_init(&c, 0x99, 0, 1, 3);
    CHECK(step(&c, MPILAB_PM_EV_MIGRATE, none, 0.5) == -1 && strstr(res.err, "not established"));
    step(&c, MPILAB_PM_EV_ESTABLISHED, sf(0, 40000, 0), 1.0);
    CHECK(step(&c, MPILAB_PM_EV_MIGRATE, none, 1.001) == -1 && strstr(res.err, "REARM"));
    step(&c, MPILAB_PM_EV_SUB_ESTABLISHED, sf(1, 41000, 0), 1.01);
    CHECK(c.state == MPILAB_PM_ARMED);
    CHECK(step(&c, MPILAB_PM_EV_MIGRATE, none, 2.0) == 0);
    CHECK(c.state == MPILAB_PM_MIGRATED && strcmp(res.cause, "user request") == 0);
    CHECK(res.nact == 2 && has_action(MPILAB_PM_ACT_SET_BACKUP, 1, 0) &&
          has_action(MPILAB_PM_ACT_SET_BACKUP, 0, 1));
    step(&c, MPILAB_PM_EV_TICK, none, 2.01);
    CHECK(c.state == MPILAB_PM_ARMED && res.nact == 0); /* old primary, already loaded */
    CHECK(step(&c, MPILAB_PM_EV_MIGRATE, none, 3.0) == 0 && has_action(MPILAB_PM_ACT_SET_BACKUP, 0, 0));

    /* without automatic re-arming the connection waits for an arm request */
    ctx.auto_rearm = 0;
    mpilab_pm_conn d;
    mpilab_pm_conn_init(&d, 0x77, 0, 1, 3);
    step(&d, MPILAB_PM_EV_ESTABLISHED, sf(0, 40000, 0), 1.0);
    CHECK(d.state == MPILAB_PM_MIGRATED && res.nact == 0);
    CHECK(step(&d, MPILAB_PM_EV_MIGRATE, none, 1.1) == -1 && strstr(res.err, "MIGRATED"));
    CHECK(step(&d, MPILAB_PM_EV_ARM, none, 1.2) == 0 && d.state == MPILAB_PM_REARM);
    CHECK(has_action(MPILAB_PM_ACT_CREATE, 1, 1));
}

/* the server side never creates subflows; it is ARMED when the client's join arrives */
MPILAB_TEST(server)
{
    ctx_init();
    mpilab_pm_conn c;
    mpilab_pm_conn_init(&c, 0x55, 1, 1, 0);
    step(&c, MPILAB_PM_EV_ESTABLISHED, sf(0, 5000, 0), 1.0);
    CHECK(c.state == MPILAB_PM_MIGRATED && res.nact == 0);
    CHECK(step(&c, MPILAB_PM_EV_ARM, none, 1.05) == -1 && strstr(res.err, "server side"));
    step(&c, MPILAB_PM_EV_SUB_ESTABLISHED, sf(1, 5000, 1), 1.1);
    CHECK(c.state == MPILAB_PM_ARMED);
    /* the peer migrated by hand: its MP_PRIO swaps our priorities. The cause names the
     * path the peer left (the primary, rail 0), not "alternate lost" */
    step(&c, MPILAB_PM_EV_SUB_PRIORITY, sf(1, 5000, 0), 2.0);
    CHECK(c.state == MPILAB_PM_MIGRATED && res.nact == 0);
    CHECK(strcmp(res.cause, "primary path (rail 0) left by the peer for rail 1") == 0);
    step(&c, MPILAB_PM_EV_SUB_PRIORITY, sf(0, 5000, 1), 2.001);
    CHECK(c.state == MPILAB_PM_ARMED);
    /* in manual mode too, the server follows the load its peer completed */
    ctx.auto_rearm = 0;
    mpilab_pm_conn m;
    mpilab_pm_conn_init(&m, 0x56, 1, 1, 0);
    step(&m, MPILAB_PM_EV_ESTABLISHED, sf(0, 5000, 0), 1.0);
    step(&m, MPILAB_PM_EV_SUB_ESTABLISHED, sf(1, 5000, 1), 1.1);
    CHECK(m.state == MPILAB_PM_ARMED && strstr(res.cause, "by the peer"));
    ctx.auto_rearm = 1;
    /* the link to the primary (now rail 1) dies */
    ctx.path_up[0][1] = 0;
    step(&c, MPILAB_PM_EV_PATH, none, 3.0);
    CHECK(c.state == MPILAB_PM_MIGRATED && has_action(MPILAB_PM_ACT_DESTROY, 1, 0) &&
          has_action(MPILAB_PM_ACT_SET_BACKUP, 0, 0));
    CHECK(strcmp(res.cause, "fault on the primary path (rail 1)") == 0);
    /* an ARMED connection whose alternate's path dies: named as such */
    ctx_init();
    mpilab_pm_conn k;
    mpilab_pm_conn_init(&k, 0x57, 1, 1, 0);
    step(&k, MPILAB_PM_EV_ESTABLISHED, sf(0, 5000, 0), 1.0);
    step(&k, MPILAB_PM_EV_SUB_ESTABLISHED, sf(1, 5000, 1), 1.1);
    CHECK(k.state == MPILAB_PM_ARMED);
    ctx.path_up[0][1] = 0;
    step(&k, MPILAB_PM_EV_PATH, none, 2.0);
    CHECK(k.state == MPILAB_PM_MIGRATED && strcmp(res.cause, "alternate path failed (rail 1)") == 0);
    /* ... or whose alternate subflow is closed */
    ctx_init();
    mpilab_pm_conn j;
    mpilab_pm_conn_init(&j, 0x58, 1, 1, 0);
    step(&j, MPILAB_PM_EV_ESTABLISHED, sf(0, 5000, 0), 1.0);
    step(&j, MPILAB_PM_EV_SUB_ESTABLISHED, sf(1, 5000, 1), 1.1);
    step(&j, MPILAB_PM_EV_SUB_CLOSED, sf(1, 5000, 1), 2.0);
    CHECK(j.state == MPILAB_PM_MIGRATED &&
          strcmp(res.cause, "alternate subflow closed (rail 1)") == 0);
    /* no rule above names the loss (the alternate last armed on rail 0, a subflow on rail
     * 1 closed): the label names rail 1, the rail that went, never the armed rail 0 */
    ctx_init();
    mpilab_pm_conn q;
    mpilab_pm_conn_init(&q, 0x59, 1, 1, 0);
    q.established = 1;
    q.state = MPILAB_PM_ARMED;
    q.armed_rail = 0;
    q.nsub = 2;
    q.sub[0] = sf(0, 5000, 0);
    q.sub[1] = sf(1, 5001, 1);
    step(&q, MPILAB_PM_EV_SUB_CLOSED, sf(1, 5001, 1), 2.0);
    CHECKF(q.state == MPILAB_PM_MIGRATED && strcmp(res.cause, "alternate lost (rail 1)") == 0,
           "cause: %s", res.cause ? res.cause : "(none)");
    /* ...and a rail judged dead is named before the armed rail that still works */
    mpilab_pm_conn_init(&q, 0x5a, 1, 1, 0);
    q.established = 1;
    q.state = MPILAB_PM_ARMED;
    q.armed_rail = 0;
    q.nsub = 1;
    q.sub[0] = sf(0, 5000, 0);
    ctx.path_up[0][1] = 0;
    step(&q, MPILAB_PM_EV_PATH, none, 2.0);
    CHECKF(q.state == MPILAB_PM_MIGRATED && strcmp(res.cause, "alternate lost (rail 1)") == 0,
           "cause: %s", res.cause ? res.cause : "(none)");
}

/* a refused or timed-out join: back to MIGRATED, retried later, not at every tick */
MPILAB_TEST(load_failure)
{
    ctx_init();
    mpilab_pm_conn c;
    mpilab_pm_conn_init(&c, 0x42, 0, 1, 1);
    step(&c, MPILAB_PM_EV_ESTABLISHED, sf(0, 40000, 0), 1.0);
    CHECK(c.state == MPILAB_PM_REARM);
    mpilab_pm_subflow j = sf(1, 41000, 0);
    j.established = 0;
    step(&c, MPILAB_PM_EV_SUB_CLOSED, j, 1.01);
    CHECK(c.state == MPILAB_PM_MIGRATED && strstr(res.cause, "could not be loaded"));
    step(&c, MPILAB_PM_EV_TICK, none, 1.5);
    CHECK(c.state == MPILAB_PM_MIGRATED && res.nact == 0);
    CHECK(step(&c, MPILAB_PM_EV_ARM, none, 1.6) == 0 && c.state == MPILAB_PM_REARM); /* user */
    step(&c, MPILAB_PM_EV_LOAD_FAILED, none, 1.7);
    CHECK(c.state == MPILAB_PM_MIGRATED);
    step(&c, MPILAB_PM_EV_TICK, none, 2.8);
    CHECK(c.state == MPILAB_PM_REARM && has_action(MPILAB_PM_ACT_CREATE, 1, 1));
    /* a join before the connection is fully established (ENOTCONN): retried within
     * 50 ms, not after the second of a real failure */
    step(&c, MPILAB_PM_EV_LOAD_NOT_READY, none, 2.81);
    CHECK(c.state == MPILAB_PM_MIGRATED);
    step(&c, MPILAB_PM_EV_TICK, none, 2.84);
    CHECK(c.state == MPILAB_PM_MIGRATED && res.nact == 0);
    step(&c, MPILAB_PM_EV_TICK, none, 2.87);
    CHECK(c.state == MPILAB_PM_REARM && has_action(MPILAB_PM_ACT_CREATE, 1, 1));
    /* a join that never completes is given up after a while */
    step(&c, MPILAB_PM_EV_TICK, none, 10.0);
    CHECK(c.state == MPILAB_PM_MIGRATED);
    /* ... and at once when the alternate's path dies while loading */
    step(&c, MPILAB_PM_EV_TICK, none, 11.5);
    CHECK(c.state == MPILAB_PM_REARM);
    ctx.path_up[1][1] = 0;
    step(&c, MPILAB_PM_EV_PATH, none, 11.6);
    CHECK(c.state == MPILAB_PM_MIGRATED && res.nact == 0);
    CHECK(step(&c, MPILAB_PM_EV_ARM, none, 11.7) == -1 && strstr(res.err, "no alternate"));
}

/* unmanaged connections and policy: the user's map, and automatic choice */
/* the probe schedule: the decider probes every interval whatever it hears; the follower
 * only while the peer is silent on the path (its probes and replies keep it quiet) */
MPILAB_TEST(probe_schedule)
{
    const double iv = 0.010;
    /* decider: due one interval after its last probe, replies do not postpone it */
    CHECK_NEAR(mpilab_pm_probe_due(1, 5.000, 5.009, 0.0, iv), 5.010, 1e-12);
    CHECK_NEAR(mpilab_pm_probe_due(1, 5.000, 0.0, 0.0, iv), 5.010, 1e-12);
    /* follower hearing the decider: not before FOLLOW_FACTOR intervals of silence */
    CHECK_NEAR(mpilab_pm_probe_due(0, 0.0, 5.009, 0.0, iv),
               5.009 + MPILAB_PM_FOLLOW_FACTOR * iv, 1e-12);
    /* each message moves it on: a follower that keeps hearing never probes */
    for (int k = 0; k < 100; k++) {
        double heard = 5.0 + k * iv, now = heard + iv / 2;
        CHECK(mpilab_pm_probe_due(0, 0.0, heard, 0.0, iv) > now);
    }
    /* follower on a silent path: probes every interval after the silence */
    CHECK_NEAR(mpilab_pm_probe_due(0, 5.050, 5.000, 0.0, iv), 5.060, 1e-12);
    CHECK(mpilab_pm_probe_due(0, 5.050, 5.000, 0.0, iv) > 5.000 + MPILAB_PM_FOLLOW_FACTOR * iv);

    /* verdicts (limit 50 ms): silent too long while another path was heard since: dead */
    CHECK(mpilab_pm_path_silent(5.061, 5.010, 0.050, 5.055, iv));
    /* not yet beyond the limit */
    CHECK(!mpilab_pm_path_silent(5.059, 5.010, 0.050, 5.055, iv));
    /* every path silent together (a stalled machine or peer): no verdict */
    CHECK(!mpilab_pm_path_silent(5.200, 5.010, 0.050, 5.010, iv));
    /* the other path heard only within an interval of this one: still no verdict */
    CHECK(!mpilab_pm_path_silent(5.200, 5.010, 0.050, 5.019, iv));
    CHECK(mpilab_pm_path_silent(5.200, 5.010, 0.050, 5.021, iv));
}

/* replies read late (they do not wake the agent): the kernel's receive stamp is their
 * arrival, so a path's last reply, and the verdict that follows from it, are as if each
 * reply had been read at once */
MPILAB_TEST(deferred_replies)
{
    const double iv = 0.010, limit = 0.050, rtt = 0.002;
    const double off = -1.7e9; /* CLOCK_MONOTONIC - CLOCK_REALTIME */
    /* a stamp converts exactly when inside the bounds */
    CHECK_NEAR(mpilab_pm_rx_time(1, 5.0123 - off, off, 5.000, 5.020), 5.0123, 1e-6);
    /* no stamp: the moment of reading */
    CHECK(mpilab_pm_rx_time(0, 0.0, off, 5.000, 5.020) == 5.020);
    /* a clock step: never after the read, never before the previous drain began */
    CHECK(mpilab_pm_rx_time(1, 5.500 - off, off, 5.000, 5.020) == 5.020);
    CHECK(mpilab_pm_rx_time(1, 4.000 - off, off, 5.000, 5.020) == 5.000);

    /* the decider probes rail 0 every interval; each reply arrives rtt later and is read
     * only at the next tick (the next probe round). Replies stop after 5.102 (a silent
     * drop); rail 1 is confirmed from 2 intervals of silence on (its reply at +rtt). */
    double last0 = 4.992, last1 = 4.900, prev_drain = 4.995, verdict_late = 0, verdict_now = 0;
    double last0_now = 4.992, last1_now = 4.900; /* the previous round's reply */
    for (int k = 0; k < 30; k++) {
        double tick = 5.000 + k * iv;
        /* immediate reading (the previous agent): every reply counted at its arrival */
        for (int j = 0; j < 30; j++) {
            double arr = 5.000 + j * iv + rtt;
            if (arr <= tick && arr <= 5.102)
                last0_now = arr > last0_now ? arr : last0_now;
        }
        if (tick >= last0_now + 2 * iv + rtt)
            last1_now = tick;
        /* deferred: drained at this tick, stamps converted */
        for (int j = 0; j < 30; j++) {
            double arr = 5.000 + j * iv + rtt;
            if (arr > prev_drain && arr <= tick && arr <= 5.102) {
                double t = mpilab_pm_rx_time(1, arr - off, off, prev_drain, tick);
                last0 = t > last0 ? t : last0;
            }
        }
        if (tick >= last0 + 2 * iv + rtt)
            last1 = tick; /* the confirmation's reply, read at this tick */
        prev_drain = tick;
        CHECK_NEAR(last0, last0_now, 1e-6);
        if (!verdict_now && mpilab_pm_path_silent(tick, last0_now, limit, last1_now, iv))
            verdict_now = tick;
        if (!verdict_late && mpilab_pm_path_silent(tick, last0, limit, last1, iv))
            verdict_late = tick;
    }
    CHECK_NEAR(last0, 5.102, 1e-6);
    CHECK(verdict_now > 0 && verdict_late == verdict_now);
    CHECK(verdict_late > 5.102 + limit && verdict_late <= 5.102 + limit + iv);

    /* which replies wake the agent at once */
    CHECK(!mpilab_pm_reply_urgent(1, 1, 0, 3, 0)); /* a live path: read at the next tick */
    CHECK(!mpilab_pm_reply_urgent(1, 0, 0, 3, 0)); /* healing, two replies still needed */
    CHECK(!mpilab_pm_reply_urgent(1, 0, 1, 3, 0));
    CHECK(mpilab_pm_reply_urgent(1, 0, 2, 3, 0));  /* the reply that heals the path */
    CHECK(!mpilab_pm_reply_urgent(0, 0, 2, 3, 0)); /* the follower adopts, never counts */
    CHECK(mpilab_pm_reply_urgent(0, 1, 0, 3, 1));  /* a verdict waits for another rail */
    CHECK(mpilab_pm_reply_urgent(1, 1, 0, 3, 1));
}

/* passive liveness: what one subflow's tcp_info in two consecutive dumps proves */
MPILAB_TEST(tcp_proof)
{
    mpilab_pm_tcp_sample a = {.bytes_acked = 1000, .bytes_received = 500, .last_ack_recv_ms = 3,
                            .last_data_recv_ms = 2}, b = a;
    /* a subflow not seen in the previous dump: no baseline, no proof */
    CHECK(mpilab_pm_tcp_proof(NULL, &a, 1.000, 1.010, 0) == 0);
    /* nothing new acknowledged: no proof, however recent the last ACK (a duplicate ACK,
       a pure ACK of old data) */
    b.last_ack_recv_ms = 0;
    CHECK(mpilab_pm_tcp_proof(&a, &b, 1.000, 1.010, 0) == 0);
    /* new data acknowledged: proven when the last ACK arrived */
    b.bytes_acked = 1448 + a.bytes_acked;
    b.last_ack_recv_ms = 4;
    CHECK_NEAR(mpilab_pm_tcp_proof(&a, &b, 1.000, 1.010, 0), 1.006, 1e-9);
    /* never before the previous dump (the counter moved after it), never after now */
    b.last_ack_recv_ms = 500;
    CHECK_NEAR(mpilab_pm_tcp_proof(&a, &b, 1.000, 1.010, 0), 1.000, 1e-9);
    /* a dump not after the previous one proves nothing */
    CHECK(mpilab_pm_tcp_proof(&a, &b, 1.010, 1.010, 0) == 0);
    /* data received only: proves nothing to the decider, a sign of life to the follower */
    b = a;
    b.bytes_received += 100;
    b.last_data_recv_ms = 1;
    CHECK(mpilab_pm_tcp_proof(&a, &b, 1.000, 1.010, 0) == 0);
    CHECK_NEAR(mpilab_pm_tcp_proof(&a, &b, 1.000, 1.010, 1), 1.009, 1e-9);
    /* both moved: the later of the two for the follower */
    b.bytes_acked += 10;
    b.last_ack_recv_ms = 7;
    CHECK_NEAR(mpilab_pm_tcp_proof(&a, &b, 1.000, 1.010, 1), 1.009, 1e-9);
    CHECK_NEAR(mpilab_pm_tcp_proof(&a, &b, 1.000, 1.010, 0), 1.003, 1e-9);
}

/* settled subflows: nothing of ours unacknowledged, nothing of the peer's arriving. An
 * idle connection's path needs no probe; the moment data goes out unacknowledged the path
 * is unsettled and unproven, and its silence counts from the last settled dump */
MPILAB_TEST(tcp_settled)
{
    mpilab_pm_tcp_sample a = {.bytes_acked = 1000, .bytes_received = 500, .last_ack_recv_ms = 3,
                            .last_data_recv_ms = 2}, b = a;
    CHECK(!mpilab_pm_tcp_settled(NULL, &a, 0)); /* no baseline */
    CHECK(mpilab_pm_tcp_settled(&a, &b, 0) && mpilab_pm_tcp_settled(&a, &b, 1));
    b.unacked = 2; /* our data in flight: at stake */
    CHECK(!mpilab_pm_tcp_settled(&a, &b, 0) && !mpilab_pm_tcp_settled(&a, &b, 1));
    /* queued and not sent (a packet dropped on its way out never counts as sent, so
       unacked stays 0): at stake as well; and unknown (an old kernel) is not settled */
    b.unacked = 0;
    b.notsent = 1024;
    CHECK(!mpilab_pm_tcp_settled(&a, &b, 0) && !mpilab_pm_tcp_settled(&a, &b, 1));
    b.notsent = UINT32_MAX;
    CHECK(!mpilab_pm_tcp_settled(&a, &b, 0));
    b.notsent = 0;
    /* sent and acknowledged between the dumps: nothing outstanding now */
    b.unacked = 0;
    b.bytes_acked += 4096;
    CHECK(mpilab_pm_tcp_settled(&a, &b, 0));
    /* the peer is sending to us: not settled for the decider (which takes no proof from
       received data and keeps probing), settled for the follower (a proof anyway) */
    b.bytes_received += 100;
    CHECK(!mpilab_pm_tcp_settled(&a, &b, 0) && mpilab_pm_tcp_settled(&a, &b, 1));

    /* a decider dumping every interval: 1 s idle, then a message into a silently dead
       path. No probe while idle; the first probe and the verdict come as soon after the
       send as on a path probed all along (the silence counts from the last settled dump) */
    const double iv = 0.010, limit = 0.050;
    double now = 20.0, last_sent = 0, proof = 0;
    mpilab_pm_tcp_sample prev = {.bytes_acked = 5000}, cur = prev;
    int probes = 0;
    for (int k = 0; k < 100; k++) {
        now += iv;
        if (mpilab_pm_tcp_settled(&prev, &cur, 0))
            proof = now;
        if (mpilab_pm_probe_due(1, last_sent, 0, proof, iv) <= now + iv / 4) {
            probes++;
            last_sent = now;
        }
        prev = cur;
    }
    CHECK(probes == 0);
    double last_settled = proof, sent_at = now + 0.002, first_probe = 0;
    cur.unacked = 1; /* sent at sent_at, never acknowledged */
    for (int k = 0; k < 10; k++) {
        now += iv;
        CHECK(!mpilab_pm_tcp_settled(&prev, &cur, 0));
        CHECK(mpilab_pm_tcp_proof(&prev, &cur, now - iv, now, 0) == 0);
        cur.last_ack_recv_ms += 10;
        if (mpilab_pm_probe_due(1, last_sent, 0, proof, iv) <= now + iv / 4 && !first_probe)
            first_probe = now;
        prev = cur;
    }
    CHECK(proof == last_settled);
    CHECK(first_probe > sent_at && first_probe <= sent_at + 2 * iv);
    /* the verdict: the limit after the last settled dump, i.e. within limit of the send */
    CHECK(!mpilab_pm_path_silent(last_settled + limit - 1e-3, last_settled, limit,
                                 last_settled + limit - 2e-3, iv));
    CHECK(mpilab_pm_path_silent(last_settled + limit + 1e-3, last_settled, limit,
                                last_settled + 2 * iv, iv));
    CHECK(last_settled + limit < sent_at + limit);
}

/* which paths need a probe: a decider dumping every interval, as the agent does (a
 * probe is sent when due within a quarter interval). While the peer keeps acknowledging
 * new data no probe is due; when the path starts dropping silently the counters stop,
 * the last ACK only ages, and probing resumes within an interval of the last proof, so
 * the verdict (limit 50 ms after the last sign of life) comes no later than with probes */
MPILAB_TEST(passive_schedule)
{
    const double iv = 0.010, limit = 0.050;
    double now = 10.0, prev_at = now, last_sent = 0, proof = 0;
    mpilab_pm_tcp_sample prev = {.bytes_acked = 5000}, cur = prev;
    int probes = 0, dumps = 0;
    /* 2 s of steady traffic: an ACK of new data about every 3 ms */
    for (int k = 0; k < 200; k++) {
        now += iv;
        cur.bytes_acked += 65536;
        cur.last_ack_recv_ms = (uint32_t)(k % 3);
        double t = mpilab_pm_tcp_proof(&prev, &cur, prev_at, now, 0);
        CHECK(t > 0 && t >= now - 0.003 - 1e-9);
        if (t > proof)
            proof = t;
        if (mpilab_pm_probe_due(1, last_sent, 0, proof, iv) <= now + iv / 4) {
            probes++;
            last_sent = now;
        }
        prev = cur;
        prev_at = now;
        dumps++;
    }
    CHECK(dumps == 200 && probes == 0);
    /* the same traffic without the evidence: a probe every interval */
    double blind_sent = 0;
    int blind = 0;
    for (int k = 0; k < 200; k++)
        if (mpilab_pm_probe_due(1, blind_sent, 0, 0, iv) <= 10.0 + k * iv + iv / 4) {
            blind++;
            blind_sent = 10.0 + k * iv;
        }
    CHECK(blind == 200);
    /* the path drops silently: nothing new is acknowledged, last_ack_recv grows (stale) */
    double last_proof = proof, first_probe = 0;
    for (int k = 0; k < 10; k++) {
        now += iv;
        cur.last_ack_recv_ms += 10;
        double t = mpilab_pm_tcp_proof(&prev, &cur, prev_at, now, 0);
        CHECK(t == 0); /* stale evidence never counts */
        if (mpilab_pm_probe_due(1, last_sent, 0, proof, iv) <= now + iv / 4) {
            if (!first_probe)
                first_probe = now;
            last_sent = now;
        }
        prev = cur;
        prev_at = now;
    }
    CHECK(proof == last_proof);
    /* at the first dump once due within a quarter interval: at most one dump interval
       after the last proof's interval ran out */
    CHECK(first_probe > 0 && first_probe <= last_proof + iv + iv * 0.75 + 1e-9);
    CHECK(first_probe >= last_proof + iv * 0.75 - 1e-9);
    /* the verdict counts from the last proof: dead after the limit once the other rail
       answered (its probes resumed too), as with probes alone */
    CHECK(!mpilab_pm_path_silent(last_proof + limit - 0.001, last_proof, limit, now, iv));
    CHECK(mpilab_pm_path_silent(last_proof + limit + 0.001, last_proof, limit,
                                last_proof + limit, iv));
    /* a follower with fresh proofs stays quiet; with stale ones it probes after the
       usual FOLLOW_FACTOR intervals of silence */
    CHECK(mpilab_pm_probe_due(0, 0, 0, now, iv) > now + iv);
    CHECK_NEAR(mpilab_pm_probe_due(0, 0, 0, last_proof, iv),
               last_proof + MPILAB_PM_FOLLOW_FACTOR * iv, 1e-9);
    /* a decider's proof does not postpone a probe sent later: one interval after that */
    CHECK_NEAR(mpilab_pm_probe_due(1, 5.020, 0, 5.010, iv), 5.030, 1e-12);
    CHECK_NEAR(mpilab_pm_probe_due(1, 5.010, 0, 5.020, iv), 5.030, 1e-12);
}

MPILAB_TEST(policy)
{
    ctx_init();
    mpilab_pm_conn c;
    mpilab_pm_conn_init(&c, 0x11, 0, 0, -1);
    step(&c, MPILAB_PM_EV_ESTABLISHED, sf(0, 40000, 0), 1.0);
    CHECK(c.state == MPILAB_PM_MIGRATED && res.nact == 0);
    CHECK(step(&c, MPILAB_PM_EV_ARM, none, 1.1) == -1 && strstr(res.err, "not managed"));

    ctx.nrails = 3;
    ctx.alt_rail[2][0] = 2;
    ctx.path_up[2][2] = 1;
    CHECK(mpilab_pm_alternate(&ctx, 2, 0) == 2);
    ctx.path_up[2][2] = 0;
    CHECK(mpilab_pm_alternate(&ctx, 2, 0) == -1); /* the mapped alternate is down */
    ctx.alt_auto = 1;
    CHECK(mpilab_pm_alternate(&ctx, 2, 0) == 1);  /* first healthy rail after 0 */
    ctx.path_up[2][1] = 0;
    CHECK(mpilab_pm_alternate(&ctx, 2, 0) == -1);
    CHECK(mpilab_pm_alternate(&ctx, -1, 0) == -1 && mpilab_pm_alternate(&ctx, 2, 99) == -1);
    CHECK(strcmp(mpilab_pm_state_name(MPILAB_PM_ARMED), "ARMED") == 0);
}

/* ---- replaying an event log recorded by the agent ---- */

static int rail_of(json_t *peers, const char *addr, int *node)
{
    size_t i, j;
    json_t *n, *a;
    json_array_foreach(peers, i, n) {
        json_array_foreach(json_object_get(n, "addrs"), j, a) {
            if (strcmp(json_string_value(a), addr) == 0) {
                *node = (int)i;
                return (int)j;
            }
        }
    }
    *node = -1;
    return -1;
}

enum { MAXC = 64, MAXT = 256 }; /* connections and transitions a replayed log may hold */

/* The state machine's event for a logged line (ev, and for kernel events their type): 0 when
 * the line is none. A command names its connection (*token; 0: all); an "established"
 * connection starts as the active subflow (*backup0). */
static mpilab_pm_event_kind replay_kind(json_t *e, const char *ev, const char *type, const char *tok,
                                        const mpilab_pm_conn *c, uint32_t *token, int *backup0)
{
    mpilab_pm_event_kind kind = 0;
    if (!strcmp(type, "established")) {
        kind = MPILAB_PM_EV_ESTABLISHED;
        *backup0 = 1;
    } else if (!strcmp(type, "sub_established")) {
        kind = MPILAB_PM_EV_SUB_ESTABLISHED;
    } else if (!strcmp(type, "sub_closed")) {
        kind = MPILAB_PM_EV_SUB_CLOSED;
    } else if (!strcmp(type, "sub_priority")) {
        kind = MPILAB_PM_EV_SUB_PRIORITY;
    } else if (!strcmp(type, "closed")) {
        kind = MPILAB_PM_EV_CLOSED;
    } else if (!strcmp(ev, "path")) {
        kind = MPILAB_PM_EV_PATH;
    } else if (!strcmp(ev, "command") && tok == NULL) {
        const char *cmd = json_string_value(json_object_get(e, "command"));
        const char *target = json_string_value(json_object_get(e, "target"));
        if (cmd && target && (!strcmp(cmd, "arm") || !strcmp(cmd, "migrate"))) {
            kind = cmd[0] == 'a' ? MPILAB_PM_EV_ARM : MPILAB_PM_EV_MIGRATE;
            *token = strcmp(target, "all") ? (uint32_t)strtoul(target, NULL, 16) : 0;
        }
    } else if (!strcmp(ev, "action") && json_is_false(json_object_get(e, "ok")) && c &&
               !strcmp(json_string_value(json_object_get(e, "action")), "create")) {
        const char *moot = json_string_value(json_object_get(e, "moot"));
        kind = moot && !strcmp(moot, "connection not ready") ? MPILAB_PM_EV_LOAD_NOT_READY
                                                             : MPILAB_PM_EV_LOAD_FAILED;
    }
    return kind;
}

/* Step connection k with the replayed event pe (of connection c, or of every one a command or
 * path change reaches), between two ticks as the agent does; its transitions go to mine. */
static void replay_step(mpilab_pm_conn *k, mpilab_pm_event *pe, const mpilab_pm_conn *c, uint32_t token,
                        char mine[MAXT][64], int *nmine)
{
    int target = pe->kind == MPILAB_PM_EV_PATH ||
                 ((pe->kind == MPILAB_PM_EV_ARM || pe->kind == MPILAB_PM_EV_MIGRATE) &&
                  (token == 0 || token == k->token)) ||
                 k == c;
    if (!target || ((pe->kind == MPILAB_PM_EV_ARM || pe->kind == MPILAB_PM_EV_MIGRATE) &&
                    token == 0 && (!k->managed ||
                    k->state != (pe->kind == MPILAB_PM_EV_ARM ? MPILAB_PM_MIGRATED
                                                              : MPILAB_PM_ARMED))))
        return;
    /* the agent also steps every connection at each tick: one before, one after */
    mpilab_pm_event tick = {.kind = MPILAB_PM_EV_TICK, .now = pe->now};
    for (int round = 0; round < 3; round++) {
        mpilab_pm_event *use = round == 1 ? pe : &tick;
        if (mpilab_pm_step(&ctx, k, use, &res) == 0 && res.from != res.to &&
            *nmine < MAXT)
            snprintf(mine[(*nmine)++], 64, "%08x %s>%s", k->token,
                     mpilab_pm_state_name(res.from), mpilab_pm_state_name(res.to));
    }
}

/* One connection's transitions: the log's and the replay's must be the same sequence; 1 and a
 * line naming both when they differ. */
static int replay_compare(const char *path, uint32_t token, char logged[MAXT][64], int nlog, char mine[MAXT][64],
                          int nmine)
{
    char tok[16], a[2048] = "", b[2048] = "";
    snprintf(tok, sizeof(tok), "%08x", token);
    for (int k = 0; k < nlog; k++)
        if (!strncmp(logged[k], tok, 8) && strlen(a) + 64 < sizeof(a))
            strcat(strcat(a, logged[k] + 9), " ");
    for (int k = 0; k < nmine; k++)
        if (!strncmp(mine[k], tok, 8) && strlen(b) + 64 < sizeof(b))
            strcat(strcat(b, mine[k] + 9), " ");
    if (strcmp(a, b) != 0) {
        fprintf(stderr, "%s: connection %s: logged [%s], replayed [%s]\n", path, tok, a, b);
        return 1;
    }
    return 0;
}

static int replay(const char *path)
{
    json_error_t jerr;
    FILE *f = fopen(path, "r");
    if (!f) {
        fprintf(stderr, "%s: cannot open\n", path);
        return 1;
    }
    ctx_init();
    json_t *peers = NULL;
    int self = -1, bad = 0, nlog = 0, nmine = 0;
    mpilab_pm_conn conns[MAXC];
    int nconn = 0;
    char logged[MAXT][64], mine[MAXT][64];
    char line[4096];
    while (fgets(line, sizeof(line), f)) {
        json_t *e = json_loads(line, 0, &jerr);
        if (!e)
            continue;
        const char *ev = json_string_value(json_object_get(e, "event"));
        double now = json_real_value(json_object_get(e, "monotonic"));
        if (strcmp(ev, "start") == 0) {
            peers = json_incref(json_object_get(e, "peers"));
            const char *me = json_string_value(json_object_get(e, "node"));
            size_t i;
            json_t *n;
            json_array_foreach(peers, i, n)
                if (strcmp(json_string_value(json_object_get(n, "name")), me) == 0)
                    self = (int)i;
        } else if (strcmp(ev, "path") == 0) {
            const char *peer = json_string_value(json_object_get(e, "peer"));
            size_t i;
            json_t *n;
            json_array_foreach(peers, i, n)
                if (strcmp(json_string_value(json_object_get(n, "name")), peer) == 0)
                    ctx.path_up[i][json_integer_value(json_object_get(e, "rail"))] =
                        (unsigned char)json_is_true(json_object_get(e, "up"));
        } else if (strcmp(ev, "state") == 0 && nlog < MAXT) {
            snprintf(logged[nlog++], 64, "%s %s>%s",
                     json_string_value(json_object_get(e, "token")),
                     json_string_value(json_object_get(e, "from")),
                     json_string_value(json_object_get(e, "to")));
        }
        mpilab_pm_event pe;
        memset(&pe, 0, sizeof(pe));
        pe.now = now;
        mpilab_pm_conn *c = NULL;
        const char *type = strcmp(ev, "kernel") == 0
                               ? json_string_value(json_object_get(e, "type")) : "";
        const char *tok = json_string_value(json_object_get(e, "token"));
        uint32_t token = tok ? (uint32_t)strtoul(tok, NULL, 16) : 0;
        for (int i = 0; i < nconn; i++)
            if (conns[i].token == token)
                c = &conns[i];
        if (*type && json_object_get(e, "saddr")) {
            int node;
            pe.sub.lrail = rail_of(peers, json_string_value(json_object_get(e, "saddr")), &node);
            pe.sub.rrail = rail_of(peers, json_string_value(json_object_get(e, "daddr")), &node);
            inet_pton(AF_INET, json_string_value(json_object_get(e, "saddr")), &pe.sub.laddr);
            inet_pton(AF_INET, json_string_value(json_object_get(e, "daddr")), &pe.sub.raddr);
            pe.sub.lport = (uint16_t)json_integer_value(json_object_get(e, "sport"));
            pe.sub.rport = (uint16_t)json_integer_value(json_object_get(e, "dport"));
            pe.sub.backup = (int)json_integer_value(json_object_get(e, "backup"));
            if (!c && (!strcmp(type, "created") || !strcmp(type, "established")) &&
                nconn < MAXC) {
                c = &conns[nconn++];
                mpilab_pm_conn_init(c, token,
                                    (int)json_integer_value(json_object_get(e, "server_side")),
                                    node >= 0 && node != self, node);
            }
        }
        int backup0 = 0;
        pe.kind = replay_kind(e, ev, type, tok, c, &token, &backup0);
        if (backup0)
            pe.sub.backup = 0;
        json_decref(e);
        if (!pe.kind)
            continue;
        for (int i = 0; i < nconn; i++)
            replay_step(&conns[i], &pe, c, token, mine, &nmine);
    }
    fclose(f);
    json_decref(peers);
    for (int i = 0; i < nconn; i++)
        bad += replay_compare(path, conns[i].token, logged, nlog, mine, nmine);
    if (nlog == 0) {
        fprintf(stderr, "%s: no transitions recorded\n", path);
        bad++;
    }
    printf("%s: %d connections, %d transitions replayed%s\n", path, nconn, nlog,
           bad ? ", MISMATCH" : "");
    return bad;
}

/* The event logs the agent recorded on the live testbed (the program's arguments: the ctest
 * passes the .jsonl files of tests/pathmig/recorded), replayed through the state machine:
 * every connection's transitions must be the logged ones. */
MPILAB_TEST(replay_recorded)
{
    CHECKF(kit_nargs > 0, "no event log given (pass tests/pathmig/recorded/*.jsonl)");
    for (int i = 0; i < kit_nargs; i++)
        CHECKF(replay(kit_args[i]) == 0, "%s: the replay differs from the log", kit_args[i]);
}

MPILAB_TEST_MAIN()
