/* LogGP measurement under mpirun (2 or 3 ranks): every pair measured once, in a round of
 * the schedule where no rank appears twice; finite non-negative values with repetitions
 * within [min,max] in both schedules; results identical on every rank; the fit accepts
 * them; bad arguments refused on every rank without communicating. The design form
 * (mpilab_loggp_measure_pairs): a ring of pairs in its rounds, results on rank 0 only (the
 * other ranks pass NULL), each design pair once in its round with valid series, in both
 * schedules; bad designs refused. */
#include <math.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MPILAB_KIT_MPI
#include "kit.h"
#include "mpilab/mpilab.h"
#include "mpilab/pairs.h"

static void check_series(const char *what, const mpilab_loggp_series_t *s, const mpilab_precision_t *p,
                         int positive)
{
    /* fewer than min_reps only when the time budget ended it (the samples' positive sum,
     * as the stopping rule counts it: a loaded machine's slow repetitions can spend it) */
    double spent = 0.0;
    for (size_t k = 0; k < s->stats.reps; k++)
        spent += s->samples[k] > 0.0 ? s->samples[k] : 0.0;
    int budget_spent = p->max_time > 0.0 && spent >= p->max_time && s->stats.reps >= 1;
    if ((s->stats.reps < p->min_reps && !budget_spent) || s->stats.reps > p->max_reps)
        FAIL("%s: reps %zu outside [%zu,%zu] (%.3g s of a %.3g s budget)", what, s->stats.reps, p->min_reps,
             p->max_reps, spent, p->max_time);
    for (size_t k = 0; k < s->stats.reps; k++)
        if (!isfinite(s->samples[k]) || (positive && !(s->samples[k] > 0)))
            FAIL("%s: sample %zu = %g", what, k, s->samples[k]);
    /* gap samples are differences of two times: under heavy preemption even their median
     * may come out negative (the fit clamps it and flags g_clamped), so only finiteness */
    if (!isfinite(s->stats.mean) || !isfinite(s->stats.median) || (positive && !(s->stats.median >= 0)))
        FAIL("%s: mean %g median %g", what, s->stats.mean, s->stats.median);
}

/* The options both designs measure with: few repetitions, bursts of 8. */
static mpilab_loggp_opts_t test_opts(mpilab_p2p_mode_t mode)
{
    mpilab_loggp_opts_t o;
    mpilab_loggp_opts_default(&o);
    o.mode = mode;
    o.prec.min_reps = 3;
    o.prec.max_reps = 12;
    o.burst = 8;
    return o;
}

