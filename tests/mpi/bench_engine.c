/* The engine under mpirun: clock synchronisation on one host (true offset 0), every timing
 * method and isolation mode, fixed and adaptive repetitions, all-pairs p2p in both modes. */
#include <math.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define MPILAB_KIT_MPI
#include "kit.h"
#include "mpilab/mpilab.h"

/* The engine options of the cases: the defaults, at most 30 repetitions. */
static mpilab_bench_opts_t engine_opts(void)
{
    mpilab_bench_opts_t o;
    mpilab_bench_opts_default(&o);
    o.prec.max_reps = 30;
    return o;
}

static void check_result(const char *what, const mpilab_result_t *r, const mpilab_precision_t *p, int positive)
{
    if (!r->applied) {
        FAIL("%s: not applied", what);
        return;
    }
    if (!r->data_ok)
        FAIL("%s: wrong data", what);
    if (r->stats.reps < 1 || r->stats.reps > p->max_reps)
        FAIL("%s: reps %zu outside [1,%zu]", what, r->stats.reps, p->max_reps);
    /* fewer than min_reps valid samples only when a cap ended it: max_reps, or the time
     * budget (the samples' sum, as the stopping rule counts it, reached max_time: on a
     * loaded machine a few slow repetitions spend it) */
    double spent = 0.0;
    for (size_t k = 0; k < r->stats.reps; k++)
        spent += r->samples[k] > 0.0 ? r->samples[k] : 0.0;
    int budget_spent = p->max_time > 0.0 && spent >= p->max_time;
    if (r->stats.reps - r->stats.invalid < p->min_reps && r->stats.reps < p->max_reps && !budget_spent)
        FAIL("%s: stopped with %zu valid of min %zu (%.3g s of a %.3g s budget)", what,
             r->stats.reps - r->stats.invalid, p->min_reps, spent, p->max_time);
    if (r->stats.converged && !(r->stats.med_rel_err <= p->eps && r->stats.med_lo <= r->stats.median &&
                               r->stats.median <= r->stats.med_hi))
        FAIL("%s: converged flag inconsistent", what);
    for (size_t k = 0; k < r->stats.reps; k++) {
        if (!isfinite(r->samples[k]) || (positive && r->valid[k] && !(r->samples[k] > 0.0)))
            FAIL("%s: bad sample %zu = %g", what, k, r->samples[k]);
    }
    if (r->stats.reps > r->stats.invalid && !isfinite(r->stats.mean))
        FAIL("%s: mean not finite", what);
    if (!(r->wall > 0.0))
        FAIL("%s: wall %g", what, r->wall);
}

/* One measurement of the timing/isolation grid (not opspec on bcast): a valid result, the
 * synchronisation residual recorded when (and only when) synchronised clocks were used, the
 * root timing's confirmation, the same samples on every rank. */
