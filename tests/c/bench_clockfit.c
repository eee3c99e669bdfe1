/* The clock model fit recovers an injected offset and drift from noisy samples. */
#include <gsl/gsl_randist.h>
#include <gsl/gsl_rng.h>
#include <math.h>
#include <string.h>

#include "kit.h"
#include "mpilab/clocksync.h"

/* Noisy regression fits over one second recover each offset and drift; the model maps local
 * time to reference time and back. */
MPILAB_TEST(fit_recovers_offset_and_drift)
{
    gsl_rng *r = gsl_rng_alloc(gsl_rng_mt19937);
    gsl_rng_set(r, 7);
    const double offsets[] = {0.0, 3.25, -1234.5, 1e-6};
    const double drifts[] = {0.0, 1e-5, -4e-6, 2e-7};
    for (int c = 0; c < 4; c++) {
        double ref[50], loc[50];
        for (int k = 0; k < 50; k++) {
            ref[k] = 0.02 * k + gsl_rng_uniform(r) * 1e-3; /* one second, uneven */
            loc[k] = offsets[c] + (1.0 + drifts[c]) * ref[k] + gsl_ran_gaussian(r, 1e-7);
        }
        mpilab_clock_model_t m;
        CHECK(mpilab_clock_fit(ref, loc, 50, &m) == 0);
        CHECK_NEAR(m.offset, offsets[c], 2e-7);
        CHECK_NEAR(m.drift, drifts[c], 5e-7);
        CHECK(m.residual > 0.0 && m.residual < 1e-6);
        /* the fitted model maps local back to reference time */
        mpilab_clocksync_t cs = {.method = MPILAB_SYNC_REGRESSION, .nranks = 1, .t0 = 100.0, .ranks = &m};
        double g = mpilab_clock_to_global(&cs, 0, 100.0 + offsets[c] + (1.0 + drifts[c]) * 0.5);
        CHECK_NEAR(g, 100.5, 1e-6);
        CHECK_NEAR(mpilab_clock_to_local(&cs, 0, g), 100.0 + offsets[c] + (1.0 + drifts[c]) * 0.5, 1e-9);
    }
    gsl_rng_free(r);
}

MPILAB_TEST(two_point_line_is_exact)
{
    /* Exact two-point line (the SKaMPI case): zero residual. */
    double ref2[2] = {0.0, 0.01}, loc2[2] = {5e-4, 5e-4 + 0.01 * (1 + 3e-5)};
    mpilab_clock_model_t m2;
    CHECK(mpilab_clock_fit(ref2, loc2, 2, &m2) == 0);
    CHECK_NEAR(m2.offset, 5e-4, 1e-12);
    CHECK_NEAR(m2.drift, 3e-5, 1e-9);
    CHECK_NEAR(m2.residual, 0.0, 1e-12);
}

MPILAB_TEST(keep_better_merges_per_rank)
{
    /* Per-rank merge of two attempts with different origins: a rank that takes the later
     * attempt's model maps its local times to the same global times as that attempt did. */
    mpilab_clock_model_t ma[3] = {{0}, {1e-3, 5e-5, 1e-6, 2e-6, 1e-6}, {-2e-3, -3e-5, 2e-6, 9e-6, 1e-6}};
    mpilab_clock_model_t mb[3] = {{0}, {1e-3, 5e-5, 1e-6, 4e-6, 1e-6}, {-2.1e-3, -3e-5, 3e-7, 1.5e-6, 1e-6}};
    mpilab_clocksync_t a = {.method = MPILAB_SYNC_SKAMPI, .nranks = 3, .t0 = 10.0, .ranks = ma, .max_residual = 2e-6};
    mpilab_clocksync_t b = {.method = MPILAB_SYNC_SKAMPI, .nranks = 3, .t0 = 10.7, .ranks = mb};
    double local = 25.0;
    double want = mpilab_clock_to_global(&b, 2, local);
    double keep1 = mpilab_clock_to_global(&a, 1, local);
    CHECK(mpilab_clocksync_keep_better(&a, &b) == 1); /* rank 2 only: 1.5 < 9 us; rank 1 stays */
    CHECK_NEAR(mpilab_clock_to_global(&a, 2, local), want, 1e-12);
    CHECK_NEAR(mpilab_clock_to_global(&a, 1, local), keep1, 1e-15);
    CHECK_NEAR(a.ranks[2].uncertainty, 1.5e-6, 1e-15);
    CHECK_NEAR(a.max_residual, 1e-6, 1e-15); /* recomputed from the kept models */
    CHECK(a.t0 == 10.0);
}

