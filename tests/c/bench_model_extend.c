/* Model sizes past the regime changes (include/mpilab/model_extend.h) on synthetic curves:
 * a shaped link whose burst allowance covers the default sizes is extended until the top
 * slope is the shaped rate; an eager-to-rendezvous jump at the default list's end is passed;
 * a straight line gets sizes up to 16 times its n_half; a window ramp whose slopes agree
 * below that is extended; a curve that never straightens stops at a limit; a
 * spike of noise at one size does not stop the extension early. */
#include <math.h>
#include <string.h>

#include "kit.h"

#include "mpilab/model_extend.h"

typedef double (*curve_fn)(double m);

/* a 2 ms WAN shaped to 100 Mbit/s (83.65 ns per payload byte) with a 48 KiB burst crossing
 * at 1 Gbit/s: round trip of an m-byte ping-pong */
static double shaped(double m)
{
    const double burst = 49152, line = 8.4e-9, rate = 83.65e-9;
    return 4e-3 + (m <= burst ? line * m : line * burst + rate * (m - burst));
}

static double eager_switch(double m) /* a jump at 64 KiB: rendezvous from there on */
{
    return (m < 65536 ? 20e-6 : 90e-6) + 0.12e-9 * m;
}

static double straight(double m)
{
    return 5e-6 + 0.3e-9 * m;
}

static double convex(double m) /* cache effects that never settle */
{
    return 1e-6 + 1e-12 * m * sqrt(m);
}

static const size_t default_list[] = {1, 4, 16, 64, 256, 1024, 4096, 16384, 65536};
#define NDEF (sizeof default_list / sizeof default_list[0])

/* The default list, then extension steps; `spike_at` (0: none) reads 1.1x slow once, with an
 * interval (+-12%) that says it is noisy.
 * Returns the final state; *n the number of points. */
static mpilab_extend_state_t extend(curve_fn f, double hw, size_t spike_at, mpilab_adaptive_point_t *pts,
                                    size_t *n, mpilab_extend_step_t *last)
{
    mpilab_extend_opts_t o;
    mpilab_extend_opts_default(&o);
    *n = 0;
    for (size_t k = 0; k < NDEF; k++) {
        double v = f((double)default_list[k]);
        pts[(*n)++] = (mpilab_adaptive_point_t){default_list[k], v, v * (1 - hw), v * (1 + hw)};
    }
    for (size_t added = 0;; added++) {
        mpilab_extend_state_t st = mpilab_extend_next(pts, *n, added, &o, last);
        if (st != MPILAB_EXTEND_MORE)
            return st;
        CHECK(last->next > pts[*n - 1].bytes && last->next <= o.max_bytes);
        int spike = last->next == spike_at;
        double v = f((double)last->next) * (spike ? 1.1 : 1.0), w = spike ? 0.12 : hw;
        pts[(*n)++] = (mpilab_adaptive_point_t){last->next, v, v * (1 - w), v * (1 + w)};
        if (added > 64) {
            FAIL("no end");
            return st;
        }
    }
}

MPILAB_TEST(shaped_link_extended_past_its_burst)
{
    mpilab_adaptive_point_t pts[80];
    mpilab_extend_step_t st;
    size_t n;
    /* the default list's own top slope is far from the shaped rate */
    double top = (shaped(65536) - shaped(16384)) / (65536 - 16384);
    CHECKF(fabs(top / 83.65e-9 - 1) > 0.3, "the default list already reaches the rate (%g)", top);
    CHECK(extend(shaped, 0.01, 0, pts, &n, &st) == MPILAB_EXTEND_LINEAR);
    CHECKF(fabs(st.slope_top / 83.65e-9 - 1) < 0.05, "top slope %g against 83.65e-9", st.slope_top);
    CHECKF(n > NDEF && n <= NDEF + 3, "%zu sizes", n);
}

MPILAB_TEST(eager_switch_at_the_end_is_passed)
{
    mpilab_adaptive_point_t pts[80];
    mpilab_extend_step_t st;
    size_t n;
    CHECK(extend(eager_switch, 0.01, 0, pts, &n, &st) == MPILAB_EXTEND_LINEAR);
    CHECKF(fabs(st.slope_top / 0.12e-9 - 1) < 0.05, "top slope %g against 0.12e-9", st.slope_top);
    CHECK(pts[n - 3].bytes >= 65536); /* all three top points past the switch */
}

static double fast_line(double m) /* n_half = 50 bytes: the default list spans it */
{
    return 50e-9 + 1e-9 * m;
}

