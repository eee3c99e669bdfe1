/* The dead-path verdict (mpilab_pm_judge) on tcp_info sequences, replayed as the agent
 * sees them: a dump every half probe period while the agent runs, the silence counted
 * from the last passive proof (mpilab_pm_tcp_proof) or settled dump, and the agent's own
 * lateness. Three sequences: a starved agent (its loop late, the kernel shows ACKs), a dead
 * path (data outstanding, no ACK past the timeout, retransmissions growing), a slow path
 * (ACKs late but arriving); then the single rules. */
#include "mpilab/pathmig.h"
#include <stdio.h>
#include <string.h>

#include "kit.h"

#define IV 0.010    /* probe period */
#define LIMIT 0.050 /* --probe-timeout */
#define STEP 0.005  /* a dump every half period */

/* one step of a sequence: the subflow's tcp_info at that moment, and whether the agent
 * ran then (0: it was not scheduled; no dump, no verdict) */
typedef struct {
    mpilab_pm_tcp_sample s;
    int ran;
} step_t;

typedef struct {
    int dead_at;    /* first step judged dead, -1 never */
    int asleep;     /* steps judged ASLEEP (re-armed) */
    int waited;     /* steps judged WAIT */
    double timeout; /* the last timeout used */
    char why[128];
} outcome_t;

/* Replay `n` steps from t0. The other rail answers all along (fresh), except where
 * `other_quiet` (every rail silent together). Returns what the judge said. */
static outcome_t replay(const step_t *seq, int n, int other_quiet)
{
    outcome_t o = {.dead_at = -1};
    double t0 = 100.0, since = t0, awake = t0, last_ran = t0, prev_at = 0;
    const mpilab_pm_tcp_sample *prev = NULL;
    for (int i = 0; i < n; i++) {
        double now = t0 + (i + 1) * STEP;
        if (!seq[i].ran)
            continue;
        if (now - last_ran > STEP + IV / 2) /* woke later than due: the agent was asleep */
            awake = now;
        last_ran = now;
        const mpilab_pm_tcp_sample *cur = &seq[i].s;
        double proof = mpilab_pm_tcp_proof(prev, cur, prev_at, now, 0);
        if (proof > since)
            since = proof;
        if (mpilab_pm_tcp_settled(prev, cur, 0) && now > since)
            since = now;
        mpilab_pm_path_kernel k;
        mpilab_pm_path_kernel_reset(&k);
        mpilab_pm_path_kernel_add(&k, cur);
        mpilab_pm_evidence ev = {.now = now, .since = since, .awake_since = awake,
                                 .limit = LIMIT, .interval = IV,
                                 .freshest = other_quiet ? since : now, .kernel = &k,
                                 .kernel_at = now};
        mpilab_pm_verdict v;
        mpilab_pm_judge(&ev, &v);
        o.timeout = v.timeout;
        if (v.kind == MPILAB_PM_V_ASLEEP)
            o.asleep++;
        if (v.kind == MPILAB_PM_V_WAIT)
            o.waited++;
        if (v.kind == MPILAB_PM_V_DEAD && o.dead_at < 0) {
            o.dead_at = i;
            snprintf(o.why, sizeof(o.why), "%s", v.why);
        }
        prev = cur;
        prev_at = now;
    }
    return o;
}

/* a healthy 1 KiB ping-pong subflow at step i: a round trip every 2 ms, the kernel's srtt
 * `rtt_us`; acked bytes grow, the last ACK at most `ack_ms` old, a segment in flight */
static mpilab_pm_tcp_sample healthy(int i, uint32_t rtt_us, uint32_t ack_ms)
{
    return (mpilab_pm_tcp_sample){.bytes_acked = 10000 + (uint64_t)i * 2560,
                                  .bytes_received = 10000 + (uint64_t)i * 2560,
                                  .last_ack_recv_ms = ack_ms, .last_data_recv_ms = ack_ms,
                                  .unacked = 1, .notsent = 0, .rtt_us = rtt_us,
                                  .rttvar_us = rtt_us / 2, .rto_us = 204000};
}

