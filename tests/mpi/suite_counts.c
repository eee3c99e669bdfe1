/* The streaming window and the COMB poll interval are honoured: MPI calls are counted by
 * PMPI wrappers in this program and compared with the configuration and the suite's own
 * counters. */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#define MPILAB_KIT_MPI
#include "kit.h"
#include "mpilab/mpilab.h"
#include "mpilab/suite.h"

static uint64_t n_isend, n_test;

int MPI_Isend(const void *buf, int count, MPI_Datatype dt, int dest, int tag, MPI_Comm comm, MPI_Request *req)
{
    n_isend++;
    return PMPI_Isend(buf, count, dt, dest, tag, comm, req);
}

int MPI_Test(MPI_Request *req, int *flag, MPI_Status *st)
{
    n_test++;
    return PMPI_Test(req, flag, st);
}


#define WINDOW 7
#define MSGS 5
#define REPS 4

/* The suite with this program's parameters, and an engine doing REPS repetitions. */
static mpilab_bench_t *setup(mpilab_bench_opts_t *bo)
{
    char err[256] = "";
    if (mpilab_suite_parse_option("window", "7", err, sizeof err) ||
        mpilab_suite_parse_option("poll-sweep", "0,37,5000", err, sizeof err) ||
        mpilab_suite_parse_option("comb-msgs", "5", err, sizeof err) || mpilab_suite_register()) {
        FAIL("set-up: %s", err);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    mpilab_bench_opts_default(bo);
    bo->prec.min_reps = bo->prec.max_reps = REPS;
    bo->prec.max_time = 0.0; /* exactly REPS: no time budget on a loaded machine */
    mpilab_bench_t *b = NULL;
    if (mpilab_bench_init(MPI_COMM_WORLD, bo, &b, err, sizeof err) != 0)
        MPI_Abort(MPI_COMM_WORLD, 1);
    return b;
}

MPILAB_TEST(stream_posts_its_window_per_run)
{
    int rank = kit_rank;
    char err[256] = "";
    mpilab_bench_opts_t bo;
    mpilab_bench_t *b = setup(&bo);
    /* streaming: rank 0 posts exactly WINDOW sends per run, one window (one reply) per run */
    const size_t sizes[] = {1, 100000};
    for (size_t s = 0; s < 2; s++) {
        mpilab_suite_counters_reset();
        uint64_t is0 = n_isend;
        mpilab_result_t r;
        if (mpilab_bench_measure(b, mpilab_ops_find("stream", "mpi"), sizes[s], MPILAB_TIMING_MAX, &r, err,
                                 sizeof err) != 0 || !r.data_ok)
            FAIL("stream %zu: %s", sizes[s], err);
        mpilab_suite_counters_t c;
        mpilab_suite_counters_get(&c);
        /* every execution counts: the engine's untimed warm-up runs and the timed repetitions */
        if (c.runs != r.stats.reps + bo.warmup || r.stats.reps != REPS)
            FAIL("stream: %llu runs, %zu reps", (unsigned long long)c.runs, r.stats.reps);
        uint64_t isends = n_isend - is0;
        uint64_t want = rank == 0 ? (uint64_t)WINDOW * c.runs : 0;
        if (isends != want || c.stream_sends != want)
            FAIL("stream %zu: %llu MPI_Isend calls (suite counted %llu), expected %llu", sizes[s],
                 (unsigned long long)isends, (unsigned long long)c.stream_sends, (unsigned long long)want);
        if (c.stream_windows != (rank == 0 ? c.runs : 0))
            FAIL("stream: %llu windows for %llu runs", (unsigned long long)c.stream_windows,
                 (unsigned long long)c.runs);
        mpilab_result_free(&r);
    }
    mpilab_bench_finalize(b);
}

MPILAB_TEST(comb_polls_after_exactly_its_interval)
{
    int rank = kit_rank;
    char err[256] = "";
    mpilab_bench_opts_t bo;
    mpilab_bench_t *b = setup(&bo);
    /* COMB: poll interval P means exactly P work iterations before every poll; every poll
     * is an MPI_Test; MSGS messages each way per run */
    const char *impls[] = {"poll0", "poll37", "poll5000"};
    const uint64_t P[] = {0, 37, 5000};
    for (size_t k = 0; k < 3; k++) {
        mpilab_suite_counters_reset();
        uint64_t t0 = n_test, is0 = n_isend;
        mpilab_result_t r;
        const mpilab_op_t *op = mpilab_ops_find("comb", impls[k]);
        if (!op || mpilab_bench_measure(b, op, 100000, MPILAB_TIMING_MAX, &r, err, sizeof err) != 0 || !r.data_ok) {
            FAIL("comb %s failed: %s", impls[k], err);
            continue;
        }
        mpilab_suite_counters_t c;
        mpilab_suite_counters_get(&c);
        uint64_t tests = n_test - t0, isends = n_isend - is0;
        int active = rank < 2;
        if (tests != c.comb_polls + c.comb_send_tests)
            FAIL("comb %s: %llu MPI_Test calls, suite counted %llu polls + %llu send tests", impls[k],
                 (unsigned long long)tests, (unsigned long long)c.comb_polls, (unsigned long long)c.comb_send_tests);
        if (c.comb_work_iters != P[k] * c.comb_polls)
            FAIL("comb %s: %llu work iterations for %llu polls (interval %llu)", impls[k],
                 (unsigned long long)c.comb_work_iters, (unsigned long long)c.comb_polls, (unsigned long long)P[k]);
        uint64_t msgs = active ? (uint64_t)MSGS * c.runs : 0;
        if (c.comb_messages != msgs || c.comb_sends != msgs || isends != msgs)
            FAIL("comb %s: received %llu, sent %llu (%llu MPI_Isend), expected %llu", impls[k],
                 (unsigned long long)c.comb_messages, (unsigned long long)c.comb_sends, (unsigned long long)isends,
                 (unsigned long long)msgs);
        if (active && c.comb_polls < msgs)
            FAIL("comb %s: %llu polls for %llu messages", impls[k], (unsigned long long)c.comb_polls,
                 (unsigned long long)msgs);
        if (rank == 0 && (!r.derived_ok || mpilab_derived_get(&r.derived, "poll_interval") != (double)P[k]))
            FAIL("comb %s: derived poll interval", impls[k]);
        mpilab_result_free(&r);
    }
    mpilab_bench_finalize(b);
}

MPILAB_TEST_MAIN()