static void run(mpilab_p2p_mode_t mode, int n)
{
    const size_t sizes[] = {0, 1024, 16384, 65536};
    const size_t ns = sizeof sizes / sizeof *sizes;
    mpilab_loggp_opts_t o = test_opts(mode);
    size_t npairs = (size_t)n * (size_t)(n - 1) / 2;
    mpilab_loggp_pair_result_t *res = calloc(npairs, sizeof *res);
    int rc = mpilab_loggp_measure(MPI_COMM_WORLD, sizes, ns, &o, res);
    if (rc != MPI_SUCCESS) {
        FAIL("measure (mode %d) returned %d", (int)mode, rc);
        free(res);
        return;
    }
    const char *mname = mode == MPILAB_P2P_PARALLEL ? "parallel" : "sequential";
    size_t rounds_expected = mode == MPILAB_P2P_PARALLEL ? (size_t)(n % 2 ? n : n - 1) : npairs;
    size_t k = 0;
    for (int i = 0; i < n; i++)
        for (int j = i + 1; j < n; j++, k++) {
            mpilab_loggp_pair_result_t *r = &res[k];
            char what[128];
            if (r->pair.i != i || r->pair.j != j)
                FAIL("%s: slot %zu holds pair %d-%d, expected %d-%d", mname, k, r->pair.i, r->pair.j, i, j);
            if (r->measured != 1)
                FAIL("%s: pair %d-%d measured %zu times", mname, i, j, r->measured);
            if (r->round >= rounds_expected)
                FAIL("%s: pair %d-%d in round %zu of %zu", mname, i, j, r->round, rounds_expected);
            /* no rank in two pairs of the same round */
            for (size_t q = 0; q < k; q++)
                if (res[q].round == r->round &&
                    (res[q].pair.i == i || res[q].pair.j == i || res[q].pair.i == j || res[q].pair.j == j))
                    FAIL("%s: pairs %d-%d and %d-%d share a rank in round %zu", mname, res[q].pair.i,
                         res[q].pair.j, i, j, r->round);
            if (r->nsizes != ns) {
                FAIL("%s: %zu sizes", mname, r->nsizes);
                continue;
            }
            double x[4], rtt[4], os[4], orr[4], g[4];
            for (size_t s = 0; s < ns; s++) {
                const mpilab_loggp_point_t *pt = &r->points[s];
                if (pt->bytes != sizes[s])
                    FAIL("%s: point %zu has %zu bytes", mname, s, pt->bytes);
                snprintf(what, sizeof what, "%s %d-%d %zuB rtt", mname, i, j, sizes[s]);
                check_series(what, &pt->rtt, &o.prec, 1);
                snprintf(what, sizeof what, "%s %d-%d %zuB os", mname, i, j, sizes[s]);
                check_series(what, &pt->os, &o.prec, 1);
                snprintf(what, sizeof what, "%s %d-%d %zuB or", mname, i, j, sizes[s]);
                check_series(what, &pt->orr, &o.prec, 1);
                snprintf(what, sizeof what, "%s %d-%d %zuB g", mname, i, j, sizes[s]);
                /* a gap sample is a difference of two times: it may be negative after a
                 * preemption */
                check_series(what, &pt->g, &o.prec, 0);
                x[s] = (double)sizes[s];
                rtt[s] = pt->rtt.stats.mean;
                os[s] = pt->os.stats.mean;
                orr[s] = pt->orr.stats.mean;
                g[s] = pt->g.stats.median;
            }
            /* every rank holds the same numbers: compare a checksum with rank 0's */
            double sum = 0;
            for (size_t s = 0; s < ns; s++)
                sum += rtt[s] + os[s] + orr[s] + g[s];
            double sum0 = sum;
            MPI_Bcast(&sum0, 1, MPI_DOUBLE, 0, MPI_COMM_WORLD);
            if (sum0 != sum)
                FAIL("%s: pair %d-%d differs from rank 0", mname, i, j);
            mpilab_loggp_t f;
            char err[200];
            if (mpilab_loggp_fit(x, rtt, os, orr, g, ns, &f, err, sizeof err) != 0)
                FAIL("%s: fit %d-%d: %s", mname, i, j, err);
            else if (!(f.L >= 0) || !(f.G >= 0) || !isfinite(f.os) || !isfinite(f.orr) || !isfinite(f.g))
                FAIL("%s: fit %d-%d: L %g G %g os %g or %g g %g", mname, i, j, f.L, f.G, f.os, f.orr, f.g);
        }
    for (size_t q = 0; q < npairs; q++)
        mpilab_loggp_pair_result_free(&res[q]);
    free(res);
}

/* A ring design (k, k+1) (n = 2: the one pair), its rounds from the library. */
static void run_design(mpilab_p2p_mode_t mode, int n)
{
    const size_t sizes[] = {0, 4096, 65536};
    const size_t ns = sizeof sizes / sizeof *sizes;
    mpilab_loggp_opts_t o = test_opts(mode);
    mpilab_pair_t pairs[8];
    size_t npairs = 0, order[8], starts[9];
    for (int k = 0; k + 1 < n && npairs < 7; k++)
        pairs[npairs++] = (mpilab_pair_t){k, k + 1};
    size_t rounds = mpilab_pairs_rounds(n, pairs, npairs, order, starts);
    mpilab_loggp_pair_result_t *res = kit_rank == 0 ? calloc(npairs, sizeof *res) : NULL;
    int rc = mpilab_loggp_measure_pairs(MPI_COMM_WORLD, pairs, npairs, order, starts, rounds, sizes, ns, &o, res);
    const char *mname = mode == MPILAB_P2P_PARALLEL ? "design parallel" : "design sequential";
    if (rc != MPI_SUCCESS || rounds == 0) {
        FAIL("%s: returned %d (%zu rounds)", mname, rc, rounds);
        free(res);
        return;
    }
    for (size_t k = 0; kit_rank == 0 && k < npairs; k++) {
        const mpilab_loggp_pair_result_t *r = &res[k];
        if (r->pair.i != pairs[k].i || r->pair.j != pairs[k].j || r->measured != 1 || r->nsizes != ns) {
            FAIL("%s: slot %zu holds %d-%d measured %zu, %zu sizes", mname, k, r->pair.i, r->pair.j, r->measured,
                 r->nsizes);
            continue;
        }
        size_t want = 0; /* the round the design put the pair in (sequential: its index) */
        for (size_t q = 0; q < rounds; q++)
            for (size_t x = starts[q]; x < starts[q + 1]; x++)
                if (order[x] == k)
                    want = q;
        if (r->round != (mode == MPILAB_P2P_SEQUENTIAL ? k : want))
            FAIL("%s: pair %zu in round %zu", mname, k, r->round);
        for (size_t s = 0; s < ns; s++) {
            const mpilab_loggp_point_t *pt = &r->points[s];
            char what[128];
            if (pt->bytes != sizes[s])
                FAIL("%s: point %zu has %zu bytes", mname, s, pt->bytes);
            snprintf(what, sizeof what, "%s %d-%d %zuB", mname, r->pair.i, r->pair.j, sizes[s]);
            check_series(what, &pt->rtt, &o.prec, 1);
            check_series(what, &pt->os, &o.prec, 1);
            check_series(what, &pt->orr, &o.prec, 1);
            check_series(what, &pt->g, &o.prec, 0);
        }
    }
    for (size_t k = 0; res && k < npairs; k++)
        mpilab_loggp_pair_result_free(&res[k]);
    free(res);
    /* bad designs: refused on every rank before any communication */
    const mpilab_pair_t out[1] = {{0, n}}, rev[1] = {{1, 0}};
    const size_t o1[1] = {0}, s1[2] = {0, 1}, s0[2] = {0, 0};
    mpilab_loggp_pair_result_t one[1];
    if (mpilab_loggp_measure_pairs(MPI_COMM_WORLD, out, 1, o1, s1, 1, sizes, ns, &o, one) != MPI_ERR_ARG)
        FAIL("design: a pair beyond the last rank accepted");
    if (mpilab_loggp_measure_pairs(MPI_COMM_WORLD, rev, 1, o1, s1, 1, sizes, ns, &o, one) != MPI_ERR_ARG)
        FAIL("design: a pair with i > j accepted");
    if (mpilab_loggp_measure_pairs(MPI_COMM_WORLD, pairs, 1, o1, s0, 1, sizes, ns, &o, one) != MPI_ERR_ARG)
        FAIL("design: rounds that do not cover the pairs accepted");
}

