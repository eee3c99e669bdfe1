#include "mpilab/stats.h"

#include <gsl/gsl_cdf.h>
#include <gsl/gsl_statistics_double.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Ascending sort (quicksort: several times faster than GSL's heapsort on the 10^5-10^6
 * samples of a fast operation, where the stopping rule sorts at every checkpoint). */
static void sort_doubles(double *v, size_t n)
{
    qsort(v, n, sizeof *v, cmp_double);
}

int mpilab_precision_check(const mpilab_precision_t *p, char *err, size_t errlen)
{
    if (!(p->cl > 0.0 && p->cl < 1.0)) {
        snprintf(err, errlen, "confidence level %g outside (0,1)", p->cl);
        return -1;
    }
    if (!(p->eps > 0.0 && p->eps < 1.0)) {
        snprintf(err, errlen, "relative error eps %g outside (0,1)", p->eps);
        return -1;
    }
    if (p->min_reps < 1) {
        snprintf(err, errlen, "min_reps must be at least 1");
        return -1;
    }
    if (!(p->min_time >= 0.0 && p->min_time <= 3600.0)) {
        snprintf(err, errlen, "min_time %g s outside 0..3600", p->min_time);
        return -1;
    }
    if (!(p->max_time >= 0.0 && p->max_time <= 86400.0)) {
        snprintf(err, errlen, "time budget %g s outside 0..86400", p->max_time);
        return -1;
    }
    if (p->min_reps > p->max_reps) {
        snprintf(err, errlen, "min_reps %zu greater than max_reps %zu", p->min_reps, p->max_reps);
        return -1;
    }
    return 0;
}

double mpilab_t_quantile(double cl, size_t df)
{
    if (df < 1)
        return NAN;
    return gsl_cdf_tdist_Pinv(1.0 - (1.0 - cl) / 2.0, (double)df);
}

int mpilab_median_ci(const double *sorted, size_t n, double cl, double *lo, double *hi)
{
    *lo = *hi = NAN;
    if (!sorted || n < 1 || !(cl > 0.0 && cl < 1.0))
        return -1;
    /* coverage of [x_(k), x_(n+1-k)] (1-based) is 1 - 2 P(B <= k-1); it falls with k, so the
     * largest k that still covers cl is found by bisection (O(log n) CDF evaluations) */
    size_t lo_k = 0, hi_k = (n + 1) / 2 + 1; /* cover(lo_k) >= cl (lo_k = 0: none yet), cover(hi_k) < cl */
    while (hi_k - lo_k > 1) {
        size_t k = lo_k + (hi_k - lo_k) / 2;
        double cover = 1.0 - 2.0 * gsl_cdf_binomial_P((unsigned)(k - 1), 0.5, (unsigned)n);
        if (cover >= cl)
            lo_k = k;
        else
            hi_k = k;
    }
    size_t best = lo_k;
    if (best == 0)
        return -1;
    *lo = sorted[best - 1];
    *hi = sorted[n - best];
    return 0;
}

/* Half width of the batch-means interval of the block medians of v[0..m) (time order):
 * t(cl, B-1) sd / sqrt(B); NaN below MPILAB_BLOCKS_MIN_N samples. v is not changed. */
static double block_half(const double *v, size_t m, double cl)
{
    if (m < MPILAB_BLOCKS_MIN_N)
        return NAN;
    double *tmp = malloc(m * sizeof *tmp), bm[MPILAB_BLOCKS];
    if (!tmp)
        return NAN;
    size_t len = m / MPILAB_BLOCKS;
    for (size_t b = 0; b < MPILAB_BLOCKS; b++) {
        size_t start = b * len, cnt = b + 1 == MPILAB_BLOCKS ? m - start : len;
        for (size_t k = 0; k < cnt; k++)
            tmp[k] = v[start + k];
        sort_doubles(tmp, cnt);
        bm[b] = gsl_stats_median_from_sorted_data(tmp, 1, cnt);
    }
    free(tmp);
    return mpilab_t_quantile(cl, MPILAB_BLOCKS - 1) * gsl_stats_sd(bm, 1, MPILAB_BLOCKS) / sqrt((double)MPILAB_BLOCKS);
}

/* The smallest step between distinct sorted samples (differences under a picosecond are the
 * float rounding of one timer value, not a step): the timer's resolution as the data show it;
 * 0 when every sample is the same. */
static double tick_of(const double *sorted, size_t m)
{
    double q = 0.0;
    for (size_t k = 1; k < m; k++) {
        double d = sorted[k] - sorted[k - 1];
        if (d > 1e-12 && (q == 0.0 || d < q))
            q = d;
    }
    return q;
}