/* A starved agent: the job keeps every core busy and the agent is not scheduled for
 * 120 ms (24 dumps missed), twice; the connection works all along (the kernel took ACKs:
 * when the agent runs again, tcpi_last_ack_recv is a few ms and bytes_acked grew). The
 * silence since its last proof is 120 ms, more than the timeout, but never a verdict. */
MPILAB_TEST(starved_agent)
{
    step_t seq[200];
    for (int i = 0; i < 200; i++)
        seq[i] = (step_t){healthy(i, 2000, 1), !((i >= 20 && i < 44) || (i >= 100 && i < 124))};
    outcome_t o = replay(seq, 200, 0);
    CHECK(o.dead_at < 0);
    /* the same starvation on a path whose counters did not move while the agent slept
     * (an idle alternate has no subflow data: its kernel view proves nothing either way,
     * as a probe path's silence): re-armed, not judged */
    for (int i = 0; i < 200; i++) {
        seq[i] = (step_t){healthy(i < 20 ? i : 20, 2000, 1), !(i >= 20 && i < 44)};
        if (i >= 20) { /* nothing moves while asleep; ACKs resume when it runs again */
            seq[i].s.last_ack_recv_ms = i < 44 ? (uint32_t)((i - 19) * 5) : 1;
            seq[i].s.bytes_acked = 10000 + 20 * 2560 + (i >= 44 ? (uint64_t)(i - 43) * 2560 : 0);
        }
    }
    o = replay(seq, 200, 0);
    CHECK(o.dead_at < 0);
    /* starved with nothing at all arriving (the kernel's ACK age grows): the verdict waits
     * a full timeout after the agent runs again, so a job whose agent sleeps is never
     * blamed on the path at the first look */
    for (int i = 0; i < 60; i++) {
        seq[i] = (step_t){healthy(i < 10 ? i : 10, 2000, 1), !(i >= 10 && i < 40)};
        if (i >= 10)
            seq[i].s.last_ack_recv_ms = (uint32_t)((i - 9) * 5);
    }
    o = replay(seq, 60, 0);
    CHECK(o.asleep > 0);
    /* it ran again at step 40 (t = 205 ms); dead only once a full timeout passed since */
    CHECK(o.dead_at < 0 || (o.dead_at + 1) * STEP >= (40 + 1) * STEP + o.timeout - 1e-9);
}

/* A dead path (silent drop): at step 30 the ACKs stop; one segment stays unacknowledged,
 * the ACK age grows with the clock, the kernel's RTO fires (retransmits and backoff grow
 * from 200 ms on). Judged dead one timeout after the last proof, not before, and the
 * evidence names the outstanding data. */
MPILAB_TEST(dead_path)
{
    step_t seq[120];
    for (int i = 0; i < 120; i++) {
        seq[i] = (step_t){healthy(i < 30 ? i : 30, 2000, 1), 1};
        if (i >= 30) {
            seq[i].s.last_ack_recv_ms = (uint32_t)((i - 29) * 5);
            seq[i].s.unacked = 2;
            seq[i].s.retransmits = (uint8_t)((i - 30) * 5 / 200);
            seq[i].s.backoff = seq[i].s.retransmits;
        }
    }
    outcome_t o = replay(seq, 120, 0);
    CHECK(o.dead_at > 30);
    /* the dump of step 30 saw the last growth, of an ACK 5 ms old then */
    double last_proof = 100.0 + 31 * STEP - 0.005;
    double judged = 100.0 + (o.dead_at + 1) * STEP;
    CHECK(judged - last_proof > LIMIT);          /* never before the timeout */
    CHECK(judged - last_proof <= LIMIT + 2 * STEP); /* and at the first dump after it */
    CHECK(strstr(o.why, "no ACK") != NULL);
    CHECK(strstr(o.why, "outstanding") != NULL);
    /* every rail silent together (this machine or the peer stalled): no verdict */
    o = replay(seq, 120, 1);
    CHECK(o.dead_at < 0 && o.waited > 0);
    /* on a silent drop inside this node the data is never sent (a local firewall): nothing
     * unacknowledged, but queued (notsent): at stake all the same */
    for (int i = 30; i < 120; i++) {
        seq[i].s.unacked = 0;
        seq[i].s.notsent = 1024;
    }
    o = replay(seq, 120, 0);
    CHECK(o.dead_at > 30 && (o.dead_at + 1) * STEP - 31 * STEP <= LIMIT + 2 * STEP);
}

