/* Internals shared by the suite's files (not installed). */
#ifndef MPILAB_SUITE_INTERNAL_H
#define MPILAB_SUITE_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "mpilab/suite.h"

/* What a fixed entry measures (its mpilab_op_t.param). */
enum suite_kind {
    SK_PINGPONG, SK_PINGPING, SK_SENDRECV, SK_EXCHANGE, SK_STREAM, SK_STREAM_MULTI, SK_COMB,
    SK_OVERLAP_ISEND, SK_OVERLAP_IALLREDUCE
};

/* What a measurement (setup .. before teardown) holds on this process, for derive. */
typedef struct suite_measured {
    int multi; /* stream_multi */
    int64_t window, pairs, msgs;
    double poll_iters;
    double work_rate;        /* iterations per second, no communication */
    double work_iters;       /* during the runs */
    double run_time;         /* local seconds inside run() */
    double t_comm, t_comp;   /* overlap calibration */
    /* COMB: the peer's work_iters, run_time and work_rate (NaN if not exchanged) */
    double peer_work_iters, peer_run_time, peer_work_rate;
} suite_measured_t;

extern mpilab_suite_counters_t suite_counters;

/* The measurement of the entry run r (its state), in *m; NULL if r has no state. */
const suite_measured_t *suite_measured(const mpilab_op_run_t *r, suite_measured_t *m);

/* The fixed unit of application work: `iters` dependent floating-point steps. */
void suite_work(size_t iters);
/* Iterations per second of suite_work on this process (best of a few timed runs). */
double suite_work_rate(void);

/* Register every entry (the fixed ones, then one COMB entry per poll interval): 0 or -1. */
int suite_register_entries(const mpilab_suite_config_t *cfg);
/* 1 if op is one of the suite's entries (by its functions, not its name). */
int suite_owns(const mpilab_op_t *op);

/* Each entry's derived values (mpilab_op_t.derive), from its measurement's state. */
int suite_derive_pingpong(const mpilab_op_run_t *r, double t, mpilab_derived_t *d);
int suite_derive_pingping(const mpilab_op_run_t *r, double t, mpilab_derived_t *d);
int suite_derive_sendrecv(const mpilab_op_run_t *r, double t, mpilab_derived_t *d);
int suite_derive_exchange(const mpilab_op_run_t *r, double t, mpilab_derived_t *d);
int suite_derive_stream(const mpilab_op_run_t *r, double t, mpilab_derived_t *d);
int suite_derive_comb(const mpilab_op_run_t *r, double t, mpilab_derived_t *d);
int suite_derive_overlap(const mpilab_op_run_t *r, double t, mpilab_derived_t *d);

#endif