MPILAB_TEST(refine_drift_from_two_syncs)
{
    /* Drift from two synchronisations a second apart: rank 1's offset local - ref is
     * 1 ms + 50 ppm (ref - 10); each sync read it at its end to within its uncertainty
     * (2 us, errors +1 us and -1 us) with the drift unresolved (1000 ppm bound). The line
     * through them gives 48 ppm, stated within 4 ppm; the offset at cur's end is kept. */
    double ep = 1e-3 + 50e-6 * 0.1 + 1e-6, ec = 1e-3 + 50e-6 * 1.1 - 1e-6;
    mpilab_clock_model_t mp[2] = {{0}, {ep, 0.0, 0.0, 2e-6, 1e-3}}, mc[2] = {{0}, {ec, 0.0, 0.0, 2e-6, 1e-3}};
    mpilab_clocksync_t prev = {.nranks = 2, .t0 = 10.0, .t_end = 10.1, .ranks = mp};
    mpilab_clocksync_t cur = {.nranks = 2, .t0 = 11.0, .t_end = 11.1, .ranks = mc};
    CHECK(mpilab_clocksync_refine_drift(&cur, &prev) == 1);
    CHECK_NEAR(mc[1].drift, 48e-6, 1e-12);
    CHECK_NEAR(mc[1].drift_uncertainty, 4e-6, 1e-12);
    CHECK(fabs(mc[1].drift - 50e-6) <= mc[1].drift_uncertainty);
    CHECK_NEAR(mc[1].offset + mc[1].drift * 0.1, ec, 1e-15);
    /* a later sync at the same moment, or a bound no tighter, changes nothing */
    cur.t_end = 10.1;
    CHECK(mpilab_clocksync_refine_drift(&cur, &prev) == 0);
    /* a resync 10 ms later (line bound 400 ppm) inherits prev's resolved drift */
    mpilab_clock_model_t mn[2] = {{0}, {ec, 0.0, 0.0, 2e-6, 1e-3}};
    mpilab_clocksync_t next = {.nranks = 2, .t0 = 11.0, .t_end = 11.11, .ranks = mn};
    cur.t_end = 11.1;
    CHECK(mpilab_clocksync_refine_drift(&next, &cur) == 1);
    CHECK_NEAR(mn[1].drift, 48e-6, 1e-12);
    CHECK_NEAR(mn[1].drift_uncertainty, 4e-6, 1e-12);
}

MPILAB_TEST(degenerate_input_refused)
{
    double ref2[2] = {0.0, 0.01}, loc2[2] = {5e-4, 5e-4 + 0.01 * (1 + 3e-5)};
    mpilab_clock_model_t m2;
    /* Degenerate input is refused. */
    double same[3] = {1, 1, 1};
    CHECK(mpilab_clock_fit(same, loc2, 3, &m2) != 0);
    CHECK(mpilab_clock_fit(ref2, loc2, 1, &m2) != 0);
}

MPILAB_TEST(significant_fit_drops_unresolved_drift)
{
    /* Significance: 24 points over 5 ms, no drift, 8 us noise plus one point delayed by
     * 60 us (a descheduled probe): the plain fit invents a drift, the significant fit keeps
     * an offset-only model within a few us of the truth. */
    gsl_rng *r2 = gsl_rng_alloc(gsl_rng_mt19937);
    gsl_rng_set(r2, 7);
    double rf[24], lc[24];
    for (int k = 0; k < 24; k++) {
        rf[k] = 0.1 + 0.005 * k / 23.0;
        lc[k] = 8.3e-5 + rf[k] + gsl_ran_gaussian(r2, 8e-6);
    }
    lc[23] += 6e-5;
    mpilab_clock_model_t plain, sig;
    CHECK(mpilab_clock_fit(rf, lc, 24, &plain) == 0);
    CHECK(mpilab_clock_fit_significant(rf, lc, 24, 3.0, &sig) == 0);
    CHECK(sig.drift == 0.0);
    CHECK_NEAR(sig.offset, 8.3e-5, 6e-6);
    CHECK(fabs(plain.offset - 8.3e-5) > fabs(sig.offset - 8.3e-5));
    /* a drift the data do resolve is kept: 1e-4 over 1 s with 0.1 us noise */
    for (int k = 0; k < 24; k++) {
        rf[k] = k / 23.0;
        lc[k] = 2e-3 + (1.0 + 1e-4) * rf[k] + gsl_ran_gaussian(r2, 1e-7);
    }
    CHECK(mpilab_clock_fit_significant(rf, lc, 24, 3.0, &sig) == 0);
    CHECK_NEAR(sig.drift, 1e-4, 1e-6);
    CHECK_NEAR(sig.offset, 2e-3, 1e-6);
    gsl_rng_free(r2);
}

