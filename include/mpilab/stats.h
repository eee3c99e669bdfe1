/* Statistics of repeated measurements and the repetition stopping rule. */
#ifndef MPILAB_STATS_H
#define MPILAB_STATS_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Precision asked of a measurement. The figure mpilab reports is the MEDIAN of the valid
 * samples, so the stopping rule is the median's: repeat until the confidence interval of
 * the median at level cl (see mpilab_stats_compute: the order-statistic interval, widened by
 * the spread of the medians of consecutive blocks of samples) has a half width <= eps *
 * median, with n >= min_reps valid samples and at least min_time seconds of samples (their
 * sum, valid or not), or until max_reps repetitions were taken. min_reps == max_reps gives
 * a fixed count. At cl = 0.95 the order-statistic interval exists from 6 valid samples on.
 * min_time (default 2 ms) spreads a fast measurement over time, so that its blocks see the
 * machine's changes within those milliseconds, not one quiet or busy instant (docs/bench-perf.md:
 * 10 ms bought no coverage of repeats and cost 2x IMB's wall time on shared memory). */
typedef struct mpilab_precision {
    size_t min_reps;
    size_t max_reps;
    double cl;       /* confidence level, 0 < cl < 1 */
    double eps;      /* relative error, 0 < eps < 1 */
    double min_time; /* seconds of samples before the rule may stop (0 = none; max_reps wins) */
    double max_time; /* the measurement's time budget: seconds of samples after which it stops
                      * converged or not (0 = none: only max_reps ends it) */
    size_t budget_floor; /* max_time ends no measurement before this many valid repetitions
                          * (0 or 1: at the first; max_reps still does): a comparison that
                          * needs k samples a side gets them at slow sizes too */
} mpilab_precision_t;

/* max_reps is a memory cap, not the usual end: the time budget (max_time) ends a measurement
 * that does not converge, so fast operations get the repetitions their interval needs. */
#define MPILAB_PRECISION_DEFAULT {5, 1000000, 0.95, 0.025, 0.002, 1.0, 1}
/* Blocks of the interval: from MPILAB_BLOCKS_MIN_N valid samples on, they are cut in time
 * order into MPILAB_BLOCKS consecutive blocks of equal size (the remainder in the last). */
#define MPILAB_BLOCKS 5
#define MPILAB_BLOCKS_MIN_N 10

/* Summary over the valid samples. Fields that need more samples than available
 * (stdev, ci_half, rel_err with n < 2; med_lo, med_hi, med_rel_err without an
 * order-statistic interval at level cl; blk_half with fewer than MPILAB_BLOCKS_MIN_N) are
 * NaN.
 *   mean, stdev, ci_half (Student t), rel_err = ci_half / mean: the mean's figures;
 *   median, [med_lo, med_hi], med_rel_err = (med_hi - med_lo) / 2 / median: the reported
 *   figure and its interval (the stopping rule's). [med_lo, med_hi] is the order-statistic
 *   interval (os_lo, os_hi) widened, when blk_half exists, to hold median +- blk_half:
 *   blk_half = t(cl, B-1) * sd(block medians) / sqrt(B), the batch-means interval of the B
 *   time-ordered blocks' medians. For independent samples it is about as wide as the
 *   order-statistic one; when the level drifts during the run (load, frequency, another
 *   job), the blocks disagree and the interval says so. */
typedef struct mpilab_stats {
    double mean, stdev, ci_half, rel_err, median, min, max;
    double med_lo, med_hi, med_rel_err;
    double os_lo, os_hi, blk_half;
    size_t reps;    /* repetitions taken (valid + invalid) */
    size_t invalid; /* repetitions excluded (e.g. late start, negative corrected time) */
    int converged;  /* 1 if the median's interval exists and med_rel_err <= eps (median > 0) */
} mpilab_stats_t;

/* Distribution-free confidence interval of the median of sorted[0..n) (ascending) at
 * level cl: [x_(k), x_(n+1-k)] with the largest k such that 1 - 2 P(B <= k - 1) >= cl,
 * B ~ Binomial(n, 1/2). Returns 0 and sets *lo, *hi, or -1 (lo = hi = NaN) when no such
 * interval exists (n too small for cl, e.g. n <= 5 at cl = 0.95). */
int mpilab_median_ci(const double *sorted, size_t n, double cl, double *lo, double *hi);

/* Checks a precision; returns 0 if usable, else -1 and a one-line reason in err.
 * min_reps >= 1 is accepted here (the runner asks for >= 2). */
int mpilab_precision_check(const mpilab_precision_t *p, char *err, size_t errlen);

/* Two-sided Student t quantile for confidence level cl with df degrees of freedom. */
double mpilab_t_quantile(double cl, size_t df);

/* Statistics of samples[0..n) whose valid[k] is non-zero (valid may be NULL = all valid),
 * with the CI at confidence cl and convergence judged against eps. */
void mpilab_stats_compute(const double *samples, const unsigned char *valid, size_t n,
                          double cl, double eps, mpilab_stats_t *out);

/* The stopping rule: 1 if repetition should stop after n repetitions (of which the valid
 * ones are flagged in valid), 0 to continue. Stops at max_reps, when the samples' sum reaches
 * max_time (the budget), or once at least min_reps (and 2) valid samples and min_time of
 * samples meet the precision (the median's interval, see above). The interval is judged at
 * checkpoints (every repetition up to 4 * MPILAB_CHECK_EVERY_N, then at multiples of a power
 * of two near n / MPILAB_CHECK_EVERY_N: 8 to 16 judgements per doubling of n, at most 1/8 more
 * repetitions than the rule needed), so that judging costs O(n log n) over the whole
 * measurement, not O(n^2 log n). */
#define MPILAB_CHECK_EVERY_N 8
int mpilab_stats_checkpoint(size_t n);

/* Capacity of a measurement's sample arrays that holds `need` samples, grown from `cap` by
 * doubling, never beyond max(max_reps, need): the engines' arrays grow with the repetitions
 * (the time budget, not max_reps, usually ends a measurement). */
size_t mpilab_stats_capacity(size_t cap, size_t need, size_t max_reps);
int mpilab_stats_should_stop(const double *samples, const unsigned char *valid, size_t n,
                             const mpilab_precision_t *p);

/* Root timing's correction: the root's time from its start until every rank confirmed,
 * minus the time of the confirmation alone. The confirmation is measured repeatedly,
 * interleaved with the repetitions (confirm[0..nconfirm)), and the subtracted value is the
 * median of those samples (*c_used, NaN and nothing corrected if nconfirm == 0).
 * out[k] = raw[k] - c for the n repetitions (out may equal raw); a corrected time <= 0 is
 * impossible: valid[k] is cleared (never averaged in) and it is counted in the return
 * value. valid[k] already 0 stays 0. */
size_t mpilab_root_correct(const double *raw, size_t n, const double *confirm, size_t nconfirm, double *out,
                           unsigned char *valid, double *c_used);

#ifdef __cplusplus
}
#endif
#endif
