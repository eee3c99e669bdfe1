/* Hockney fits: known parameters come back from noisy synthetic data (tolerance from the
 * estimator's standard deviation for the injected noise), a known breakpoint is found,
 * degenerate input is refused. */
#include <math.h>
#include <stdio.h>

#include <gsl/gsl_randist.h>
#include <gsl/gsl_rng.h>

#include "mpilab/model.h"

#include "kit.h"


#define NMAX 256

/* The cases' random numbers: one generator (seed 12345) made on the first case's first use,
 * so the whole program draws the sequence it always drew. */
static gsl_rng *shared_rng;

static gsl_rng *rng_get(void)
{
    if (!shared_rng) {
        shared_rng = gsl_rng_alloc(gsl_rng_mt19937);
        gsl_rng_set(shared_rng, 12345);
    }
    return shared_rng;
}

MPILAB_TEST(fit_noisy)
{
    gsl_rng *rng = rng_get();
    const double alpha = 7e-6, beta = 2.5e-10, sigma = 2e-6;
    double x[NMAX], y[NMAX];
    size_t n = 0;
    for (double m = 0; m <= 4e6 && n < NMAX; m += 4e6 / 99)
        x[n++] = m;
    for (int trial = 0; trial < 20; trial++) {
        for (size_t k = 0; k < n; k++)
            y[k] = alpha + beta * x[k] + gsl_ran_gaussian(rng, sigma);
        mpilab_hockney_t h;
        CHECKF(mpilab_hockney_fit(x, y, n, &h) == 0, "fit failed");
        /* standard deviations of the OLS estimators for this design and noise */
        double xbar = 0, sxx = 0;
        for (size_t k = 0; k < n; k++)
            xbar += x[k] / (double)n;
        for (size_t k = 0; k < n; k++)
            sxx += (x[k] - xbar) * (x[k] - xbar);
        double sd_b = sigma / sqrt(sxx), sd_a = sigma * sqrt(1.0 / (double)n + xbar * xbar / sxx);
        CHECKF(fabs(h.beta - beta) < 5 * sd_b, "beta %g vs %g (sd %g)", h.beta, beta, sd_b);
        CHECKF(fabs(h.alpha - alpha) < 5 * sd_a, "alpha %g vs %g (sd %g)", h.alpha, alpha, sd_a);
        /* the tolerance is meaningful: well below the parameters themselves */
        CHECKF(5 * sd_b < 0.05 * beta && 5 * sd_a < 0.5 * alpha, "test tolerance too loose");
    }
    /* exact data: exact parameters */
    double xe[] = {0, 1024, 4096}, ye[3];
    for (int k = 0; k < 3; k++)
        ye[k] = 3e-6 + 1e-9 * xe[k];
    mpilab_hockney_t h;
    CHECKF(mpilab_hockney_fit(xe, ye, 3, &h) == 0, "exact fit failed");
    CHECKF(fabs(h.alpha - 3e-6) < 1e-15 && fabs(h.beta - 1e-9) < 1e-18, "exact fit %g %g", h.alpha,
          h.beta);
    CHECKF(fabs(mpilab_hockney_time(&h, 2048) - (3e-6 + 2048e-9)) < 1e-15, "hockney_time");
}

MPILAB_TEST(degenerate)
{
    double x[] = {100, 100, 100}, y[] = {1e-6, 2e-6, 3e-6};
    mpilab_hockney_t h;
    mpilab_hockney_range_t r[4];
    CHECKF(mpilab_hockney_fit(x, y, 1, &h) == -1, "n=1 accepted");
    CHECKF(mpilab_hockney_fit(x, y, 0, &h) == -1, "n=0 accepted");
    CHECKF(mpilab_hockney_fit(x, y, 3, &h) == -1, "single size accepted");
    double xn[] = {0, NAN, 10};
    CHECKF(mpilab_hockney_fit(xn, y, 3, &h) == -1, "NaN size accepted");
    CHECKF(mpilab_hockney_fit_ranges(x, y, 3, r, 4) == 0, "ranges: single size accepted");
    CHECKF(mpilab_hockney_fit_ranges(x, y, 1, r, 4) == 0, "ranges: n=1 accepted");
    double xu[] = {0, 200, 100}; /* unsorted */
    CHECKF(mpilab_hockney_fit_ranges(xu, y, 3, r, 4) == 0, "ranges: unsorted accepted");
    double xs[] = {0, 100, 200}, yz[] = {1e-6, 0, 3e-6};
    CHECKF(mpilab_hockney_fit_ranges(xs, yz, 3, r, 4) == 0, "ranges: zero time accepted");
    CHECKF(mpilab_hockney_fit_ranges(xs, y, 3, r, 0) == 0, "ranges: max_ranges 0 accepted");
    CHECKF(isnan(mpilab_hockney_ranges_time(r, 0, 10)), "ranges_time with no ranges");
}

