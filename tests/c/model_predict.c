/* Predictions of linear / binomial scatter and gather against values worked out by hand
 * from the tree drawn for each (p, root) case. */
#include <math.h>
#include <stdio.h>

#include "mpilab/model.h"

#include "kit.h"


#define PMAX 8
static mpilab_hockney_t pairs[PMAX * PMAX];
static size_t P;

/* Symmetric, uneven pair parameters so that the per-stage maximum matters. */
static void setup(size_t p)
{
    P = p;
    for (size_t i = 0; i < p; i++)
        for (size_t j = 0; j < p; j++) {
            pairs[i * p + j].alpha = 1e-6 * (double)(1 + (i + j) % 5);
            pairs[i * p + j].beta = 1e-9 * (double)(1 + (i * j) % 3);
        }
}

static double T(size_t i, size_t j, double m) { return pairs[i * P + j].alpha + pairs[i * P + j].beta * m; }

static double max2(double a, double b) { return a > b ? a : b; }
static double max4(double a, double b, double c, double d) { return max2(max2(a, b), max2(c, d)); }

static void expect(const char *what, size_t p, size_t root, double m, double lin, double bin)
{
    double sl = mpilab_predict_scatter_linear(pairs, p, root, m);
    double gl = mpilab_predict_gather_linear(pairs, p, root, m);
    double sb = mpilab_predict_scatter_binomial(pairs, p, root, m);
    double gb = mpilab_predict_gather_binomial(pairs, p, root, m);
    double tol = 1e-15 + 1e-12 * fabs(lin);
    CHECKF(fabs(sl - lin) < tol && fabs(gl - lin) < tol, "%s linear: %g %g want %g", what, sl, gl, lin);
    tol = 1e-15 + 1e-12 * fabs(bin);
    CHECKF(fabs(sb - bin) < tol && fabs(gb - bin) < tol, "%s binomial: %g %g want %g", what, sb, gb, bin);
}

/* Piecewise pair models: a transfer is charged with the range of its own size. Four ranks,
 * every pair: alpha 1 us, beta 1 ns/B up to 4096 B; alpha 10 us, beta 0.5 ns/B above. */
static void test_ranges(void)
{
    static const mpilab_hockney_range_t rg[2] = {{0, 4096, {1e-6, 1e-9}}, {4097, 1e9, {1e-5, 5e-10}}};
    mpilab_pair_model_t pm[16];
    for (size_t k = 0; k < 16; k++) {
        pm[k].h = (mpilab_hockney_t){123.0, 0.0}; /* must be ignored: ranges take precedence */
        pm[k].ranges = rg;
        pm[k].nranges = 2;
    }
    const double small = 1e-6 + 1e-9 * 3000, big = 1e-5 + 5e-10 * 6000; /* 3000 B, 6000 B */
    double tol = 1e-15;
    /* linear, 3000 B per rank: three small transfers */
    CHECKF(fabs(mpilab_predict_scatter_linear_ranges(pm, 4, 0, 3000) - 3 * small) < tol, "linear ranges");
    CHECKF(fabs(mpilab_predict_gather_linear_ranges(pm, 4, 1, 3000) - 3 * small) < tol, "linear ranges");
    /* binomial, 3000 B: stage 1 moves 2 blocks (6000 B, the large range), stage 2 one block */
    CHECKF(fabs(mpilab_predict_scatter_binomial_ranges(pm, 4, 0, 3000) - (big + small)) < tol,
           "binomial ranges: %g want %g", mpilab_predict_scatter_binomial_ranges(pm, 4, 0, 3000), big + small);
    CHECKF(fabs(mpilab_predict_gather_binomial_ranges(pm, 4, 2, 3000) - (big + small)) < tol, "binomial ranges");
    /* without ranges the single fit is used, as by the plain functions */
    mpilab_hockney_t single[16];
    for (size_t k = 0; k < 16; k++) {
        pm[k].h = (mpilab_hockney_t){2e-6, 1e-9 * (double)(k + 1)};
        pm[k].nranges = 0;
        single[k] = pm[k].h;
    }
    for (size_t r = 0; r < 4; r++) {
        CHECKF(mpilab_predict_scatter_binomial_ranges(pm, 4, r, 777) ==
                   mpilab_predict_scatter_binomial(single, 4, r, 777), "single fit, root %zu", r);
        CHECKF(mpilab_predict_gather_linear_ranges(pm, 4, r, 777) == mpilab_predict_gather_linear(single, 4, r, 777),
               "single fit, root %zu", r);
    }
    CHECKF(isnan(mpilab_predict_scatter_linear_ranges(NULL, 4, 0, 10)), "NULL pairs");
}

