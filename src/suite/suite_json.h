/* JSON of the suite's derived quantities and configuration, for runners that write
 * mpilab.results/1 (internal: needs jansson). */
#ifndef MPILAB_SUITE_JSON_H
#define MPILAB_SUITE_JSON_H

#include <jansson.h>
#include <stddef.h>

#include "mpilab/suite.h"

/* The "derived" object of one measurement of op at `bytes` whose per-run time is `seconds`
 * (mpilab-bench passes the median of the samples): keys bandwidth_Bps, msg_rate, latency_s, cpu_avail, poll_interval (work-loop
 * iterations), poll_interval_s, work_rate, overlap_pct, t_comm, t_comp, t_total, window,
 * pairs, msgs; only those that apply. NULL if op is not a suite entry measured here. */
json_t *mpilab_suite_derived_json(const mpilab_op_t *op, size_t bytes, double seconds);

/* {"window":..,"pairs":..,"poll_sweep":[..],"comb_msgs":..,"overlap":"<definition>"}. */
json_t *mpilab_suite_config_json(void);


#endif
