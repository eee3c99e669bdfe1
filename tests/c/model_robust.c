/* Robust estimators on synthetic samples with known truth: quantiles, Theil-Sen, breakpoints
 * from piecewise data, Hockney and LogGP fits on raw samples with bootstrap intervals, clamp
 * flags, 1000x outliers that move no parameter outside its interval, and a known top regime. */
#include <gsl/gsl_randist.h>
#include <gsl/gsl_rng.h>
#include <stdlib.h>
#include <string.h>

#include "kit.h"
#include "mpilab/quality.h"
#include "mpilab/robust.h"

#define NS 14
#define REPS 30

static gsl_rng *rng; /* the cases' generator (seed 7), made by the first case that draws */

static void rng_init(void)
{
    if (!rng) {
        rng = gsl_rng_alloc(gsl_rng_mt19937);
        gsl_rng_set(rng, 7);
    }
}

/* A timing sample of true time t on a busy machine: half the samples within 0.2% above the
 * truth, the others delayed by an exponential with mean 20% of t. */
static double noisy(double t)
{
    if (gsl_rng_uniform(rng) < 0.5)
        return t * (1.0 + 0.002 * gsl_rng_uniform(rng));
    return t * (1.0 + gsl_ran_exponential(rng, 0.2));
}

static int inside(const mpilab_param_t *p, double v)
{
    return p->lo <= v && v <= p->hi;
}

/* "changes the parameter by no more than its interval": |v - value| <= half its width */
static int within_ci(const mpilab_param_t *p, double v)
{
    return fabs(v - p->value) <= 0.5 * (p->hi - p->lo);
}

static void sizes(double *x)
{
    /* 0, 64, 256, ..., up to 1 MiB: NS sizes */
    x[0] = 0;
    for (int k = 1; k < NS; k++)
        x[k] = 64.0 * pow(2.0, k - 1) * (k > 6 ? 1.0 : 1.0);
}

/* Shaped WAN link, one-way: delay d until a burst of b bytes, then 1/rate per byte. */
static double shaped(double m, double d, double b, double beta)
{
    return d + (m > b ? (m - b) * beta : 0.0);
}

MPILAB_TEST(basics)
{
    rng_init();
    double x[] = {5, 1, 4, 2, 3};
    unsigned char v[] = {1, 0, 1, 1, 1};
    CHECK_NEAR(mpilab_quantile(x, NULL, 5, 0.0), 1.0, 0);
    CHECK_NEAR(mpilab_quantile(x, NULL, 5, 0.5), 3.0, 1e-12);
    CHECK_NEAR(mpilab_quantile(x, v, 5, 0.0), 2.0, 0);
    CHECK_NEAR(mpilab_quantile(x, NULL, 5, 0.25), 2.0, 1e-12);
    CHECK(isnan(mpilab_quantile(x, NULL, 0, 0.5)));
    CHECK(isnan(mpilab_quantile(x, NULL, 5, 1.5)));

    /* Theil-Sen: an exact line with 2 of 10 points 1000x off is recovered exactly. */
    double xs[10], ys[10], a, b;
    for (int k = 0; k < 10; k++) {
        xs[k] = k * 100.0;
        ys[k] = 3e-6 + 2e-9 * xs[k];
    }
    ys[3] *= 1000;
    ys[8] *= 1000;
    CHECK(mpilab_theil_sen(xs, ys, 10, &a, &b) == 0);
    CHECK_NEAR(a, 3e-6, 1e-15);
    CHECK_NEAR(b, 2e-9, 1e-18);
    double same[3] = {1, 1, 1};
    CHECK(mpilab_theil_sen(same, ys, 3, &a, &b) != 0);

    char buf[64];
    CHECK(strcmp(mpilab_param_flags_str(MPILAB_PARAM_CLAMPED | MPILAB_PARAM_WIDE, buf, sizeof buf),
                 "clamped,ci_wide") == 0);
    CHECK(strcmp(mpilab_param_flags_str(0, buf, sizeof buf), "") == 0);

    mpilab_robust_opts_t o;
    char err[128];
    mpilab_robust_opts_default(&o);
    CHECK(mpilab_robust_opts_check(&o, err, sizeof err) == 0);
    o.q = 0.7;
    CHECK(mpilab_robust_opts_check(&o, err, sizeof err) != 0 && strstr(err, "quantile"));
    mpilab_robust_opts_default(&o);
    o.boot = 3;
    CHECK(mpilab_robust_opts_check(&o, err, sizeof err) != 0 && strstr(err, "bootstrap"));
    mpilab_robust_opts_default(&o);
    o.max_ranges = 0;
    CHECK(mpilab_robust_opts_check(&o, err, sizeof err) != 0);
}

