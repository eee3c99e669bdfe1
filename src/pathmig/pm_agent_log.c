/* The path migration agent's event log (one JSON object per line, CLOCK_REALTIME `time` and
 * CLOCK_MONOTONIC `monotonic`: the testbed fault log's clocks) and what the agent costs
 * (the `stats` of `status` and of the `stop` record). */
#include "pathmig/pm_agent.h"

#include <arpa/inet.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>

double pma_mono(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

double pma_realtime(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

const char *pma_ip(uint32_t a, char *buf)
{
    struct in_addr in = {a};
    inet_ntop(AF_INET, &in, buf, INET_ADDRSTRLEN);
    return buf;
}

void pma_log_obj(agent_t *ag, const char *event, json_t *o)
{
    json_object_set_new(o, "time", json_real(pma_realtime()));
    json_object_set_new(o, "monotonic", json_real(pma_mono()));
    json_object_set_new(o, "node", json_string(ag->node_name));
    json_object_set_new(o, "event", json_string(event));
    if (ag->log) {
        json_dumpf(o, ag->log, JSON_COMPACT | JSON_PRESERVE_ORDER);
        fputc('\n', ag->log); /* flushed before the main loop waits (log_flush) */
    }
    json_decref(o);
}

json_t *pma_sub_json(const agent_t *ag, const mpilab_pm_subflow *s)
{
    char a[INET_ADDRSTRLEN], b[INET_ADDRSTRLEN];
    (void)ag;
    return json_pack("{s:s,s:i,s:s,s:i,s:i,s:i,s:b}", "local", pma_ip(s->laddr, a), "lport",
                     (int)s->lport, "remote", pma_ip(s->raddr, b), "rport", (int)s->rport,
                     "rail", s->rrail, "backup", s->backup, "established", s->established);
}

void pma_log_transition(agent_t *ag, const mpilab_pm_conn *c, mpilab_pm_state from,
                        mpilab_pm_state to, const char *cause)
{
    char tok[16];
    snprintf(tok, sizeof(tok), "%08" PRIx32, c->token);
    pma_log_obj(ag, "state", json_pack("{s:s,s:s,s:s,s:s,s:s}", "token", tok, "peer",
                                       c->peer >= 0 ? ag->nodes[c->peer].name : "", "from",
                                       mpilab_pm_state_name(from), "to", mpilab_pm_state_name(to),
                                       "cause", cause ? cause : ""));
}

json_t *pma_stats_json(const agent_t *ag)
{
    struct rusage ru;
    memset(&ru, 0, sizeof(ru));
    getrusage(RUSAGE_SELF, &ru);
    double up = pma_mono() - ag->started;
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
    json_object_set_new(o, "late_wakeups", json_integer((json_int_t)ag->st.late_wakeups));
    json_object_set_new(o, "late_max_ms", json_real(ag->st.late_max * 1e3));
    json_object_set_new(o, "verdicts_rearmed", json_integer((json_int_t)ag->st.verdicts_rearmed));
    json_object_set_new(o, "verdicts_waited", json_integer((json_int_t)ag->st.verdicts_waited));
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
