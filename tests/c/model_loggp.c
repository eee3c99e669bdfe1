/* LogGP fit on synthetic data from known parameters: exact recovery without noise,
 * close recovery with noise, the negative-L clamp, per-range fits, predictions against
 * a step-by-step event simulation, and refusal of bad input. */
#include <gsl/gsl_randist.h>
#include <gsl/gsl_rng.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "kit.h"
#include "mpilab/loggp.h"

static int close_rel(double a, double b, double rel, double abs_tol)
{
    return fabs(a - b) <= rel * fabs(b) + abs_tol;
}

#define N 9

/* Per-size values generated from the model's own definitions. */
static void synth(const mpilab_loggp_t *t, const double *x, size_t n, double *rtt, double *os, double *orr,
                  double *g)
{
    for (size_t k = 0; k < n; k++) {
        os[k] = t->os + t->os_per_byte * x[k];
        orr[k] = t->orr + t->or_per_byte * x[k];
        g[k] = t->g + t->G * x[k];
        rtt[k] = 2.0 * (t->os + t->L + (x[k] > 1 ? (x[k] - 1) * t->G : 0.0) + t->orr);
    }
}

MPILAB_TEST(exact)
{
    double x[N] = {0, 1, 16, 256, 1024, 4096, 16384, 65536, 262144};
    double rtt[N], os[N], orr[N], g[N];
    mpilab_loggp_t t = {.L = 3.2e-6, .os = 0.7e-6, .os_per_byte = 1e-10, .orr = 0.9e-6,
                        .or_per_byte = 2e-10, .g = 1.5e-6, .G = 8e-10};
    synth(&t, x, N, rtt, os, orr, g);
    mpilab_loggp_t f;
    char err[200] = "";
    CHECKF(mpilab_loggp_fit(x, rtt, os, orr, g, N, &f, err, sizeof err) == 0, "fit failed: %s", err);
    CHECKF(close_rel(f.L, t.L, 1e-9, 1e-15), "L %g vs %g", f.L, t.L);
    CHECKF(close_rel(f.os, t.os, 1e-9, 1e-15), "os %g vs %g", f.os, t.os);
    CHECKF(close_rel(f.orr, t.orr, 1e-9, 1e-15), "or %g vs %g", f.orr, t.orr);
    CHECKF(close_rel(f.g, t.g, 1e-9, 1e-15), "g %g vs %g", f.g, t.g);
    CHECKF(close_rel(f.G, t.G, 1e-9, 1e-18), "G %g vs %g", f.G, t.G);
    CHECKF(close_rel(f.os_per_byte, t.os_per_byte, 1e-9, 1e-18), "os slope");
    CHECKF(close_rel(f.or_per_byte, t.or_per_byte, 1e-9, 1e-18), "or slope");
    CHECKF(f.flags == 0, "flags %u", f.flags);
    CHECKF(f.L == f.L_raw, "L_raw");

    /* smallest size 64: L must account for (m0 - 1) G */
    double x2[4] = {64, 512, 4096, 32768};
    double r2[4], o2[4], q2[4], g2[4];
    synth(&t, x2, 4, r2, o2, q2, g2);
    mpilab_loggp_t f2;
    CHECKF(mpilab_loggp_fit(x2, r2, o2, q2, g2, 4, &f2, err, sizeof err) == 0, "fit2: %s", err);
    CHECKF(close_rel(f2.L, t.L, 1e-9, 1e-15), "L from m0=64: %g vs %g", f2.L, t.L);
    CHECKF(close_rel(f2.os, t.os, 1e-9, 1e-15) && close_rel(f2.g, t.g, 1e-9, 1e-15), "m0=64 carried to 0");

    /* the one-way time reproduces half the generated round trip */
    for (size_t k = 0; k < N; k++)
        CHECKF(close_rel(mpilab_loggp_time(&f, x[k]), rtt[k] / 2, 1e-9, 1e-15), "T(%g)", x[k]);
    CHECKF(isnan(mpilab_loggp_time(&f, -1)), "T(-1) not NaN");
}