/* Breakpoints on synthetic piecewise data with 1% noise. */
MPILAB_TEST(segments)
{
    rng_init();
    double x[24], y[24];
    size_t st[MPILAB_ROBUST_MAX_RANGES];
    for (int k = 0; k < 24; k++)
        x[k] = k == 0 ? 0 : 16.0 * pow(2.0, (k - 1) * 0.75); /* 0, 16 .. ~2.5 MB */
    /* one straight line: never split (200 noisy trials) */
    int splits = 0;
    for (int t = 0; t < 200; t++) {
        for (int k = 0; k < 24; k++)
            y[k] = (2e-6 + 1e-10 * x[k]) * (1.0 + gsl_ran_gaussian(rng, 0.01));
        splits += mpilab_robust_segments(x, y, 24, 4, st) != 1;
    }
    CHECKF(splits == 0, "a straight line was split in %d of 200 trials", splits);
    /* eager -> rendezvous at 64 KiB: a jump of 4 us; the second range starts at the first
     * size above 64 KiB (50 trials) */
    size_t first_big = 0;
    while (x[first_big] <= 65536)
        first_big++;
    int found = 0;
    for (int t = 0; t < 50; t++) {
        for (int k = 0; k < 24; k++)
            y[k] = (x[k] <= 65536 ? 1e-6 : 5e-6 + 2e-6) + 1e-10 * x[k];
        for (int k = 0; k < 24; k++)
            y[k] *= 1.0 + gsl_ran_gaussian(rng, 0.01);
        size_t K = mpilab_robust_segments(x, y, 24, 4, st);
        int ok = 0;
        for (size_t r = 1; r < K; r++)
            ok |= st[r] == first_big;
        found += ok;
    }
    CHECKF(found == 50, "eager/rendezvous break found in %d of 50 trials", found);
    /* shaper burst: flat 2 ms up to 16 KiB, then 80 ns/byte; the knee is found within one
     * size of 16 KiB */
    size_t knee = 0;
    while (x[knee] <= 16384)
        knee++;
    found = 0;
    for (int t = 0; t < 50; t++) {
        for (int k = 0; k < 24; k++)
            y[k] = shaped(x[k], 2e-3, 16384, 80e-9) * (1.0 + gsl_ran_gaussian(rng, 0.01));
        size_t K = mpilab_robust_segments(x, y, 24, 4, st);
        int ok = 0;
        for (size_t r = 1; r < K; r++)
            ok |= st[r] + 1 >= knee && st[r] <= knee + 1;
        found += ok;
    }
    CHECKF(found == 50, "shaper knee found in %d of 50 trials", found);
    /* bad input */
    double yy[3] = {1, 1, 1}, xx[3] = {1, 1, 2};
    CHECK(mpilab_robust_segments(xx, yy, 3, 2, st) == 0);
    yy[1] = -1;
    xx[1] = 1.5;
    CHECK(mpilab_robust_segments(xx, yy, 3, 2, st) == 0);
}

/* Hockney on raw round-trip samples of a shaped link. */
static void fill_rtt(double samples[NS][REPS], const double *x, double d, double b, double beta)
{
    for (int k = 0; k < NS; k++)
        for (int r = 0; r < REPS; r++)
            samples[k][r] = noisy(2.0 * shaped(x[k], d, b, beta));
}

static void hockney_fit(double samples[NS][REPS], const double *x, mpilab_hockney_robust_t *h,
                        double *res)
{
    mpilab_sample_set_t sets[NS];
    for (int k = 0; k < NS; k++)
        sets[k] = (mpilab_sample_set_t){x[k], samples[k], NULL, REPS};
    mpilab_robust_opts_t o;
    mpilab_robust_opts_default(&o);
    char err[128] = "";
    int rc = mpilab_hockney_fit_samples(sets, NS, 0.5, &o, h, res, err, sizeof err);
    CHECKF(rc == 0, "hockney fit: %s", err);
}

