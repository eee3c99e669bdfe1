/* Statistics and the stopping rule against hand-computed values. */
#include <gsl/gsl_rng.h>
#include <gsl/gsl_randist.h>
#include <stdlib.h>

#include "kit.h"
#include "mpilab/stats.h"

/* trials sets of n lognormal samples (true median 1): how many intervals hold 1, and the
 * mean ratio of the interval's width to the order-statistic interval's (*widen). */
static int lognormal_cover(gsl_rng *r, size_t n, int trials, double *widen)
{
    int cover = 0;
    double z[64], ratio = 0.0;
    mpilab_stats_t st;
    for (int t = 0; t < trials; t++) {
        for (size_t k = 0; k < n; k++)
            z[k] = exp(gsl_ran_gaussian(r, 0.8));
        mpilab_stats_compute(z, NULL, n, 0.95, 0.025, &st);
        cover += st.med_lo <= 1.0 && 1.0 <= st.med_hi;
        ratio += (st.med_hi - st.med_lo) / (st.os_hi - st.os_lo);
    }
    *widen = ratio / trials;
    return cover;
}

/* The cases' generator: made on the first draw with GSL's default seed (the selection case
 * draws first, then the wild-data case reseeds it with 42), so a whole run draws the
 * sequence the tests always drew; a case run alone draws its own, as deterministically. */
static gsl_rng *shared_rng;

static gsl_rng *rng_get(void)
{
    if (!shared_rng)
        shared_rng = gsl_rng_alloc(gsl_rng_mt19937);
    return shared_rng;
}

/* The stopping rule alone (min_time and the time budget off), at most 100 repetitions. */
static mpilab_precision_t rule_only(void)
{
    mpilab_precision_t p = MPILAB_PRECISION_DEFAULT;
    p.min_time = 0.0;
    p.max_time = 0.0;
    p.max_reps = 100;
    return p;
}