MPILAB_TEST(linear_and_binomial_trees_by_hand)
{
    const double ms[] = {0, 1000, 1 << 20};
    for (size_t k = 0; k < 3; k++) {
        double m = ms[k];
        setup(1);
        expect("p=1", 1, 0, m, 0, 0);

        setup(2);
        expect("p=2 r=0", 2, 0, m, T(0, 1, m), T(0, 1, m));
        expect("p=2 r=1", 2, 1, m, T(1, 0, m), T(1, 0, m));

        setup(3);
        /* r=0: stages mask 2 (0->2), mask 1 (0->1) */
        expect("p=3 r=0", 3, 0, m, T(0, 1, m) + T(0, 2, m), T(0, 2, m) + T(0, 1, m));
        /* r=1: relative 0,1,2 = actual 1,2,0: mask 2: 1->0, mask 1: 1->2 */
        expect("p=3 r=1", 3, 1, m, T(1, 0, m) + T(1, 2, m), T(1, 0, m) + T(1, 2, m));

        setup(4);
        /* r=0: mask 2: 0->2 with 2 blocks; mask 1: 0->1 and 2->3 in parallel */
        expect("p=4 r=0", 4, 0, m, T(0, 1, m) + T(0, 2, m) + T(0, 3, m),
               T(0, 2, 2 * m) + max2(T(0, 1, m), T(2, 3, m)));
        /* r=3: actual 3,0,1,2: mask 2: 3->1 (2 blocks); mask 1: 3->0, 1->2 */
        expect("p=4 r=3", 4, 3, m, T(3, 0, m) + T(3, 1, m) + T(3, 2, m),
               T(3, 1, 2 * m) + max2(T(3, 0, m), T(1, 2, m)));

        setup(5);
        /* r=2: actual 2,3,4,0,1: mask 4: 2->1 (1 block); mask 2: 2->4 (2 blocks);
         * mask 1: 2->3, 4->0 */
        expect("p=5 r=2", 5, 2, m, T(2, 0, m) + T(2, 1, m) + T(2, 3, m) + T(2, 4, m),
               T(2, 1, m) + T(2, 4, 2 * m) + max2(T(2, 3, m), T(4, 0, m)));
        /* r=0: mask 4: 0->4 (1); mask 2: 0->2 (2); mask 1: 0->1, 2->3 */
        expect("p=5 r=0", 5, 0, m, T(0, 1, m) + T(0, 2, m) + T(0, 3, m) + T(0, 4, m),
               T(0, 4, m) + T(0, 2, 2 * m) + max2(T(0, 1, m), T(2, 3, m)));

        setup(8);
        double lin0 = 0, lin5 = 0;
        for (size_t j = 1; j < 8; j++)
            lin0 += T(0, j, m);
        for (size_t j = 0; j < 8; j++)
            if (j != 5)
                lin5 += T(5, j, m);
        expect("p=8 r=0", 8, 0, m, lin0,
               T(0, 4, 4 * m) + max2(T(0, 2, 2 * m), T(4, 6, 2 * m)) +
                   max4(T(0, 1, m), T(2, 3, m), T(4, 5, m), T(6, 7, m)));
        /* r=5: actual 5,6,7,0,1,2,3,4 */
        expect("p=8 r=5", 8, 5, m, lin5,
               T(5, 1, 4 * m) + max2(T(5, 7, 2 * m), T(1, 3, 2 * m)) +
                   max4(T(5, 6, m), T(7, 0, m), T(1, 2, m), T(3, 4, m)));
    }
}

/* invalid input gives NaN, not a number that looks like a prediction */
MPILAB_TEST(invalid_input_gives_nan)
{
    setup(4);
    CHECKF(isnan(mpilab_predict_scatter_linear(pairs, 4, 4, 10)), "root out of range");
    CHECKF(isnan(mpilab_predict_gather_binomial(pairs, 0, 0, 10)), "p = 0");
    CHECKF(isnan(mpilab_predict_scatter_binomial(NULL, 4, 0, 10)), "NULL pairs");
    CHECKF(isnan(mpilab_predict_gather_linear(pairs, 4, 0, -1)), "negative size");
}

MPILAB_TEST(ranges)
{
    test_ranges();
}

MPILAB_TEST_MAIN()
