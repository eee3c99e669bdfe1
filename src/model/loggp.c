/* LogGP fit and predictions (see include/mpilab/loggp.h and docs/models.md). */
#include "mpilab/loggp.h"

#include <gsl/gsl_fit.h>
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

/* Straight line y = c0 + c1 x over points [lo, hi) (>= 2 distinct x, guaranteed by caller). */
static int line(const double *x, const double *y, size_t lo, size_t hi, double *c0, double *c1)
{
    double cov00, cov01, cov11, sumsq;
    if (gsl_fit_linear(x + lo, 1, y + lo, 1, hi - lo, c0, c1, &cov00, &cov01, &cov11, &sumsq) != 0)
        return -1;
    return isfinite(*c0) && isfinite(*c1) ? 0 : -1;
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

/* The headline parameters from slopes already in p: os, orr, g are the values measured at
 * the smallest size m0 carried to m = 0 along the slopes (at m0 = 0: the measured values);
 * L from the round trip at m0. Sets the clamp flags. */
static void anchor(const double *bytes, const double *rtt, const double *os, const double *orr,
                   const double *g, mpilab_loggp_t *p)
{
    double m0 = bytes[0];
    p->os = os[0] - p->os_per_byte * m0;
    p->orr = orr[0] - p->or_per_byte * m0;
    p->g = g[0] - p->G * m0;
    p->flags &= ~(MPILAB_LOGGP_L_CLAMPED | MPILAB_LOGGP_GAP_CLAMPED);
    if (p->g < 0) {
        p->g = 0;
        p->flags |= MPILAB_LOGGP_GAP_CLAMPED;
    }
    /* the model's one-way time at the smallest size: rtt/2 = os + L + max(m0-1,0) G + orr */
    p->L_raw = 0.5 * rtt[0] - p->os - p->orr - (m0 > 1 ? (m0 - 1) * p->G : 0.0);
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
    anchor(bytes, rtt, os, orr, g, &p);
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
    const mpilab_loggp_t *first = &out[0];
    for (size_t r = 0; r < nr; r++)
        if (bytes[0] >= from[r] && bytes[0] <= to[r]) {
            first = &out[r];
            break;
        }
    mpilab_loggp_t sm = *first;
    anchor(bytes, rtt, os, orr, g, &sm);
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
