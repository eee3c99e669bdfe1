/* Every operation-table entry runs and delivers correct data, for several sizes and roots;
 * a user-registered entry is measured by the same engine, and a broken one is caught. */
/* smpicc includes SMPI's smpi_helpers.h first, whose malloc() macro (its interceptor)
 * <malloc.h> cannot be read under: the heap check below is for the MPIs whose ranks are
 * processes (Open MPI, MPICH) */
#if !defined(malloc)
#include <malloc.h>
#define HEAP_CHECK 1
#endif
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MPILAB_KIT_MPI
#include "kit.h"
#include "mpilab/mpilab.h"

/* A user-defined operation: ring shift of `bytes` bytes (each rank sends to rank+1). */
typedef struct ring {
    MPI_Comm comm;
    int rank, size;
    size_t bytes;
    unsigned char *s, *r;
    int broken;
} ring_t;

/* the entry's own data: param 1 = the broken variant */
static int ring_setup(mpilab_op_run_t *run)
{
    ring_t *c = calloc(1, sizeof *c);
    if (!c)
        return -1;
    size_t bytes = run->bytes;
    c->comm = run->comm;
    c->bytes = bytes;
    c->broken = run->op->param == 1;
    c->rank = run->rank;
    c->size = run->size;
    c->s = malloc(bytes + 1);
    c->r = calloc(bytes + 1, 1);
    for (size_t k = 0; k < bytes; k++)
        c->s[k] = mpilab_ops_pattern(c->rank, k);
    run->state = c;
    return 0;
}
static int ring_run(mpilab_op_run_t *run)
{
    ring_t *c = run->state;
    int to = (c->rank + 1) % c->size, from = (c->rank + c->size - 1) % c->size;
    int rc = MPI_Sendrecv(c->s, (int)c->bytes, MPI_BYTE, to, 1, c->r, (int)c->bytes, MPI_BYTE, from, 1,
                          c->comm, MPI_STATUS_IGNORE);
    if (c->broken && c->bytes > 0 && c->rank == 0)
        c->r[c->bytes - 1] ^= 1; /* corrupt one byte on rank 0 */
    return rc;
}
static int ring_validate(mpilab_op_run_t *run)
{
    const ring_t *c = run->state;
    int from = (c->rank + c->size - 1) % c->size;
    for (size_t k = 0; k < c->bytes; k++)
        if (c->r[k] != mpilab_ops_pattern(from, k))
            return 1;
    return 0;
}
static void ring_teardown(mpilab_op_run_t *run)
{
    ring_t *c = run->state;
    free(c->s);
    free(c->r);
    free(c);
}

/* Implementations of every collective that count their calls and call the native one; and
 * ones that move nothing. The generic operations must call the entry's function: counted
 * calls, and data the "idle" ones never moved refused. */