MPILAB_TEST(noise)
{
    gsl_rng *rng = gsl_rng_alloc(gsl_rng_mt19937);
    gsl_rng_set(rng, 12345);
    enum { M = 40 };
    double x[M], rtt[M], os[M], orr[M], g[M];
    for (size_t k = 0; k < M; k++)
        x[k] = (double)(k * 2048);
    mpilab_loggp_t t = {.L = 20e-6, .os = 2e-6, .os_per_byte = 5e-11, .orr = 3e-6, .or_per_byte = 1e-10,
                        .g = 4e-6, .G = 1e-9};
    synth(&t, x, M, rtt, os, orr, g);
    /* 1% multiplicative noise on every value */
    for (size_t k = 0; k < M; k++) {
        rtt[k] *= 1 + gsl_ran_gaussian(rng, 0.01);
        os[k] *= 1 + gsl_ran_gaussian(rng, 0.01);
        orr[k] *= 1 + gsl_ran_gaussian(rng, 0.01);
        g[k] *= 1 + gsl_ran_gaussian(rng, 0.01);
    }
    mpilab_loggp_t f;
    char err[200] = "";
    CHECKF(mpilab_loggp_fit(x, rtt, os, orr, g, M, &f, err, sizeof err) == 0, "noisy fit: %s", err);
    CHECKF(close_rel(f.G, t.G, 0.03, 0), "noisy G %g vs %g", f.G, t.G);
    CHECKF(close_rel(f.g, t.g, 0.0, 2e-6), "noisy g %g vs %g", f.g, t.g);
    CHECKF(close_rel(f.L, t.L, 0.15, 1e-6), "noisy L %g vs %g", f.L, t.L);
    CHECKF(close_rel(f.os, t.os, 0.0, 1e-6), "noisy os %g vs %g", f.os, t.os);
    gsl_rng_free(rng);
}

MPILAB_TEST(clamp)
{
    double x[3] = {0, 1024, 8192};
    double rtt[3], os[3], orr[3], g[3];
    mpilab_loggp_t t = {.L = 1e-6, .os = 1e-6, .orr = 1e-6, .g = 2e-6, .G = 1e-9};
    synth(&t, x, 3, rtt, os, orr, g);
    /* overheads larger than half the round trip: L would be negative */
    for (int k = 0; k < 3; k++) {
        os[k] += 2e-6;
        orr[k] += 2e-6;
    }
    mpilab_loggp_t f;
    CHECKF(mpilab_loggp_fit(x, rtt, os, orr, g, 3, &f, NULL, 0) == 0, "clamp fit failed");
    CHECKF(f.L == 0.0, "L not clamped: %g", f.L);
    CHECKF(f.flags & MPILAB_LOGGP_L_CLAMPED, "clamp flag missing");
    CHECKF(close_rel(f.L_raw, -3e-6, 1e-9, 1e-15), "L_raw %g", f.L_raw);
    /* noise can make the measured gap at the smallest size negative: g = 0 with a flag */
    double gn[3] = {-1e-7, 2e-6, 9e-6};
    CHECKF(mpilab_loggp_fit(x, rtt, os, orr, gn, 3, &f, NULL, 0) == 0, "g clamp fit failed");
    CHECKF(f.g == 0.0 && (f.flags & MPILAB_LOGGP_GAP_CLAMPED) && f.G > 0, "g clamp: g %g flags %u", f.g, f.flags);
    /* os, or, g are the values measured at the smallest size, not the intercept of a line
     * pulled up by larger sizes (protocol switch); the slope is the least-squares one */
    double xs[3] = {0, 1024, 2048}, osn[3] = {1e-6, 5e-6, 6e-6};
    CHECKF(mpilab_loggp_fit(xs, rtt, osn, orr, g, 3, &f, NULL, 0) == 0, "anchor fit failed");
    CHECKF(f.os == 1e-6 && close_rel(f.os_per_byte, 5e-6 / 2048, 1e-9, 0), "anchor: os %g slope %g", f.os,
          f.os_per_byte);
    /* a falling gap curve gives G = 0 with a flag */
    double gd[3] = {5e-6, 4e-6, 3e-6};
    CHECKF(mpilab_loggp_fit(x, rtt, os, orr, gd, 3, &f, NULL, 0) == 0, "G clamp fit failed");
    CHECKF(f.G == 0.0 && (f.flags & MPILAB_LOGGP_G_CLAMPED), "G clamp: %g flags %u", f.G, f.flags);
}