static int cmp_d(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* The summary finds its order statistics by selection, not by sorting: on random data with
 * and without ties (a coarse timer), every n from 1 to 300 and a few large ones, median,
 * minimum, maximum and the order-statistic interval equal those read off the sorted copy. */
static int select_matches_sort(gsl_rng *r)
{
    static double x[20000], y[20000];
    size_t ns[] = {1000, 4097, 20000};
    int bad = 0;
    for (int ties = 0; ties < 2; ties++)
        for (size_t t = 0; t < 300 + 3; t++) {
            size_t n = t < 300 ? t + 1 : ns[t - 300];
            for (size_t k = 0; k < n; k++) {
                double v = 1e-6 * (1.0 + gsl_ran_exponential(r, 0.3));
                x[k] = ties ? 1e-8 * floor(v / 1e-8) : v;
                y[k] = x[k];
            }
            qsort(y, n, sizeof *y, cmp_d);
            mpilab_stats_t st;
            mpilab_stats_compute(x, NULL, n, 0.95, 0.025, &st);
            double med = n % 2 ? y[n / 2] : 0.5 * (y[n / 2 - 1] + y[n / 2]), lo, hi;
            bad += st.median != med || st.min != y[0] || st.max != y[n - 1];
            if (mpilab_median_ci(y, n, 0.95, &lo, &hi) == 0)
                bad += !(st.os_lo <= lo && st.os_hi >= hi) || /* widened by at most half a tick */
                       lo - st.os_lo > 0.5e-8 + 1e-15 || st.os_hi - hi > 0.5e-8 + 1e-15;
            else
                bad += !isnan(st.os_lo);
        }
    return bad;
}

MPILAB_TEST(known_data)
{
    /* Known data: 1..5: mean 3, sample sd sqrt(2.5), t(0.975,4) = 2.776445105 */
    double x[] = {5, 1, 4, 2, 3};
    mpilab_stats_t st;
    mpilab_stats_compute(x, NULL, 5, 0.95, 0.025, &st);
    CHECK_NEAR(st.mean, 3.0, 1e-12);
    CHECK_NEAR(st.stdev, sqrt(2.5), 1e-12);
    CHECK_NEAR(st.median, 3.0, 1e-12);
    CHECK_NEAR(st.min, 1.0, 0);
    CHECK_NEAR(st.max, 5.0, 0);
    CHECK_NEAR(st.ci_half, 2.776445105 * sqrt(2.5) / sqrt(5.0), 1e-8);
    CHECK_NEAR(st.rel_err, st.ci_half / 3.0, 1e-12);
    CHECK(st.reps == 5 && st.invalid == 0 && !st.converged);
    /* n = 5 has no 95% order-statistic interval of the median (1 - 2/32 < 0.95) */
    CHECK(isnan(st.med_lo) && isnan(st.med_hi) && isnan(st.med_rel_err));
    mpilab_stats_compute(x, NULL, 5, 0.90, 0.025, &st);
    CHECK_NEAR(st.med_lo, 1.0, 0);
    CHECK_NEAR(st.med_hi, 5.0, 0);
    CHECK_NEAR(st.med_rel_err, 2.0 / 3.0, 1e-12);
}

MPILAB_TEST(median_order_statistic_interval)
{
    /* Order-statistic interval of the median: n = 20 at 95% is [x_(6), x_(15)] (coverage
     * 1 - 2 P(B <= 5) = 0.9586; k = 7 would give 0.8846), n = 6 is [x_(1), x_(6)]. */
    double srt[20], lo, hi;
    for (int k = 0; k < 20; k++)
        srt[k] = k + 1;
    CHECK(mpilab_median_ci(srt, 20, 0.95, &lo, &hi) == 0);
    CHECK_NEAR(lo, 6.0, 0);
    CHECK_NEAR(hi, 15.0, 0);
    CHECK(mpilab_median_ci(srt, 6, 0.95, &lo, &hi) == 0);
    CHECK_NEAR(lo, 1.0, 0);
    CHECK_NEAR(hi, 6.0, 0);
    CHECK(mpilab_median_ci(srt, 5, 0.95, &lo, &hi) != 0 && isnan(lo) && isnan(hi));
    /* the fewest samples with that interval: the simulated runs' budget floor */
    CHECK(mpilab_median_ci_min_n(0.95) == 6);
    CHECK(mpilab_median_ci_min_n(0.99) == 8 && mpilab_median_ci_min_n(1.0) == 0);
}

MPILAB_TEST(invalid_samples_excluded)
{
    mpilab_stats_t st;
    /* Invalid samples are excluded; even count median. */
    double y[] = {1, 100, 2, 3, 4};
    unsigned char v[] = {1, 0, 1, 1, 1};
    mpilab_stats_compute(y, v, 5, 0.99, 0.5, &st);
    CHECK(st.reps == 5 && st.invalid == 1);
    CHECK_NEAR(st.mean, 2.5, 1e-12);
    CHECK_NEAR(st.median, 2.5, 1e-12);
    CHECK_NEAR(st.max, 4.0, 0);
    /* t(0.995, 3) = 5.840909309 */
    CHECK_NEAR(mpilab_t_quantile(0.99, 3), 5.840909309, 1e-8);
    CHECK_NEAR(mpilab_t_quantile(0.95, 1), 12.70620474, 1e-7);
}

MPILAB_TEST(one_sample_has_no_interval)
{
    double x[] = {5, 1, 4, 2, 3};
    mpilab_stats_t st;
    /* One sample: no spread, no CI. */
    mpilab_stats_compute(x, NULL, 1, 0.95, 0.025, &st);
    CHECK(isnan(st.ci_half) && isnan(st.stdev) && st.mean == 5.0 && !st.converged);
}

MPILAB_TEST(constant_data_stops_at_min_reps)
{
    mpilab_stats_t st;
    /* Stopping rule: constant data stops exactly at min_reps. */
    mpilab_precision_t p = rule_only();
    double s[1000];
    size_t n = 0;
    while (1) {
        s[n++] = 1e-6;
        if (mpilab_stats_should_stop(s, NULL, n, &p))
            break;
    }
    CHECK(n == 6); /* min_reps 5, but the median's 95% interval needs 6 samples */
    mpilab_stats_compute(s, NULL, n, p.cl, p.eps, &st);
    CHECK(st.converged && st.med_rel_err == 0.0);
}

MPILAB_TEST(selection_matches_sorting)
{
    int sel_bad = select_matches_sort(rng_get());
    CHECKF(sel_bad == 0, "selection against sorting: %d mismatches", sel_bad);
}

MPILAB_TEST(wild_data_runs_to_max_reps)
{
    mpilab_precision_t p = rule_only();
    double s[1000];
    size_t n;
    gsl_rng *r = rng_get();
    /* Wild data (exponential with huge spread) runs to max_reps. */
    gsl_rng_set(r, 42);
    n = 0;
    while (1) {
        s[n] = (n % 2 ? 1e-3 : 1e-9) * (1.0 + gsl_rng_uniform(r));
        n++;
        if (mpilab_stats_should_stop(s, NULL, n, &p))
            break;
    }
    CHECK(n == p.max_reps);
}

MPILAB_TEST(noisy_data_stops_when_the_rule_holds)
{
    mpilab_precision_t p = rule_only();
    double s[1000];
    size_t n;
    mpilab_stats_t st;
    gsl_rng *r = rng_get();
    /* Moderately noisy data: stops when the rule first holds, and not before. */
    p.max_reps = 1000;
    n = 0;
    while (1) {
        s[n++] = 1.0 + gsl_ran_gaussian(r, 0.1);
        if (mpilab_stats_should_stop(s, NULL, n, &p))
            break;
    }
    mpilab_stats_compute(s, NULL, n, p.cl, p.eps, &st);
    CHECK(n > p.min_reps && n < p.max_reps);
    CHECK(st.converged && st.med_rel_err <= p.eps);
    CHECK(st.med_lo <= st.median && st.median <= st.med_hi);
    /* not before: at the checkpoint before n the interval was still too wide */
    size_t prev = n - 1;
    while (prev > 0 && !mpilab_stats_checkpoint(prev))
        prev--;
    mpilab_stats_compute(s, NULL, prev, p.cl, p.eps, &st);
    CHECK(!st.converged && !(st.med_rel_err <= p.eps));
}

MPILAB_TEST(outlier_does_not_hold_the_median_off)
{
    mpilab_precision_t p = rule_only();
    p.max_reps = 1000;
    double s[1000];
    size_t n;
    mpilab_stats_t st;
    gsl_rng *r = rng_get();
    /* A 1000x outlier does not stop the median's rule from converging (it would hold the
     * mean's rule off for ever): the 3rd and every 20th after it 1000x the rest. */
    n = 0;
    while (1) {
        s[n] = (n % 20 == 2 ? 1000.0 : 1.0) * (1.0 + gsl_ran_gaussian(r, 0.02));
        n++;
        if (mpilab_stats_should_stop(s, NULL, n, &p))
            break;
    }
    mpilab_stats_compute(s, NULL, n, p.cl, p.eps, &st);
    CHECKF(st.converged && n < 100, "outlier run: n %zu converged %d", n, st.converged);
    CHECK(!(st.ci_half <= p.eps * st.mean)); /* the mean's interval is useless here */
}

MPILAB_TEST(median_interval_coverage)
{
    gsl_rng *r = rng_get();
    /* Coverage: 2000 samples of 25 from a skewed (lognormal) distribution with known
     * median 1: the 95% interval holds the true median in >= 94% of them (the discrete
     * interval's nominal coverage at n = 25 is 95.7%). */
    double widen = 0.0;
    int cover = lognormal_cover(r, 25, 2000, &widen);
    CHECKF(cover >= 1880, "median CI covered the true median %d of 2000 times", cover);
}

MPILAB_TEST(invalid_samples_do_not_count)
{
    mpilab_precision_t p = rule_only();
    double s[10];
    /* Invalid samples do not count towards min_reps. */
    unsigned char vv[10] = {1, 0, 1, 0, 1, 0, 1, 1, 1, 1};
    for (int k = 0; k < 10; k++)
        s[k] = 2.0;
    CHECK(!mpilab_stats_should_stop(s, vv, 8, &p)); /* 5 valid: no 95% median interval */
    CHECK(mpilab_stats_should_stop(s, vv, 9, &p));
}

MPILAB_TEST(time_budget_ends_unconverged)
{
    mpilab_stats_t st;
    /* The time budget ends a measurement that does not converge: alternating 1 ms and 1 us
     * samples (bimodal) with a 50 ms budget stop at the first checkpoint past 50 ms of samples,
     * unconverged, long before max_reps; without a budget they run to max_reps. */
    mpilab_precision_t bp = MPILAB_PRECISION_DEFAULT;
    bp.max_reps = 1000;
    bp.max_time = 0.05;
    double *bm = calloc(1000, sizeof *bm);
    size_t bn = 0;
    for (;;) {
        bm[bn] = bn % 2 ? 1e-3 : 1e-6;
        bn++;
        if (mpilab_stats_should_stop(bm, NULL, bn, &bp))
            break;
    }
    mpilab_stats_compute(bm, NULL, bn, bp.cl, bp.eps, &st);
    CHECKF(bn >= 99 && bn < 140 && !st.converged, "budget: stopped at %zu converged %d", bn, st.converged);
    bp.max_time = 0.0;
    for (bn = 0;;) {
        bm[bn] = bn % 2 ? 1e-3 : 1e-6;
        bn++;
        if (mpilab_stats_should_stop(bm, NULL, bn, &bp))
            break;
    }
    CHECK(bn == bp.max_reps);
    free(bm);
}

MPILAB_TEST(checkpoints_thin_out)
{
    /* Checkpoints: every repetition up to MPILAB_CHECK_EVERY_N, then sparser (a power of two
     * step), at most 2 * MPILAB_CHECK_EVERY_N judgements per doubling of n. */
    size_t judged = 0;
    for (size_t k = 1; k <= 1u << 20; k++)
        judged += (size_t)mpilab_stats_checkpoint(k);
    CHECKF(judged < 4 * MPILAB_CHECK_EVERY_N + 2 * MPILAB_CHECK_EVERY_N * 17 && mpilab_stats_checkpoint(1u << 20),
           "checkpoints: %zu judgements up to 2^20", judged);
}

MPILAB_TEST(timer_resolution)
{
    mpilab_stats_t st;
    /* Timer resolution: 100 samples on a 10 ns grid, 80 of them tied at the median, give an
     * interval at least one tick wide (not a zero-width "converged" one at any eps). */
    double tk[100];
    for (int k = 0; k < 100; k++)
        tk[k] = k < 10 ? 250e-9 : k < 90 ? 260e-9 : 270e-9;
    mpilab_stats_compute(tk, NULL, 100, 0.95, 1e-3, &st);
    CHECKF(st.med_hi - st.med_lo >= 10e-9 * 0.999 && !st.converged, "tick: [%g, %g] converged %d", st.med_lo,
           st.med_hi, st.converged);
    mpilab_stats_compute(tk, NULL, 100, 0.95, 0.025, &st);
    CHECK(st.converged && st.med_lo < st.median && st.median < st.med_hi);
    /* the same with the median's tick in three float roundings (differences of clock
     * readings), the lowest and highest ones outside the interval's ranks: the rounding
     * variants are one value, the step is still the 10 ns tick */
    for (int k = 10; k < 90; k++)
        tk[k] = k < 30 ? nextafter(260e-9, 0.0) : k < 70 ? 260e-9 : nextafter(260e-9, 1.0);
    mpilab_stats_compute(tk, NULL, 100, 0.95, 1e-3, &st);
    CHECKF(st.med_hi - st.med_lo >= 10e-9 * 0.999 && !st.converged, "tick with rounding twins: [%g, %g] converged %d",
           st.med_lo, st.med_hi, st.converged);
}

MPILAB_TEST(fixed_count)
{
    double y[] = {1, 100, 2, 3, 4};
    /* Fixed count: min == max stops at that count whatever the data. */
    mpilab_precision_t f = {3, 3, 0.95, 0.025, 0.0, 0.0, 1};
    CHECK(!mpilab_stats_should_stop(y, NULL, 2, &f));
    CHECK(mpilab_stats_should_stop(y, NULL, 3, &f));
}

MPILAB_TEST(root_correction)
{
    mpilab_stats_t st;
    /* Root correction: the median of the interleaved confirmation samples (one of them
     * preempted to 414 us) is subtracted; a corrected time <= 0 is invalid, not averaged. */
    double raw[] = {20e-6, 25e-6, 9e-6, 30e-6, 12e-6};
    double conf[] = {10e-6, 9e-6, 414e-6, 11e-6, 10e-6};
    unsigned char ok[] = {1, 1, 1, 1, 0};
    double corr[5], cu;
    size_t neg = mpilab_root_correct(raw, 5, conf, 5, corr, ok, &cu);
    CHECK_NEAR(cu, 10e-6, 1e-15);
    CHECK_NEAR(corr[0], 10e-6, 1e-15);
    CHECK(neg == 1 && ok[0] && ok[1] && !ok[2] && ok[3] && !ok[4]);
    CHECK_NEAR(corr[2], -1e-6, 1e-15);
    mpilab_stats_compute(corr, ok, 5, 0.95, 0.025, &st);
    CHECK(st.invalid == 2 && st.min > 0);
    neg = mpilab_root_correct(raw, 5, conf, 0, corr, ok, &cu);
    CHECK(isnan(cu) && corr[0] == raw[0]);
}

MPILAB_TEST(precision_checks)
{
    mpilab_precision_t p = rule_only();
    /* Precision checks. */
    char err[128];
    mpilab_precision_t bad = {5, 4, 0.95, 0.025, 0.0, 0.0, 1};
    CHECK(mpilab_precision_check(&bad, err, sizeof err) != 0);
    bad = (mpilab_precision_t){5, 10, 1.0, 0.025, 0.0, 0.0, 1};
    CHECK(mpilab_precision_check(&bad, err, sizeof err) != 0);
    bad = (mpilab_precision_t){5, 10, 0.9, 0.0, 0.0, 0.0, 1};
    CHECK(mpilab_precision_check(&bad, err, sizeof err) != 0);
    bad = (mpilab_precision_t){5, 10, 0.9, 0.025, -1.0, 0.0, 1};
    CHECK(mpilab_precision_check(&bad, err, sizeof err) != 0);
    CHECK(mpilab_precision_check(&p, err, sizeof err) == 0);
}

MPILAB_TEST(min_time)
{
    double s[20];
    size_t n;
    /* Minimum measuring time (default 2 ms): constant 0.3 ms samples stop at 7 samples (their
     * sum first reaching 2 ms: 2.1 ms), not at 6 (1.8 ms), where the interval alone would
     * allow it; max_reps still wins over min_time (6 samples, 1.8 ms). */
    mpilab_precision_t tp = MPILAB_PRECISION_DEFAULT;
    CHECK_NEAR(tp.min_time, 0.002, 0);
    for (n = 0; n < 20; n++)
        s[n] = 0.3e-3;
    for (n = 1; !mpilab_stats_should_stop(s, NULL, n, &tp); n++)
        ;
    CHECKF(n == 7, "min_time: stopped at %zu", n);
    tp.min_time = 0.0; /* the same samples with no minimum time: the interval's 6 */
    for (n = 1; !mpilab_stats_should_stop(s, NULL, n, &tp); n++)
        ;
    CHECKF(n == 6, "no min_time: stopped at %zu", n);
    tp.min_time = 0.002;
    tp.max_reps = 6;
    CHECK(mpilab_stats_should_stop(s, NULL, 6, &tp) && !mpilab_stats_should_stop(s, NULL, 5, &tp));
}

MPILAB_TEST(budget_floor)
{
    double s[20];
    size_t n;
    /* The time budget (max_time) ends a measurement of constant 50 ms samples at its second
     * sample (0.1 s spent of a 0.08 s share); with budget_floor 6 not before the sixth valid
     * one, where it ends at once (the interval alone would too: min_reps 5); invalid samples
     * do not count towards the floor; max_reps still ends it first. */
    mpilab_precision_t p = MPILAB_PRECISION_DEFAULT;
    p.max_time = 0.08;
    p.min_reps = 50;
    p.max_reps = 20;
    for (n = 0; n < 20; n++)
        s[n] = 0.05;
    for (n = 1; !mpilab_stats_should_stop(s, NULL, n, &p); n++)
        ;
    CHECKF(n == 2, "no floor: stopped at %zu", n);
    p.budget_floor = 6;
    for (n = 1; !mpilab_stats_should_stop(s, NULL, n, &p); n++)
        ;
    CHECKF(n == 6, "floor 6: stopped at %zu", n);
    unsigned char v[20];
    for (n = 0; n < 20; n++)
        v[n] = n != 1 && n != 3;
    for (n = 1; !mpilab_stats_should_stop(s, v, n, &p); n++)
        ;
    CHECKF(n == 8, "floor 6, two invalid: stopped at %zu", n);
    p.max_reps = 4;
    for (n = 1; !mpilab_stats_should_stop(s, NULL, n, &p); n++)
        ;
    CHECKF(n == 4, "floor 6, max_reps 4: stopped at %zu", n);
}

MPILAB_TEST(blocks_widen_on_a_level_shift)
{
    double s[50], widen = 0.0;
    size_t n;
    mpilab_stats_t st;
    gsl_rng *r = rng_get();
    /* Blocks: 50 samples, the first half at level 1.0 and the second at 1.2 (a level shift
     * during the run), each with 1% noise. The order-statistic interval alone is narrow
     * around the middle; the block medians disagree and widen the interval, which then
     * reaches both levels' side of the median and the rule does not hold at 2.5%. */
    for (n = 0; n < 50; n++)
        s[n] = (n < 25 ? 1.0 : 1.2) * (1.0 + 0.01 * gsl_ran_gaussian(r, 1.0));
    mpilab_stats_compute(s, NULL, 50, 0.95, 0.025, &st);
    CHECK(!isnan(st.blk_half) && st.blk_half > 0.05);
    CHECK(st.med_lo <= st.os_lo && st.med_hi >= st.os_hi);
    CHECK(st.med_hi - st.med_lo > st.os_hi - st.os_lo);
    CHECK(st.med_lo >= st.min && !st.converged);
    /* one level with the same noise: the blocks agree, the interval converges */
    for (n = 0; n < 50; n++)
        s[n] = 1.1 * (1.0 + 0.01 * gsl_ran_gaussian(r, 1.0));
    mpilab_stats_compute(s, NULL, 50, 0.95, 0.025, &st);
    CHECK(!isnan(st.blk_half) && st.blk_half < 0.02 && st.converged);
    /* fewer than MPILAB_BLOCKS_MIN_N samples: no block term, the order-statistic interval */
    mpilab_stats_compute(s, NULL, MPILAB_BLOCKS_MIN_N - 1, 0.95, 0.025, &st);
    CHECK(isnan(st.blk_half) && st.med_lo == st.os_lo && st.med_hi == st.os_hi);
    /* coverage of the widened interval for independent samples stays >= 94% (the blocks
     * widen, never narrow) */
    int cover2 = lognormal_cover(r, 40, 1000, &widen);
    CHECKF(cover2 >= 940, "widened interval covered the true median %d of 1000 times", cover2);
    /* ... and costs little width there: on average at most 1.5x the order-statistic one */
    CHECKF(widen >= 1.0 && widen <= 1.5, "blocks widened independent samples' interval %.2fx", widen);
}

MPILAB_TEST_MAIN()
