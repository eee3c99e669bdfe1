/* The dead-path verdict (pure: no I/O, no clock). See pathmig.h, "The dead-path verdict". */
#include "mpilab/pathmig.h"

#include <stdio.h>
#include <string.h>

void mpilab_pm_path_kernel_reset(mpilab_pm_path_kernel *k)
{
    memset(k, 0, sizeof(*k));
    k->ack_age = 1e300;
}

void mpilab_pm_path_kernel_add(mpilab_pm_path_kernel *k, const mpilab_pm_tcp_sample *s)
{
    k->nsub++;
    double age = (double)s->last_ack_recv_ms * 1e-3;
    if (age < k->ack_age)
        k->ack_age = age;
    double bound = ((double)s->rtt_us + 4.0 * (double)s->rttvar_us) * 1e-6;
    if (bound > k->rtt_bound)
        k->rtt_bound = bound;
    /* unknown notsent (an old kernel) counts as nothing queued: unacked alone decides */
    int queued = s->notsent != 0 && s->notsent != UINT32_MAX;
    if (s->unacked == 0 && !queued)
        return;
    k->at_stake++;
    k->unacked += s->unacked;
    if (s->retransmits > k->retransmits)
        k->retransmits = s->retransmits;
    if (s->backoff > k->backoff)
        k->backoff = s->backoff;
}

void mpilab_pm_rtt_add(mpilab_pm_rtt *e, double sample)
{
    if (!(sample >= 0))
        return;
    if (e->n++ == 0) {
        e->srtt = sample;
        e->rttvar = sample / 2;
        return;
    }
    double d = sample > e->srtt ? sample - e->srtt : e->srtt - sample;
    e->rttvar = 0.75 * e->rttvar + 0.25 * d;
    e->srtt = 0.875 * e->srtt + 0.125 * sample;
}

double mpilab_pm_path_timeout(const mpilab_pm_evidence *ev)
{
    double t = ev->limit;
    if (ev->probe_rtt && ev->probe_rtt->n > 0) {
        double b = ev->probe_rtt->srtt + 4 * ev->probe_rtt->rttvar;
        if (b > t)
            t = b;
    }
    if (ev->kernel && ev->kernel->nsub > 0 && ev->kernel->rtt_bound > t)
        t = ev->kernel->rtt_bound;
    if (MPILAB_PM_RECOVERED_FACTOR * ev->recovered > t)
        t = MPILAB_PM_RECOVERED_FACTOR * ev->recovered;
    double cap = ev->limit * MPILAB_PM_TIMEOUT_CAP;
    return t > cap ? cap : t;
}

double mpilab_pm_recovery(const mpilab_pm_seen *prev, const mpilab_pm_seen *cur,
                          double interval, double kernel_stall, int *back)
{
    *back = 0;
    if (prev->since <= 0 || cur->since <= prev->since || !cur->heard)
        return 0;
    double gap = cur->since - prev->since;
    double period = prev->period > cur->period ? prev->period : cur->period;
    if (gap > 2 * period)
        *back = 1;
    double silence = gap - prev->watch;
    if (kernel_stall >= 0 && kernel_stall < silence)
        silence = kernel_stall;
    return prev->used && cur->used && silence > 2 * interval ? silence : 0;
}

static void verdict(mpilab_pm_verdict *out, mpilab_pm_verdict_kind kind, double recheck)
{
    out->kind = kind;
    out->recheck = recheck;
}

void mpilab_pm_judge(const mpilab_pm_evidence *ev, mpilab_pm_verdict *out)
{
    memset(out, 0, sizeof(*out));
    double t = mpilab_pm_path_timeout(ev), now = ev->now;
    out->timeout = t;
    if (now - ev->since <= t) {
        verdict(out, MPILAB_PM_V_ALIVE, ev->since + t);
        return;
    }
    /* silence while the agent itself was not running is no evidence: the timer counts
       from the moment its loop ran on time again */
    double from = ev->awake_since > ev->since ? ev->awake_since : ev->since;
    if (now - from <= t) {
        verdict(out, MPILAB_PM_V_ASLEEP, from + t);
        snprintf(out->why, sizeof(out->why),
                 "the agent was late (%.0f ms of the silence): timer re-armed",
                 (from - ev->since) * 1e3);
        return;
    }
    /* another rail just came back from a silence of its own: the peer or the network
       stalled as a whole, and this path may come back a moment later */
    if (ev->back_at > from && now - ev->back_at <= t) {
        verdict(out, MPILAB_PM_V_WAIT, ev->back_at + t);
        snprintf(out->why, sizeof(out->why), "another rail came back from a silence %.0f ms "
                 "ago", (now - ev->back_at) * 1e3);
        return;
    }
    if (!mpilab_pm_path_silent(now, from, t, ev->freshest, ev->interval)) {
        verdict(out, MPILAB_PM_V_WAIT, now + ev->interval / 2);
        snprintf(out->why, sizeof(out->why), "no other rail answered since");
        return;
    }
    const mpilab_pm_path_kernel *k = ev->kernel;
    if (k && k->nsub > 0) {
        if (ev->kernel_at < from) { /* never judged on counters older than the silence */
            verdict(out, MPILAB_PM_V_WAIT, now + ev->interval / 2);
            snprintf(out->why, sizeof(out->why), "no dump of its subflows since the silence");
            return;
        }
        if (k->ack_age <= t) {
            verdict(out, MPILAB_PM_V_WAIT, now + ev->interval / 2);
            snprintf(out->why, sizeof(out->why), "an ACK %.0f ms before the last dump (slow, "
                     "not dead)", k->ack_age * 1e3);
            return;
        }
        if (!k->at_stake) {
            verdict(out, MPILAB_PM_V_WAIT, now + ev->interval / 2);
            snprintf(out->why, sizeof(out->why), "nothing outstanding on its subflows");
            return;
        }
        verdict(out, MPILAB_PM_V_DEAD, now);
        snprintf(out->why, sizeof(out->why),
                 "no ACK for %.0f ms with data outstanding (%llu segment(s)); timeout %.0f ms; "
                 "%u retransmission timeout(s)", k->ack_age * 1e3, (unsigned long long)k->unacked,
                 t * 1e3, k->retransmits);
        return;
    }
    verdict(out, MPILAB_PM_V_DEAD, now);
    snprintf(out->why, sizeof(out->why), "no probe reply for %.0f ms; timeout %.0f ms",
             (now - ev->since) * 1e3, t * 1e3);
}
