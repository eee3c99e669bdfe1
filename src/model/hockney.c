/* Hockney model fits: one line over all sizes, or a piecewise fit whose breakpoints are
 * chosen by dynamic programming with a BIC penalty per extra range. */
#include <math.h>
#include <stdlib.h>

#include <gsl/gsl_errno.h>
#include <gsl/gsl_fit.h>

#include "mpilab/model.h"
#include "model/segdp.h"

/* The range search keeps an n*n cost table and takes O(n^3) time. */
#define MPILAB_HOCKNEY_RANGES_MAX_POINTS 2048
/* Penalty per range, in units of ln n, in the selection criterion below.  The textbook
 * BIC value (3 parameters per range) over-splits because the breakpoints are searched for:
 * on synthetic one-line data with 0.5-5% relative Gaussian noise it gave 2+ ranges in ~13%
 * of trials; 7 gave none in 800 trials while still finding every two-piece break. */
#define RANGE_PENALTY 7.0

int mpilab_hockney_fit(const double *bytes, const double *times, size_t n, mpilab_hockney_t *out)
{
    if (!bytes || !times || !out || n < 2)
        return -1;
    int distinct = 0;
    for (size_t k = 0; k < n; k++) {
        if (!isfinite(bytes[k]) || !isfinite(times[k]))
            return -1;
        if (bytes[k] != bytes[0])
            distinct = 1;
    }
    if (!distinct)
        return -1;
    double c0, c1, cov00, cov01, cov11, sumsq;
    gsl_error_handler_t *old = gsl_set_error_handler_off();
    int rc = gsl_fit_linear(bytes, 1, times, 1, n, &c0, &c1, &cov00, &cov01, &cov11, &sumsq);
    gsl_set_error_handler(old);
    if (rc != GSL_SUCCESS || !isfinite(c0) || !isfinite(c1))
        return -1;
    out->alpha = c0;
    out->beta = c1;
    return 0;
}

double mpilab_hockney_time(const mpilab_hockney_t *h, double bytes)
{
    if (!h)
        return NAN;
    return h->alpha + h->beta * bytes;
}

double mpilab_hockney_ranges_time(const mpilab_hockney_range_t *r, size_t nr, double bytes)
{
    if (!r || nr == 0 || isnan(bytes))
        return NAN;
    size_t best = 0;
    double best_d = INFINITY;
    for (size_t k = 0; k < nr; k++) {
        if (bytes >= r[k].from && bytes <= r[k].to)
            return mpilab_hockney_time(&r[k].h, bytes);
        double d = bytes < r[k].from ? r[k].from - bytes : bytes - r[k].to;
        if (d < best_d) {
            best_d = d;
            best = k;
        }
    }
    return mpilab_hockney_time(&r[best].h, bytes);
}

/* Weighted (relative-error) fit of points [i, j]: weights 1/t^2, so every size counts by
 * its relative residual whatever its magnitude.  Returns the weighted residual sum. */
static int seg_fit(const double *x, const double *y, const double *w, size_t i, size_t j,
                   mpilab_hockney_t *h, double *chisq)
{
    double c0, c1, cov00, cov01, cov11;
    int rc = gsl_fit_wlinear(x + i, 1, w + i, 1, y + i, 1, j - i + 1, &c0, &c1, &cov00, &cov01,
                             &cov11, chisq);
    if (rc != GSL_SUCCESS || !isfinite(c0) || !isfinite(c1) || !isfinite(*chisq))
        return -1;
    if (*chisq < 0)
        *chisq = 0;
    h->alpha = c0;
    h->beta = c1;
    return 0;
}

size_t mpilab_hockney_fit_ranges(const double *bytes, const double *times, size_t n,
                                 mpilab_hockney_range_t *out, size_t max_ranges)
{
    if (!bytes || !times || !out || max_ranges == 0 || n < 2 || n > MPILAB_HOCKNEY_RANGES_MAX_POINTS)
        return 0;
    for (size_t k = 0; k < n; k++) {
        if (!isfinite(bytes[k]) || !isfinite(times[k]) || times[k] <= 0)
            return 0;
        if (k > 0 && bytes[k] < bytes[k - 1])
            return 0;
    }
    if (bytes[0] == bytes[n - 1])
        return 0;

    const size_t minpts = n >= 3 ? 3 : 2;
    size_t kmax = n / minpts;
    if (kmax > max_ranges)
        kmax = max_ranges;
    if (kmax == 0)
        kmax = 1;

    size_t ok = 0;
    double *w = malloc(n * sizeof *w);
    double *cost = malloc(n * n * sizeof *cost);           /* cost[i*n+j], segment [i, j] */
    double *D = malloc((kmax + 1) * (n + 1) * sizeof *D);  /* D[k*(n+1)+j]: first j points */
    size_t *arg = malloc((kmax + 1) * (n + 1) * sizeof *arg);
    if (!w || !cost || !D || !arg)
        goto done;
    for (size_t k = 0; k < n; k++)
        w[k] = 1.0 / (times[k] * times[k]);

    gsl_error_handler_t *old = gsl_set_error_handler_off();
    for (size_t i = 0; i < n; i++)
        for (size_t j = 0; j < n; j++) {
            cost[i * n + j] = INFINITY;
            /* a segment: >= minpts points, two distinct sizes, and it must not split a
             * group of equal sizes (start after a size change, end before one) */
            if (j < i || j - i + 1 < minpts || bytes[i] == bytes[j])
                continue;
            if ((i > 0 && bytes[i - 1] == bytes[i]) || (j + 1 < n && bytes[j + 1] == bytes[j]))
                continue;
            mpilab_hockney_t h;
            double chisq;
            if (seg_fit(bytes, times, w, i, j, &h, &chisq) == 0)
                cost[i * n + j] = chisq;
        }
    gsl_set_error_handler(old);

    const size_t W = n + 1;
    mpilab_segdp_fill(cost, n, kmax, D, arg);

    /* BIC-like choice of the number of ranges K: n ln(SSE/n) + RANGE_PENALTY K ln n, with
     * SSE floored at a relative rms residual of 1e-6 so that exact data does not reward
     * extra ranges. */
    const double nd = (double)n, floor_sse = nd * 1e-12;
    size_t bestk = 0;
    double best_bic = INFINITY;
    for (size_t k = 1; k <= kmax; k++) {
        double sse = D[k * W + n];
        if (isinf(sse))
            continue;
        double bic = nd * log((sse > floor_sse ? sse : floor_sse) / nd) +
                     RANGE_PENALTY * (double)k * log(nd);
        if (bic < best_bic - 1e-9) {
            best_bic = bic;
            bestk = k;
        }
    }
    if (bestk == 0)
        goto done;

    /* Walk back the segment starts, then refit each segment for its parameters. */
    size_t j = n;
    gsl_error_handler_t *old2 = gsl_set_error_handler_off();
    for (size_t k = bestk; k >= 1; k--) {
        size_t i = arg[k * W + j];
        mpilab_hockney_range_t *r = &out[k - 1];
        double chisq;
        if (seg_fit(bytes, times, w, i, j - 1, &r->h, &chisq) != 0) {
            gsl_set_error_handler(old2);
            goto done;
        }
        r->from = bytes[i];
        r->to = bytes[j - 1];
        j = i;
    }
    gsl_set_error_handler(old2);
    ok = bestk;
done:
    free(w);
    free(cost);
    free(D);
    free(arg);
    return ok;
}