static void check_timing(const char *what, mpilab_bench_t *b, const mpilab_result_t *pr,
                         const mpilab_bench_opts_t *o, int t, int iso)
{
    mpilab_result_t r = *pr;
    /* root timing may legitimately go negative for tiny messages */
    check_result(what, &r, &o->prec, t != MPILAB_TIMING_ROOT && t != MPILAB_TIMING_OPSPEC);
    int uses_sync = (t == MPILAB_TIMING_GLOBAL || iso == MPILAB_ISO_SYNC) && t != MPILAB_TIMING_OPSPEC;
    if ((uses_sync && (!mpilab_bench_clocksync(b) || !(r.sync_residual >= 0.0))) ||
        (!uses_sync && r.sync_residual != 0.0))
        FAIL("%s: sync residual %g recorded wrongly", what, r.sync_residual);
    if (t == MPILAB_TIMING_ROOT && !(r.confirm_time > 0.0) && kit_size > 1)
        FAIL("%s: no confirmation time", what);
    if (t == MPILAB_TIMING_ROOT) {
        /* the confirmation is sampled once per repetition, its median is
         * what was subtracted, and no corrected time <= 0 stays valid */
        size_t inval = 0;
        for (size_t k = 0; k < r.stats.reps; k++) {
            inval += !r.valid[k];
            if (r.valid[k] && !(r.samples[k] > 0.0))
                FAIL("%s: corrected sample %zu = %g counted as valid", what, k, r.samples[k]);
        }
        if (r.confirm_stats.reps != r.stats.reps || r.confirm_time != r.confirm_stats.median ||
            r.negative > inval)
            FAIL("%s: confirmation reps %zu (of %zu), time %g vs median %g, negative %zu", what,
                 r.confirm_stats.reps, r.stats.reps, r.confirm_time, r.confirm_stats.median,
                 r.negative);
    }
    /* every rank holds the same samples */
    double s0 = r.stats.reps ? r.samples[0] : 0.0, smax = 0.0;
    MPI_Allreduce(&s0, &smax, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    if (smax != s0)
        FAIL("%s: ranks disagree on samples", what);
}

/* Clock sync on one host. */
MPILAB_TEST(clocksync_on_one_host)
{
    /* Open MPI's MPI_Wtime counts from a per-process origin, so the
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
    double *dall = calloc((size_t)kit_size, sizeof *dall);
    MPI_Allgather(&d, 1, MPI_DOUBLE, dall, 1, MPI_DOUBLE, MPI_COMM_WORLD);
    for (int m = 0; m < 2; m++) {
        mpilab_clocksync_t cs;
        if (mpilab_clocksync_run(MPI_COMM_WORLD, (mpilab_sync_method_t)m, &cs) != MPI_SUCCESS) {
            FAIL("clocksync %d failed", m);
            continue;
        }
        if (cs.nranks != kit_size || cs.ranks[0].offset != 0.0)
            FAIL("clocksync: bad shape");
        for (int r = 1; r < kit_size; r++) {
            double truth = dall[0] - dall[r]; /* Wtime_r - Wtime_0 at the same instant */
            /* The uncertainty is stated for the end of the synchronisation (clocksync.h), so
             * the model is read there: offset + drift * (t_end - t0). At t0 itself an
             * imprecise drift (a preempted first probe: seen under ASan with two hogs, 279
             * ppm) moves the intercept by the drift times the second the window lasts. */
            const mpilab_clock_model_t *mr = &cs.ranks[r];
            double at_end = mr->offset + mr->drift * (cs.t_end - cs.t0);
            /* 30 us, or, when the scheduler delayed every probe, the reported uncertainty
             * (half the probes' round trip) with a margin: the bound must hold. */
            double u = mr->uncertainty;
            double tol = fmax(3e-5, 2.0 * u + 1e-5);
            /* the true drift is 0 (one CLOCK_MONOTONIC): the stated drift bound must hold */
            if (!(fabs(at_end - truth) < tol) || !(fabs(mr->drift) <= mr->drift_uncertainty + 1e-6) ||
                !(mr->residual >= 0.0) || mr->residual > cs.max_residual || !(u > 0.0) || !(u < 0.1))
                FAIL("clocksync %s rank %d: offset at the end %g (true %g; at t0 %g) drift %g (bound %g) "
                     "residual %g uncertainty %g",
                     mpilab_sync_method_name(cs.method), r, at_end, truth, mr->offset, mr->drift,
                     mr->drift_uncertainty, mr->residual, u);
        }
        double now = MPI_Wtime();
        double back = mpilab_clock_to_local(&cs, kit_rank, mpilab_clock_to_global(&cs, kit_rank, now));
        if (fabs(back - now) > 1e-9)
            FAIL("clock conversion round trip off by %g", back - now);
        if (kit_rank == 0 && kit_size > 1)
            printf("clocksync %s: max residual %.3g s, rank 1 offset %.6g s (true %.6g s) drift %.3g, %.3f ms\n",
                   mpilab_sync_method_name(cs.method), cs.max_residual, cs.ranks[1].offset, dall[0] - dall[1],
                   cs.ranks[1].drift, cs.duration * 1e3);
        if (cs.ranks[0].uncertainty != 0.0)
            FAIL("clocksync: rank 0 uncertainty %g", cs.ranks[0].uncertainty);
        mpilab_clocksync_free(&cs);
    }

    free(dall);
}