enum { C_SCATTER, C_GATHER, C_BCAST, C_REDUCE, C_ALLREDUCE, C_ALLGATHER, C_ALLTOALL, C_BARRIER, C_N };
static long counted_calls[C_N];
static int count_scatter(const void *s, int sc, MPI_Datatype st, void *r, int rc, MPI_Datatype rt, int root,
                         MPI_Comm comm)
{
    counted_calls[C_SCATTER]++;
    return MPI_Scatter(s, sc, st, r, rc, rt, root, comm);
}
static int count_gather(const void *s, int sc, MPI_Datatype st, void *r, int rc, MPI_Datatype rt, int root,
                        MPI_Comm comm)
{
    counted_calls[C_GATHER]++;
    return MPI_Gather(s, sc, st, r, rc, rt, root, comm);
}
static int count_bcast(void *b, int n, MPI_Datatype t, int root, MPI_Comm comm)
{
    counted_calls[C_BCAST]++;
    return MPI_Bcast(b, n, t, root, comm);
}
static int count_reduce(const void *s, void *r, int n, MPI_Datatype t, MPI_Op op, int root, MPI_Comm comm)
{
    counted_calls[C_REDUCE]++;
    return MPI_Reduce(s, r, n, t, op, root, comm);
}
static int count_allreduce(const void *s, void *r, int n, MPI_Datatype t, MPI_Op op, MPI_Comm comm)
{
    counted_calls[C_ALLREDUCE]++;
    return MPI_Allreduce(s, r, n, t, op, comm);
}
static int count_allgather(const void *s, int sc, MPI_Datatype st, void *r, int rc, MPI_Datatype rt,
                           MPI_Comm comm)
{
    counted_calls[C_ALLGATHER]++;
    return MPI_Allgather(s, sc, st, r, rc, rt, comm);
}
static int count_alltoall(const void *s, int sc, MPI_Datatype st, void *r, int rc, MPI_Datatype rt,
                          MPI_Comm comm)
{
    counted_calls[C_ALLTOALL]++;
    return MPI_Alltoall(s, sc, st, r, rc, rt, comm);
}
static int count_barrier(MPI_Comm comm)
{
    counted_calls[C_BARRIER]++;
    return MPI_Barrier(comm);
}
static int idle_scatter(const void *s, int sc, MPI_Datatype st, void *r, int rc, MPI_Datatype rt, int root,
                        MPI_Comm comm)
{
    (void)s, (void)sc, (void)st, (void)r, (void)rc, (void)rt, (void)root, (void)comm;
    return MPI_SUCCESS;
}
static int idle_bcast(void *b, int n, MPI_Datatype t, int root, MPI_Comm comm)
{
    (void)b, (void)n, (void)t, (void)root, (void)comm;
    return MPI_SUCCESS;
}
static int idle_reduce(const void *s, void *r, int n, MPI_Datatype t, MPI_Op op, int root, MPI_Comm comm)
{
    (void)s, (void)r, (void)n, (void)t, (void)op, (void)root, (void)comm;
    return MPI_SUCCESS;
}
static int idle_allreduce(const void *s, void *r, int n, MPI_Datatype t, MPI_Op op, MPI_Comm comm)
{
    (void)s, (void)r, (void)n, (void)t, (void)op, (void)comm;
    return MPI_SUCCESS;
}
static int idle_allgather(const void *s, int sc, MPI_Datatype st, void *r, int rc, MPI_Datatype rt, MPI_Comm comm)
{
    (void)s, (void)sc, (void)st, (void)r, (void)rc, (void)rt, (void)comm;
    return MPI_SUCCESS;
}

MPILAB_TEST(every_collective_calls_the_entrys_implementation)
{
    const mpilab_op_t counted[] = {
        MPILAB_COLL_ENTRY(scatter, "counted", count_scatter, 0, MPILAB_MODEL_NONE),
        MPILAB_COLL_ENTRY(gather, "counted", count_gather, 0, MPILAB_MODEL_NONE),
        MPILAB_COLL_ENTRY(bcast, "counted", count_bcast, 0, MPILAB_MODEL_NONE),
        MPILAB_COLL_ENTRY(reduce, "counted", count_reduce, 0, MPILAB_MODEL_NONE),
        MPILAB_COLL_ENTRY(allreduce, "counted", count_allreduce, 0, MPILAB_MODEL_NONE),
        MPILAB_COLL_ENTRY(allgather, "counted", count_allgather, 0, MPILAB_MODEL_NONE),
        MPILAB_COLL_ENTRY(alltoall, "counted", count_alltoall, 0, MPILAB_MODEL_NONE),
        MPILAB_COLL_ENTRY(barrier, "counted", count_barrier, 0, MPILAB_MODEL_NONE)};
    const mpilab_op_t idle[] = {MPILAB_COLL_ENTRY(scatter, "idle", idle_scatter, 0, MPILAB_MODEL_NONE),
                                MPILAB_COLL_ENTRY(gather, "idle", idle_scatter, 0, MPILAB_MODEL_NONE),
                                MPILAB_COLL_ENTRY(bcast, "idle", idle_bcast, 0, MPILAB_MODEL_NONE),
                                MPILAB_COLL_ENTRY(reduce, "idle", idle_reduce, 0, MPILAB_MODEL_NONE),
                                MPILAB_COLL_ENTRY(allreduce, "idle", idle_allreduce, 0, MPILAB_MODEL_NONE),
                                MPILAB_COLL_ENTRY(allgather, "idle", idle_allgather, 0, MPILAB_MODEL_NONE),
                                MPILAB_COLL_ENTRY(alltoall, "idle", idle_allgather, 0, MPILAB_MODEL_NONE)};
    size_t ncoll = 0;
    while (mpilab_coll_op_name(ncoll))
        ncoll++;
    REQUIRE(ncoll == C_N); /* a new collective needs its counting implementation here */
    for (size_t k = 0; k < C_N; k++) {
        REQUIRE(strcmp(counted[k].name, mpilab_coll_op_name(k)) == 0);
        long before = counted_calls[k];
        int rc = mpilab_ops_check(&counted[k], 1000, kit_size - 1, MPI_COMM_WORLD);
        if (rc != 0)
            FAIL("%s:counted: %s", counted[k].name, rc > 0 ? "wrong data" : "failed");
        if (counted_calls[k] == before)
            FAIL("%s: the entry's implementation was never called on rank %d", counted[k].name, kit_rank);
    }
    /* every rank holds a part of the result only with two ranks or more */
    for (size_t k = 0; kit_size > 1 && k < sizeof idle / sizeof idle[0]; k++)
        if (mpilab_ops_check(&idle[k], 1000, 0, MPI_COMM_WORLD) != 1)
            FAIL("%s:idle moved nothing, yet its data was not refused", idle[k].name);
}