static void bad_args(int n)
{
    size_t npairs = (size_t)n * (size_t)(n - 1) / 2;
    mpilab_loggp_pair_result_t *res = calloc(npairs, sizeof *res);
    mpilab_loggp_opts_t o;
    mpilab_loggp_opts_default(&o);
    const size_t dec[] = {1024, 16};
    const size_t big[] = {16, (size_t)1 << 40};
    const size_t ok[] = {16, 64};
    if (mpilab_loggp_measure(MPI_COMM_WORLD, dec, 2, &o, res) != MPI_ERR_ARG)
        FAIL("decreasing sizes accepted");
    if (mpilab_loggp_measure(MPI_COMM_WORLD, big, 2, &o, res) != MPI_ERR_ARG)
        FAIL("size beyond INT_MAX accepted");
    if (mpilab_loggp_measure(MPI_COMM_WORLD, ok, 0, &o, res) != MPI_ERR_ARG)
        FAIL("no sizes accepted");
    mpilab_loggp_opts_t b = o;
    b.burst = 1;
    if (mpilab_loggp_measure(MPI_COMM_WORLD, ok, 2, &b, res) != MPI_ERR_ARG)
        FAIL("burst 1 accepted");
    b = o;
    b.or_wait_factor = 0.5;
    if (mpilab_loggp_measure(MPI_COMM_WORLD, ok, 2, &b, res) != MPI_ERR_ARG)
        FAIL("wait factor 0.5 accepted");
    b = o;
    b.prec.min_reps = 10;
    b.prec.max_reps = 5;
    if (mpilab_loggp_measure(MPI_COMM_WORLD, ok, 2, &b, res) != MPI_ERR_ARG)
        FAIL("min_reps > max_reps accepted");
    b = o;
    b.prec.cl = 1.5;
    if (mpilab_loggp_measure(MPI_COMM_WORLD, ok, 2, &b, res) != MPI_ERR_ARG)
        FAIL("cl 1.5 accepted");
    if (mpilab_loggp_measure(MPI_COMM_SELF, ok, 2, &o, res) != MPI_ERR_ARG)
        FAIL("one-rank communicator accepted");
    char err[200] = "";
    if (mpilab_loggp_check(dec, 2, &o, err, sizeof err) == 0 || strstr(err, "increasing") == NULL)
        FAIL("check message: '%s'", err);
    free(res);
}

MPILAB_TEST(bad_arguments_refused)
{
    bad_args(kit_size);
}

MPILAB_TEST(parallel_schedule)
{
    run(MPILAB_P2P_PARALLEL, kit_size);
}

MPILAB_TEST(sequential_schedule)
{
    run(MPILAB_P2P_SEQUENTIAL, kit_size);
}

MPILAB_TEST(design_parallel)
{
    run_design(MPILAB_P2P_PARALLEL, kit_size);
}

MPILAB_TEST(design_sequential)
{
    run_design(MPILAB_P2P_SEQUENTIAL, kit_size);
}

MPILAB_TEST_MAIN()