MPILAB_TEST(hockney)
{
    rng_init();
    double x[NS];
    sizes(x);
    static double s[NS][REPS];
    const double d = 2e-3, b = 16384, beta = 80e-9;
    int cover_a = 0, cover_b = 0;
    const int T = 40;
    for (int t = 0; t < T; t++) {
        fill_rtt(s, x, d, b, beta);
        mpilab_hockney_robust_t h;
        double res[NS];
        hockney_fit(s, x, &h, res);
        CHECKF(fabs(h.alpha.value / d - 1) < 0.01, "alpha %g vs %g", h.alpha.value, d);
        CHECKF(fabs(h.beta.value / beta - 1) < 0.01, "beta %g vs %g", h.beta.value, beta);
        CHECK(h.nranges >= 2 && h.alpha.flags == 0);
        /* two-sided by construction: the minimum-based alpha strictly inside its interval */
        CHECKF(h.alpha.lo < h.alpha.value && h.alpha.value < h.alpha.hi, "alpha %g at an end of [%g, %g]",
               h.alpha.value, h.alpha.lo, h.alpha.hi);
        cover_a += inside(&h.alpha, d);
        cover_b += inside(&h.beta, beta);
        for (int k = 0; k < NS; k++)
            CHECKF(fabs(res[k]) < 0.02 * shaped(x[k], d, b, beta), "residual %g at %g", res[k], x[k]);
        if (t == 0) {
            /* a 1000x outlier at any size moves no parameter outside its interval */
            for (int k = 0; k < NS; k++) {
                double keep = s[k][REPS / 2];
                s[k][REPS / 2] *= 1000;
                mpilab_hockney_robust_t h2;
                hockney_fit(s, x, &h2, NULL);
                CHECKF(within_ci(&h.alpha, h2.alpha.value) && within_ci(&h.beta, h2.beta.value),
                       "outlier at size %d: alpha %g beta %g", k, h2.alpha.value, h2.beta.value);
                s[k][REPS / 2] = keep;
            }
        }
    }
    CHECKF(cover_a >= T * 9 / 10 && cover_b >= T * 9 / 10, "interval covered alpha %d, beta %d of %d", cover_a,
           cover_b, T);

    /* Breakpoints from samples (noise known per size): a straight line on the busy-machine
     * noise is never split (30 data sets); the shaped link above always was (nranges >= 2). */
    int split = 0;
    for (int t = 0; t < 30; t++) {
        for (int k = 0; k < NS; k++)
            for (int r = 0; r < REPS; r++)
                s[k][r] = noisy(2.0 * (5e-6 + 1e-9 * x[k]));
        mpilab_hockney_robust_t hl;
        hockney_fit(s, x, &hl, NULL);
        split += hl.nranges != 1;
    }
    CHECKF(split == 0, "a straight line was split in %d of 30 sample sets", split);

    /* A whole size 1000x off (every sample) on a single line: Theil-Sen ignores it. */
    for (int k = 0; k < NS; k++)
        for (int r = 0; r < REPS; r++)
            s[k][r] = noisy(2.0 * (5e-6 + 1e-9 * x[k]));
    mpilab_hockney_robust_t h0, h1;
    hockney_fit(s, x, &h0, NULL);
    for (int k = 1; k < NS; k++) {
        double keep[REPS];
        memcpy(keep, s[k], sizeof keep);
        for (int r = 0; r < REPS; r++)
            s[k][r] *= 1000;
        hockney_fit(s, x, &h1, NULL);
        CHECKF(within_ci(&h0.alpha, h1.alpha.value) && within_ci(&h0.beta, h1.beta.value),
               "size %d 1000x: alpha %g [%g,%g] beta %g [%g,%g]", k, h1.alpha.value, h0.alpha.lo, h0.alpha.hi,
               h1.beta.value, h0.beta.lo, h0.beta.hi);
        memcpy(s[k], keep, sizeof keep);
    }

    /* Impossible parameters are clamped and flagged, never reported as fitted: a negative
     * intercept (a line that would cross zero) gives alpha 0 with the raw value kept. */
    for (int k = 0; k < NS; k++)
        for (int r = 0; r < REPS; r++)
            s[k][r] = 2.0 * (1e-9 * x[k] + 1e-7) * (1.0 + 0.001 * r);
    x[0] = 32;
    for (int k = 0; k < NS; k++)
        for (int r = 0; r < REPS; r++)
            s[k][r] = 2.0 * fmax(1e-9 * x[k] - 2e-8, 1e-9) * (1.0 + 0.001 * r);
    hockney_fit(s, x, &h0, NULL);
    CHECKF(h0.alpha.raw < 0 && h0.alpha.value == 0 && (h0.alpha.flags & MPILAB_PARAM_CLAMPED) && h0.alpha.lo >= 0,
           "alpha raw %g value %g flags %u", h0.alpha.raw, h0.alpha.value, h0.alpha.flags);

    /* bad input: one line each */
    char err[128];
    mpilab_robust_opts_t o;
    mpilab_robust_opts_default(&o);
    mpilab_sample_set_t sets[2] = {{10, s[0], NULL, REPS}, {5, s[1], NULL, REPS}};
    CHECK(mpilab_hockney_fit_samples(sets, 2, 0.5, &o, &h0, NULL, err, sizeof err) != 0 && strstr(err, "increasing"));
    unsigned char none[REPS] = {0};
    sets[1] = (mpilab_sample_set_t){20, s[1], none, REPS};
    CHECK(mpilab_hockney_fit_samples(sets, 2, 0.5, &o, &h0, NULL, err, sizeof err) != 0 && strstr(err, "no valid"));
    CHECK(mpilab_hockney_fit_samples(sets, 1, 0.5, &o, &h0, NULL, err, sizeof err) != 0);
}