MPILAB_TEST(table_passes_the_checks_and_holds_collectives)
{
    /* properties of the table, not names */
    char why[300];
    if (mpilab_ops_init(why, sizeof why) != 0)
        FAIL("built-in table refused: %s", why);
    size_t ncoll = 0;
    for (size_t k = 0; k < mpilab_ops_count(); k++)
        ncoll += strcmp(mpilab_ops_get(k)->family, "collective") == 0;
    if (ncoll == 0)
        FAIL("no collective entry in the table");
}

MPILAB_TEST(every_entry_validates_at_every_size_and_root)
{
    int rank = kit_rank, size = kit_size;
    const size_t sizes[] = {0, 1, 7, 1000, 65537};
    /* the grid entries (MPILAB_OP_GRID) get a two-site map: even and odd ranks */
    char map[256] = {0};
    if (rank == 0) {
        const char *tmp = getenv("TMPDIR");
        snprintf(map, sizeof map, "%s/bench_ops_map.%d", tmp && *tmp ? tmp : "/tmp", (int)getpid());
        FILE *f = fopen(map, "w");
        for (int r = 0; f && r < size; r++)
            fprintf(f, "%d s%d\n", r, r % 2);
        if (f)
            fclose(f);
    }
    MPI_Bcast(map, sizeof map, MPI_CHAR, 0, MPI_COMM_WORLD);
    char how[300];
    snprintf(how, sizeof how, "map:%s", map);
    setenv("MPILAB_MULTILANE_SITES", how, 1);
    for (size_t k = 0; k < mpilab_ops_count(); k++) {
        const mpilab_op_t *op = mpilab_ops_get(k);
        for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++) {
            int roots[2] = {0, size - 1};
            for (int ri = 0; ri < 2; ri++) {
                int rc = mpilab_ops_check(op, sizes[s], roots[ri], MPI_COMM_WORLD);
                if (rc != 0 && rank == 0)
                    FAIL("%s:%s bytes=%zu root=%d: %s", op->name, op->impl, sizes[s], roots[ri],
                         rc > 0 ? "wrong data" : "failed");
            }
        }
    }
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0)
        unlink(map);
}

MPILAB_TEST(allreduce_check_catches_a_wrong_result_off_the_root)
{
    /* the root checks every byte of its sum; the others compare a digest with the root's (the
     * expected sums cost bytes x p: p^2 x bytes in one simulated process when every rank
     * computed them). The last rank's result is replaced by a fresh buffer: it must say so,
     * the others must not. */
    if (kit_size < 2)
        return;
    char why[300];
    REQUIRE(mpilab_ops_init(why, sizeof why) == 0);
    const mpilab_op_t *op = mpilab_ops_find("allreduce", "native");
    REQUIRE(op != NULL);
    const size_t sizes[] = {1000, 65537};
    int last = kit_rank == kit_size - 1;
    for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++) {
        mpilab_op_run_t r;
        mpilab_op_run_init(&r, op, sizes[s], 0, MPI_COMM_WORLD);
        REQUIRE(op->setup(&r) == 0);
        REQUIRE(op->run(&r) == MPI_SUCCESS);
        if (last) { /* its received sum gone: the sentinel the setup fills in */
            op->teardown(&r);
            REQUIRE(op->setup(&r) == 0);
        }
        int bad = op->validate(&r) != 0;
        if (last && !bad)
            FAIL("allreduce %zu B: rank %d accepted a result it never received", sizes[s], kit_rank);
        if (!last && bad)
            FAIL("allreduce %zu B: rank %d refused a right result", sizes[s], kit_rank);
        op->teardown(&r);
    }
}

#ifdef HEAP_CHECK
/* Heap bytes in use now (small blocks and mmapped ones; 0 where an interposed allocator,
 * such as ASan's, keeps its own books). */
static size_t heap_in_use(void)
{
    struct mallinfo2 mi = mallinfo2();
    return mi.uordblks + mi.hblkhd;
}