MPILAB_TEST(bad)
{
    double x[3] = {0, 1024, 8192}, y[3] = {1e-6, 2e-6, 3e-6};
    mpilab_loggp_t f;
    char err[200];
    err[0] = '\0';
    CHECKF(mpilab_loggp_fit(x, y, y, y, y, 1, &f, err, sizeof err) != 0, "one size accepted");
    CHECKF(strstr(err, "at least 2") != NULL, "message: %s", err);
    CHECKF(mpilab_loggp_fit(x, y, y, y, y, 0, &f, err, sizeof err) != 0, "zero sizes accepted");
    double dec[3] = {0, 8192, 1024};
    CHECKF(mpilab_loggp_fit(dec, y, y, y, y, 3, &f, err, sizeof err) != 0, "decreasing sizes accepted");
    CHECKF(strstr(err, "increasing") != NULL, "message: %s", err);
    double dup[3] = {0, 1024, 1024};
    CHECKF(mpilab_loggp_fit(dup, y, y, y, y, 3, &f, err, sizeof err) != 0, "repeated size accepted");
    double nan_y[3] = {1e-6, NAN, 3e-6};
    CHECKF(mpilab_loggp_fit(x, y, nan_y, y, y, 3, &f, err, sizeof err) != 0, "NaN accepted");
    CHECKF(strstr(err, "non-finite") != NULL, "message: %s", err);
    double inf_y[3] = {1e-6, 2e-6, INFINITY};
    CHECKF(mpilab_loggp_fit(x, inf_y, y, y, y, 3, &f, err, sizeof err) != 0, "inf accepted");
    double nan_x[3] = {0, NAN, 8192};
    CHECKF(mpilab_loggp_fit(nan_x, y, y, y, y, 3, &f, err, sizeof err) != 0, "NaN size accepted");
    double neg_x[3] = {-5, 0, 8192};
    CHECKF(mpilab_loggp_fit(neg_x, y, y, y, y, 3, &f, err, sizeof err) != 0, "negative size accepted");
    CHECKF(mpilab_loggp_fit(NULL, y, y, y, y, 3, &f, err, sizeof err) != 0, "NULL accepted");
    CHECKF(mpilab_loggp_fit(x, y, y, y, y, 3, NULL, err, sizeof err) != 0, "NULL out accepted");
    double from = 10, to = 5;
    CHECKF(mpilab_loggp_fit_ranges(x, y, y, y, y, 3, &from, &to, 1, &f, NULL, err, sizeof err) != 0,
          "empty range accepted");
    double fr2[2] = {0, 500}, to2[2] = {1024, 8192};
    mpilab_loggp_t two[2];
    CHECKF(mpilab_loggp_fit_ranges(x, y, y, y, y, 3, fr2, to2, 2, two, NULL, err, sizeof err) != 0,
          "overlapping ranges accepted");
}

