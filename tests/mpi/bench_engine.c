/* The engine under mpirun: clock synchronisation on one host (true offset 0), every timing
 * method and isolation mode, fixed and adaptive repetitions, all-pairs p2p in both modes. */
#include <math.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "mpilab/mpilab.h"
#include "mpi_world.h"

static int failures;
#define FAIL(...)                                                                 \
    do {                                                                          \
        fprintf(stderr, __VA_ARGS__);                                             \
        failures++;                                                               \
    } while (0)

static void check_result(const char *what, const mpilab_result_t *r, const mpilab_precision_t *p, int positive)
{
    if (!r->applied) {
        FAIL("%s: not applied\n", what);
        return;
    }
    if (!r->data_ok)
        FAIL("%s: wrong data\n", what);
    if (r->stats.reps < 1 || r->stats.reps > p->max_reps)
        FAIL("%s: reps %zu outside [1,%zu]\n", what, r->stats.reps, p->max_reps);
    if (r->stats.reps - r->stats.invalid < p->min_reps && r->stats.reps < p->max_reps)
        FAIL("%s: stopped with %zu valid of min %zu\n", what, r->stats.reps - r->stats.invalid, p->min_reps);
    if (r->stats.converged && !(r->stats.med_rel_err <= p->eps && r->stats.med_lo <= r->stats.median &&
                               r->stats.median <= r->stats.med_hi))
        FAIL("%s: converged flag inconsistent\n", what);
    for (size_t k = 0; k < r->stats.reps; k++) {
        if (!isfinite(r->samples[k]) || (positive && r->valid[k] && !(r->samples[k] > 0.0)))
            FAIL("%s: bad sample %zu = %g\n", what, k, r->samples[k]);
    }
    if (r->stats.reps > r->stats.invalid && !isfinite(r->stats.mean))
        FAIL("%s: mean not finite\n", what);
    if (!(r->wall > 0.0))
        FAIL("%s: wall %g\n", what, r->wall);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    mpilab_test_check_world(1);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    char err[256];

    /* Clock sync on one host. Open MPI's MPI_Wtime counts from a per-process origin, so the
     * true offset between ranks is not zero, but it is known exactly: every rank reads the
     * shared CLOCK_MONOTONIC next to MPI_Wtime. True drift is zero. */
    double d = 0.0, best = INFINITY;
    for (int k = 0; k < 50; k++) { /* the tightest of a few back-to-back readings: a reading
                                     * interrupted between the clock reads is off by the delay */
        struct timespec ts;
        double w0 = MPI_Wtime();
        clock_gettime(CLOCK_MONOTONIC, &ts);
        double w1 = MPI_Wtime();
        if (w1 - w0 < best) {
            best = w1 - w0;
            d = (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec - 0.5 * (w0 + w1);
        }
    }
    double *dall = calloc((size_t)size, sizeof *dall);
    MPI_Allgather(&d, 1, MPI_DOUBLE, dall, 1, MPI_DOUBLE, MPI_COMM_WORLD);
    for (int m = 0; m < 2; m++) {
        mpilab_clocksync_t cs;
        if (mpilab_clocksync_run(MPI_COMM_WORLD, (mpilab_sync_method_t)m, &cs) != MPI_SUCCESS) {
            FAIL("clocksync %d failed\n", m);
            continue;
        }
        if (cs.nranks != size || cs.ranks[0].offset != 0.0)
            FAIL("clocksync: bad shape\n");
        for (int r = 1; r < size; r++) {
            double truth = dall[0] - dall[r]; /* Wtime_r - Wtime_0 at the same instant */
            /* 30 us, or, when the scheduler delayed every probe, the reported uncertainty
             * (half the probes' round trip) with a margin: the bound must hold. */
            double u = cs.ranks[r].uncertainty;
            double tol = fmax(3e-5, 2.0 * u + 1e-5);
            if (!(fabs(cs.ranks[r].offset - truth) < tol) || !(fabs(cs.ranks[r].drift) < 2e-3) ||
                !(cs.ranks[r].residual >= 0.0) || cs.ranks[r].residual > cs.max_residual || !(u > 0.0) ||
                !(u < 0.1))
                FAIL("clocksync %s rank %d: offset %g (true %g) drift %g residual %g uncertainty %g\n",
                     mpilab_sync_method_name(cs.method), r, cs.ranks[r].offset, truth, cs.ranks[r].drift,
                     cs.ranks[r].residual, u);
        }
        double now = MPI_Wtime();
        double back = mpilab_clock_to_local(&cs, rank, mpilab_clock_to_global(&cs, rank, now));
        if (fabs(back - now) > 1e-9)
            FAIL("clock conversion round trip off by %g\n", back - now);
        if (rank == 0 && size > 1)
            printf("clocksync %s: max residual %.3g s, rank 1 offset %.6g s (true %.6g s) drift %.3g, %.3f ms\n",
                   mpilab_sync_method_name(cs.method), cs.max_residual, cs.ranks[1].offset, dall[0] - dall[1],
                   cs.ranks[1].drift, cs.duration * 1e3);
        if (cs.ranks[0].uncertainty != 0.0)
            FAIL("clocksync: rank 0 uncertainty %g\n", cs.ranks[0].uncertainty);
        mpilab_clocksync_free(&cs);
    }

    free(dall);

    mpilab_bench_opts_t o;
    mpilab_bench_opts_default(&o);
    o.prec.max_reps = 30;
    mpilab_bench_t *b = NULL;
    /* bad options refused */
    mpilab_bench_opts_t bad = o;
    bad.prec.min_reps = 40;
    if (mpilab_bench_init(MPI_COMM_WORLD, &bad, &b, err, sizeof err) == 0 || b)
        FAIL("min_reps > max_reps accepted\n");
    bad = o;
    bad.root = size;
    if (mpilab_bench_init(MPI_COMM_WORLD, &bad, &b, err, sizeof err) == 0)
        FAIL("root outside communicator accepted\n");

    const mpilab_op_t *bcast = mpilab_ops_find("bcast", "native");
    const mpilab_op_t *slin = mpilab_ops_find("scatter", "linear");
    const mpilab_op_t *gbin = mpilab_ops_find("gather", "binomial");
    for (int iso = 0; iso < 3; iso++) {
        o.isolation = (mpilab_isolation_t)iso;
        o.root = iso == 1 ? size - 1 : 0;
        if (mpilab_bench_init(MPI_COMM_WORLD, &o, &b, err, sizeof err) != 0) {
            FAIL("init: %s\n", err);
            continue;
        }
        for (int t = 0; t < 4; t++) {
            const mpilab_op_t *ops[3] = {bcast, slin, gbin};
            for (int k = 0; k < 3; k++) {
                mpilab_result_t r;
                char what[128];
                snprintf(what, sizeof what, "%s:%s timing %s isolation %s", ops[k]->name, ops[k]->impl,
                         mpilab_timing_name((mpilab_timing_t)t), mpilab_isolation_name(o.isolation));
                if (mpilab_bench_measure(b, ops[k], 2048, (mpilab_timing_t)t, &r, err, sizeof err) != 0) {
                    FAIL("%s: %s\n", what, err);
                    continue;
                }
                if (t == MPILAB_TIMING_OPSPEC && k == 0) {
                    if (r.applied || r.stats.reps != 0)
                        FAIL("%s: opspec applied to bcast\n", what);
                } else {
                    /* root timing may legitimately go negative for tiny messages */
                    check_result(what, &r, &o.prec, t != MPILAB_TIMING_ROOT && t != MPILAB_TIMING_OPSPEC);
                    int uses_sync = (t == MPILAB_TIMING_GLOBAL || iso == MPILAB_ISO_SYNC) && t != MPILAB_TIMING_OPSPEC;
                    if ((uses_sync && (!mpilab_bench_clocksync(b) || !(r.sync_residual >= 0.0))) ||
                        (!uses_sync && r.sync_residual != 0.0))
                        FAIL("%s: sync residual %g recorded wrongly\n", what, r.sync_residual);
                    if (t == MPILAB_TIMING_ROOT && !(r.confirm_time > 0.0) && size > 1)
                        FAIL("%s: no confirmation time\n", what);
                    if (t == MPILAB_TIMING_ROOT) {
                        /* the confirmation is sampled once per repetition, its median is
                         * what was subtracted, and no corrected time <= 0 stays valid */
                        size_t inval = 0;
                        for (size_t k = 0; k < r.stats.reps; k++) {
                            inval += !r.valid[k];
                            if (r.valid[k] && !(r.samples[k] > 0.0))
                                FAIL("%s: corrected sample %zu = %g counted as valid\n", what, k, r.samples[k]);
                        }
                        if (r.confirm_stats.reps != r.stats.reps || r.confirm_time != r.confirm_stats.median ||
                            r.negative > inval)
                            FAIL("%s: confirmation reps %zu (of %zu), time %g vs median %g, negative %zu\n", what,
                                 r.confirm_stats.reps, r.stats.reps, r.confirm_time, r.confirm_stats.median,
                                 r.negative);
                    }
                    /* every rank holds the same samples */
                    double s0 = r.stats.reps ? r.samples[0] : 0.0, smax = 0.0;
                    MPI_Allreduce(&s0, &smax, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
                    if (smax != s0)
                        FAIL("%s: ranks disagree on samples\n", what);
                }
                mpilab_result_free(&r);
            }
        }
        mpilab_bench_finalize(b);
    }

    /* fixed repetition count */
    o.isolation = MPILAB_ISO_BARRIER;
    o.root = 0;
    o.prec.min_reps = o.prec.max_reps = 3;
    o.prec.max_time = 0.0; /* exactly 3: no time budget on a loaded machine */
    if (mpilab_bench_init(MPI_COMM_WORLD, &o, &b, err, sizeof err) == 0) {
        mpilab_result_t r;
        if (mpilab_bench_measure(b, slin, 100, MPILAB_TIMING_MAX, &r, err, sizeof err) != 0 || r.stats.reps != 3)
            FAIL("fixed count: reps %zu\n", r.stats.reps);
        mpilab_result_free(&r);
        mpilab_bench_finalize(b);
    }

    /* all pairs, both schedules */
    mpilab_precision_t p = MPILAB_PRECISION_DEFAULT;
    p.max_reps = 40;
    size_t np = (size_t)size * (size_t)(size - 1) / 2;
    mpilab_p2p_result_t *res = calloc(np, sizeof *res);
    for (int mode = 0; mode < 2; mode++) {
        if (mpilab_p2p_measure(MPI_COMM_WORLD, 1024, 16, (mpilab_p2p_mode_t)mode, &p, res) != MPI_SUCCESS) {
            FAIL("p2p mode %d failed\n", mode);
            continue;
        }
        size_t k = 0;
        for (int i = 0; i < size; i++)
            for (int j = i + 1; j < size; j++, k++) {
                mpilab_p2p_result_t *q = &res[k];
                if (q->pair.i != i || q->pair.j != j || q->bytes != 1024 || q->bytes_back != 16)
                    FAIL("p2p: entry %zu describes (%d,%d)\n", k, q->pair.i, q->pair.j);
                if (q->stats.reps < p.min_reps || q->stats.reps > p.max_reps || !(q->stats.mean > 0.0))
                    FAIL("p2p (%d,%d): reps %zu mean %g\n", i, j, q->stats.reps, q->stats.mean);
                if (q->stats.reps < p.max_reps && !q->stats.converged)
                    FAIL("p2p (%d,%d): stopped early without converging\n", i, j);
                for (size_t s = 0; s < q->stats.reps; s++)
                    if (!(q->samples[s] > 0.0))
                        FAIL("p2p (%d,%d): sample %zu = %g\n", i, j, s, q->samples[s]);
                mpilab_p2p_result_free(q);
            }
    }
    free(res);

    int all = 0;
    MPI_Allreduce(&failures, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0)
        printf("bench_engine np=%d: %s\n", size, all ? "FAILED" : "ok");
    MPI_Finalize();
    return all ? 1 : 0;
}
