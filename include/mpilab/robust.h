/* Robust estimators for model parameters measured on a noisy machine: low quantiles of the
 * raw samples for latency-type terms, Theil-Sen slopes, protocol breakpoints found from the
 * data, bootstrap confidence intervals, and parameters that are never physically impossible
 * without saying so. Pure functions (GSL); see docs/models-robust.md. */
#ifndef MPILAB_ROBUST_H
#define MPILAB_ROBUST_H

#include <stddef.h>

#include "mpilab/loggp.h"
#include "mpilab/model.h"

#ifdef __cplusplus
extern "C" {
#endif

#define MPILAB_ROBUST_MAX_RANGES 6

/* q-quantile (0 <= q <= 1; 0 = minimum, 0.5 = median; linear interpolation between order
 * statistics) of the valid samples x[k] (valid[k] != 0; valid may be NULL = all valid).
 * NaN if there is no valid sample or q is outside [0, 1]. */
double mpilab_quantile(const double *x, const unsigned char *valid, size_t n, double q);

/* Theil-Sen line y ~ intercept + slope x: slope = median of the pairwise slopes over pairs
 * of distinct x, intercept = median of y - slope x. Breakdown point 29%: a few wild points
 * do not move it. Returns 0, or -1 with fewer than two distinct x or non-finite input. */
int mpilab_theil_sen(const double *x, const double *y, size_t n, double *intercept, double *slope);

/* Protocol breakpoints (eager/rendezvous switch, shaper burst, cache sizes) from the data:
 * splits points (x ascending, strictly; y > 0) into K <= max_ranges contiguous ranges of
 * >= 3 points (one range if n < 6), each a Theil-Sen line, minimising the sum of truncated
 * squared relative residuals (a point contributes at most 0.25^2) plus a penalty per range
 * (n ln(cost / n) + 7 K ln n, cost floored at a 0.2% rms relative residual; exact dynamic
 * programming, n <= 512). starts[0..K) receives the index of each range's first point
 * (starts[0] = 0). Returns K >= 1, or 0 on bad input. */
size_t mpilab_robust_segments(const double *x, const double *y, size_t n, size_t max_ranges,
                              size_t *starts);
/* The same with the noise of every point known (sigma[k] > 0, e.g. from its samples): the
 * cost of a point is its squared residual in sigmas, truncated at 10^2, and the criterion
 * cost + 7 K ln n (a chi-square with a penalty per range), which unlike the relative-
 * residual criterion lets a few sizes with a clear break split even when n is small (12
 * sizes over a shaper's burst). The sample fits below use it, with sigma = the mean of the
 * lowest spacings of each size's samples (for the minimum), never below 1% of the value. */
size_t mpilab_robust_segments_sigma(const double *x, const double *y, const double *sigma, size_t n,
                                    size_t max_ranges, size_t *starts);

/* A fitted parameter with its quality. */
typedef struct mpilab_param {
    double value;  /* the reported value: never negative for a physical quantity */
    double raw;    /* the fit's own value (may be negative: then value = 0 and CLAMPED) */
    double lo, hi; /* bootstrap percentile interval of value at the options' level (NaN: none) */
    unsigned flags;
} mpilab_param_t;

#define MPILAB_PARAM_CLAMPED 1u /* raw < 0 is physically impossible: value set to 0 */
#define MPILAB_PARAM_NO_CI 2u   /* no interval (too few data) */
#define MPILAB_PARAM_WIDE 4u    /* interval half width > eps * value: precision not reached */

/* Names of the flags set in `flags`, comma-separated ("" if none), into buf. */
const char *mpilab_param_flags_str(unsigned flags, char *buf, size_t len);

typedef struct mpilab_robust_opts {
    double q;          /* per-size quantile for latency-type terms (0 = minimum; default 0) */
    double cl;         /* interval level (default 0.95) */
    double eps;        /* relative half width asked of an interval (default 0.05) */
    size_t boot;       /* bootstrap replicates, >= 50 (default 400) */
    unsigned long seed;/* bootstrap seed (default 1): the fit is deterministic */
    size_t max_ranges; /* protocol ranges searched, 1..MPILAB_ROBUST_MAX_RANGES (default 4) */
    /* What the transport and the clock add, known exactly on a simulated platform (SimGrid
     * SMPI: every message carries a 16-byte envelope, every MPI_Wtime advances the clock by
     * smpi/wtime, 10 ns; docs/scale.md). Both default to 0 (nothing changes). */
    double envelope;   /* bytes each message carries beyond its payload: the fits use payload
                        * + envelope as the size, so the headline alpha / L are the wire's
                        * latency; the per-range lines (predictions) stay in payload bytes */
    double tick;       /* the clock's read cost and resolution (s): subtracted once from every
                        * sample of a time spanning two readings (round trips, o_s, o_r; not
                        * g, a difference of two such times), and no interval of a headline
                        * value is narrower than it each side (scaled as the values are;
                        * slopes: over the range's span) */
} mpilab_robust_opts_t;

void mpilab_robust_opts_default(mpilab_robust_opts_t *o);
/* 0, or -1 with a one-line reason. */
int mpilab_robust_opts_check(const mpilab_robust_opts_t *o, char *err, size_t errlen);

/* The raw samples of one message size (seconds). */
typedef struct mpilab_sample_set {
    double bytes;
    const double *samples;
    const unsigned char *valid; /* NULL = all valid */
    size_t n;
} mpilab_sample_set_t;

/* Hockney fit on raw samples: per size, y = scale * the q-quantile of the valid samples
 * (scale 0.5 turns ping-pong round trips into one-way times); ranges from
 * mpilab_robust_segments on y; a Theil-Sen line per range (ranges[] for predictions,
 * from/to the first/last size of the range). Headline: alpha = intercept of the first
 * (smallest-size) range, beta = slope of the last (largest-size) range, the sustained
 * rate. Ranges: mpilab_robust_segments_sigma. Intervals: bootstrap, resampling the samples within every size and the sizes
 * within every range (ranges fixed). residual[k] (may be NULL) = y_k - the range model at
 * size k. Sizes strictly increasing, n >= 2, every size with >= 1 valid sample.
 * Returns 0, or -1 with a one-line reason. */
typedef struct mpilab_hockney_robust {
    mpilab_param_t alpha, beta;
    size_t nranges;
    mpilab_hockney_range_t ranges[MPILAB_ROBUST_MAX_RANGES];
} mpilab_hockney_robust_t;

int mpilab_hockney_fit_samples(const mpilab_sample_set_t *sets, size_t n, double scale,
                               const mpilab_robust_opts_t *o, mpilab_hockney_robust_t *out,
                               double *residual, char *err, size_t errlen);

/* LogGP fit on the raw samples of mpilab_loggp_measure: per size, the q-quantile of rtt,
 * o_s, o_r (latency-type: delays only add) and the median of g (a difference of two
 * times: noise of either sign); ranges from mpilab_robust_segments on rtt/2; Theil-Sen
 * slopes per range. Headline (as mpilab_loggp_fit_ranges' summary): o_s, o_r, g anchored
 * at the smallest size m0 along the slopes of its range, L = rtt(m0)/2 - os - orr -
 * max(m0-1,0) G(first range), G = the slope of g in the last range. Every headline value
 * carries a bootstrap interval (as for Hockney) and clamp flags; `fit` holds the clamped
 * headline as an mpilab_loggp_t (its flags set as mpilab_loggp_fit does), ranges[] the
 * per-range lines (L of the headline) for predictions. residual[k] (may be NULL) = rtt(m_k)/2
 * - the one-way time the range model gives. Returns 0, or -1 with a one-line reason. */
typedef struct mpilab_loggp_robust {
    mpilab_param_t L, os, orr, g, G;
    mpilab_loggp_t fit;
    size_t nranges;
    double from[MPILAB_ROBUST_MAX_RANGES], to[MPILAB_ROBUST_MAX_RANGES];
    mpilab_loggp_t ranges[MPILAB_ROBUST_MAX_RANGES];
} mpilab_loggp_robust_t;

int mpilab_loggp_fit_samples(const mpilab_loggp_point_t *pts, size_t n,
                             const mpilab_robust_opts_t *o, mpilab_loggp_robust_t *out,
                             double *residual, char *err, size_t errlen);

#ifdef __cplusplus
}
#endif
#endif