MPILAB_TEST(ranges)
{
    /* two protocol ranges with different G and overheads; L is common */
    double x[8] = {0, 256, 1024, 4096, 16384, 65536, 262144, 1048576};
    double rtt[8], os[8], orr[8], g[8];
    mpilab_loggp_t a = {.L = 2e-6, .os = 1e-6, .os_per_byte = 1e-10, .orr = 1e-6, .or_per_byte = 1e-10,
                        .g = 1e-6, .G = 5e-10};
    mpilab_loggp_t b = {.L = 2e-6, .os = 8e-6, .os_per_byte = 3e-10, .orr = 9e-6, .or_per_byte = 2e-10,
                        .g = 10e-6, .G = 2.5e-10};
    synth(&a, x, 4, rtt, os, orr, g);
    synth(&b, x + 4, 4, rtt + 4, os + 4, orr + 4, g + 4);
    double from[2] = {0, 16384}, to[2] = {4096, 1048576};
    mpilab_loggp_t r[2];
    char err[200] = "";
    mpilab_loggp_t sm;
    CHECKF(mpilab_loggp_fit_ranges(x, rtt, os, orr, g, 8, from, to, 2, r, &sm, err, sizeof err) == 0,
          "ranges: %s", err);
    /* the summary: small-message overheads, gap and L of range 0, G of the last range */
    CHECKF(close_rel(sm.L, a.L, 1e-9, 1e-15), "summary L %g vs %g", sm.L, a.L);
    CHECKF(close_rel(sm.os, a.os, 1e-9, 1e-15) && close_rel(sm.orr, a.orr, 1e-9, 1e-15), "summary overheads");
    CHECKF(close_rel(sm.g, a.g, 1e-9, 1e-15), "summary g %g", sm.g);
    CHECKF(close_rel(sm.G, b.G, 1e-9, 1e-18), "summary G %g vs %g", sm.G, b.G);
    CHECKF(sm.flags == 0, "summary flags %u", sm.flags);
    CHECKF(close_rel(r[0].G, a.G, 1e-9, 1e-18) && close_rel(r[1].G, b.G, 1e-9, 1e-18), "range G %g %g", r[0].G,
          r[1].G);
    CHECKF(close_rel(r[1].os, b.os, 1e-9, 1e-15) && close_rel(r[1].orr, b.orr, 1e-9, 1e-15), "range overheads");
    CHECKF(close_rel(r[0].g, a.g, 1e-9, 1e-15) && close_rel(r[1].g, b.g, 1e-9, 1e-15), "range g");
    /* a range with a single size falls back to the whole-size fit */
    double f1[1] = {256}, t1[1] = {300};
    mpilab_loggp_t w, one;
    CHECKF(mpilab_loggp_fit(x, rtt, os, orr, g, 8, &w, NULL, 0) == 0, "whole");
    CHECKF(r[0].L == sm.L && r[1].L == sm.L, "range L differs from the summary's: %g %g", r[0].L, r[1].L);
    CHECKF(mpilab_loggp_fit_ranges(x, rtt, os, orr, g, 8, f1, t1, 1, &one, NULL, NULL, 0) == 0, "one-size range");
    CHECKF(one.G == w.G && one.os == w.os, "fallback not the whole fit");
    CHECKF(mpilab_loggp_pick_range(from, to, 2, 0) == 0 && mpilab_loggp_pick_range(from, to, 2, 4096) == 0 &&
              mpilab_loggp_pick_range(from, to, 2, 16384) == 1 && mpilab_loggp_pick_range(from, to, 2, 1e9) == 1 &&
              mpilab_loggp_pick_range(from, to, 2, 5000) == 0 && mpilab_loggp_pick_range(from, to, 2, 16000) == 1,
          "pick_range");
}

/* Event simulation of the linear scatter/gather with per-destination parameters. */
MPILAB_TEST(predict)
{
    enum { P = 4 };
    mpilab_loggp_t m[P * P];
    memset(m, 0, sizeof m);
    for (size_t s = 0; s < P; s++)
        for (size_t d = 0; d < P; d++) {
            mpilab_loggp_t q = {.L = (1.0 + (double)(s + d)) * 1e-6, .os = 0.5e-6, .os_per_byte = 1e-10,
                                .orr = 0.7e-6, .or_per_byte = 5e-11, .g = 2e-6, .G = 1e-9};
            m[s * P + d] = q;
        }
    for (size_t root = 0; root < P; root++) {
        for (int small = 0; small < 2; small++) {
            double bytes = small ? 8 : 100000;
            /* scatter: sends leave at cumulative separations */
            double start = 0, worst = 0;
            for (size_t k = 1; k < P; k++) {
                const mpilab_loggp_t *q = &m[root * P + (root + k) % P];
                double sep = fmax(q->g + q->G * bytes, q->os + q->os_per_byte * bytes);
                double done = start + q->os + q->L + (bytes - 1) * q->G + q->orr;
                worst = fmax(worst, done);
                start += sep;
            }
            double ps = mpilab_loggp_predict_scatter_linear(m, P, root, bytes);
            CHECKF(close_rel(ps, worst, 1e-12, 0), "scatter root %zu bytes %g: %g vs %g", root, bytes, ps, worst);
            /* the scatter is never faster than its slowest single transfer nor than p-1 sends */
            CHECKF(ps >= mpilab_loggp_time(&m[root * P + (root + P - 1) % P], bytes), "scatter below one transfer");
            double pg = mpilab_loggp_predict_gather_linear(m, P, root, bytes);
            /* gather: the root handles arrivals in rank order, one receive overhead each,
             * successive completions at least max(g, o_r) apart */
            double c = 0;
            for (size_t k = 1; k < P; k++) {
                const mpilab_loggp_t *q = &m[((root + k) % P) * P + root];
                double arr = q->os + q->L + (bytes - 1) * q->G, o_r = q->orr + q->or_per_byte * bytes;
                double gap = q->g + q->G * bytes;
                double begin = k == 1 ? arr : fmax(arr, c + fmax(gap, o_r) - o_r);
                c = begin + o_r;
            }
            CHECKF(close_rel(pg, c, 1e-12, 0), "gather root %zu: %g vs %g", root, pg, c);
        }
    }
    CHECKF(isnan(mpilab_loggp_predict_scatter_linear(m, P, P, 8)), "bad root accepted");
    CHECKF(isnan(mpilab_loggp_predict_gather_linear(NULL, P, 0, 8)), "NULL accepted");
    CHECKF(isnan(mpilab_loggp_predict_gather_linear(m, P, 0, NAN)), "NaN bytes accepted");
}

