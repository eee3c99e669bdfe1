/* The pure clock fits of include/mpilab/clocksync.h (no communication): a least-squares
 * line of local on reference time, and the same keeping the drift only where the data
 * resolve it. Used by the synchronisation methods (clocksync.c) and the self-test. */
#include "mpilab/clocksync.h"

#include <gsl/gsl_fit.h>
#include <gsl/gsl_statistics_double.h>
#include <math.h>
#include <stdlib.h>

int mpilab_clock_fit(const double *ref, const double *local, size_t n, mpilab_clock_model_t *out)
{
    if (n < 2)
        return -1;
    int distinct = 0;
    for (size_t k = 1; k < n; k++)
        if (ref[k] != ref[0])
            distinct = 1;
    if (!distinct)
        return -1;
    double c0, c1, cov00, cov01, cov11, sumsq;
    if (gsl_fit_linear(ref, 1, local, 1, n, &c0, &c1, &cov00, &cov01, &cov11, &sumsq) != 0)
        return -1;
    if (!isfinite(c0) || !isfinite(c1))
        return -1;
    double res = 0.0;
    for (size_t k = 0; k < n; k++) {
        double d = fabs(local[k] - (c0 + c1 * ref[k]));
        if (d > res)
            res = d;
    }
    out->offset = c0;
    out->drift = c1 - 1.0;
    out->residual = res;
    out->uncertainty = 0.0;
    out->drift_uncertainty = 0.0;
    return 0;
}

int mpilab_clock_fit_significant(const double *ref, const double *local, size_t n, double z,
                                 mpilab_clock_model_t *out)
{
    mpilab_clock_model_t m;
    if (mpilab_clock_fit(ref, local, n, &m) != 0)
        return -1;
    if (n >= 3) {
        double mean = 0.0, sxx = 0.0, sse = 0.0;
        for (size_t k = 0; k < n; k++)
            mean += ref[k] / (double)n;
        for (size_t k = 0; k < n; k++) {
            double d = local[k] - (m.offset + (1.0 + m.drift) * ref[k]);
            sxx += (ref[k] - mean) * (ref[k] - mean);
            sse += d * d;
        }
        double se = sqrt(sse / (double)(n - 2) / sxx);
        if (!(fabs(m.drift) >= z * se)) {
            double *d = malloc(n * sizeof *d);
            if (!d)
                return -1;
            for (size_t k = 0; k < n; k++)
                d[k] = local[k] - ref[k];
            m.offset = gsl_stats_median(d, 1, n); /* reorders d */
            m.drift = 0.0;
            m.residual = 0.0;
            for (size_t k = 0; k < n; k++) {
                double r = fabs(local[k] - ref[k] - m.offset);
                if (r > m.residual)
                    m.residual = r;
            }
            free(d);
        }
    }
    *out = m;
    return 0;
}

int mpilab_clock_fit_bounds(const double *ref, size_t n, double at, double *value_factor,
                            double *slope_factor)
{
    if (n < 2)
        return -1;
    double mean = gsl_stats_mean(ref, 1, n), sxx = 0.0;
    for (size_t k = 0; k < n; k++)
        sxx += (ref[k] - mean) * (ref[k] - mean);
    if (!(sxx > 0.0))
        return -1;
    /* the fit is linear in the readings: value(at) = sum w_k local_k with w_k = 1/n +
     * (ref_k - mean)(at - mean)/sxx, slope = sum v_k local_k with v_k = (ref_k - mean)/sxx;
     * errors of at most e each move them by at most e sum |w_k|, e sum |v_k| */
    double sw = 0.0, sv = 0.0;
    for (size_t k = 0; k < n; k++) {
        sw += fabs(1.0 / (double)n + (ref[k] - mean) * (at - mean) / sxx);
        sv += fabs(ref[k] - mean) / sxx;
    }
    *value_factor = sw;
    *slope_factor = sv;
    return 0;
}
