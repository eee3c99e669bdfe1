/* Tuned scatter/gather under MPI: with a table whose winner changes with the message
 * size, each call must run the implementation the table names (counted by wrappers, on
 * every rank) and deliver exactly what MPI_Scatter / MPI_Gather deliver. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MPILAB_KIT_MPI
#include "kit.h"
#include "mpilab/coll.h"

static int rank, nprocs;
static long n_lin, n_bin;

static int sc_lin(const void *s, int sc, MPI_Datatype st, void *r, int rc, MPI_Datatype rt,
                  int root, MPI_Comm comm)
{
    n_lin++;
    return mpilab_scatter_linear(s, sc, st, r, rc, rt, root, comm);
}
static int sc_bin(const void *s, int sc, MPI_Datatype st, void *r, int rc, MPI_Datatype rt,
                  int root, MPI_Comm comm)
{
    n_bin++;
    return mpilab_scatter_binomial(s, sc, st, r, rc, rt, root, comm);
}
static int ga_lin(const void *s, int sc, MPI_Datatype st, void *r, int rc, MPI_Datatype rt,
                  int root, MPI_Comm comm)
{
    n_lin++;
    return mpilab_gather_linear(s, sc, st, r, rc, rt, root, comm);
}
static int ga_bin(const void *s, int sc, MPI_Datatype st, void *r, int rc, MPI_Datatype rt,
                  int root, MPI_Comm comm)
{
    n_bin++;
    return mpilab_gather_binomial(s, sc, st, r, rc, rt, root, comm);
}

/* One scatter + one gather of `k` units: send side MPI_INT x (3k), receive side contig3 x k
 * (so both sides see 12k bytes); `want_lin` says which implementation must run. */
static void run(const mpilab_tuned_t *ts, const mpilab_tuned_t *tg, MPI_Datatype contig3,
                int k, int root, int want_lin)
{
    const size_t per = (size_t)k * 3, p = (size_t)nprocs;
    int *all = malloc((per * p + 1) * sizeof *all);
    int *ref = malloc((per + 1) * sizeof *ref), *out = malloc((per + 1) * sizeof *out);
    for (size_t i = 0; i < per * p; i++)
        all[i] = (int)(i * 2654435761u % 100003u) + root;
    memset(ref, 0x5a, (per + 1) * sizeof *ref);
    memset(out, 0x5a, (per + 1) * sizeof *out);
    long l0 = n_lin, b0 = n_bin;
    MPI_Scatter(all, 3 * k, MPI_INT, ref, k, contig3, root, MPI_COMM_WORLD);
    int rc = mpilab_tuned_scatter(ts, all, 3 * k, MPI_INT, out, k, contig3, root, MPI_COMM_WORLD);
    CHECKF(rc == MPI_SUCCESS, "tuned scatter rc %d", rc);
    CHECKF(memcmp(ref, out, (per + 1) * sizeof *ref) == 0, "scatter data differs (k=%d root=%d)",
          k, root);
    CHECKF(n_lin - l0 == want_lin && n_bin - b0 == !want_lin,
          "scatter k=%d ran linear %ld binomial %ld times, want %s", k, n_lin - l0, n_bin - b0,
          want_lin ? "linear" : "binomial");

    /* gather the scattered blocks back: must reproduce `all` on the root */
    int *back = malloc((per * p + 1) * sizeof *back), *gref = malloc((per * p + 1) * sizeof *gref);
    memset(back, 0x33, (per * p + 1) * sizeof *back);
    memset(gref, 0x33, (per * p + 1) * sizeof *gref);
    l0 = n_lin;
    b0 = n_bin;
    MPI_Gather(ref, k, contig3, gref, 3 * k, MPI_INT, root, MPI_COMM_WORLD);
    rc = mpilab_tuned_gather(tg, ref, k, contig3, back, 3 * k, MPI_INT, root, MPI_COMM_WORLD);
    CHECKF(rc == MPI_SUCCESS, "tuned gather rc %d", rc);
    if (rank == root) {
        CHECKF(memcmp(gref, back, (per * p + 1) * sizeof *back) == 0, "gather data differs");
        CHECKF(memcmp(all, back, per * p * sizeof *all) == 0, "gather did not invert scatter");
    }
    CHECKF(n_lin - l0 == want_lin && n_bin - b0 == !want_lin,
          "gather k=%d ran linear %ld binomial %ld times", k, n_lin - l0, n_bin - b0);
    free(all);
    free(ref);
    free(out);
    free(back);
    free(gref);
}

MPILAB_TEST(each_call_runs_the_tables_winner_and_matches_mpi)
{
    rank = kit_rank;
    nprocs = kit_size;
    MPI_Datatype contig3;
    MPI_Type_contiguous(3, MPI_INT, &contig3);
    MPI_Type_commit(&contig3);

    /* linear wins at 0 bytes, binomial at 4096; the lines cross at 512 bytes
     * (linear 1 + 9 f, binomial 2 + f, f = 1/8 of 4096). */
    const size_t sizes[] = {0, 4096};
    const double times[] = {1, 2, 10, 3};
    const char *names[] = {"linear", "binomial"};
    const mpilab_scatter_fn sfn[] = {sc_lin, sc_bin};
    const mpilab_gather_fn gfn[] = {ga_lin, ga_bin};
    mpilab_tuned_t *ts = mpilab_tuned_scatter_create(2, sfn, names, 2, sizes, times);
    mpilab_tuned_t *tg = mpilab_tuned_gather_create(2, gfn, names, 2, sizes, times);
    if (!ts || !tg) {
        fprintf(stderr, "create failed: %s\n", mpilab_coll_last_error());
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    for (int root = 0; root < nprocs; root++) {
        run(ts, tg, contig3, 0, root, 1);    /* 0 bytes */
        run(ts, tg, contig3, 42, root, 1);   /* 504 bytes: just below the crossing */
        run(ts, tg, contig3, 43, root, 0);   /* 516 bytes: just above */
        run(ts, tg, contig3, 1000, root, 0); /* 12000 bytes: beyond the table */
    }
    mpilab_tuned_free(ts);
    mpilab_tuned_free(tg);
    MPI_Type_free(&contig3);
}

MPILAB_TEST_MAIN()