/* A slow path: a busy machine delays ACKs by up to 90 ms (the kernel's srtt 40 ms,
 * rttvar 15 ms: timeout 100 ms), in bursts: bytes_acked stands still for up to 90 ms, then
 * jumps. The fixed 50 ms limit would judge it dead at every burst; the adapted timeout
 * never does. */
MPILAB_TEST(slow_path)
{
    step_t seq[400];
    uint64_t acked = 10000;
    uint32_t age = 0;
    for (int i = 0; i < 400; i++) {
        int burst = i % 20 == 0; /* every 100 ms an ACK arrives: 90 ms silences */
        if (burst) {
            acked += 20 * 1024;
            age = 0;
        } else {
            age += 5;
        }
        seq[i] = (step_t){{.bytes_acked = acked, .bytes_received = acked,
                           .last_ack_recv_ms = age, .last_data_recv_ms = age, .unacked = 3,
                           .rtt_us = 40000, .rttvar_us = 15000, .rto_us = 240000},
                          1};
    }
    outcome_t o = replay(seq, 400, 0);
    CHECK(o.dead_at < 0);
    CHECK(o.timeout >= 0.100 - 1e-9);
    /* the kernel's own measure judged by the fixed limit alone: this is what the adapted
     * timeout prevents */
    for (int i = 0; i < 400; i++)
        seq[i].s.rtt_us = seq[i].s.rttvar_us = 0;
    o = replay(seq, 400, 0);
    CHECK(o.dead_at >= 0);
}