/* LogGP on raw samples of known parameters (a WAN: L 2 ms, G 80 ns/byte). */
typedef struct lgtruth {
    double L, os, orr, g, G, ospb, orpb;
} lgtruth_t;

static void fill_loggp(mpilab_loggp_point_t *pts, double *buf, const double *x, const lgtruth_t *tr)
{
    for (int k = 0; k < NS; k++) {
        double m = x[k];
        double os = tr->os + tr->ospb * m, orr = tr->orr + tr->orpb * m, g = tr->g + tr->G * m;
        double oneway = os + tr->L + (m > 1 ? (m - 1) * tr->G : 0.0) + orr;
        mpilab_loggp_point_t *p = &pts[k];
        p->bytes = (size_t)m;
        mpilab_loggp_series_t *sr[4] = {&p->rtt, &p->os, &p->orr, &p->g};
        for (int q = 0; q < 4; q++) {
            double *v = buf + ((size_t)k * 4 + (size_t)q) * REPS;
            for (int r = 0; r < REPS; r++) {
                switch (q) {
                case 0: v[r] = noisy(2.0 * oneway); break;
                case 1: v[r] = noisy(os); break;
                case 2: v[r] = noisy(orr); break;
                default: v[r] = g * (1.0 + gsl_ran_gaussian(rng, 0.02)); break;
                }
            }
            memset(&sr[q]->stats, 0, sizeof sr[q]->stats);
            sr[q]->stats.reps = REPS;
            sr[q]->samples = v;
        }
    }
}

static void loggp_fit(const mpilab_loggp_point_t *pts, mpilab_loggp_robust_t *f, double *res)
{
    mpilab_robust_opts_t o;
    mpilab_robust_opts_default(&o);
    char err[128] = "";
    int rc = mpilab_loggp_fit_samples(pts, NS, &o, f, res, err, sizeof err);
    CHECKF(rc == 0, "loggp fit: %s", err);
}

static int all_inside(const mpilab_loggp_robust_t *a, const mpilab_loggp_robust_t *b)
{
    return within_ci(&a->L, b->L.value) && within_ci(&a->os, b->os.value) && within_ci(&a->orr, b->orr.value) &&
           within_ci(&a->g, b->g.value) && within_ci(&a->G, b->G.value);
}