/* Sizes 0 and 1.5^k up to 4 MiB; times from two lines meeting near a protocol switch. */
static size_t two_piece(double *x, double *y, double brk, gsl_rng *rng, double rel_noise,
                        int pieces)
{
    size_t n = 0;
    x[n++] = 0;
    for (double m = 1; m <= 4194304 && n < NMAX; m = ceil(m * 1.5))
        x[n++] = m;
    for (size_t k = 0; k < n; k++) {
        double t = (pieces == 1 || x[k] <= brk) ? 5e-6 + 1e-9 * x[k] : 40e-6 + 0.4e-9 * x[k];
        y[k] = t * (1 + (rng ? gsl_ran_gaussian(rng, rel_noise) : 0));
    }
    return n;
}

MPILAB_TEST(ranges)
{
    gsl_rng *rng = rng_get();
    double x[NMAX], y[NMAX];
    mpilab_hockney_range_t r[6];
    const double brk = 65536;

    /* exact two-piece data: exactly two ranges, split at the break */
    size_t n = two_piece(x, y, brk, NULL, 0, 2);
    size_t nr = mpilab_hockney_fit_ranges(x, y, n, r, 6);
    CHECKF(nr == 2, "exact two-piece: %zu ranges", nr);
    if (nr == 2) {
        CHECKF(r[0].from == 0 && r[0].to <= brk && r[1].from > brk && r[1].to == x[n - 1],
              "split at %g..%g", r[0].to, r[1].from);
        /* the last size <= brk ends range 0 */
        size_t last = 0;
        for (size_t k = 0; k < n; k++)
            if (x[k] <= brk)
                last = k;
        CHECKF(r[0].to == x[last] && r[1].from == x[last + 1], "break at %g, want %g", r[0].to,
              x[last]);
        CHECKF(fabs(r[0].h.alpha - 5e-6) < 1e-12 && fabs(r[1].h.beta - 0.4e-9) < 1e-15,
              "exact params %g %g", r[0].h.alpha, r[1].h.beta);
        /* ranges_time picks the right piece, and the nearest one outside */
        CHECKF(fabs(mpilab_hockney_ranges_time(r, nr, 1000) - (5e-6 + 1e-6)) < 1e-12, "piece 1");
        CHECKF(fabs(mpilab_hockney_ranges_time(r, nr, 1e7) - (40e-6 + 4e-3)) < 1e-9, "beyond");
    }

    /* noisy (1% relative) two-piece data: break found within one size step, params close */
    int found = 0;
    for (int trial = 0; trial < 10; trial++) {
        n = two_piece(x, y, brk, rng, 0.01, 2);
        nr = mpilab_hockney_fit_ranges(x, y, n, r, 6);
        CHECKF(nr == 2, "noisy two-piece: %zu ranges", nr);
        if (nr != 2)
            continue;
        CHECKF(r[0].to >= brk / 2.25 && r[0].to <= brk * 2.25, "noisy break at %g", r[0].to); /* within 2 size steps */
        CHECKF(fabs(r[1].h.beta - 0.4e-9) < 0.05 * 0.4e-9, "beta2 %g", r[1].h.beta);
        CHECKF(fabs(r[0].h.alpha - 5e-6) < 0.05 * 5e-6, "alpha1 %g", r[0].h.alpha);
        found++;
    }
    CHECKF(found == 10, "two ranges in %d/10 trials", found);

    /* one line with noise: one range */
    for (int trial = 0; trial < 10; trial++) {
        n = two_piece(x, y, brk, rng, 0.01, 1);
        nr = mpilab_hockney_fit_ranges(x, y, n, r, 6);
        CHECKF(nr == 1, "one-piece data gave %zu ranges", nr);
    }
    /* max_ranges = 1 forces one range on two-piece data */
    n = two_piece(x, y, brk, NULL, 0, 2);
    CHECKF(mpilab_hockney_fit_ranges(x, y, n, r, 1) == 1, "max_ranges=1 not honoured");
    CHECKF(r[0].from == 0 && r[0].to == x[n - 1], "single range covers everything");
}

MPILAB_TEST_MAIN()