MPILAB_TEST(bad_options_refused)
{
    char err[256];
    mpilab_bench_opts_t o = engine_opts();
    mpilab_bench_t *b = NULL;
    /* bad options refused */
    mpilab_bench_opts_t bad = o;
    bad.prec.min_reps = 40;
    if (mpilab_bench_init(MPI_COMM_WORLD, &bad, &b, err, sizeof err) == 0 || b)
        FAIL("min_reps > max_reps accepted");
    bad = o;
    bad.root = kit_size;
    if (mpilab_bench_init(MPI_COMM_WORLD, &bad, &b, err, sizeof err) == 0)
        FAIL("root outside communicator accepted");
}

/* Every timing method under every isolation mode, on a collective of each kind. */
MPILAB_TEST(timing_and_isolation)
{
    char err[256];
    mpilab_bench_opts_t o = engine_opts();
    mpilab_bench_t *b = NULL;
    const mpilab_op_t *bcast = mpilab_ops_find("bcast", "native");
    const mpilab_op_t *slin = mpilab_ops_find("scatter", "linear");
    const mpilab_op_t *gbin = mpilab_ops_find("gather", "binomial");
    for (int iso = 0; iso < 3; iso++) {
        o.isolation = (mpilab_isolation_t)iso;
        o.root = iso == 1 ? kit_size - 1 : 0;
        if (mpilab_bench_init(MPI_COMM_WORLD, &o, &b, err, sizeof err) != 0) {
            FAIL("init: %s", err);
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
                    FAIL("%s: %s", what, err);
                    continue;
                }
                if (t == MPILAB_TIMING_OPSPEC && k == 0) {
                    if (r.applied || r.stats.reps != 0)
                        FAIL("%s: opspec applied to bcast", what);
                } else {
                    check_timing(what, b, &r, &o, t, iso);
                }
                mpilab_result_free(&r);
            }
        }
        mpilab_bench_finalize(b);
    }
}

MPILAB_TEST(fixed_count)
{
    char err[256];
    mpilab_bench_opts_t o = engine_opts();
    mpilab_bench_t *b = NULL;
    const mpilab_op_t *slin = mpilab_ops_find("scatter", "linear");
    /* fixed repetition count */
    o.isolation = MPILAB_ISO_BARRIER;
    o.root = 0;
    o.prec.min_reps = o.prec.max_reps = 3;
    o.prec.max_time = 0.0; /* exactly 3: no time budget on a loaded machine */
    if (mpilab_bench_init(MPI_COMM_WORLD, &o, &b, err, sizeof err) == 0) {
        mpilab_result_t r;
        if (mpilab_bench_measure(b, slin, 100, MPILAB_TIMING_MAX, &r, err, sizeof err) != 0 || r.stats.reps != 3)
            FAIL("fixed count: reps %zu", r.stats.reps);
        mpilab_result_free(&r);
        mpilab_bench_finalize(b);
    }
}

static int kit_nop_setup(mpilab_op_run_t *r)
{
    r->state = NULL;
    return 0;
}
static int kit_nop_run(mpilab_op_run_t *r)
{
    (void)r;
    return MPI_SUCCESS;
}
static void kit_nop_teardown(mpilab_op_run_t *r)
{
    (void)r;
}
/* sets its declared latency_s and, on the last rank only, a key it does not declare */
static int kit_stray_derive(const mpilab_op_run_t *r, double t, mpilab_derived_t *d)
{
    mpilab_derived_set(d, "latency_s", t);
    if (r->rank == r->size - 1)
        mpilab_derived_set(d, "latency_us", t * 1e6);
    return 0;
}

/* A measurement whose derive sets an undeclared key fails on every rank with one line naming
 * the entry (and, where it was set, the key); declared keys alone measure. */
