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

/* The largest k (1-based) such that [x_(k), x_(n+1-k)] covers the median at level cl,
 * 0 when none does: coverage 1 - 2 P(B <= k-1) falls with k, so bisection finds it in
 * O(log n) CDF evaluations. */
static size_t median_ci_rank(size_t n, double cl)
{
    size_t lo_k = 0, hi_k = (n + 1) / 2 + 1; /* cover(lo_k) >= cl (lo_k = 0: none yet), cover(hi_k) < cl */
    while (hi_k - lo_k > 1) {
        size_t k = lo_k + (hi_k - lo_k) / 2;
        double cover = 1.0 - 2.0 * gsl_cdf_binomial_P((unsigned)(k - 1), 0.5, (unsigned)n);
        if (cover >= cl)
            lo_k = k;
        else
            hi_k = k;
    }
    return lo_k;
}

size_t mpilab_median_ci_min_n(double cl)
{
    if (!(cl > 0.0 && cl < 1.0))
        return 0;
    for (size_t n = 1; n <= 1000000; n++)
        if (median_ci_rank(n, cl) > 0)
            return n;
    return 0;
}

int mpilab_median_ci(const double *sorted, size_t n, double cl, double *lo, double *hi)
{
    *lo = *hi = NAN;
    if (!sorted || n < 1 || !(cl > 0.0 && cl < 1.0))
        return -1;
    size_t best = median_ci_rank(n, cl);
    if (best == 0)
        return -1;
    *lo = sorted[best - 1];
    *hi = sorted[n - best];
    return 0;
}

/* Quickselect: rearranges v[0..n) so that v[k] is the value of rank k (0-based), every
 * element before it <= v[k] <= every element after it; O(n) on average. The stopping
 * rule asks for a few order statistics of up to 10^6 samples at every checkpoint: a full
 * sort each time was most of the run's wall time for fast operations. */
static void select_kth(double *v, size_t n, size_t k)
{
    size_t l = 0, r = n - 1;
    while (r > l) {
        /* median of three as the pivot, moved to v[r] */
        size_t m = l + (r - l) / 2;
        if (v[m] < v[l]) { double t = v[m]; v[m] = v[l]; v[l] = t; }
        if (v[r] < v[l]) { double t = v[r]; v[r] = v[l]; v[l] = t; }
        if (v[m] < v[r]) { double t = v[m]; v[m] = v[r]; v[r] = t; }
        double pivot = v[r];
        /* three-way partition: < pivot | == pivot | > pivot (ties are common: timer ticks) */
        size_t lt = l, i = l, gt = r;
        while (i <= gt) {
            if (v[i] < pivot) {
                double t = v[i]; v[i] = v[lt]; v[lt] = t;
                lt++;
                i++;
            } else if (v[i] > pivot) {
                double t = v[i]; v[i] = v[gt]; v[gt] = t;
                if (gt == 0)
                    break;
                gt--;
            } else {
                i++;
            }
        }
        if (k < lt)
            r = lt - 1;
        else if (k > gt)
            l = gt + 1;
        else
            return; /* v[k] equals the pivot, in its final place */
    }
}

/* The median of v[0..n) (as gsl_stats_median_from_sorted_data would give on the sorted
 * array); v is rearranged. */
static double median_select(double *v, size_t n)
{
    size_t h = n / 2;
    select_kth(v, n, h);
    if (n % 2)
        return v[h];
    double lo = v[0];
    for (size_t k = 1; k < h; k++)
        lo = v[k] > lo ? v[k] : lo; /* the largest of the lower half: rank h - 1 */
    return 0.5 * (lo + v[h]);
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
        bm[b] = median_select(tmp, cnt);
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

/* The timer's step near the median: v[a..z] holds the ranks a..z (unsorted, v partitioned
 * around them); the smallest step among them and to the nearest distinct values outside
 * (ties fill the window when the timer is coarse). Sorts v[a..z]. */
static double window_tick(double *v, size_t m, size_t a, size_t z)
{
    sort_doubles(v + a, z - a + 1);
    double q = tick_of(v + a, z - a + 1);
    double below = -INFINITY, above = INFINITY;
    /* distinct: beyond a picosecond (tick_of's float rounding of one timer value; a
     * difference of two clock readings comes out in several roundings of the same tick) */
    for (size_t k = 0; k < a; k++)
        below = v[k] < v[a] - 1e-12 && v[k] > below ? v[k] : below;
    for (size_t k = z + 1; k < m; k++)
        above = v[k] > v[z] + 1e-12 && v[k] < above ? v[k] : above;
    double d[2] = {v[a] - below, above - v[z]};
    for (int k = 0; k < 2; k++)
        if (isfinite(d[k]) && d[k] > 1e-12 && (q == 0.0 || d[k] < q))
            q = d[k];
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
        out->min = out->max = v[0];
        for (size_t k = 1; k < m; k++) {
            out->min = v[k] < out->min ? v[k] : out->min;
            out->max = v[k] > out->max ? v[k] : out->max;
        }
        out->median = median_select(v, m);
        size_t best = cl > 0.0 && cl < 1.0 ? median_ci_rank(m, cl) : 0;
        if (best > 0) {
            /* the ranks best-1 and m-best around the median (v is partitioned at m/2) */
            size_t h = m / 2, a = best - 1, z = m - best;
            if (a < h)
                select_kth(v, h, a);
            if (z > h)
                select_kth(v + h + 1, m - h - 1, z - h - 1);
            out->os_lo = v[a];
            out->os_hi = v[z];
            /* the timer's resolution, as the samples inside the interval show it: an
             * interval narrower than one tick (ties at the median) is no evidence of
             * precision, so it is at least a tick wide */
            double q = window_tick(v, m, a, z) / 2.0;
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
    if (p->max_time > 0.0 && spent >= p->max_time && nvalid >= 1 && nvalid >= p->budget_floor)
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