MPILAB_TEST(loggp)
{
    rng_init();
    double x[NS];
    sizes(x);
    static mpilab_loggp_point_t pts[NS];
    static double buf[NS * 4 * REPS];
    lgtruth_t tr = {2e-3, 15e-6, 12e-6, 1e-6, 80e-9, 1e-10, 1e-10};
    int cover_L = 0, cover_G = 0;
    const int T = 40;
    for (int t = 0; t < T; t++) {
        fill_loggp(pts, buf, x, &tr);
        mpilab_loggp_robust_t f;
        double res[NS];
        loggp_fit(pts, &f, res);
        CHECKF(fabs(f.L.value / tr.L - 1) < 0.01, "L %g vs %g", f.L.value, tr.L);
        CHECKF(fabs(f.G.value / tr.G - 1) < 0.01, "G %g vs %g", f.G.value, tr.G);
        CHECKF(fabs(f.os.value / tr.os - 1) < 0.02, "os %g vs %g", f.os.value, tr.os);
        CHECK(f.fit.L == f.L.value && f.fit.G == f.G.value && f.fit.flags == 0);
        CHECKF(f.L.lo < f.L.value && f.L.value < f.L.hi, "L %g at an end of [%g, %g]", f.L.value, f.L.lo, f.L.hi);
        cover_L += inside(&f.L, tr.L);
        cover_G += inside(&f.G, tr.G);
        for (int k = 0; k < NS; k++)
            CHECKF(fabs(res[k]) < 0.02 * (tr.L + x[k] * tr.G), "residual %g at %g", res[k], x[k]);
        if (t == 0) {
            for (int k = 0; k < NS; k++)
                for (int q = 0; q < 4; q++) {
                    double *v = buf + ((size_t)k * 4 + (size_t)q) * REPS, keep = v[7];
                    v[7] *= 1000;
                    mpilab_loggp_robust_t f2;
                    loggp_fit(pts, &f2, NULL);
                    CHECKF(all_inside(&f, &f2), "outlier at size %d series %d: L %g G %g", k, q, f2.L.value,
                           f2.G.value);
                    v[7] = keep;
                }
        }
    }
    CHECKF(cover_L >= T * 9 / 10 && cover_G >= T * 9 / 10, "interval covered L %d, G %d of %d", cover_L, cover_G,
           T);

    /* Overheads larger than half the round trip (TCP loopback): L comes out negative and is
     * reported as 0 with the clamp flag, never as a negative latency. */
    lgtruth_t lo = {-1e-6, 3e-6, 3e-6, 2e-6, 0.1e-9, 0, 0};
    fill_loggp(pts, buf, x, &lo);
    mpilab_loggp_robust_t f;
    loggp_fit(pts, &f, NULL);
    CHECKF(f.L.value == 0 && f.L.raw < 0 && (f.L.flags & MPILAB_PARAM_CLAMPED) && (f.fit.flags & MPILAB_LOGGP_L_CLAMPED),
           "L %g raw %g flags %u", f.L.value, f.L.raw, f.L.flags);
    CHECK(f.L.lo >= 0 && f.L.hi >= 0);

    char err[128];
    mpilab_robust_opts_t o;
    mpilab_robust_opts_default(&o);
    pts[1].bytes = 0;
    CHECK(mpilab_loggp_fit_samples(pts, NS, &o, &f, NULL, err, sizeof err) != 0 && strstr(err, "increasing"));
}

/* A global-timing figure converted with a sync less precise than eps * median is flagged. */
/* A known top regime (the model-size extension's): sizes to 4 MiB over a 2 ms WAN whose
 * shaper lets a 50 kB burst through at line rate and whose 64 KiB size pays a window ramp;
 * with top_from at 256 KiB the last range is exactly {256K, 1M, 4M} and beta the shaped
 * rate; the ranges helper falls back to the data with too few points either side. */
static double wan_oneway(double m)
{
    const double burst = 50000, line = 8.4e-9, rate = 83.65e-9;
    double t = 2e-3 + (m <= burst ? line * m : line * burst + rate * (m - burst));
    return m == 65536 ? t + 5e-3 : t;
}