/* the single rules: the timeout, the round-trip estimator, the kernel summary */
MPILAB_TEST(rules)
{
    mpilab_pm_rtt r = {0};
    mpilab_pm_rtt_add(&r, 0.002);
    CHECK(r.n == 1 && r.srtt == 0.002 && r.rttvar == 0.001);
    for (int i = 0; i < 50; i++)
        mpilab_pm_rtt_add(&r, 0.002);
    CHECK(r.srtt > 0.0019 && r.srtt < 0.0021 && r.rttvar < 1e-4);
    mpilab_pm_rtt_add(&r, -1); /* not a round trip */
    CHECK(r.n == 51);
    mpilab_pm_evidence ev = {.now = 1, .since = 0.9, .limit = LIMIT, .interval = IV,
                             .probe_rtt = &r};
    CHECK(mpilab_pm_path_timeout(&ev) == LIMIT); /* quiet: the floor */
    mpilab_pm_rtt slow = {.srtt = 0.060, .rttvar = 0.020, .n = 5};
    ev.probe_rtt = &slow;
    CHECK(mpilab_pm_path_timeout(&ev) > 0.139 && mpilab_pm_path_timeout(&ev) < 0.141);
    /* a silence of 100 ms that ended with a sign of life: later silences are judged
     * against 1.5 times it */
    mpilab_pm_evidence rec = ev;
    rec.probe_rtt = NULL;
    rec.recovered = 0.100;
    CHECK(mpilab_pm_path_timeout(&rec) > 0.1499 && mpilab_pm_path_timeout(&rec) < 0.1501);
    rec.freshest = rec.now;
    rec.since = rec.now - 0.120; /* as long again as the 50 ms limit, shorter than that */
    mpilab_pm_verdict rv;
    mpilab_pm_judge(&rec, &rv);
    CHECK(rv.kind == MPILAB_PM_V_ALIVE);
    rec.recovered = 0;
    mpilab_pm_judge(&rec, &rv);
    CHECK(rv.kind == MPILAB_PM_V_DEAD);
    /* the whole peer stalled: another rail came back 20 ms ago from a silence of its own;
     * this path's silence counts from then (it comes back a moment later, as a rule) */
    rec.recovered = 0;
    rec.back_at = rec.now - 0.020;
    mpilab_pm_judge(&rec, &rv);
    CHECK(rv.kind == MPILAB_PM_V_WAIT && rv.recheck > rec.back_at + 0.0499 &&
          rv.recheck < rec.back_at + 0.0501);
    rec.back_at = rec.now - 0.060; /* back long enough ago: this path is judged */
    mpilab_pm_judge(&rec, &rv);
    CHECK(rv.kind == MPILAB_PM_V_DEAD);
    slow.srtt = 100; /* capped */
    CHECK(mpilab_pm_path_timeout(&ev) == LIMIT * MPILAB_PM_TIMEOUT_CAP);
    /* probes alone (no subflow listed): dead after the timeout, another rail answering */
    ev.probe_rtt = NULL;
    ev.since = 0.9;
    ev.freshest = 0.99;
    mpilab_pm_verdict v;
    mpilab_pm_judge(&ev, &v);
    CHECK(v.kind == MPILAB_PM_V_DEAD && strstr(v.why, "probe") != NULL);
    ev.now = 0.949;
    mpilab_pm_judge(&ev, &v);
    CHECK(v.kind == MPILAB_PM_V_ALIVE && v.recheck > 0.9499 && v.recheck < 0.9501);
    ev.now = 1;
    ev.awake_since = 0.98; /* the agent ran late until 0.98: re-armed to 0.98 + timeout */
    mpilab_pm_judge(&ev, &v);
    CHECK(v.kind == MPILAB_PM_V_ASLEEP && v.recheck > 1.0299 && v.recheck < 1.0301);
    ev.awake_since = 0;
    /* kernel: an idle subflow (nothing at stake) or a recent ACK is no fault; counters
     * older than the silence are not used */
    mpilab_pm_path_kernel k;
    mpilab_pm_path_kernel_reset(&k);
    mpilab_pm_tcp_sample idle = {.last_ack_recv_ms = 500, .notsent = UINT32_MAX};
    mpilab_pm_path_kernel_add(&k, &idle);
    CHECK(k.nsub == 1 && k.at_stake == 0);
    ev.kernel = &k;
    ev.kernel_at = 1;
    mpilab_pm_judge(&ev, &v);
    CHECK(v.kind == MPILAB_PM_V_WAIT && strstr(v.why, "nothing outstanding") != NULL);
    mpilab_pm_tcp_sample busy = {.last_ack_recv_ms = 10, .unacked = 1};
    mpilab_pm_path_kernel_add(&k, &busy);
    CHECK(k.at_stake == 1 && k.ack_age > 0.0099 && k.ack_age < 0.0101);
    mpilab_pm_judge(&ev, &v);
    CHECK(v.kind == MPILAB_PM_V_WAIT && strstr(v.why, "ACK") != NULL);
    mpilab_pm_path_kernel_reset(&k);
    busy.last_ack_recv_ms = 100;
    mpilab_pm_path_kernel_add(&k, &busy);
    ev.kernel_at = 0.85; /* before the silence began */
    mpilab_pm_judge(&ev, &v);
    CHECK(v.kind == MPILAB_PM_V_WAIT);
    ev.kernel_at = 1;
    mpilab_pm_judge(&ev, &v);
    CHECK(v.kind == MPILAB_PM_V_DEAD);
}

/* What a probe round learns from a silence that ended (mpilab_pm_recovery): a path in use
 * that stalled and answered again stretches later timeouts; a path that was idle (probed
 * at the slow rate) and comes into use when a connection appears has not stalled, and the
 * start of its fast probing is no answer. Recorded from an agent's log: the connection
 * appeared 90 ms after the idle path's last slow reply, and the old rule learnt a 90 ms
 * "stall" that stretched every timeout of the next 15-30 s to 135 ms. */
