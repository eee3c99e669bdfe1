/* Communication performance models: Hockney (per pair, per protocol range) and the
 * predictions they give for mpilab's linear and binomial scatter and gather. */
#ifndef MPILAB_MODEL_H
#define MPILAB_MODEL_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* One-way time of an m-byte message: alpha + beta * m (seconds, seconds per byte). */
typedef struct mpilab_hockney {
    double alpha;
    double beta;
} mpilab_hockney_t;

/* A piece of a piecewise fit, valid for from <= m <= to. */
typedef struct mpilab_hockney_range {
    double from;
    double to;
    mpilab_hockney_t h;
} mpilab_hockney_range_t;

/* Least-squares fit (GSL) of times[k] ~ alpha + beta * bytes[k] over n >= 2 points with at
 * least two distinct sizes. Returns 0, or -1 if the data cannot determine a fit. */
int mpilab_hockney_fit(const double *bytes, const double *times, size_t n, mpilab_hockney_t *out);

/* Piecewise fit where the curve breaks (protocol switches, e.g. eager -> rendezvous):
 * chooses up to max_ranges contiguous ranges over the sizes (input sorted by size) that
 * minimise the residual, with a penalty per extra range. Returns the number of ranges
 * written to out (>= 1), or 0 on failure.
 * Details: residuals are relative (weighted least squares, weights 1/t^2), so times must
 * be > 0 and sizes sorted ascending (n <= 2048); a range has >= 3 points (2 if n == 2) and
 * two distinct sizes and never splits equal sizes; ranges are chosen by exact dynamic
 * programming and their number K by n ln(SSE/n) + 7 K ln n.  range.from / range.to are the
 * first / last measured size of the range.  With one range the result may differ slightly
 * from mpilab_hockney_fit, which minimises absolute residuals. */
size_t mpilab_hockney_fit_ranges(const double *bytes, const double *times, size_t n,
                                 mpilab_hockney_range_t *out, size_t max_ranges);

/* Predicted one-way time from a single model, or from a piecewise model (the range that
 * contains m; the nearest one outside all ranges). */
double mpilab_hockney_time(const mpilab_hockney_t *h, double bytes);
double mpilab_hockney_ranges_time(const mpilab_hockney_range_t *r, size_t nr, double bytes);

/* Predicted times of mpilab's own collectives for p ranks, root `root`, `bytes` per rank,
 * from a p*p matrix of per-pair models (pairs[i*p + j], symmetric; diagonal unused). */
double mpilab_predict_scatter_linear(const mpilab_hockney_t *pairs, size_t p, size_t root, double bytes);
double mpilab_predict_gather_linear(const mpilab_hockney_t *pairs, size_t p, size_t root, double bytes);
double mpilab_predict_scatter_binomial(const mpilab_hockney_t *pairs, size_t p, size_t root, double bytes);
double mpilab_predict_gather_binomial(const mpilab_hockney_t *pairs, size_t p, size_t root, double bytes);

/* A pair's model for predictions: piecewise when nranges > 0 (the range containing the
 * message size, see mpilab_hockney_ranges_time), else the single fit h. */
typedef struct mpilab_pair_model {
    mpilab_hockney_t h;
    const mpilab_hockney_range_t *ranges;
    size_t nranges;
} mpilab_pair_model_t;

/* The same four predictions from a p*p matrix of (possibly piecewise) pair models: every
 * transfer is charged with the model of its own message size, so a protocol switch between
 * a collective's small and large transfers (binomial subtrees) is taken into account. */
double mpilab_predict_scatter_linear_ranges(const mpilab_pair_model_t *pairs, size_t p, size_t root, double bytes);
double mpilab_predict_gather_linear_ranges(const mpilab_pair_model_t *pairs, size_t p, size_t root, double bytes);
double mpilab_predict_scatter_binomial_ranges(const mpilab_pair_model_t *pairs, size_t p, size_t root, double bytes);
double mpilab_predict_gather_binomial_ranges(const mpilab_pair_model_t *pairs, size_t p, size_t root, double bytes);

#ifdef __cplusplus
}
#endif
#endif