MPILAB_TEST(top_regime)
{
    rng_init();
    enum { N = 12, R = 20 };
    double x[N], smp[N][R];
    mpilab_sample_set_t sets[N];
    for (int k = 0; k < N; k++) {
        x[k] = pow(4.0, k); /* 1 .. 4 MiB */
        for (int r = 0; r < R; r++)
            smp[k][r] = noisy(2.0 * wan_oneway(x[k]));
        sets[k] = (mpilab_sample_set_t){x[k], smp[k], NULL, R};
    }
    mpilab_robust_opts_t o;
    mpilab_robust_opts_default(&o);
    o.top_from = 262144;
    mpilab_hockney_robust_t h;
    char err[128] = "";
    CHECKF(mpilab_hockney_fit_samples(sets, N, 0.5, &o, &h, NULL, err, sizeof err) == 0, "%s", err);
    CHECK(h.nranges >= 2 && h.ranges[h.nranges - 1].from == 262144 && h.ranges[h.nranges - 1].to == 4194304);
    CHECKF(fabs(h.beta.value / 83.65e-9 - 1) < 0.05, "beta %g against 83.65e-9", h.beta.value);
    CHECK(inside(&h.beta, 83.65e-9));
    double y[N];
    size_t st[MPILAB_ROBUST_MAX_RANGES];
    for (int k = 0; k < N; k++)
        y[k] = wan_oneway(x[k]);
    size_t K = mpilab_robust_segments_top(x, y, NULL, N, 4, 262144, st);
    CHECK(K >= 2 && K <= 4 && st[K - 1] == 9);
    /* one point at or above: from the data, as without */
    size_t st2[MPILAB_ROBUST_MAX_RANGES];
    size_t K1 = mpilab_robust_segments_top(x, y, NULL, N, 4, 4194304, st);
    size_t K2 = mpilab_robust_segments_sigma(x, y, NULL, N, 4, st2);
    CHECK(K1 == K2 && memcmp(st, st2, K1 * sizeof *st) == 0);
    /* one point below: likewise */
    K1 = mpilab_robust_segments_top(x, y, NULL, N, 4, 2, st);
    CHECK(K1 == K2 && memcmp(st, st2, K1 * sizeof *st) == 0);
}

MPILAB_TEST(clock_uncertain)
{
    CHECK(mpilab_quality_clock_uncertain(0.0, 3e-6, 0.025) == 0);      /* no sync used */
    CHECK(mpilab_quality_clock_uncertain(1e-8, 3e-6, 0.025) == 0);     /* 10 ns of 3 us: fine */
    CHECK(mpilab_quality_clock_uncertain(6.8e-3, 4.2e-3, 0.025) == 1); /* the busy MPICH case */
    CHECK(mpilab_quality_clock_uncertain(1e-6, 3e-6, 0.025) == 1);     /* 1 us of 3 us at 2.5% */
    CHECK(mpilab_quality_clock_uncertain(1e-6, NAN, 0.025) == 1);      /* no figure to trust */
}

/* The tables' rule: an interval of a time or a rate reaching 0, or wider than a decade,
 * determines nothing (the intervals an independent check found printed as numbers). */
MPILAB_TEST(interval_undetermined)
{
    CHECK(mpilab_quality_undetermined(3.41e-6, 3.62e-6) == 0);
    CHECK(mpilab_quality_undetermined(1e-6, 10e-6) == 0);           /* a decade exactly holds */
    CHECK(mpilab_quality_undetermined(1.71e-9, 311707e-9) == 1);    /* "CI 1.71 .. 311707 ns" */
    CHECK(mpilab_quality_undetermined(0.385e9, 404e9) == 1);        /* "0.385 .. 404 GB/s" */
    CHECK(mpilab_quality_undetermined(0.0, 7398.9) == 1);           /* "0.000..7398936698.991 us" */
    CHECK(mpilab_quality_undetermined(-1.31e-3, 8.13e-3) == 1);     /* below 0 */
    CHECK(mpilab_quality_undetermined(NAN, 1.0) == 0);              /* no interval: "-" */
}

/* Long series (a million samples is what the stopping rule may collect): the bootstrap of a
 * median-based fit draws each replicate from the order statistics' distribution above a few
 * thousand samples. Its intervals must still cover: 5 sizes of 6000 samples with 5%
 * Gaussian noise around a known line, 40 trials, alpha and beta held in at least 34. */