/* ------------------------------------------------------------- binomial trees */

/* Parameters of one message for the reference computation: either the single matrix or
 * a two-range table per pair (ranges[src][dst][0] up to `split` bytes, [1] above). */
typedef struct ref_params {
    const mpilab_loggp_t *single; /* [P*P] or NULL */
    const mpilab_loggp_t *two;    /* [P*P*2] when single == NULL */
    double split;
    size_t p;
} ref_params_t;

static const mpilab_loggp_t *ref_pick(const ref_params_t *rp, size_t s, size_t d, double m)
{
    if (rp->single)
        return &rp->single[s * rp->p + d];
    return &rp->two[(s * rp->p + d) * 2 + (m <= rp->split ? 0 : 1)];
}

/* Tree of the binomial collectives written out from the parent relation alone: parent(v)
 * = v with its lowest set bit cleared; blocks(v) = the number of relative ranks whose chain
 * of parents passes through v; children ordered by distance (scatter: far first). */
static size_t ref_parent(size_t v)
{
    return v & (v - 1);
}

static size_t ref_blocks(size_t v, size_t p)
{
    size_t n = 0;
    for (size_t d = 0; d < p; d++) {
        size_t a = d;
        while (a != v && a > v)
            a = ref_parent(a);
        n += a == v;
    }
    return n;
}

static double ref_scatter(const ref_params_t *rp, size_t p, size_t root, double bytes)
{
    double ready[16] = {0}, worst = 0;
    for (size_t v = 0; v < p; v++) { /* parents come before their children */
        double start = ready[v];
        for (size_t c = p - 1; c > v; c--) {
            if (ref_parent(c) != v)
                continue;
            double m = (double)ref_blocks(c, p) * bytes;
            const mpilab_loggp_t *q = ref_pick(rp, (v + root) % p, (c + root) % p, m);
            ready[c] = start + q->os + q->L + (m > 1 ? (m - 1) * q->G : 0) + q->orr;
            worst = fmax(worst, ready[c]);
            start += fmax(q->g + q->G * m, q->os + q->os_per_byte * m);
        }
    }
    return worst;
}

static double ref_gather(const ref_params_t *rp, size_t p, size_t root, double bytes)
{
    double ready[16] = {0};
    for (size_t v = p; v-- > 0;) { /* children come before their parents */
        int first = 1;
        double c = 0;
        for (size_t ch = v + 1; ch < p; ch++) {
            if (ref_parent(ch) != v)
                continue;
            double m = (double)ref_blocks(ch, p) * bytes;
            const mpilab_loggp_t *q = ref_pick(rp, (ch + root) % p, (v + root) % p, m);
            double arr = ready[ch] + q->os + q->L + (m > 1 ? (m - 1) * q->G : 0);
            double o_r = q->orr + q->or_per_byte * m, gap = q->g + q->G * m;
            double begin = first ? arr : fmax(arr, c + fmax(gap, o_r) - o_r);
            c = begin + o_r;
            first = 0;
        }
        ready[v] = c;
    }
    return ready[0];
}