/* The least-squares line's worst case: two points are exact at either end; 24 evenly spaced
 * points reach about 1.65 at an end and 2.88 / span for the slope, and an adversarial run of
 * errors (+e on the later half, -e on the earlier) reaches the slope bound. */
MPILAB_TEST(fit_bounds_are_the_worst_case)
{
    double vf, sf;
    const double two[2] = {0.0, 0.005};
    CHECK(mpilab_clock_fit_bounds(two, 2, 0.005, &vf, &sf) == 0);
    CHECK_NEAR(vf, 1.0, 1e-12);
    CHECK_NEAR(sf, 2.0 / 0.005, 1e-9);
    double rf[24], lc[24];
    for (int k = 0; k < 24; k++)
        rf[k] = 0.02 * k / 23.0;
    CHECK(mpilab_clock_fit_bounds(rf, 24, 0.02, &vf, &sf) == 0);
    CHECK(vf > 1.6 && vf < 1.7);
    CHECK(sf > 2.8 / 0.02 && sf < 3.0 / 0.02); /* 2.88 / span for 24 points */
    CHECK(mpilab_clock_fit_bounds(rf, 24, 0.01, &vf, &sf) == 0 && vf < 1.0 + 1e-12);
    /* errors of +-1 us in the worst arrangement: the fitted drift is the bound exactly */
    const double e = 1e-6;
    for (int k = 0; k < 24; k++)
        lc[k] = rf[k] + (rf[k] > 0.01 ? e : -e);
    mpilab_clock_model_t m;
    CHECK(mpilab_clock_fit(rf, lc, 24, &m) == 0);
    CHECK(mpilab_clock_fit_bounds(rf, 24, 0.02, &vf, &sf) == 0);
    CHECK_NEAR(fabs(m.drift), e * sf, 1e-9);
    CHECK(e * sf > 2.0 * e / 0.02); /* beyond the 2-point bound the method used before */
    const double same[3] = {1.0, 1.0, 1.0};
    CHECK(mpilab_clock_fit_bounds(same, 3, 1.0, &vf, &sf) == -1);
    CHECK(mpilab_clock_fit_bounds(two, 1, 0.0, &vf, &sf) == -1);
}

MPILAB_TEST(sync_method_names)
{
    mpilab_sync_method_t sm;
    CHECK(mpilab_sync_method_parse("skampi", &sm) == 0 && sm == MPILAB_SYNC_SKAMPI);
    CHECK(mpilab_sync_method_parse("regression", &sm) == 0 && sm == MPILAB_SYNC_REGRESSION);
    CHECK(mpilab_sync_method_parse("hierarchical", &sm) == 0 && sm == MPILAB_SYNC_HIERARCHICAL);
    CHECK(strcmp(mpilab_sync_method_name(MPILAB_SYNC_HIERARCHICAL), "hierarchical") == 0);
    CHECK(mpilab_sync_method_parse("ntp", &sm) != 0);
    CHECK(mpilab_sync_method_parse("leaders", &sm) == 0 && sm == MPILAB_SYNC_LEADERS);
    CHECK(mpilab_sync_method_parse("auto", &sm) == 0 && sm == MPILAB_SYNC_AUTO);
    CHECK(strcmp(mpilab_sync_method_name(MPILAB_SYNC_LEADERS), "leaders") == 0);
    CHECK(strcmp(mpilab_sync_method_name(MPILAB_SYNC_EXACT), "exact") == 0);
    CHECK(mpilab_sync_method_parse("Auto", &sm) != 0 && mpilab_sync_method_parse("", &sm) != 0);
}

/* Auto's rule: the flat method below MPILAB_SYNC_AUTO_MIN_RANKS ranks, leaders from there. */
MPILAB_TEST(sync_auto_rule)
{
    CHECK(mpilab_sync_auto_choice(2) == MPILAB_SYNC_SKAMPI);
    CHECK(mpilab_sync_auto_choice(MPILAB_SYNC_AUTO_MIN_RANKS - 1) == MPILAB_SYNC_SKAMPI);
    CHECK(mpilab_sync_auto_choice(MPILAB_SYNC_AUTO_MIN_RANKS) == MPILAB_SYNC_LEADERS);
    CHECK(mpilab_sync_auto_choice(1024) == MPILAB_SYNC_LEADERS);
}

MPILAB_TEST_MAIN()
