/* Every suite entry runs under the engine at 2..4 ranks with its data validated, the
 * derived quantities follow from the measured time as documented, and validation is not
 * vacuous (buffers that were never received into are refused). */
#include <math.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MPILAB_KIT_MPI
#include "kit.h"
#include "mpilab/mpilab.h"
#include "mpilab/suite.h"

#define D(key) mpilab_derived_get(dv, key)

/* key is in the entry's declared comma list */
static int declared(const mpilab_op_t *op, const char *key)
{
    size_t n = strlen(key);
    for (const char *p = op->derived; p && *p;) {
        const char *comma = strchr(p, ',');
        size_t len = comma ? (size_t)(comma - p) : strlen(p);
        if (len == n && strncmp(p, key, n) == 0)
            return 1;
        p += len + (comma != NULL);
    }
    return 0;
}

static int rel_eq(double a, double b)
{
    return fabs(a - b) <= 1e-9 * fabs(b);
}

/* setup then validate without any run: some rank must refuse (data-moving entries). */
static void check_not_vacuous(const mpilab_op_t *op, size_t bytes, MPI_Comm comm)
{
    mpilab_op_run_t run;
    mpilab_op_run_init(&run, op, bytes, 0, comm);
    if (op->setup(&run) != 0) {
        FAIL("%s:%s setup failed", op->name, op->impl);
        return;
    }
    int bad = op->validate(&run) != 0, any = 0;
    op->teardown(&run);
    MPI_Allreduce(&bad, &any, 1, MPI_INT, MPI_LOR, comm);
    if (!any && kit_rank == 0)
        FAIL("%s:%s: validation accepted buffers no data was received into", op->name, op->impl);
}

