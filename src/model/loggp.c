/* LogGP fit and predictions (see include/mpilab/loggp.h and docs/models.md). */
#include "mpilab/loggp.h"

#include <gsl/gsl_errno.h>
#include <gsl/gsl_fit.h>
#include <gsl/gsl_multifit.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

static int fail(char *err, size_t errlen, const char *fmt, ...)
{
    if (err && errlen) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err, errlen, fmt, ap);
        va_end(ap);
    }
    return -1;
}

/* Checks the common input; 0 or -1 with a reason. */
static int check_input(const double *bytes, const double *rtt, const double *os, const double *orr,
                       const double *g, size_t n, char *err, size_t errlen)
{
    if (!bytes || !rtt || !os || !orr || !g)
        return fail(err, errlen, "missing input array");
    if (n < 2)
        return fail(err, errlen, "LogGP fit needs at least 2 message sizes, got %zu", n);
    for (size_t k = 0; k < n; k++) {
        if (!isfinite(bytes[k]) || bytes[k] < 0)
            return fail(err, errlen, "size %zu is not a finite non-negative number", k);
        if (k > 0 && !(bytes[k] > bytes[k - 1]))
            return fail(err, errlen, "sizes are not strictly increasing at index %zu (%g after %g)", k,
                        bytes[k], bytes[k - 1]);
        if (!isfinite(rtt[k]) || !isfinite(os[k]) || !isfinite(orr[k]) || !isfinite(g[k]))
            return fail(err, errlen, "non-finite value at size %g", bytes[k]);
    }
    return 0;
}

/* Straight line y = c0 + c1 x over points [lo, hi) (>= 2 distinct x, guaranteed by caller).
 * Least squares; from ROBUST_MIN points on, GSL's robust regression (bisquare weights)
 * whenever the least-squares line leaves residuals, so that one size measured during a
 * preemption (a 265 us gap among 0.1-55 us ones was seen at 4 ranks on 2 cores) does not
 * tilt G. If the robust fit fails, the least-squares line stands. */
#define ROBUST_MIN 5
static int line(const double *x, const double *y, size_t lo, size_t hi, double *c0, double *c1)
{
    double cov00, cov01, cov11, sumsq;
    size_t n = hi - lo;
    if (gsl_fit_linear(x + lo, 1, y + lo, 1, n, c0, c1, &cov00, &cov01, &cov11, &sumsq) != 0)
        return -1;
    if (!isfinite(*c0) || !isfinite(*c1))
        return -1;
    double scale = 0.0;
    for (size_t k = lo; k < hi; k++)
        scale = fmax(scale, fabs(y[k]));
    if (n < ROBUST_MIN || !(sumsq > 1e-24 * scale * scale * (double)n))
        return 0; /* too few points, or already exact */
    gsl_matrix *X = gsl_matrix_alloc(n, 2);
    gsl_vector *Y = gsl_vector_alloc(n), *c = gsl_vector_alloc(2);
    gsl_matrix *cov = gsl_matrix_alloc(2, 2);
    gsl_multifit_robust_workspace *w = gsl_multifit_robust_alloc(gsl_multifit_robust_bisquare, n, 2);
    if (X && Y && c && cov && w) {
        for (size_t k = 0; k < n; k++) {
            gsl_matrix_set(X, k, 0, 1.0);
            gsl_matrix_set(X, k, 1, x[lo + k]);
            gsl_vector_set(Y, k, y[lo + k]);
        }
        gsl_error_handler_t *old = gsl_set_error_handler_off();
        int rc = gsl_multifit_robust(X, Y, c, cov, w);
        gsl_set_error_handler(old);
        double r0 = gsl_vector_get(c, 0), r1 = gsl_vector_get(c, 1);
        if (rc == GSL_SUCCESS && isfinite(r0) && isfinite(r1)) {
            *c0 = r0;
            *c1 = r1;
        }
    }
    if (w)
        gsl_multifit_robust_free(w);
    gsl_matrix_free(cov);
    gsl_vector_free(c);
    gsl_vector_free(Y);
    gsl_matrix_free(X);
    return 0;
}

/* Overheads and gap over points [lo, hi); L left alone. */
static int fit_lines(const double *bytes, const double *os, const double *orr, const double *g, size_t lo,
                     size_t hi, mpilab_loggp_t *p)
{
    if (line(bytes, os, lo, hi, &p->os, &p->os_per_byte) != 0 ||
        line(bytes, orr, lo, hi, &p->orr, &p->or_per_byte) != 0 || line(bytes, g, lo, hi, &p->g, &p->G) != 0)
        return -1;
    if (p->G < 0) {
        p->G = 0;
        p->flags |= MPILAB_LOGGP_G_CLAMPED;
    }
    return 0;
}

