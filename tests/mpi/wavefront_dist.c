/* Wavefront distributed mode: one band file per rank, frontiers over MPI; results must be
 * bitwise identical to the sequential reference for every layout, two block sizes (not
 * dividing the matrix), 1-3 waves and the I/O back ends, band chaining, and block chaining
 * (W = 1-3 with K = 4: sweeps that do and do not divide K) with pread and mmap. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MPILAB_KIT_MPI
#define MPILAB_KIT_MPI_THREAD MPI_THREAD_FUNNELED /* the engine's I/O helper threads */
#include "kit.h"
#include "mpilab/wavefront.h"

static const int64_t M = 37, N = 53, K = 4;

/* The cases' problem, made on the first case's call (collective): a scratch directory (rank
 * 0's, removed at exit when rank 0 saw no failure), the M x N matrix and its coefficients
 * (d0, c0) and, on rank 0, the sequential reference after K iterations. */
static struct {
    char dir[256], d0[512], c0[512];
    double *ref;
    int made;
} fx = {.dir = "/tmp/mpilab-wf-dist-XXXXXX"};

static void fixture_remove(void)
{
    char cmd[600];
    free(fx.ref);
    if (kit_failures)
        return;
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", fx.dir);
    if (system(cmd) != 0)
        fprintf(stderr, "cannot remove %s\n", fx.dir);
}

