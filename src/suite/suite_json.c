/* JSON of derived quantities and configuration (suite_json.h). */
#include "suite/suite_json.h"

#include <math.h>
#include <string.h>

static void put(json_t *o, const char *k, double v)
{
    if (isfinite(v))
        json_object_set_new(o, k, json_real(v));
}

json_t *mpilab_suite_derived_json(const mpilab_op_t *op, size_t bytes, double seconds)
{
    mpilab_suite_derived_t d;
    if (mpilab_suite_derive(op, bytes, seconds, &d) != 0)
        return NULL;
    json_t *o = json_object();
    put(o, "bandwidth_Bps", d.bandwidth_Bps);
    put(o, "msg_rate", d.msg_rate);
    put(o, "latency_s", d.latency_s);
    put(o, "cpu_avail", d.cpu_avail);
    put(o, "cpu_avail_peer", d.cpu_avail_peer);
    put(o, "poll_interval", d.poll_interval);
    put(o, "poll_interval_s", d.poll_interval_s);
    put(o, "work_rate", d.work_rate);
    put(o, "overlap_pct", d.overlap_pct);
    put(o, "t_comm", d.t_comm);
    put(o, "t_comp", d.t_comp);
    put(o, "t_total", d.t_total);
    if (d.window)
        json_object_set_new(o, "window", json_integer(d.window));
    if (d.pairs)
        json_object_set_new(o, "pairs", json_integer(d.pairs));
    if (d.msgs)
        json_object_set_new(o, "msgs", json_integer(d.msgs));
    return o;
}

json_t *mpilab_suite_config_json(void)
{
    const mpilab_suite_config_t *c = mpilab_suite_config();
    json_t *sw = json_array();
    for (size_t k = 0; k < c->npoll; k++)
        json_array_append_new(sw, json_integer((json_int_t)c->poll_sweep[k]));
    return json_pack("{s:I,s:I,s:o,s:I,s:s,s:s}", "window", (json_int_t)c->window, "pairs", (json_int_t)c->pairs,
                     "poll_sweep", sw, "comb_msgs", (json_int_t)c->comb_msgs, "overlap",
                     "100*(t_comm+t_comp-t_total)/min(t_comm,t_comp), clamped to [0,100]", "cpu_avail",
                     "work rate during transfers / work rate without communication (rank 0; "
                     "cpu_avail_peer: the same for rank 1)");
}