MPILAB_TEST(undeclared_derived_key_refused)
{
    char err[256] = "";
    mpilab_bench_opts_t o = engine_opts();
    o.prec.min_reps = o.prec.max_reps = 3;
    o.prec.max_time = 0.0;
    mpilab_op_t e = {.name = "kit_stray", .impl = "one", .setup = kit_nop_setup, .run = kit_nop_run,
                     .validate = kit_nop_run, .teardown = kit_nop_teardown, .derived = "latency_s",
                     .derive = kit_stray_derive};
    mpilab_op_t ok = e;
    ok.impl = "declared";
    ok.derived = "latency_s,latency_us";
    REQUIRE(mpilab_ops_register(&e) == 0 && mpilab_ops_register(&ok) == 0);
    mpilab_bench_t *b = NULL;
    REQUIRE(mpilab_bench_init(MPI_COMM_WORLD, &o, &b, err, sizeof err) == 0);
    mpilab_result_t r;
    int rc = mpilab_bench_measure(b, mpilab_ops_find("kit_stray", "one"), 8, MPILAB_TIMING_MAX, &r, err,
                                  sizeof err);
    CHECKF(rc != 0 && strstr(err, "kit_stray:one") && !strchr(err, '\n'), "rc %d, '%s'", rc, err);
    if (kit_rank == kit_size - 1)
        CHECKF(strstr(err, "'latency_us'") != NULL, "the key is not named: '%s'", err);
    mpilab_result_free(&r);
    rc = mpilab_bench_measure(b, mpilab_ops_find("kit_stray", "declared"), 8, MPILAB_TIMING_MAX, &r, err,
                              sizeof err);
    CHECKF(rc == 0 && r.derived_ok, "declared keys: rc %d, '%s'", rc, err);
    mpilab_result_free(&r);
    mpilab_bench_finalize(b);
    mpilab_ops_clear_registered();
}

MPILAB_TEST(all_pairs_both_schedules)
{
    /* all pairs, both schedules */
    mpilab_precision_t p = MPILAB_PRECISION_DEFAULT;
    p.max_reps = 40;
    size_t np = (size_t)kit_size * (size_t)(kit_size - 1) / 2;
    mpilab_p2p_result_t *res = calloc(np, sizeof *res);
    for (int mode = 0; mode < 2; mode++) {
        if (mpilab_p2p_measure(MPI_COMM_WORLD, 1024, 16, (mpilab_p2p_mode_t)mode, &p, res) != MPI_SUCCESS) {
            FAIL("p2p mode %d failed", mode);
            continue;
        }
        size_t k = 0;
        for (int i = 0; i < kit_size; i++)
            for (int j = i + 1; j < kit_size; j++, k++) {
                mpilab_p2p_result_t *q = &res[k];
                if (q->pair.i != i || q->pair.j != j || q->bytes != 1024 || q->bytes_back != 16)
                    FAIL("p2p: entry %zu describes (%d,%d)", k, q->pair.i, q->pair.j);
                /* an end before max_reps is legitimate when the rule converged, or when the
                 * time budget was spent (the samples' sum, as the stopping rule counts it:
                 * a loaded machine's slow round trips can spend it; check_result) */
                double spent = 0.0;
                for (size_t s = 0; s < q->stats.reps; s++)
                    spent += q->samples[s] > 0.0 ? q->samples[s] : 0.0;
                int budget_spent = p.max_time > 0.0 && spent >= p.max_time;
                if ((q->stats.reps < p.min_reps && !budget_spent) || q->stats.reps > p.max_reps ||
                    !(q->stats.mean > 0.0))
                    FAIL("p2p (%d,%d): reps %zu mean %g (%.3g s of a %.3g s budget)", i, j, q->stats.reps,
                         q->stats.mean, spent, p.max_time);
                if (q->stats.reps < p.max_reps && !q->stats.converged && !budget_spent)
                    FAIL("p2p (%d,%d): stopped early without converging (%.3g s of a %.3g s budget)", i, j,
                         spent, p.max_time);
                for (size_t s = 0; s < q->stats.reps; s++)
                    if (!(q->samples[s] > 0.0))
                        FAIL("p2p (%d,%d): sample %zu = %g", i, j, s, q->samples[s]);
                mpilab_p2p_result_free(q);
            }
    }
    free(res);
}

MPILAB_TEST_MAIN()
