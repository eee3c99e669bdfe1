/* The measurement engine: measure one operation-table entry for one size with a chosen
 * timing method, isolation and precision. Usable from any MPI application at run time. */
#ifndef MPILAB_BENCH_H
#define MPILAB_BENCH_H

#include <mpi.h>
#include "mpilab/mpi_check.h"
#include <stddef.h>

#include "mpilab/clocksync.h"
#include "mpilab/ops.h"
#include "mpilab/stats.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum mpilab_timing {
    MPILAB_TIMING_MAX = 0,    /* local times on every rank, maximum taken */
    MPILAB_TIMING_ROOT = 1,   /* root's time until all ranks confirm, minus confirmation time */
    MPILAB_TIMING_GLOBAL = 2, /* synchronised clocks: latest end minus common start */
    MPILAB_TIMING_OPSPEC = 3  /* root-to-rank tasks with acknowledgement (scatter/gather) */
} mpilab_timing_t;

typedef enum mpilab_isolation {
    MPILAB_ISO_BARRIER = 0, /* a barrier before every repetition */
    MPILAB_ISO_NONE = 1,    /* pipelined: repetitions back to back, see pipeline_depth */
    MPILAB_ISO_SYNC = 2     /* start at a common synchronised time; late starts invalid */
} mpilab_isolation_t;

typedef struct mpilab_bench_opts {
    mpilab_precision_t prec;
    mpilab_isolation_t isolation;
    int root;
    mpilab_sync_method_t sync_method;
    /* 1: synchronise clocks again before every measurement that needs them (default);
     * 0: once per context. */
    int resync;
    /* Isolation none: repetitions per back-to-back chunk; one sample = chunk time / depth. */
    size_t pipeline_depth;
    /* Untimed executions before the repetitions (a barrier after each), so that first-touch
     * costs (connection set-up, page faults, cold caches) do not enter the samples. */
    size_t warmup;
} mpilab_bench_opts_t;

/* Defaults: precision 5/100/0.95/0.025, barrier, root 0, skampi, resync 1, depth 10,
 * warmup 2. */
void mpilab_bench_opts_default(mpilab_bench_opts_t *o);

typedef struct mpilab_bench mpilab_bench_t;

/* Collective over comm (duplicated internally). Returns 0, or -1 with a one-line
 * reason in err if the options are unusable. */
int mpilab_bench_init(MPI_Comm comm, const mpilab_bench_opts_t *opts, mpilab_bench_t **out,
                      char *err, size_t errlen);
void mpilab_bench_finalize(mpilab_bench_t *b);
/* The latest clock synchronisation (NULL if none ran yet). */
const mpilab_clocksync_t *mpilab_bench_clocksync(const mpilab_bench_t *b);
MPI_Comm mpilab_bench_comm(const mpilab_bench_t *b);

typedef struct mpilab_result {
    mpilab_stats_t stats;
    double *samples;       /* [stats.reps] seconds per repetition, in order */
    unsigned char *valid;  /* [stats.reps] */
    /* Root timing: the confirmation alone is timed once after every repetition (a barrier,
     * then every rank confirms to the root), interleaved, so it sees the same load; the
     * subtracted value is the median of those samples (per repetition: divided by the
     * pipeline depth), recomputed at every stop decision. A corrected time <= 0 is invalid
     * (valid[k] = 0, not in the statistics) and counted in `negative`. */
    double confirm_time;         /* root timing: the subtracted confirmation time (median) */
    mpilab_stats_t confirm_stats; /* root timing: statistics of the confirmation samples */
    size_t negative;             /* root and opspec timing: repetitions invalid for a corrected time
                                  * <= 0 (opspec subtracts the one-way acknowledgement time) */
    double sync_residual;  /* global/sync: max residual of the clock sync used, else 0 */
    double sync_uncertainty; /* global/sync: largest offset-error bound of that sync at the end of
                              * the measurement (its bound at the sync's end, grown by the drift
                              * bound times the time since), else 0 */
    double wall;           /* seconds the measurement took on the root: clock sync, calibration,
                            * repetitions and stop decisions (not buffer setup, validation) */
    int applied;           /* 0 if the timing method does not apply to the op (opspec) */
    int data_ok;           /* validation of the data after the measurement (1 = correct) */
    /* the entry's derived values (op->derive from stats.median before teardown), derived_ok
     * 1 if it gave them */
    mpilab_derived_t derived;
    int derived_ok;
} mpilab_result_t;

/* Collective: measure op at `bytes` with `timing`. Results are filled on every rank.
 * Returns 0, or -1 if setup or the operation failed (err says why). If the timing
 * method does not apply (opspec on an op without MPILAB_OP_OPSPEC), returns 0 with
 * applied == 0 and no samples. Free with mpilab_result_free. */
int mpilab_bench_measure(mpilab_bench_t *b, const mpilab_op_t *op, size_t bytes,
                         mpilab_timing_t timing, mpilab_result_t *res, char *err, size_t errlen);
void mpilab_result_free(mpilab_result_t *r);

const char *mpilab_timing_name(mpilab_timing_t t);
int mpilab_timing_parse(const char *s, mpilab_timing_t *out);
const char *mpilab_isolation_name(mpilab_isolation_t i);
/* The isolation of the measurements that follow (a run measuring several). */
void mpilab_bench_set_isolation(mpilab_bench_t *b, mpilab_isolation_t iso);
/* The relative precision of the next measurements (in (0,1); mpilab/epsrule.h). */
void mpilab_bench_set_eps(mpilab_bench_t *b, double eps);
int mpilab_isolation_parse(const char *s, mpilab_isolation_t *out);

#ifdef __cplusplus
}
#endif
#endif