/* Distinct, asymmetric parameters per ordered pair (a swapped src/dst shows). */
static mpilab_loggp_t pair_params(size_t s, size_t d, double scale)
{
    mpilab_loggp_t q = {.L = (1.0 + (double)(3 * s + d)) * 1e-6 * scale, .os = (0.3 + 0.1 * (double)s) * 1e-6,
                        .os_per_byte = (1 + (double)d) * 1e-10, .orr = (0.4 + 0.2 * (double)d) * 1e-6,
                        .or_per_byte = 5e-11 * (1 + (double)s), .g = (1.0 + 0.5 * (double)(s + 2 * d)) * 1e-6,
                        .G = (1.0 + 0.1 * (double)(s * d)) * 1e-9 * scale};
    return q;
}

MPILAB_TEST(binomial)
{
    enum { PMAX = 9 };
    mpilab_loggp_t m[PMAX * PMAX], two[PMAX * PMAX * 2];
    mpilab_loggp_pair_model_t pm[PMAX * PMAX];
    double from[2] = {0, 4097}, to[2] = {4096, 1e9};
    size_t checked = 0;
    for (size_t p = 1; p <= PMAX; p++) {
        memset(m, 0, sizeof m);
        memset(pm, 0, sizeof pm);
        for (size_t s = 0; s < p; s++)
            for (size_t d = 0; d < p; d++) {
                m[s * p + d] = pair_params(s, d, 1.0);
                two[(s * p + d) * 2] = pair_params(s, d, 1.0);
                two[(s * p + d) * 2 + 1] = pair_params(d, s, 7.0); /* another protocol */
                pm[s * p + d] = (mpilab_loggp_pair_model_t){.whole = m[s * p + d], .ranges = &two[(s * p + d) * 2],
                                                            .from = from, .to = to, .nranges = 2};
            }
        ref_params_t rs = {.single = m, .p = p}, rr = {.two = two, .split = 4096, .p = p};
        for (size_t root = 0; root < p; root++)
            for (int k = 0; k < 2; k++) {
                /* 1000 B: with 4+ blocks a subtree crosses the 4096 B range boundary */
                double bytes = k ? 1000 : 100000;
                double ps = mpilab_loggp_predict_scatter_binomial(m, p, root, bytes);
                double pg = mpilab_loggp_predict_gather_binomial(m, p, root, bytes);
                double es = ref_scatter(&rs, p, root, bytes), eg = ref_gather(&rs, p, root, bytes);
                CHECKF(close_rel(ps, es, 1e-12, 0), "binomial scatter p %zu root %zu bytes %g: %g vs %g", p, root,
                       bytes, ps, es);
                CHECKF(close_rel(pg, eg, 1e-12, 0), "binomial gather p %zu root %zu bytes %g: %g vs %g", p, root,
                       bytes, pg, eg);
                double rsv = mpilab_loggp_predict_scatter_binomial_ranges(pm, p, root, bytes);
                double rgv = mpilab_loggp_predict_gather_binomial_ranges(pm, p, root, bytes);
                double ers = ref_scatter(&rr, p, root, bytes), erg = ref_gather(&rr, p, root, bytes);
                CHECKF(close_rel(rsv, ers, 1e-12, 0), "ranges scatter p %zu root %zu bytes %g: %g vs %g", p, root,
                       bytes, rsv, ers);
                CHECKF(close_rel(rgv, erg, 1e-12, 0), "ranges gather p %zu root %zu bytes %g: %g vs %g", p, root,
                       bytes, rgv, erg);
                if (p == 1)
                    CHECKF(ps == 0 && pg == 0 && rsv == 0 && rgv == 0, "p = 1 not 0");
                else
                    CHECKF(ps > 0 && pg > 0, "p %zu: non-positive prediction", p);
                if (p == 2) {
                    CHECKF(close_rel(ps, mpilab_loggp_predict_scatter_linear(m, p, root, bytes), 1e-14, 0),
                           "p = 2 scatter differs from linear");
                    CHECKF(close_rel(pg, mpilab_loggp_predict_gather_linear(m, p, root, bytes), 1e-14, 0),
                           "p = 2 gather differs from linear");
                }
                checked++;
            }
        /* without ranges the pair model is the single matrix */
        for (size_t i = 0; i < p * p; i++)
            pm[i].nranges = 0;
        double a = mpilab_loggp_predict_gather_binomial_ranges(pm, p, p - 1, 3000);
        double b = mpilab_loggp_predict_gather_binomial(m, p, p - 1, 3000);
        CHECKF(a == b, "nranges 0: %g vs %g", a, b);
    }
    CHECKF(checked == 2 * 45, "checked %zu cases", checked);
    /* a message is charged with the range of its own size */
    CHECKF(mpilab_loggp_pair_params(&(mpilab_loggp_pair_model_t){.ranges = two, .from = from, .to = to,
                                                                  .nranges = 2},
                                    8000) == &two[1],
           "pair_params picks the wrong range");
    CHECKF(mpilab_loggp_pair_params(NULL, 1) == NULL, "pair_params(NULL)");

    /* hand-checked: G = L = 0, no per-byte overheads, o_s = 1, o_r = 3 */
    mpilab_loggp_t h[64];
    for (size_t i = 0; i < 64; i++)
        h[i] = (mpilab_loggp_t){.os = 1, .orr = 3};
    /* p = 4, root 0: 0 -> 2 (2 blocks) at 0, rank 2 has it at 4, sends to 3 -> 8;
     * 0 -> 1 at max(g, o_s) = 1 -> 5.  Total 8. */
    CHECKF(mpilab_loggp_predict_scatter_binomial(h, 4, 0, 64) == 8, "hand scatter p4: %g",
           mpilab_loggp_predict_scatter_binomial(h, 4, 0, 64));
    /* gather p = 4: 3 -> 2 complete at 1 + 3 = 4; 1 -> 0 complete at 4; 2 -> 0 arrives
     * 4 + 1 = 5, completes 8. */
    CHECKF(mpilab_loggp_predict_gather_binomial(h, 4, 2, 64) == 8, "hand gather p4: %g",
           mpilab_loggp_predict_gather_binomial(h, 4, 2, 64));
    /* with g = 5 > o_s, o_r at p = 3: scatter 0 -> 2 done at 4, 0 -> 1 leaves at 5, done 9;
     * gather: from 1 complete at 4, from 2 (arrived at 1) begins at 4 + (5 - 3) = 6, done 9 */
    for (size_t i = 0; i < 64; i++)
        h[i].g = 5;
    CHECKF(mpilab_loggp_predict_scatter_binomial(h, 3, 1, 0) == 9, "hand scatter p3: %g",
           mpilab_loggp_predict_scatter_binomial(h, 3, 1, 0));
    CHECKF(mpilab_loggp_predict_gather_binomial(h, 3, 0, 0) == 9, "hand gather p3: %g",
           mpilab_loggp_predict_gather_binomial(h, 3, 0, 0));
    /* p = 8, g = 0: scatter depth 3, every hop 4 and the last child of each sender one o_s
     * later: rank 1 at 2 + 4 = 6 (third send), 7 via 0 -> 4 (0..4), 4 -> 6 (4..8), 6 -> 7 (8..12) */
    for (size_t i = 0; i < 64; i++)
        h[i].g = 0;
    CHECKF(mpilab_loggp_predict_scatter_binomial(h, 8, 0, 10) == 12, "hand scatter p8: %g",
           mpilab_loggp_predict_scatter_binomial(h, 8, 0, 10));

    /* bad arguments */
    CHECKF(isnan(mpilab_loggp_predict_scatter_binomial(NULL, 4, 0, 8)), "NULL accepted");
    CHECKF(isnan(mpilab_loggp_predict_gather_binomial(m, 0, 0, 8)), "p = 0 accepted");
    CHECKF(isnan(mpilab_loggp_predict_gather_binomial(m, 4, 4, 8)), "root = p accepted");
    CHECKF(isnan(mpilab_loggp_predict_scatter_binomial(m, 4, 0, NAN)), "NaN bytes accepted");
    CHECKF(isnan(mpilab_loggp_predict_scatter_binomial(m, 4, 0, -1)), "negative bytes accepted");
    CHECKF(isnan(mpilab_loggp_predict_gather_binomial(m, 4, 0, INFINITY)), "inf bytes accepted");
    CHECKF(isnan(mpilab_loggp_predict_scatter_binomial_ranges(NULL, 4, 0, 8)), "NULL ranges accepted");
    CHECKF(isnan(mpilab_loggp_predict_gather_binomial_ranges(pm, 4, 9, 8)), "ranges: bad root accepted");
}

MPILAB_TEST_MAIN()