MPILAB_TEST(rooted_blocks_live_on_the_root_only)
{
    /* a scatter's p blocks to send and a gather's p blocks received are the root's alone: on
     * every rank they made p x bytes per rank, p^2 x bytes in one simulated process (SMPI) */
    const size_t block = (size_t)4 << 20;
    const char *names[] = {"scatter", "gather"};
    char why[300];
    REQUIRE(mpilab_ops_init(why, sizeof why) == 0);
    for (size_t k = 0; k < 2; k++) {
        const mpilab_op_t *op = mpilab_ops_find(names[k], "native");
        REQUIRE(op != NULL);
        mpilab_op_run_t r;
        mpilab_op_run_init(&r, op, block, 0, MPI_COMM_WORLD);
        size_t before = heap_in_use();
        REQUIRE(op->setup(&r) == 0);
        size_t after = heap_in_use(), grew = after > before ? after - before : 0;
        size_t all = (size_t)kit_size * block;
        if (kit_rank != 0 && grew >= all)
            FAIL("%s: rank %d holds %zu bytes for a %zu-byte block (the root's p blocks)", names[k],
                 kit_rank, grew, block);
        if (kit_rank == 0 && after > 0 && grew < all)
            FAIL("%s: the root holds %zu bytes, less than its %zu bytes of blocks", names[k], grew, all);
        op->teardown(&r);
    }
}
#endif

MPILAB_TEST(user_entries_through_the_engine)
{
    mpilab_op_t ring = {.name = "ring", .impl = "sendrecv", .bytes_desc = "message", .setup = ring_setup,
                        .run = ring_run, .validate = ring_validate, .teardown = ring_teardown};
    mpilab_op_t broken = {.name = "ring", .impl = "broken", .bytes_desc = "message", .setup = ring_setup,
                          .run = ring_run, .validate = ring_validate, .teardown = ring_teardown, .param = 1};
    if (mpilab_ops_register(&ring) != 0 || mpilab_ops_register(&broken) != 0)
        FAIL("register failed");
    if (mpilab_ops_register(&ring) == 0)
        FAIL("duplicate registration accepted");
    const mpilab_op_t *rop = mpilab_ops_find("ring", "sendrecv");
    const mpilab_op_t *bop = mpilab_ops_find("ring", "broken");
    if (!rop || !bop) {
        FAIL("registered entries not found");
    } else {
        if (mpilab_ops_check(rop, 100, 0, MPI_COMM_WORLD) != 0)
            FAIL("ring: wrong data");
        if (mpilab_ops_check(bop, 100, 0, MPI_COMM_WORLD) != 1)
            FAIL("broken ring: corruption not detected");
        mpilab_bench_opts_t o;
        mpilab_bench_opts_default(&o);
        mpilab_bench_t *b = NULL;
        char err[200];
        if (mpilab_bench_init(MPI_COMM_WORLD, &o, &b, err, sizeof err) != 0) {
            FAIL("init: %s", err);
        } else {
            mpilab_result_t res;
            if (mpilab_bench_measure(b, rop, 4096, MPILAB_TIMING_MAX, &res, err, sizeof err) != 0)
                FAIL("measure ring: %s", err);
            else {
                /* fewer than min_reps only when the time budget ended it (the samples' sum,
                 * as the stopping rule counts it: a loaded machine's slow repetitions) */
                double spent = 0.0;
                for (size_t k = 0; k < res.stats.reps; k++)
                    spent += res.samples[k] > 0.0 ? res.samples[k] : 0.0;
                int budget_spent = o.prec.max_time > 0.0 && spent >= o.prec.max_time && res.stats.reps >= 1;
                if (!res.data_ok || (res.stats.reps < o.prec.min_reps && !budget_spent) || !(res.stats.mean > 0))
                    FAIL("ring measurement: data_ok=%d reps=%zu mean=%g (%.3g s of a %.3g s budget)", res.data_ok,
                         res.stats.reps, res.stats.mean, spent, o.prec.max_time);
            }
            mpilab_result_free(&res);
            if (mpilab_bench_measure(b, bop, 4096, MPILAB_TIMING_MAX, &res, err, sizeof err) != 0)
                FAIL("measure broken: %s", err);
            else if (res.data_ok)
                FAIL("broken ring measured as correct");
            mpilab_result_free(&res);
            mpilab_bench_finalize(b);
        }
    }
    mpilab_ops_clear_registered();
    if (mpilab_ops_find("ring", "sendrecv"))
        FAIL("clear_registered left entries");
}

MPILAB_TEST_MAIN()
