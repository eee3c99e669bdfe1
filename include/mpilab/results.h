/* Results files (mpilab.results/1, docs/results-schema.md) as library calls: the JSON pieces
 * every tool writes (statistics, samples, precision, one measurement, derived values, clock
 * synchronisation) and the atomic write. Needs jansson (pkg-config jansson). */
#ifndef MPILAB_RESULTS_H
#define MPILAB_RESULTS_H

#include <jansson.h>
#include <stddef.h>

#include "mpilab/bench.h"
#include "mpilab/p2p.h"

#ifdef __cplusplus
extern "C" {
#endif

#ifndef MPILAB_RESULTS_SCHEMA
#define MPILAB_RESULTS_SCHEMA "mpilab.results/1"
#endif

/* A JSON real, or null if x is not finite (NaN/inf never reach a results file). */
json_t *mpilab_json_real(double x);

/* {"mean","ci_half","rel_err","median","min","max","stdev","reps","invalid","converged"} */
json_t *mpilab_results_stats(const mpilab_stats_t *s);
/* The same "stats" object computed here from samples[0..n) (valid as in
 * mpilab_stats_compute: NULL = all valid), with the confidence interval at p->cl and
 * "converged" judged against p->eps, for a caller that fixed the repetition count itself
 * (p's min_reps/max_reps are not used). */
json_t *mpilab_results_sample_stats(const double *samples, const unsigned char *valid, size_t n,
                                    const mpilab_precision_t *p);
/* {"cl","eps","min_reps","max_reps"} */
json_t *mpilab_results_precision(const mpilab_precision_t *p);
/* The samples array of n values; *valid receives the matching array of booleans (all true
 * if valid is NULL). */
json_t *mpilab_results_samples(const double *samples, const unsigned char *valid, size_t n, json_t **valid_out);

/* The "derived" object of a measurement of op: the keys op declares (op->derived), in that
 * order, with the values its derive set in r->derived. NULL if op has no derive or gave none. */
json_t *mpilab_results_derived(const mpilab_op_t *op, const mpilab_result_t *r);

/* One engine measurement (mpilab_bench_measure) of op at `bytes` with timing tm under the
 * options bo on `ranks` ranks: op, impl, timing, isolation, bytes, root, ranks, precision,
 * stats, samples, valid, wall_s, data_ok, and where they apply confirm_s,
 * clock_sync_residual_s (used_sync), pipeline_depth, bytes_moved (the entry's volume) and
 * derived (from the median). */
json_t *mpilab_results_measurement(const mpilab_op_t *op, size_t bytes, mpilab_timing_t tm,
                                   const mpilab_bench_opts_t *bo, int ranks, const mpilab_result_t *r,
                                   int used_sync);
/* One pair of an all-pairs point-to-point measurement (timing "p2p"): op, impl, timing,
 * schedule, pair, bytes, bytes_back, ranks, precision, stats, samples, valid and
 * all_pairs_wall_s (seconds the whole all-pairs measurement at this size took). */
json_t *mpilab_results_p2p_measurement(const mpilab_op_t *op, const mpilab_p2p_result_t *q,
                                       mpilab_p2p_mode_t mode, int ranks, const mpilab_precision_t *prec,
                                       double all_pairs_wall);
/* Rank 0's store of one all-pairs measurement (one op and size) of a pair design: per pair
 * its statistics, round and (up to samples_cap repetitions) its samples. */
typedef struct mpilab_pair_matrix {
    const char *design;          /* "full", "sampled" */
    const mpilab_pair_t *pairs;  /* [npairs], sorted by (i, j) */
    size_t npairs, rounds;
    size_t bytes, bytes_back;
    mpilab_stats_t *stats;       /* [npairs] */
    size_t *round;               /* [npairs] */
    double **samples;            /* [npairs]: NULL when the pair's reps exceed samples_cap */
    unsigned char *measured;     /* [npairs]: 0 = not delivered (the run failed first) */
    size_t samples_cap;
    /* the parallel schedule's check (mpilab-bench): pairs measured again one at a time, how
     * many of them disagreed with their parallel figure beyond both intervals, the largest
     * ratio parallel / sequential median among them, and whether the matrix was measured
     * again one pair at a time (it then holds the sequential figures) */
    size_t check_pairs, check_disagree;
    double check_worst_ratio;
    int fell_back;
} mpilab_pair_matrix_t;

/* Samples kept per all-pairs measurement object: a pair keeps its samples when its
 * repetitions are at most MPILAB_PAIR_SAMPLE_BUDGET / npairs, else only its statistics. */
#define MPILAB_PAIR_SAMPLE_BUDGET ((size_t)1 << 20)

/* The compact form of an all-pairs measurement (docs/results-schema.md, "Pair matrix"):
 * op, impl, timing "p2p", schedule, bytes, bytes_back, ranks, precision, all_pairs_wall_s
 * and "pair_matrix" with per-pair arrays (i, j, round, statistics, flags, samples) of the
 * measured pairs, in (i, j) order. */
json_t *mpilab_results_pair_matrix(const mpilab_op_t *op, const mpilab_pair_matrix_t *m, mpilab_p2p_mode_t mode,
                                   int ranks, const mpilab_precision_t *prec, double all_pairs_wall);

/* The "clock_sync" provenance object of the latest synchronisation cs. */
json_t *mpilab_results_clock_sync(const mpilab_clocksync_t *cs, double max_residual, size_t nsyncs);

/* {"schema": MPILAB_RESULTS_SCHEMA, "provenance": provenance, "measurements": measurements}
 * (takes both references). Add "suite", "models", ... with json_object_set_new. */
json_t *mpilab_results_new(json_t *provenance, json_t *measurements);
/* Write doc as indented JSON to path atomically (temporary name, then rename). 0, or -1
 * with a one-line reason in err; never a half-written file. */
int mpilab_results_write(const char *path, const json_t *doc, char *err, size_t errlen);

#ifdef __cplusplus
}
#endif
#endif