MPILAB_TEST(straight_lines_get_what_their_latency_asks)
{
    mpilab_adaptive_point_t pts[80];
    mpilab_extend_step_t st;
    size_t n;
    CHECK(extend(fast_line, 0.01, 0, pts, &n, &st) == MPILAB_EXTEND_LINEAR);
    CHECK(n == NDEF); /* 64 KiB >= 16 x 50 bytes: nothing added */
    /* n_half = 16.7 KB: the top size must reach 16 x that, 267 KB: two sizes added */
    CHECK(extend(straight, 0.01, 0, pts, &n, &st) == MPILAB_EXTEND_LINEAR);
    CHECKF(n == NDEF + 2 && pts[n - 1].bytes == 1 << 20, "%zu sizes up to %zu", n, pts[n - 1].bytes);
    CHECKF(fabs(st.slope_top / 0.3e-9 - 1) < 0.01 && fabs(st.n_half / 16667 - 1) < 0.01, "%g %g", st.slope_top,
           st.n_half);
}

/* A ping-pong of a 2 ms WAN measured once (round trips at 4 KiB to 64 KiB): the two top
 * slopes of the default list agree within 6%, yet both are 12% short of the shaped rate (a
 * TCP window's ramp). 64 KiB is below 16 n_half (n_half = 4 ms / 147 ns = 27.5 KB), so the
 * rule asks for more. */
MPILAB_TEST(window_ramp_that_looks_straight_is_extended)
{
    mpilab_adaptive_point_t pts[NDEF];
    const double rt[NDEF] = {4.046552e-3, 4.04503e-3, 4.046482e-3, 4.0446645e-3, 4.045871e-3,
                             4.050058e-3, 4.082206e-3, 6.001501e-3, 13.231139e-3};
    for (size_t k = 0; k < NDEF; k++)
        pts[k] = (mpilab_adaptive_point_t){default_list[k], rt[k], rt[k] * 0.99, rt[k] * 1.01};
    mpilab_extend_opts_t o;
    mpilab_extend_opts_default(&o);
    mpilab_extend_step_t st;
    CHECK(mpilab_extend_next(pts, NDEF, 0, &o, &st) == MPILAB_EXTEND_MORE && st.next == 262144);
    CHECK(fabs(st.slope_top - st.slope_prev) < 0.07 * st.slope_top); /* they do agree */
    o.span = 1; /* without the span rule this curve would end here */
    CHECK(mpilab_extend_next(pts, NDEF, 0, &o, &st) == MPILAB_EXTEND_LINEAR);
}

MPILAB_TEST(a_curve_that_never_straightens_stops_at_a_limit)
{
    mpilab_adaptive_point_t pts[80];
    mpilab_extend_step_t st;
    size_t n;
    mpilab_extend_state_t s = extend(convex, 0.001, 0, pts, &n, &st);
    CHECKF(s == MPILAB_EXTEND_MAX_ADDED || s == MPILAB_EXTEND_MAX_BYTES || s == MPILAB_EXTEND_MAX_TIME,
           "state %s", mpilab_extend_state_name(s));
    CHECK(n <= NDEF + 6);
    CHECK(pts[n - 1].bytes <= (size_t)64 << 20);
}

MPILAB_TEST(time_limit_stops_a_slow_link)
{
    mpilab_adaptive_point_t pts[80];
    mpilab_extend_step_t st;
    size_t n;
    /* wide intervals: the top slope is never known to 5%, so the time limit ends it */
    mpilab_extend_state_t s = extend(shaped, 0.2, 0, pts, &n, &st);
    CHECKF(s == MPILAB_EXTEND_MAX_TIME, "state %s", mpilab_extend_state_name(s));
    CHECK(pts[n - 1].bytes <= 8 << 20); /* 16 MiB x 83.65 ns = 1.4 s > 1 s */
}

MPILAB_TEST(noise_spike_does_not_end_it_early)
{
    mpilab_adaptive_point_t pts[80];
    mpilab_extend_step_t st;
    size_t n;
    CHECK(extend(shaped, 0.01, 262144, pts, &n, &st) == MPILAB_EXTEND_LINEAR);
    CHECKF(fabs(st.slope_top / 83.65e-9 - 1) < 0.05, "top slope %g", st.slope_top);
    CHECK(pts[n - 1].bytes > 1 << 20); /* the spike's bend asked for more than the clean curve */
}

MPILAB_TEST(too_few_points_or_bad_values)
{
    mpilab_extend_opts_t o;
    mpilab_extend_opts_default(&o);
    mpilab_extend_step_t st;
    mpilab_adaptive_point_t p[3] = {{1, 1e-6, 0, 2e-6}, {2, 2e-6, 1e-6, 3e-6}, {4, NAN, NAN, NAN}};
    CHECK(mpilab_extend_next(p, 2, 0, &o, &st) == MPILAB_EXTEND_NO_DATA);
    CHECK(mpilab_extend_next(p, 3, 0, &o, &st) == MPILAB_EXTEND_NO_DATA);
    CHECK(strcmp(mpilab_extend_state_name(MPILAB_EXTEND_MAX_TIME), "max_time") == 0);
}

MPILAB_TEST_MAIN()
