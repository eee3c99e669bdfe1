/* Adaptive message sizes (include/mpilab/adaptive.h) on synthetic curves: the start list; a
 * straight line (with noise inside its intervals) gets no size added; a protocol switch (a
 * jump) and a shaper's knee (a change of slope) are bracketed within one step of a doubling
 * list, with no more sizes than that list has; every added size says which size bent. */
#include "kit.h"

#include "mpilab/adaptive.h"

typedef double (*curve_fn)(double m);

static double eager_rndv(double m) /* Open MPI-like jump at 16 KiB */
{
    return (m < 16384 ? 5e-6 : 25e-6) + 0.3e-9 * m;
}

static double knee(double m) /* flat up to a 48 KiB burst, then 80 ns per byte */
{
    return 2e-3 + (m > 49152 ? 80e-9 * (m - 49152) : 0);
}

static double line(double m)
{
    return 4e-6 + 1e-9 * m;
}

static unsigned long long rs = 7;
static double noise(void) /* uniform in [-1, 1) */
{
    unsigned long long z = (rs += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return ((z ^ (z >> 31)) >> 11) * (2.0 / 9007199254740992.0) - 1;
}

/* Run the adaptive loop on curve f from the start list of [lo, hi] x factor, "measuring"
 * with relative noise `rel` and an interval of +- `hw` relative; returns the final count. */
static size_t adapt(curve_fn f, size_t lo, size_t hi, size_t factor, size_t budget, double rel, double hw,
                    mpilab_adaptive_point_t *pts, size_t *added)
{
    size_t s[64], n = mpilab_adaptive_start(lo, hi, factor, s, 64);
    for (size_t k = 0; k < n; k++) {
        double v = f((double)s[k]) * (1 + rel * noise());
        pts[k] = (mpilab_adaptive_point_t){s[k], v, v * (1 - hw), v * (1 + hw)};
    }
    *added = 0;
    for (int round = 0; round < 64; round++) {
        size_t out[64];
        mpilab_adaptive_why_t why[64];
        size_t np = mpilab_adaptive_next(pts, n, budget, out, why, 64);
        if (np == 0)
            break;
        for (size_t q = 0; q < np; q++) {
            int seen = 0;
            for (size_t k = 0; k < n; k++)
                seen |= pts[k].bytes == why[q].bent_at;
            CHECKF(seen, "size %zu added for %zu, which was not measured", out[q], why[q].bent_at);
            CHECK(why[q].departure > why[q].allowed && !why[q].start && why[q].bytes == out[q]);
            double v = f((double)out[q]) * (1 + rel * noise());
            size_t k = n++;
            while (k > 0 && pts[k - 1].bytes > out[q]) {
                pts[k] = pts[k - 1];
                k--;
            }
            CHECK(k == 0 || pts[k - 1].bytes != out[q]);
            pts[k] = (mpilab_adaptive_point_t){out[q], v, v * (1 - hw), v * (1 + hw)};
            (*added)++;
        }
    }
    return n;
}

/* The measured sizes around x: the largest below and the smallest at or above. */
static double bracket_ratio(const mpilab_adaptive_point_t *pts, size_t n, double x)
{
    for (size_t k = 1; k < n; k++)
        if ((double)pts[k - 1].bytes < x && (double)pts[k].bytes >= x)
            return (double)pts[k].bytes / (double)pts[k - 1].bytes;
    return INFINITY;
}

MPILAB_TEST(start_list)
{
    size_t s[32];
    CHECK(mpilab_adaptive_start(1, 65536, 4, s, 32) == 9);
    CHECK(s[0] == 1 && s[1] == 4 && s[8] == 65536);
    CHECK(mpilab_adaptive_start(0, 1000, 8, s, 32) == 6);
    CHECK(s[0] == 0 && s[1] == 1 && s[2] == 8 && s[4] == 512 && s[5] == 1000);
    CHECK(mpilab_adaptive_start(64, 64, 2, s, 32) == 1 && s[0] == 64);
    CHECK(mpilab_adaptive_start(65, 64, 2, s, 32) == 0);
    CHECK(mpilab_adaptive_start(1, 64, 1, s, 32) == 0);
}

MPILAB_TEST(straight_line_gets_nothing)
{
    mpilab_adaptive_point_t pts[64];
    for (int trial = 0; trial < 50; trial++) {
        size_t added;
        size_t n = adapt(line, 1, 1 << 20, 8, 21, 0.01, 0.03, pts, &added);
        CHECKF(added == 0, "trial %d: %zu sizes added to a straight line", trial, added);
        CHECK(n == 8);
    }
}

MPILAB_TEST(switch_and_knee_bracketed_within_one_doubling)
{
    mpilab_adaptive_point_t pts[64];
    /* the fixed default it competes with: 1 .. 1 MiB doubling, 21 sizes */
    for (int trial = 0; trial < 50; trial++) {
        size_t added;
        size_t n = adapt(eager_rndv, 1, 1 << 20, 8, 21, 0.005, 0.01, pts, &added);
        CHECK(n <= 21 && added > 0);
        double r = bracket_ratio(pts, n, 16384);
        CHECKF(r <= 2.0, "trial %d: the switch at 16 KiB is bracketed by a factor %.2f", trial, r);
        n = adapt(knee, 1024, 1 << 20, 4, 21, 0.005, 0.01, pts, &added);
        CHECK(n <= 21 && added > 0);
        /* a knee has no jump: the sizes around it carry the bend */
        r = bracket_ratio(pts, n, 49152);
        CHECKF(r <= 2.0, "trial %d: the knee at 48 KiB is bracketed by a factor %.2f", trial, r);
    }
}

MPILAB_TEST(budget_and_bad_input)
{
    mpilab_adaptive_point_t pts[64];
    size_t added;
    size_t n = adapt(eager_rndv, 1, 1 << 20, 8, 10, 0, 0.01, pts, &added);
    CHECK(n == 10); /* stopped by the budget */
    size_t out[4];
    mpilab_adaptive_why_t why[4];
    CHECK(mpilab_adaptive_next(pts, 2, 10, out, why, 4) == 0);  /* fewer than 3 points */
    CHECK(mpilab_adaptive_next(pts, 10, 10, out, why, 4) == 0); /* budget spent */
    /* neighbours one byte apart: no integer between, nothing proposed */
    mpilab_adaptive_point_t tight[3] = {{10, 1, 1, 1}, {11, 5, 5, 5}, {12, 1, 1, 1}};
    CHECK(mpilab_adaptive_next(tight, 3, 10, out, why, 4) == 0);
}

/* The runner's adaptive loop with repeats (src/bench/runner.c): the first measurement of size
 * `spike_at` meets a noise spike (x2), its repeat does not; every bending point and its
 * neighbours are measured again before mpilab_adaptive_next_repeated decides. repeat 0: the
 * plain rule (mpilab_adaptive_next). Returns the final count; *spike_added: sizes added for
 * the spike or its neighbours' bends. */
static size_t adapt_spiked(int repeat, size_t spike_at, size_t budget, mpilab_adaptive_point_t *pts,
                           size_t *spike_added)
{
    mpilab_adaptive_point_t rep[64];
    size_t s[64], n = mpilab_adaptive_start(1, 65536, 8, s, 64);
    for (size_t k = 0; k < n; k++) {
        double v = eager_rndv((double)s[k]) * (s[k] == spike_at ? 2.0 : 1 + 0.002 * noise());
        pts[k] = (mpilab_adaptive_point_t){s[k], v, v * 0.99, v * 1.01};
        rep[k] = (mpilab_adaptive_point_t){s[k], NAN, NAN, NAN};
    }
    *spike_added = 0;
    for (int round = 0; round < 64; round++) {
        for (size_t k = 1; repeat && k + 1 < n; k++)
            for (size_t j = k - 1; mpilab_adaptive_bend(&pts[k - 1]) != 0.0 && j <= k + 1; j++)
                if (isnan(rep[j].value)) {
                    double v = eager_rndv((double)pts[j].bytes) * (1 + 0.002 * noise());
                    rep[j] = (mpilab_adaptive_point_t){pts[j].bytes, v, v * 0.99, v * 1.01};
                }
        size_t out[64];
        mpilab_adaptive_why_t why[64];
        size_t np = mpilab_adaptive_next_repeated(pts, repeat ? rep : NULL, n, budget, out, why, 64);
        if (np == 0)
            break;
        for (size_t q = 0; q < np; q++) {
            *spike_added += why[q].bent_at <= 512;
            double v = eager_rndv((double)out[q]) * (1 + 0.002 * noise());
            size_t k = n++;
            while (k > 0 && pts[k - 1].bytes > out[q]) {
                pts[k] = pts[k - 1];
                rep[k] = rep[k - 1];
                k--;
            }
            pts[k] = (mpilab_adaptive_point_t){out[q], v, v * 0.99, v * 1.01};
            rep[k] = (mpilab_adaptive_point_t){out[q], NAN, NAN, NAN};
        }
    }
    return n;
}

MPILAB_TEST(a_noise_spike_earns_no_size_a_real_bend_does)
{
    mpilab_adaptive_point_t pts[64];
    size_t s[64];
    /* the default budget: the count of 1..64K x4, the default list (9 sizes) */
    size_t budget = mpilab_adaptive_start(1, 65536, 4, s, 64);
    CHECK(budget == 9);
    for (int trial = 0; trial < 20; trial++) {
        size_t spiked;
        size_t n = adapt_spiked(1, 64, budget, pts, &spiked);
        CHECKF(spiked == 0, "trial %d: %zu sizes added for the spike at 64 B", trial, spiked);
        CHECK(n <= budget);
        double r = bracket_ratio(pts, n, 16384);
        CHECKF(r <= 4.0, "trial %d: the switch at 16 KiB is bracketed by a factor %.2f", trial, r);
    }
    /* without the repeat the spike takes the budget and the switch stays a factor 8 wide */
    size_t spiked;
    size_t n = adapt_spiked(0, 64, budget, pts, &spiked);
    CHECK(spiked > 0 && bracket_ratio(pts, n, 16384) > 4.0);
    /* the bend test itself: a jump bends (signed), a straight line and a spike inside the
     * intervals do not */
    mpilab_adaptive_point_t up[3] = {{1, 1, 0.99, 1.01}, {2, 3, 2.97, 3.03}, {3, 1, 0.99, 1.01}};
    mpilab_adaptive_point_t flat[3] = {{1, 1, 0.9, 1.1}, {2, 1.05, 0.95, 1.15}, {3, 1, 0.9, 1.1}};
    CHECK(mpilab_adaptive_bend(up) > 1.0 && mpilab_adaptive_bend(flat) == 0.0);
    up[1].value = -1;
    CHECK(mpilab_adaptive_bend(up) < -1.0);
}

static double tcp_like(double m) /* loopback TCP: 30 us, 2 GB/s, a rendezvous round trip from 64 KiB */
{
    return 30e-6 + m / 2e9 + (m >= 65536 ? 30e-6 : 0);
}

/* One measurement of tcp_like at size m: a step of +5% at `step_at` that persists across
 * the repeat (it is in every measurement of that size), small sizes measured to +-0.1%,
 * 16 KiB and above to +-2% (as TCP's larger messages spread). */
static mpilab_adaptive_point_t tcp_point(size_t m, size_t step_at)
{
    double v = tcp_like((double)m) * (1 + 0.0005 * noise()) * (m == step_at ? 1.05 : 1.0);
    double hw = m < 16384 ? 0.001 : 0.02;
    return (mpilab_adaptive_point_t){m, v, v * (1 - hw), v * (1 + hw)};
}

/* The runner's loop on tcp_like, start 1..1M x8, the default budget (1..1M x4: 11 sizes),
 * every bending size and its neighbours repeated first; *small: sizes added for bends at
 * 4 KiB or below (the step and the bends it makes in its neighbours). */
static size_t adapt_tcp(size_t step_at, size_t budget, mpilab_adaptive_point_t *pts, size_t *small)
{
    mpilab_adaptive_point_t rep[64];
    size_t s[64], n = mpilab_adaptive_start(1, 1 << 20, 8, s, 64);
    for (size_t k = 0; k < n; k++) {
        pts[k] = tcp_point(s[k], step_at);
        rep[k] = (mpilab_adaptive_point_t){s[k], NAN, NAN, NAN};
    }
    *small = 0;
    for (int round = 0; round < 64; round++) {
        for (size_t k = 1; k + 1 < n; k++)
            for (size_t j = k - 1; mpilab_adaptive_bend(&pts[k - 1]) != 0.0 && j <= k + 1; j++)
                if (isnan(rep[j].value))
                    rep[j] = tcp_point(pts[j].bytes, step_at);
        size_t out[64];
        mpilab_adaptive_why_t why[64];
        size_t np = mpilab_adaptive_next_repeated(pts, rep, n, budget, out, why, 64);
        if (np == 0)
            break;
        for (size_t q = 0; q < np; q++) {
            CHECK(why[q].size > 0 && why[q].bytes == out[q]);
            *small += why[q].bent_at <= 4096;
            size_t k = n++;
            while (k > 0 && pts[k - 1].bytes > out[q]) {
                pts[k] = pts[k - 1];
                rep[k] = rep[k - 1];
                k--;
            }
            pts[k] = tcp_point(out[q], step_at);
            rep[k] = (mpilab_adaptive_point_t){out[q], NAN, NAN, NAN};
        }
    }
    return n;
}

/* A step that persists across the repeat (so the repeat cannot tell it from a real bend) at
 * 512 B, precisely measured, far beyond its tight intervals; the rendezvous switch at 64 KiB,
 * loosely measured but a large part of the curve there. The budget leaves room for one
 * bend's insertions and one more size: the switch gets them, the step none. */
MPILAB_TEST(a_persistent_small_step_earns_no_size_the_switch_does)
{
    mpilab_adaptive_point_t pts[64];
    size_t s[64];
    size_t budget = mpilab_adaptive_start(1, 1 << 20, 4, s, 64);
    CHECK(budget == 11);
    for (int trial = 0; trial < 20; trial++) {
        size_t small;
        size_t n = adapt_tcp(512, budget, pts, &small);
        CHECKF(small == 0, "trial %d: %zu sizes added for bends at 4 KiB or below", trial, small);
        CHECK(n <= budget);
        double r = bracket_ratio(pts, n, 65536);
        CHECKF(r <= 4.0, "trial %d: the switch at 64 KiB is bracketed by a factor %.2f", trial, r);
    }
    /* the step does bend (beyond its intervals, in the measurement and the repeat alike),
     * by more than the switch's bends exceed theirs: ranked by that, it took the sizes */
    mpilab_adaptive_point_t a[3] = {tcp_point(64, 512), tcp_point(512, 512), tcp_point(4096, 512)};
    mpilab_adaptive_point_t b[3] = {tcp_point(32768, 0), tcp_point(262144, 0), tcp_point(1 << 20, 0)};
    CHECK(fabs(mpilab_adaptive_bend(a)) > 2 * fabs(mpilab_adaptive_bend(b)));
    CHECK(mpilab_adaptive_bend_size(b) > 2 * mpilab_adaptive_bend_size(a));
    /* without the step the switch is bracketed the same way */
    size_t small;
    size_t n = adapt_tcp(0, budget, pts, &small);
    CHECK(small == 0 && bracket_ratio(pts, n, 65536) <= 4.0);
    /* bend size: relative to the line; 0 for a point that does not bend */
    mpilab_adaptive_point_t up[3] = {{1, 1, 1, 1}, {2, 1.5, 1.5, 1.5}, {3, 1, 1, 1}};
    CHECK(fabs(mpilab_adaptive_bend_size(up) - 0.5) < 1e-12);
    up[1].value = 1.0;
    CHECK(mpilab_adaptive_bend_size(up) == 0.0);
}

MPILAB_TEST_MAIN()