MPILAB_TEST(recovery)
{
    int back = -1;
    /* idle path, last slow reply at 10.100; a connection appears at 10.190 (fast probing
     * starts: the path's `since` moves there without an answer) */
    mpilab_pm_seen idle = {.since = 10.100, .heard = 1, .period = 10 * IV, .watch = 10 * IV,
                           .used = 0};
    mpilab_pm_seen armed = {.since = 10.190, .heard = 0, .period = IV, .watch = IV, .used = 1};
    CHECK(mpilab_pm_recovery(&idle, &armed, IV, -1, &back) == 0 && back == 0);
    /* the first fast reply 2 ms later: a round trip, no silence */
    mpilab_pm_seen first = {.since = 10.192, .heard = 1, .period = IV, .watch = IV, .used = 1};
    CHECK(mpilab_pm_recovery(&armed, &first, IV, -1, &back) == 0 && back == 0);
    /* the same path came into use, answered at once by a reply to a slow probe sent
     * earlier: the gap is the slow rate's, not a stall */
    mpilab_pm_seen used_now = {.since = 10.190, .heard = 1, .period = IV, .watch = IV,
                               .used = 1};
    CHECK(mpilab_pm_recovery(&idle, &used_now, IV, -1, &back) == 0 && back == 0);
    /* a path in use silent for 120 ms, then answering: a stall of at least 110 ms (its
     * last sign of life may have come up to a period after the agent looked) */
    mpilab_pm_seen stalled = {.since = 10.312, .heard = 1, .period = IV, .watch = IV, .used = 1};
    double gap = mpilab_pm_recovery(&first, &stalled, IV, -1, &back);
    CHECK(gap > 0.1099 && gap < 0.1101 && back == 1);
    /* the follower looks at a path every 3 periods: a 45 ms gap there is at least 15 ms
     * of silence, under two periods: no stall; 90 ms is at least 60 */
    mpilab_pm_seen f0 = {.since = 30.0, .heard = 1, .period = IV, .watch = 3 * IV, .used = 1};
    mpilab_pm_seen f1 = {.since = 30.045, .heard = 1, .period = IV, .watch = 3 * IV, .used = 1};
    CHECK(mpilab_pm_recovery(&f0, &f1, IV, -1, &back) == 0 && back == 1);
    f1.since = 30.090;
    gap = mpilab_pm_recovery(&f0, &f1, IV, -1, &back);
    CHECK(gap > 0.0599 && gap < 0.0601);
    /* the kernel's view during that silence: nothing at stake at its dumps (the
     * application sent nothing), no stall; data at stake and no ACK for 80 ms, 80 ms */
    CHECK(mpilab_pm_recovery(&first, &stalled, IV, 0, &back) == 0 && back == 1);
    gap = mpilab_pm_recovery(&first, &stalled, IV, 0.080, &back);
    CHECK(gap > 0.0799 && gap < 0.0801);
    /* one probe period late is no stall; nor is a silence that has not ended */
    mpilab_pm_seen soon = {.since = 10.207, .heard = 1, .period = IV, .watch = IV, .used = 1};
    CHECK(mpilab_pm_recovery(&first, &soon, IV, -1, &back) == 0 && back == 0);
    CHECK(mpilab_pm_recovery(&first, &first, IV, -1, &back) == 0 && back == 0);
    /* an idle alternate silent for 3 slow periods and back: back (the verdicts on the
     * peer's other paths wait), but no timeout is stretched by it */
    mpilab_pm_seen alt0 = {.since = 20.0, .heard = 1, .period = 10 * IV, .watch = 10 * IV,
                           .used = 0};
    mpilab_pm_seen alt1 = {.since = 20.3, .heard = 1, .period = 10 * IV, .watch = 10 * IV,
                           .used = 0};
    CHECK(mpilab_pm_recovery(&alt0, &alt1, IV, -1, &back) == 0 && back == 1);
    /* a first look (nothing seen before) learns nothing */
    mpilab_pm_seen none = {0};
    CHECK(mpilab_pm_recovery(&none, &first, IV, -1, &back) == 0 && back == 0);
}

MPILAB_TEST_MAIN()