static void fixture(void)
{
    char err[1024];
    if (fx.made)
        return;
    fx.made = 1;
    if (kit_rank == 0 && !mkdtemp(fx.dir))
        MPI_Abort(MPI_COMM_WORLD, 1);
    MPI_Bcast(fx.dir, sizeof fx.dir, MPI_CHAR, 0, MPI_COMM_WORLD);
    snprintf(fx.d0, sizeof fx.d0, "%s/d0", fx.dir);
    snprintf(fx.c0, sizeof fx.c0, "%s/c0", fx.dir);
    if (kit_rank != 0)
        return;
    atexit(fixture_remove);
    if (mpilab_wf_create(fx.d0, fx.c0, M, N, 5, err, sizeof err)) {
        fprintf(stderr, "create: %s\n", err);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    const char *a[1] = {fx.d0}, *b[1] = {fx.c0};
    double *coef;
    int64_t r, c, pl;
    if (mpilab_wf_load(a, 1, &fx.ref, &r, &c, &pl, err, sizeof err) ||
        mpilab_wf_load(b, 1, &coef, &r, &c, &pl, err, sizeof err))
        MPI_Abort(MPI_COMM_WORLD, 1);
    mpilab_wf_reference(fx.ref, coef, M, N, K);
    free(coef);
}

/* One point of the grid: layout lay, blocking b, waves, back end iox (0-2: band chaining with
 * pread, mmap, uring; 3, 4: block chaining with pread, helper for odd W and synchronous for
 * even, and mmap), converted into bands and run on every rank; bitwise against the reference. */
static void grid_point(int lay, int b, int waves, int iox, int have_uring)
{
    static const int64_t blocks[][2] = {{8, 5}, {5, 7}};
    char err[1024];
    const int chain = iox >= 3 ? MPILAB_WF_CHAIN_BLOCK : MPILAB_WF_CHAIN_BAND;
    const int io = iox == 3 ? MPILAB_WF_IO_PREAD : iox == 4 ? MPILAB_WF_IO_MMAP : iox;
    if (io == MPILAB_WF_IO_URING && !have_uring)
        return;
    int64_t mb = blocks[b][0], nb = blocks[b][1];
    if (kit_rank == 0) {
        mpilab_wf_convert_opts o = {lay, mb, nb, 1, kit_size};
        const char *a[1] = {fx.d0}, *cc[1] = {fx.c0};
        char out[512];
        snprintf(out, sizeof out, "%s/d", fx.dir);
        int rc = mpilab_wf_convert(a, 1, out, &o, err, sizeof err);
        snprintf(out, sizeof out, "%s/c", fx.dir);
        rc |= mpilab_wf_convert(cc, 1, out, &o, err, sizeof err);
        if (rc) {
            fprintf(stderr, "convert: %s\n", err);
            MPI_Abort(MPI_COMM_WORLD, 1);
        }
    }
    MPI_Barrier(MPI_COMM_WORLD);
    char dbase[512], cbase[512];
    snprintf(dbase, sizeof dbase, "%s/d", fx.dir);
    snprintf(cbase, sizeof cbase, "%s/c", fx.dir);
    /* io_uring with queue depths 2, 3, 4 */
    mpilab_wf_run_opts o = {K, 1, waves, io, lay == 0 ? mb : 0, lay == 0 ? nb : 0,
                            io != 0, io < 2 && waves == 2, waves + 1, chain, 0, 0};
    if (chain == MPILAB_WF_CHAIN_BLOCK)
        o.no_prefetch = iox == 3 && waves % 2 == 0;
    mpilab_wf_stats st;
    if (mpilab_wf_run_mpi(MPI_COMM_WORLD, dbase, cbase, &o, &st, err, sizeof err)) {
        if (kit_rank == 0)
            FAIL("run: %s", err);
        return;
    }
    if (kit_rank == 0) {
        char **paths = malloc((size_t)kit_size * sizeof *paths);
        for (int i = 0; i < kit_size; i++) {
            paths[i] = malloc(600);
            snprintf(paths[i], 600, "%s.%d", dbase, i);
        }
        double *got;
        int64_t r, c, pl;
        if (mpilab_wf_load((const char *const *)paths, kit_size, &got, &r, &c, &pl, err, sizeof err)) {
            FAIL("load: %s", err);
        } else {
            if (memcmp(got, fx.ref, (size_t)(M * N) * 8) != 0) {
                FAIL("not bitwise equal (ranks %d layout %s block %lldx%lld waves %d io %s chain %s)",
                        kit_size, mpilab_wf_layout_name(lay), (long long)mb, (long long)nb, waves,
                        mpilab_wf_io_name(io), mpilab_wf_chain_name(chain));
            }
            CHECKF(st.iterations == K && st.bytes_read > 0 && st.iter_s && st.iter_s[K - 1] >= 0, "stats");
            free(got);
        }
        for (int i = 0; i < kit_size; i++)
            free(paths[i]);
        free(paths);
    }
    mpilab_wf_stats_free(&st);
    MPI_Barrier(MPI_COMM_WORLD);
}

MPILAB_TEST(bitwise_equal_to_reference)
{
    fixture();
    const int have_uring = mpilab_wf_io_available(MPILAB_WF_IO_URING, NULL, 0);
    for (int lay = 0; lay < 3; lay++)
        for (int b = 0; b < 2; b++)
            for (int waves = 1; waves <= 3; waves++)
                for (int iox = 0; iox < 5; iox++)
                    grid_point(lay, b, waves, iox, have_uring);
}

/* A refused run: every rank gets the one-line message naming what. */
static void refused(const mpilab_wf_run_opts *o, const char *band, const char *what)
{
    char dbase[512], cbase[512], err[1024];
    mpilab_wf_stats st;
    snprintf(dbase, sizeof dbase, "%s/%s", fx.dir, band);
    snprintf(cbase, sizeof cbase, "%s/%s", fx.dir, band[0] == 'd' && !band[1] ? "c" : band);
    int rc = mpilab_wf_run_mpi(MPI_COMM_WORLD, dbase, cbase, o, &st, err, sizeof err);
    CHECKF(rc != 0 && strstr(err, what) && !strchr(err, '\n'), "accepted, or not one line naming %s: '%s'",
           what, err);
}

/* block chaining with io_uring is refused on every rank (one line) */
MPILAB_TEST(uring_with_block_chaining_refused)
{
    fixture();
    mpilab_wf_run_opts o = {1, 1, 2, MPILAB_WF_IO_URING, 0, 0, 1, 0, 0, MPILAB_WF_CHAIN_BLOCK, 0, 0};
    refused(&o, "d", "io_uring");
}

/* --io-turns (a turn shared by threads) is refused on every rank (one line) */
MPILAB_TEST(io_turns_refused)
{
    fixture();
    mpilab_wf_run_opts o = {1, 1, 1, MPILAB_WF_IO_PREAD, 0, 0, 1, 0, 0, 0, 1, 0};
    refused(&o, "d", "io-turns");
}

/* a missing band file is reported on every rank, nobody hangs */
MPILAB_TEST(missing_band_reported)
{
    fixture();
    mpilab_wf_run_opts o = {1, 1, 1, 0, 0, 0, 1, 0, 0, 0, 0, 0};
    refused(&o, "missing", "missing");
}

MPILAB_TEST_MAIN()