void mpilab_stats_compute(const double *samples, const unsigned char *valid, size_t n,
                          double cl, double eps, mpilab_stats_t *out)
{
    out->reps = n;
    out->invalid = 0;
    out->mean = out->stdev = out->ci_half = out->rel_err = NAN;
    out->median = out->min = out->max = NAN;
    out->med_lo = out->med_hi = out->med_rel_err = NAN;
    out->os_lo = out->os_hi = out->blk_half = NAN;
    out->converged = 0;
    double *v = malloc((n ? n : 1) * sizeof *v);
    if (!v)
        return;
    size_t m = 0;
    for (size_t k = 0; k < n; k++) {
        if (valid && !valid[k])
            out->invalid++;
        else
            v[m++] = samples[k];
    }
    if (m > 0) {
        out->mean = gsl_stats_mean(v, 1, m);
        if (cl > 0.0 && cl < 1.0)
            out->blk_half = block_half(v, m, cl); /* before sorting: blocks are in time order */
        sort_doubles(v, m);
        out->min = v[0];
        out->max = v[m - 1];
        out->median = gsl_stats_median_from_sorted_data(v, 1, m);
        if (mpilab_median_ci(v, m, cl, &out->os_lo, &out->os_hi) == 0) {
            /* the timer's resolution: an interval narrower than one tick (ties at the
             * median) is no evidence of precision, so it is at least a tick wide */
            double q = tick_of(v, m) / 2.0;
            out->os_lo = fmin(out->os_lo, out->median - q);
            out->os_hi = fmax(out->os_hi, out->median + q);
            out->med_lo = out->os_lo;
            out->med_hi = out->os_hi;
            if (!isnan(out->blk_half)) {
                /* never below the least sample: a time cannot be negative */
                out->med_lo = fmax(out->min, fmin(out->med_lo, out->median - out->blk_half));
                out->med_hi = fmax(out->med_hi, out->median + out->blk_half);
            }
            if (out->median > 0.0) {
                out->med_rel_err = 0.5 * (out->med_hi - out->med_lo) / out->median;
                out->converged = out->med_rel_err <= eps;
            }
        }
    }
    if (m > 1) {
        out->stdev = gsl_stats_sd_m(v, 1, m, out->mean);
        out->ci_half = mpilab_t_quantile(cl, m - 1) * out->stdev / sqrt((double)m);
        if (out->mean > 0.0)
            out->rel_err = out->ci_half / out->mean;
    }
    free(v);
}

int mpilab_stats_checkpoint(size_t n)
{
    if (n <= 4 * MPILAB_CHECK_EVERY_N)
        return 1;
    size_t step = 1;
    while (step * 2 <= n / MPILAB_CHECK_EVERY_N)
        step *= 2;
    return n % step == 0;
}

size_t mpilab_stats_capacity(size_t cap, size_t need, size_t max_reps)
{
    if (need <= cap)
        return cap;
    size_t c = cap ? cap : 1;
    while (c < need)
        c *= 2;
    if (c > max_reps)
        c = max_reps > need ? max_reps : need;
    return c;
}

int mpilab_stats_should_stop(const double *samples, const unsigned char *valid, size_t n,
                             const mpilab_precision_t *p)
{
    if (n >= p->max_reps)
        return 1;
    if (!mpilab_stats_checkpoint(n))
        return 0;
    size_t nvalid = 0;
    double spent = 0.0;
    for (size_t k = 0; k < n; k++) {
        nvalid += (!valid || valid[k]) ? 1 : 0;
        spent += samples[k] > 0.0 ? samples[k] : 0.0;
    }
    if (p->max_time > 0.0 && spent >= p->max_time && nvalid >= 1)
        return 1;
    if (nvalid < p->min_reps || nvalid < 2 || spent < p->min_time)
        return 0;
    mpilab_stats_t st;
    mpilab_stats_compute(samples, valid, n, p->cl, p->eps, &st);
    return st.converged;
}

size_t mpilab_root_correct(const double *raw, size_t n, const double *confirm, size_t nconfirm, double *out,
                           unsigned char *valid, double *c_used)
{
    double c = NAN;
    if (nconfirm > 0) {
        double *v = malloc(nconfirm * sizeof *v);
        if (v) {
            for (size_t k = 0; k < nconfirm; k++)
                v[k] = confirm[k];
            sort_doubles(v, nconfirm);
            c = gsl_stats_median_from_sorted_data(v, 1, nconfirm);
            free(v);
        }
    }
    if (c_used)
        *c_used = c;
    size_t bad = 0;
    for (size_t k = 0; k < n; k++) {
        out[k] = isnan(c) ? raw[k] : raw[k] - c;
        if (!(out[k] > 0.0)) {
            if (valid[k])
                bad++;
            valid[k] = 0;
        }
    }
    return bad;
}