/* The suite with small parameters, registered once. */
static void suite_setup(void)
{
    char err[256] = "";
    /* small parameters keep the test short; the counts test checks they are honoured */
    if (mpilab_suite_parse_option("window", "8", err, sizeof err) || mpilab_suite_parse_option("poll-sweep", "0,200", err, sizeof err) ||
        mpilab_suite_parse_option("comb-msgs", "4", err, sizeof err)) {
        FAIL("option: %s", err);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    if (mpilab_suite_register() != 0)
        FAIL("register failed: %s", mpilab_ops_error());
}

MPILAB_TEST(every_entry_measured_with_its_derived_values)
{
    int rank = kit_rank, size = kit_size;
    char err[256] = "";
    suite_setup();
    mpilab_bench_opts_t bo;
    mpilab_bench_opts_default(&bo);
    bo.prec.min_reps = bo.prec.max_reps = 3;
    bo.prec.max_time = 0.0; /* exactly 3: the 1 s default budget stopped an overlap entry
                              * after one repetition on a loaded machine */
    mpilab_bench_t *b = NULL;
    if (mpilab_bench_init(MPI_COMM_WORLD, &bo, &b, err, sizeof err) != 0) {
        FAIL("init: %s", err);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    const size_t sizes[] = {0, 1, 4093, 100000};
    for (size_t k = 0; k < mpilab_ops_count(); k++) {
        const mpilab_op_t *op = mpilab_ops_get(k);
        if (!mpilab_suite_is_entry(op))
            continue;
        for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++) {
            size_t bytes = sizes[s];
            if (bytes == 100000 && strcmp(op->name, "comb") != 0 && strcmp(op->name, "stream") != 0 &&
                strcmp(op->name, "exchange") != 0)
                continue; /* the big size only where it differs in protocol from 4093 */
            mpilab_result_t r;
            if (mpilab_bench_measure(b, op, bytes, MPILAB_TIMING_MAX, &r, err, sizeof err) != 0) {
                FAIL("%s:%s %zu: %s", op->name, op->impl, bytes, err);
                continue;
            }
            if (!r.data_ok)
                FAIL("%s:%s %zu: wrong data", op->name, op->impl, bytes);
            if (r.stats.reps != 3 || !(r.stats.mean > 0.0))
                FAIL("%s:%s %zu: reps %zu mean %g", op->name, op->impl, bytes, r.stats.reps, r.stats.mean);
            /* the engine derived them from the median, with the entry's state */
            double t = r.stats.median;
            const mpilab_derived_t *dv = &r.derived;
            for (size_t k = 0; k < dv->n; k++)
                if (!declared(op, dv->v[k].key))
                    FAIL("%s:%s: derive set '%s', which the entry does not declare", op->name, op->impl,
                         dv->v[k].key);
            if (!r.derived_ok) {
                FAIL("%s:%s %zu: no derived values", op->name, op->impl, bytes);
            } else {
                double bb = (double)bytes;
                const char *n = op->name;
                if (!strcmp(n, "pingpong") && (!rel_eq(D("latency_s"), t / 2) || !rel_eq(D("bandwidth_Bps"), bb / (t / 2))))
                    FAIL("pingpong derived %g %g", D("latency_s"), D("bandwidth_Bps"));
                if (!strcmp(n, "pingping") && !rel_eq(D("bandwidth_Bps"), bb / t))
                    FAIL("pingping derived");
                if (!strcmp(n, "sendrecv") && !rel_eq(D("bandwidth_Bps"), 2 * bb / t))
                    FAIL("sendrecv derived");
                if (!strcmp(n, "exchange") && !rel_eq(D("bandwidth_Bps"), 4 * bb / t))
                    FAIL("exchange derived");
                if (!strcmp(n, "stream") && (D("window") != 8 || D("pairs") != 1 || !rel_eq(D("msg_rate"), 8 / t) ||
                                             !rel_eq(D("bandwidth_Bps"), 8 * bb / t)))
                    FAIL("stream derived window %g rate %g", D("window"), D("msg_rate"));
                if (!strcmp(n, "stream_multi") && (D("pairs") != size / 2 || !rel_eq(D("msg_rate"), (double)(size / 2) * 8 / t)))
                    FAIL("stream_multi derived pairs %g", D("pairs"));
                if (!strcmp(n, "comb")) {
                    if (D("msgs") != 4 || !rel_eq(D("msg_rate"), 4 / t) || !(D("work_rate") > 0))
                        FAIL("comb derived msgs %g", D("msgs"));
                    if (rank < 2 && !strcmp(op->impl, "poll0") && D("cpu_avail") != 0.0)
                        FAIL("comb poll0: cpu_avail %g, expected 0 (no work between polls)", D("cpu_avail"));
                    if (rank < 2 && !strcmp(op->impl, "poll200") && !(D("cpu_avail") > 0.0 && D("cpu_avail") < 1.5))
                        FAIL("comb poll200: cpu_avail %g outside (0, 1.5)", D("cpu_avail"));
                    /* the pair swapped counters: each rank also knows the other's */
                    if (rank < 2 && !strcmp(op->impl, "poll0") && D("cpu_avail_peer") != 0.0)
                        FAIL("comb poll0: cpu_avail_peer %g, expected 0", D("cpu_avail_peer"));
                    if (rank < 2 && !strcmp(op->impl, "poll200") &&
                        !(D("cpu_avail_peer") > 0.0 && D("cpu_avail_peer") < 1.5))
                        FAIL("comb poll200: cpu_avail_peer %g outside (0, 1.5)", D("cpu_avail_peer"));
                    if (rank >= 2 && !isnan(D("cpu_avail_peer")))
                        FAIL("comb: idle rank %d has cpu_avail_peer %g", rank, D("cpu_avail_peer"));
                    if (D("poll_interval") != (!strcmp(op->impl, "poll0") ? 0.0 : 200.0))
                        FAIL("comb poll interval %g", D("poll_interval"));
                }
                if (!strncmp(n, "overlap", 7) &&
                    (!(D("overlap_pct") >= 0 && D("overlap_pct") <= 100) || !(D("t_comm") > 0) || !(D("t_comp") > 0)))
                    FAIL("%s overlap %g t_comm %g t_comp %g", n, D("overlap_pct"), D("t_comm"), D("t_comp"));
            }
            mpilab_result_free(&r);
        }
    }
    mpilab_bench_finalize(b);
}

MPILAB_TEST(validation_is_not_vacuous)
{
    suite_setup();
    for (size_t k = 0; k < mpilab_ops_count(); k++) {
        const mpilab_op_t *op = mpilab_ops_get(k);
        if (mpilab_suite_is_entry(op) && (strcmp(op->name, "sendrecv") != 0 || kit_size > 1))
            check_not_vacuous(op, 64, MPI_COMM_WORLD);
    }
}

MPILAB_TEST(each_entry_once_one_comb_entry_per_interval)
{
    suite_setup();
    size_t nentries = 0;
    for (size_t k = 0; k < mpilab_ops_count(); k++)
        nentries += mpilab_suite_is_entry(mpilab_ops_get(k));
    /* every fixed entry once, one COMB entry per poll interval, nothing else */
    static const char *const fixed[] = {"pingpong:mpi", "pingping:mpi", "sendrecv:mpi", "exchange:mpi",
                                        "stream:mpi", "stream_multi:mpi", "overlap_isend:mpi",
                                        "overlap_iallreduce:mpi", "comb:poll0", "comb:poll200"};
    size_t nfixed = sizeof fixed / sizeof fixed[0];
    for (size_t k = 0; k < nfixed; k++) {
        char name[64];
        snprintf(name, sizeof name, "%s", fixed[k]);
        char *colon = strchr(name, ':');
        *colon = '\0';
        if (!mpilab_suite_is_entry(mpilab_ops_find(name, colon + 1)))
            FAIL("suite entry %s missing", fixed[k]);
    }
    if (nentries != nfixed)
        FAIL("%zu suite entries, expected %zu", nentries, nfixed);
}

MPILAB_TEST_MAIN()
