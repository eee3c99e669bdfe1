/* LogGP fit and predictions (see include/mpilab/loggp.h and docs/models-loggp.md). */
#include "mpilab/loggp.h"

#include <gsl/gsl_fit.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "common/common.h" /* mpilab_errf */

/* Checks the common input; 0 or -1 with a reason. */
static int check_input(const double *bytes, const double *rtt, const double *os, const double *orr,
                       const double *g, size_t n, char *err, size_t errlen)
{
    if (!bytes || !rtt || !os || !orr || !g)
        return mpilab_errf(err, errlen, "missing input array");
    if (n < 2)
        return mpilab_errf(err, errlen, "LogGP fit needs at least 2 message sizes, got %zu", n);
    for (size_t k = 0; k < n; k++) {
        if (!isfinite(bytes[k]) || bytes[k] < 0)
            return mpilab_errf(err, errlen, "size %zu is not a finite non-negative number", k);
        if (k > 0 && !(bytes[k] > bytes[k - 1]))
            return mpilab_errf(err, errlen, "sizes are not strictly increasing at index %zu (%g after %g)",
                               k, bytes[k], bytes[k - 1]);
        if (!isfinite(rtt[k]) || !isfinite(os[k]) || !isfinite(orr[k]) || !isfinite(g[k]))
            return mpilab_errf(err, errlen, "non-finite value at size %g", bytes[k]);
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
        return mpilab_errf(err, errlen, "missing output");
    if (check_input(bytes, rtt, os, orr, g, n, err, errlen) != 0)
        return -1;
    mpilab_loggp_t p = {0};
    if (fit_lines(bytes, os, orr, g, 0, n, &p) != 0)
        return mpilab_errf(err, errlen, "least-squares fit failed");
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
        return mpilab_errf(err, errlen, "no ranges given");
    mpilab_loggp_t whole;
    if (mpilab_loggp_fit(bytes, rtt, os, orr, g, n, &whole, err, errlen) != 0)
        return -1;
    for (size_t r = 0; r < nr; r++) {
        if (!isfinite(from[r]) || !isfinite(to[r]) || to[r] < from[r])
            return mpilab_errf(err, errlen, "range %zu is empty or not finite", r);
        if (r > 0 && !(from[r] > to[r - 1]))
            return mpilab_errf(err, errlen, "range %zu overlaps or precedes range %zu", r, r - 1);
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

/* ------------------------------------------------------------ binomial trees */

/* The tree of mpilab_scatter_binomial / mpilab_gather_binomial (src/coll/scatter_gather.c):
 * relative rank vr = (rank - root) mod p; a node vr > 0 owns the blocks of relative ranks
 * [vr, vr + min(lowbit(vr), p - vr)), the root all p; the children of vr are vr + mask for
 * the masks below lowbit(vr) (below the next power of two >= p for the root) with
 * vr + mask < p, and the message to / from child c carries the blocks c owns. */

/* Parameters for one message src -> dst (actual ranks) of `bytes` bytes. */
typedef const mpilab_loggp_t *(*params_fn)(const void *pairs, size_t p, size_t src, size_t dst,
                                          double bytes);

static const mpilab_loggp_t *single_params(const void *pairs, size_t p, size_t src, size_t dst,
                                           double bytes)
{
    (void)bytes;
    return &((const mpilab_loggp_t *)pairs)[src * p + dst];
}

const mpilab_loggp_t *mpilab_loggp_pair_params(const mpilab_loggp_pair_model_t *m, double bytes)
{
    if (!m)
        return NULL;
    if (m->nranges > 0 && m->ranges && m->from && m->to)
        return &m->ranges[mpilab_loggp_pick_range(m->from, m->to, m->nranges, bytes)];
    return &m->whole;
}

static const mpilab_loggp_t *model_params(const void *pairs, size_t p, size_t src, size_t dst,
                                          double bytes)
{
    return mpilab_loggp_pair_params(&((const mpilab_loggp_pair_model_t *)pairs)[src * p + dst], bytes);
}

typedef struct tree {
    params_fn params;
    const void *pairs;
    size_t p, root, top; /* top: smallest power of two >= p */
    double bytes;        /* per rank */
} tree_t;

static size_t lowbit(size_t v)
{
    return v & (~v + 1);
}

/* Blocks owned by relative rank vr (the whole p for the root). */
static size_t owned(const tree_t *t, size_t vr)
{
    if (vr == 0)
        return t->p;
    size_t lb = lowbit(vr);
    return lb < t->p - vr ? lb : t->p - vr;
}

static size_t actual(const tree_t *t, size_t vr)
{
    return (vr + t->root) % t->p;
}

/* Scatter below relative rank vr, which holds its blocks from time `ready` on: sends to
 * the children from the largest mask down, successive sends max(g(m), o_s(m)) of the
 * previous message apart; a child has its blocks at send start + T(m). Returns the time
 * at which the last rank of the subtree has its blocks (ready for vr itself). */
static double scatter_subtree(const tree_t *t, size_t vr, double ready)
{
    size_t lb = vr == 0 ? t->top : lowbit(vr), n = owned(t, vr);
    double start = ready, done = ready;
    for (size_t mask = lb >> 1; mask > 0; mask >>= 1) {
        if (mask >= n)
            continue;
        size_t c = vr + mask;
        double m = (double)owned(t, c) * t->bytes;
        const mpilab_loggp_t *q = t->params(t->pairs, t->p, actual(t, vr), actual(t, c), m);
        double got = start + mpilab_loggp_time(q, m);
        done = fmax2(done, scatter_subtree(t, c, got));
        start += fmax2(mpilab_loggp_gap(q, m), mpilab_loggp_os(q, m));
    }
    return done;
}

/* Gather into relative rank vr: returns the time at which vr holds all its subtree's
 * blocks (0 for a leaf). Children are received from the smallest mask up, each child
 * sending as soon as it holds its own subtree; the message of child k arrives at
 * A_k = S_k + o_s + L + max(m-1, 0) G and is complete at
 * c_k = max(A_k, c_{k-1} + max(g(m) - o_r(m), 0)) + o_r(m) (c_0 = -inf), as in the
 * linear gather. */
static double gather_subtree(const tree_t *t, size_t vr)
{
    size_t lb = vr == 0 ? t->top : lowbit(vr), n = owned(t, vr);
    double c = -INFINITY;
    for (size_t mask = 1; mask < lb && mask < n; mask <<= 1) {
        size_t ch = vr + mask;
        double m = (double)owned(t, ch) * t->bytes;
        double sent = gather_subtree(t, ch);
        const mpilab_loggp_t *q = t->params(t->pairs, t->p, actual(t, ch), actual(t, vr), m);
        double arrive = sent + q->os + q->L + (m > 1 ? (m - 1) * q->G : 0.0);
        double o_r = mpilab_loggp_or(q, m);
        double begin = isinf(c) ? arrive : fmax2(arrive, c + fmax2(mpilab_loggp_gap(q, m) - o_r, 0.0));
        c = begin + o_r;
    }
    return isinf(c) ? 0.0 : c;
}

static double binomial(params_fn params, const void *pairs, size_t p, size_t root, double bytes,
                       int gather)
{
    if (!pairs || p == 0 || root >= p || !(bytes >= 0) || isinf(bytes))
        return NAN;
    tree_t t = {params, pairs, p, root, 1, bytes};
    while (t.top < p)
        t.top <<= 1;
    return gather ? gather_subtree(&t, 0) : scatter_subtree(&t, 0, 0.0);
}

double mpilab_loggp_predict_scatter_binomial(const mpilab_loggp_t *pairs, size_t p, size_t root,
                                             double bytes)
{
    return binomial(single_params, pairs, p, root, bytes, 0);
}

double mpilab_loggp_predict_gather_binomial(const mpilab_loggp_t *pairs, size_t p, size_t root,
                                            double bytes)
{
    return binomial(single_params, pairs, p, root, bytes, 1);
}

double mpilab_loggp_predict_scatter_binomial_ranges(const mpilab_loggp_pair_model_t *pairs, size_t p,
                                                    size_t root, double bytes)
{
    return binomial(model_params, pairs, p, root, bytes, 0);
}

double mpilab_loggp_predict_gather_binomial_ranges(const mpilab_loggp_pair_model_t *pairs, size_t p,
                                                   size_t root, double bytes)
{
    return binomial(model_params, pairs, p, root, bytes, 1);
}