MPILAB_TEST(long_series)
{
    rng_init();
    enum { LN = 5, LM = 6000, TRIALS = 40 };
    static double s[LN][LM];
    double x[LN] = {0, 1024, 8192, 65536, 262144};
    const double a = 5e-6, b = 1e-9;
    mpilab_robust_opts_t o;
    mpilab_robust_opts_default(&o);
    o.q = 0.5;
    o.max_ranges = 1;
    int ina = 0, inb = 0;
    for (int t = 0; t < TRIALS; t++) {
        mpilab_sample_set_t sets[LN];
        for (int k = 0; k < LN; k++) {
            for (int r = 0; r < LM; r++)
                s[k][r] = (a + b * x[k]) * (1.0 + gsl_ran_gaussian(rng, 0.05));
            sets[k] = (mpilab_sample_set_t){x[k], s[k], NULL, LM};
        }
        mpilab_hockney_robust_t h;
        char err[128] = "";
        o.seed = (unsigned long)t + 1;
        CHECKF(mpilab_hockney_fit_samples(sets, LN, 1.0, &o, &h, NULL, err, sizeof err) == 0, "%s", err);
        ina += inside(&h.alpha, a);
        inb += inside(&h.beta, b);
    }
    CHECKF(ina >= 34 && inb >= 34, "long series: alpha held in %d, beta in %d of %d", ina, inb, TRIALS);
}

/* A simulated wire (SMPI): every message carries a 16-byte envelope and every sample holds
 * one clock read of 10 ns. With both given, identical samples give the link's own alpha and
 * beta, intervals one tick wide each side that contain them, and range lines in payload
 * bytes; envelope and tick out of range are refused. */
MPILAB_TEST(wire)
{
    rng_init();
    const double alpha = 10e-6, beta = 8e-10, env = 16, tick = 1e-8;
    const double sizes[] = {0, 1024, 4096, 16384, 65536, 262144, 1048576};
    enum { WN = 7, WR = 6 };
    double samples[WN][WR];
    mpilab_sample_set_t sets[WN];
    for (int k = 0; k < WN; k++) {
        for (int r = 0; r < WR; r++) /* round trips */
            samples[k][r] = 2.0 * (alpha + beta * (sizes[k] + env)) + tick;
        sets[k] = (mpilab_sample_set_t){sizes[k], samples[k], NULL, WR};
    }
    mpilab_robust_opts_t o;
    mpilab_robust_opts_default(&o);
    mpilab_hockney_robust_t h;
    char err[128];
    /* without: alpha holds the envelope and half a tick, its interval is zero-wide */
    CHECK(mpilab_hockney_fit_samples(sets, WN, 0.5, &o, &h, NULL, err, sizeof err) == 0);
    CHECKF(fabs(h.alpha.value - (alpha + env * beta + tick / 2)) < 1e-12, "alpha %g", h.alpha.value);
    CHECK(!(h.alpha.lo <= alpha && alpha <= h.alpha.hi));
    o.envelope = env;
    o.tick = tick;
    CHECK(mpilab_hockney_fit_samples(sets, WN, 0.5, &o, &h, NULL, err, sizeof err) == 0);
    CHECKF(fabs(h.alpha.value - alpha) < 1e-12 && fabs(h.beta.value / beta - 1) < 1e-9, "alpha %g beta %g",
           h.alpha.value, h.beta.value);
    CHECKF(h.alpha.lo <= alpha - 0.49 * tick && h.alpha.hi >= alpha + 0.49 * tick, "alpha [%g, %g]",
           h.alpha.lo, h.alpha.hi);
    CHECK(h.beta.lo < beta && beta < h.beta.hi);
    CHECK(h.nranges >= 1 && h.ranges[0].from == 0 && h.ranges[h.nranges - 1].to == 1048576);
    CHECKF(fabs(h.ranges[0].h.alpha - (alpha + env * beta)) < 1e-12, "range alpha %g", h.ranges[0].h.alpha);
    o.tick = -1;
    CHECK(mpilab_robust_opts_check(&o, err, sizeof err) != 0 && strstr(err, "tick"));
    o.tick = 0;
    o.envelope = NAN;
    CHECK(mpilab_robust_opts_check(&o, err, sizeof err) != 0 && strstr(err, "envelope"));
}

MPILAB_TEST_MAIN()