/* Median of v[0..n), n <= ANCHOR_SIZES (sorts a copy). */
#define ANCHOR_SIZES 3
static double median_small(const double *v, size_t n)
{
    double c[ANCHOR_SIZES];
    for (size_t k = 0; k < n; k++)
        c[k] = v[k];
    for (size_t k = 1; k < n; k++) /* insertion sort of at most 3 values */
        for (size_t q = k; q > 0 && c[q - 1] > c[q]; q--) {
            double t = c[q];
            c[q] = c[q - 1];
            c[q - 1] = t;
        }
    return n % 2 ? c[n / 2] : 0.5 * (c[n / 2 - 1] + c[n / 2]);
}

/* The headline parameters from slopes already in p: os, orr, g are the values measured at
 * the smallest sizes carried to m = 0 along the slopes, and L what the round trips at those
 * sizes leave for the wire: the median over the (at most 3) smallest sizes of [0, hi), the
 * sizes the slopes were fitted on, so that one size measured during a preemption (a
 * median round trip of 3 ms among 2.5 us ones was seen at 4 ranks on 2 cores) does not
 * become the latency. At m0 = 0 with clean data: the measured zero-byte values. Sets the
 * clamp flags. */
static void anchor(const double *bytes, const double *rtt, const double *os, const double *orr,
                   const double *g, size_t hi, mpilab_loggp_t *p)
{
    size_t k_n = hi < ANCHOR_SIZES ? hi : ANCHOR_SIZES;
    if (k_n == 0)
        k_n = 1;
    double a_os[ANCHOR_SIZES], a_or[ANCHOR_SIZES], a_g[ANCHOR_SIZES], a_l[ANCHOR_SIZES];
    for (size_t k = 0; k < k_n; k++) {
        a_os[k] = os[k] - p->os_per_byte * bytes[k];
        a_or[k] = orr[k] - p->or_per_byte * bytes[k];
        a_g[k] = g[k] - p->G * bytes[k];
    }
    p->os = median_small(a_os, k_n);
    p->orr = median_small(a_or, k_n);
    p->g = median_small(a_g, k_n);
    p->flags &= ~(MPILAB_LOGGP_L_CLAMPED | MPILAB_LOGGP_GAP_CLAMPED);
    if (p->g < 0) {
        p->g = 0;
        p->flags |= MPILAB_LOGGP_GAP_CLAMPED;
    }
    /* the model's one-way time at size m: rtt/2 = os + L + max(m-1,0) G + orr */
    for (size_t k = 0; k < k_n; k++)
        a_l[k] = 0.5 * rtt[k] - p->os - p->orr - (bytes[k] > 1 ? (bytes[k] - 1) * p->G : 0.0);
    p->L_raw = median_small(a_l, k_n);
    p->L = p->L_raw;
    if (p->L < 0) {
        p->L = 0;
        p->flags |= MPILAB_LOGGP_L_CLAMPED;
    }
}

int mpilab_loggp_fit(const double *bytes, const double *rtt, const double *os, const double *orr,
                     const double *g, size_t n, mpilab_loggp_t *out, char *err, size_t errlen)
{
    if (!out)
        return fail(err, errlen, "missing output");
    if (check_input(bytes, rtt, os, orr, g, n, err, errlen) != 0)
        return -1;
    mpilab_loggp_t p = {0};
    if (fit_lines(bytes, os, orr, g, 0, n, &p) != 0)
        return fail(err, errlen, "least-squares fit failed");
    anchor(bytes, rtt, os, orr, g, n, &p);
    *out = p;
    return 0;
}

