/* Honest flags in results documents: the quality of every measurement and model parameter
 * as JSON (docs/results-schema.md, "Quality"), and the one-line verdict on a run too noisy
 * to converge. python/mpilab/quality.py reads the same fields. */
#ifndef MPILAB_QUALITY_H
#define MPILAB_QUALITY_H

#include <jansson.h>
#include <stddef.h>

#include "mpilab/robust.h"
#include "mpilab/stats.h"

#ifdef __cplusplus
extern "C" {
#endif

/* {"raw": r, "lo": l, "hi": h, "flags": ["clamped", "no_ci", "ci_wide"]} (null for NaN). */
json_t *mpilab_quality_param(const mpilab_param_t *p);

/* A measurement's flags: "not_converged" (stopped without the asked precision),
 * "invalid_samples" (repetitions excluded), "negative_time" (negative > 0: corrected times
 * <= 0 excluded), "no_valid_samples". An empty array when all is well. */
json_t *mpilab_quality_measurement_flags(const mpilab_stats_t *s, size_t negative);

/* 1 when a global-timing figure (median) cannot be trusted to the asked precision eps
 * because the clock synchronisation it was converted with states a larger uncertainty
 * (flag "clock_uncertain": a busy machine can leave a sync milliseconds off). */
int mpilab_quality_clock_uncertain(double sync_uncertainty, double median, double eps);

/* The rule for every value a person reads (python/mpilab/report/units.py holds the same):
 * an interval [lo, hi] of a positive quantity (a time, a rate) that reaches 0 or below, or
 * is wider than a decade (hi / lo > MPILAB_QUALITY_DECADE), determines nothing: tables show
 * it as "undetermined" with the flag "ci_undetermined". 1 for such an interval, 0 otherwise
 * (also for a missing end, NaN). */
#define MPILAB_QUALITY_DECADE 10.0
int mpilab_quality_undetermined(double lo, double hi);

/* What the verdict on an unconverged run reads from the run's provenance and options, so that
 * it advises only what was not done: pinning when the ranks were not all bound to CPUs,
 * oversubscription named when a node's ranks outnumber its CPUs, no verdict at all on a
 * fixed-count run (min_reps == max_reps, or fewer repetitions than the median's interval
 * needs: a quick run that cannot converge by design). Unknown fields are 0. */
typedef struct mpilab_quality_context {
    int pinned;         /* every rank bound to CPUs (by the launcher or by --placement) */
    int local_ranks;    /* ranks on the busiest node */
    int node_cpus;      /* CPUs online on that node */
    int fixed_count;    /* the repetitions were fixed: convergence was not asked for */
    double time_budget; /* seconds of samples the run had (0: none) */
} mpilab_quality_context_t;

/* The runner's last line when fewer than half of `total` measurements converged (returns 1
 * and writes it to buf), else 0 (also for a fixed-count run, see above). ctx may be NULL. */
int mpilab_quality_noisy_verdict(size_t converged, size_t total, const mpilab_quality_context_t *ctx, char *buf,
                                 size_t len);

#ifdef __cplusplus
}
#endif
#endif