int mpilab_loggp_fit_ranges(const double *bytes, const double *rtt, const double *os,
                            const double *orr, const double *g, size_t n, const double *from,
                            const double *to, size_t nr, mpilab_loggp_t *out,
                            mpilab_loggp_t *summary, char *err, size_t errlen)
{
    if (!from || !to || !out || nr == 0)
        return fail(err, errlen, "no ranges given");
    mpilab_loggp_t whole;
    if (mpilab_loggp_fit(bytes, rtt, os, orr, g, n, &whole, err, errlen) != 0)
        return -1;
    for (size_t r = 0; r < nr; r++) {
        if (!isfinite(from[r]) || !isfinite(to[r]) || to[r] < from[r])
            return fail(err, errlen, "range %zu is empty or not finite", r);
        if (r > 0 && !(from[r] > to[r - 1]))
            return fail(err, errlen, "range %zu overlaps or precedes range %zu", r, r - 1);
    }
    for (size_t r = 0; r < nr; r++) {
        size_t lo = n, hi = 0;
        for (size_t k = 0; k < n; k++)
            if (bytes[k] >= from[r] && bytes[k] <= to[r]) {
                if (lo == n)
                    lo = k;
                hi = k + 1;
            }
        mpilab_loggp_t p = {0};
        /* sizes are sorted, so the points inside a range are contiguous */
        if (lo == n || hi - lo < 2 || fit_lines(bytes, os, orr, g, lo, hi, &p) != 0)
            p = whole;
        out[r] = p;
    }
    /* headline: the slopes of the range holding the smallest size (the first range if none
     * does), anchored at the smallest size; G of the last range */
    size_t fr = 0;
    for (size_t r = 0; r < nr; r++)
        if (bytes[0] >= from[r] && bytes[0] <= to[r]) {
            fr = r;
            break;
        }
    /* anchor on the smallest sizes that lie in that range (at least the smallest one) */
    size_t hi = 1;
    while (hi < n && bytes[hi] >= from[fr] && bytes[hi] <= to[fr])
        hi++;
    mpilab_loggp_t sm = out[fr];
    anchor(bytes, rtt, os, orr, g, hi, &sm);
    /* every range carries the same L (the latency does not depend on the protocol) */
    for (size_t r = 0; r < nr; r++) {
        out[r].L_raw = sm.L_raw;
        out[r].L = sm.L;
        out[r].flags = (out[r].flags & ~MPILAB_LOGGP_L_CLAMPED) | (sm.flags & MPILAB_LOGGP_L_CLAMPED);
    }
    if (summary) {
        sm.G = out[nr - 1].G;
        sm.flags = (sm.flags & ~MPILAB_LOGGP_G_CLAMPED) | (out[nr - 1].flags & MPILAB_LOGGP_G_CLAMPED);
        *summary = sm;
    }
    return 0;
}

size_t mpilab_loggp_pick_range(const double *from, const double *to, size_t nr, double bytes)
{
    size_t best = 0;
    double dist = INFINITY;
    for (size_t r = 0; r < nr; r++) {
        double d = bytes < from[r] ? from[r] - bytes : (bytes > to[r] ? bytes - to[r] : 0.0);
        if (d < dist) {
            dist = d;
            best = r;
        }
    }
    return best;
}

double mpilab_loggp_os(const mpilab_loggp_t *p, double bytes)
{
    return p->os + p->os_per_byte * bytes;
}

double mpilab_loggp_or(const mpilab_loggp_t *p, double bytes)
{
    return p->orr + p->or_per_byte * bytes;
}

double mpilab_loggp_gap(const mpilab_loggp_t *p, double bytes)
{
    return p->g + p->G * bytes;
}

double mpilab_loggp_time(const mpilab_loggp_t *p, double bytes)
{
    if (!p || !(bytes >= 0) || isinf(bytes))
        return NAN;
    return p->os + p->L + (bytes > 1 ? (bytes - 1) * p->G : 0.0) + p->orr;
}

static int bad(const mpilab_loggp_t *pairs, size_t p, size_t root, double bytes)
{
    return !pairs || p == 0 || root >= p || !(bytes >= 0) || isinf(bytes);
}

static double fmax2(double a, double b)
{
    return a > b ? a : b;
}

double mpilab_loggp_predict_scatter_linear(const mpilab_loggp_t *pairs, size_t p, size_t root,
                                           double bytes)
{
    if (bad(pairs, p, root, bytes))
        return NAN;
    double start = 0, t = 0;
    for (size_t vr = 1; vr < p; vr++) {
        const mpilab_loggp_t *q = &pairs[root * p + (vr + root) % p];
        t = fmax2(t, start + mpilab_loggp_time(q, bytes));
        start += fmax2(mpilab_loggp_gap(q, bytes), mpilab_loggp_os(q, bytes));
    }
    return t;
}

double mpilab_loggp_predict_gather_linear(const mpilab_loggp_t *pairs, size_t p, size_t root,
                                          double bytes)
{
    if (bad(pairs, p, root, bytes))
        return NAN;
    double c = -INFINITY;
    for (size_t vr = 1; vr < p; vr++) {
        const mpilab_loggp_t *q = &pairs[((vr + root) % p) * p + root];
        double arrive = q->os + q->L + (bytes > 1 ? (bytes - 1) * q->G : 0.0);
        double o_r = mpilab_loggp_or(q, bytes);
        double ready = isinf(c) ? arrive : fmax2(arrive, c + fmax2(mpilab_loggp_gap(q, bytes) - o_r, 0.0));
        c = ready + o_r;
    }
    return p == 1 ? 0.0 : c;
}
