/* Wavefront distributed mode: one band file per rank, frontiers over MPI; results must be
 * bitwise identical to the sequential reference for every layout, two block sizes (not
 * dividing the matrix), 1-3 waves and the I/O back ends, band chaining, and block chaining
 * (W = 1-3 with K = 4: sweeps that do and do not divide K) with pread and mmap. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "mpilab/wavefront.h"
#include "mpi_world.h"

int main(int argc, char **argv)
{
    int provided;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_FUNNELED, &provided);
    mpilab_test_check_world(1);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    char dir[256] = "/tmp/mpilab-wf-dist-XXXXXX", err[1024], p[512], q[512];
    if (rank == 0 && !mkdtemp(dir))
        MPI_Abort(MPI_COMM_WORLD, 1);
    MPI_Bcast(dir, sizeof dir, MPI_CHAR, 0, MPI_COMM_WORLD);
    const int64_t M = 37, N = 53, K = 4;
    int fails = 0, runs = 0;
    double *ref = NULL;
    if (rank == 0) {
        snprintf(p, sizeof p, "%s/d0", dir);
        snprintf(q, sizeof q, "%s/c0", dir);
        if (mpilab_wf_create(p, q, M, N, 5, err, sizeof err)) {
            fprintf(stderr, "create: %s\n", err);
            MPI_Abort(MPI_COMM_WORLD, 1);
        }
        const char *a[1] = {p}, *b[1] = {q};
        double *coef;
        int64_t r, c, pl;
        if (mpilab_wf_load(a, 1, &ref, &r, &c, &pl, err, sizeof err) ||
            mpilab_wf_load(b, 1, &coef, &r, &c, &pl, err, sizeof err))
            MPI_Abort(MPI_COMM_WORLD, 1);
        mpilab_wf_reference(ref, coef, M, N, K);
        free(coef);
    }
    const int have_uring = mpilab_wf_io_available(MPILAB_WF_IO_URING, NULL, 0);
    const int64_t blocks[][2] = {{8, 5}, {5, 7}};
    for (int lay = 0; lay < 3; lay++)
        for (int b = 0; b < 2; b++)
            for (int waves = 1; waves <= 3; waves++)
                for (int iox = 0; iox < 5; iox++) {
                    /* 0-2: band chaining with pread, mmap, uring; 3, 4: block chaining with
                     * pread (helper for odd W, synchronous for even) and mmap */
                    const int chain = iox >= 3 ? MPILAB_WF_CHAIN_BLOCK : MPILAB_WF_CHAIN_BAND;
                    const int io = iox == 3 ? MPILAB_WF_IO_PREAD : iox == 4 ? MPILAB_WF_IO_MMAP : iox;
                    if (io == MPILAB_WF_IO_URING && !have_uring)
                        continue;
                    int64_t mb = blocks[b][0], nb = blocks[b][1];
                    if (rank == 0) {
                        mpilab_wf_convert_opts o = {lay, mb, nb, 1, size};
                        const char *a[1] = {p}, *cc[1] = {q};
                        char out[512];
                        snprintf(out, sizeof out, "%s/d", dir);
                        int rc = mpilab_wf_convert(a, 1, out, &o, err, sizeof err);
                        snprintf(out, sizeof out, "%s/c", dir);
                        rc |= mpilab_wf_convert(cc, 1, out, &o, err, sizeof err);
                        if (rc) {
                            fprintf(stderr, "convert: %s\n", err);
                            MPI_Abort(MPI_COMM_WORLD, 1);
                        }
                    }
                    MPI_Barrier(MPI_COMM_WORLD);
                    char dbase[512], cbase[512];
                    snprintf(dbase, sizeof dbase, "%s/d", dir);
                    snprintf(cbase, sizeof cbase, "%s/c", dir);
                    /* io_uring with queue depths 2, 3, 4 */
                    mpilab_wf_run_opts o = {K, 1, waves, io, lay == 0 ? mb : 0, lay == 0 ? nb : 0,
                                            io != 0, io < 2 && waves == 2, waves + 1, chain, 0};
                    if (chain == MPILAB_WF_CHAIN_BLOCK)
                        o.no_prefetch = iox == 3 && waves % 2 == 0;
                    mpilab_wf_stats st;
                    if (mpilab_wf_run_mpi(MPI_COMM_WORLD, dbase, cbase, &o, &st, err, sizeof err)) {
                        if (rank == 0)
                            fprintf(stderr, "FAIL run: %s\n", err);
                        fails++;
                        continue;
                    }
                    if (rank == 0) {
                        runs++;
                        char **paths = malloc((size_t)size * sizeof *paths);
                        for (int i = 0; i < size; i++) {
                            paths[i] = malloc(600);
                            snprintf(paths[i], 600, "%s.%d", dbase, i);
                        }
                        double *got;
                        int64_t r, c, pl;
                        if (mpilab_wf_load((const char *const *)paths, size, &got, &r, &c, &pl, err, sizeof err)) {
                            fprintf(stderr, "FAIL load: %s\n", err);
                            fails++;
                        } else {
                            if (memcmp(got, ref, (size_t)(M * N) * 8) != 0) {
                                fprintf(stderr, "FAIL: not bitwise equal (ranks %d layout %s block %lldx%lld waves %d io %s chain %s)\n",
                                        size, mpilab_wf_layout_name(lay), (long long)mb, (long long)nb, waves,
                                        mpilab_wf_io_name(io), mpilab_wf_chain_name(chain));
                                fails++;
                            }
                            if (st.iterations != K || st.bytes_read <= 0 || !st.iter_s || st.iter_s[K - 1] < 0) {
                                fprintf(stderr, "FAIL: stats\n");
                                fails++;
                            }
                            free(got);
                        }
                        for (int i = 0; i < size; i++)
                            free(paths[i]);
                        free(paths);
                    }
                    mpilab_wf_stats_free(&st);
                    MPI_Barrier(MPI_COMM_WORLD);
                }
    /* block chaining with io_uring is refused on every rank (one line) */
    {
        mpilab_wf_run_opts o = {1, 1, 2, MPILAB_WF_IO_URING, 0, 0, 1, 0, 0, MPILAB_WF_CHAIN_BLOCK, 0};
        mpilab_wf_stats st;
        char dbase[512], cbase[512];
        snprintf(dbase, sizeof dbase, "%s/d", dir);
        snprintf(cbase, sizeof cbase, "%s/c", dir);
        int rc = mpilab_wf_run_mpi(MPI_COMM_WORLD, dbase, cbase, &o, &st, err, sizeof err);
        if (rc == 0 || !strstr(err, "io_uring") || strchr(err, '\n')) {
            if (rank == 0)
                fprintf(stderr, "FAIL: io_uring with block chaining accepted (%s)\n", err);
            fails++;
        }
    }
    /* --io-turns (a turn shared by threads) is refused on every rank (one line) */
    {
        mpilab_wf_run_opts o = {1, 1, 1, MPILAB_WF_IO_PREAD, 0, 0, 1, 0, 0, 0, 1};
        mpilab_wf_stats st;
        char dbase[512], cbase[512];
        snprintf(dbase, sizeof dbase, "%s/d", dir);
        snprintf(cbase, sizeof cbase, "%s/c", dir);
        int rc = mpilab_wf_run_mpi(MPI_COMM_WORLD, dbase, cbase, &o, &st, err, sizeof err);
        if (rc == 0 || !strstr(err, "io-turns") || strchr(err, '\n')) {
            if (rank == 0)
                fprintf(stderr, "FAIL: --io-turns accepted in MPI mode (%s)\n", err);
            fails++;
        }
    }
    /* a missing band file is reported on every rank, nobody hangs */
    {
        mpilab_wf_run_opts o = {1, 1, 1, 0, 0, 0, 1, 0, 0, 0, 0};
        mpilab_wf_stats st;
        char dbase[512];
        snprintf(dbase, sizeof dbase, "%s/missing", dir);
        int rc = mpilab_wf_run_mpi(MPI_COMM_WORLD, dbase, dbase, &o, &st, err, sizeof err);
        if (rc == 0 || !strstr(err, "missing")) {
            if (rank == 0)
                fprintf(stderr, "FAIL: missing band accepted (%s)\n", err);
            fails++;
        }
    }
    int tot = 0;
    MPI_Allreduce(&fails, &tot, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0) {
        printf("distributed runs on %d ranks: %d, failures %d\n", size, runs, tot);
        free(ref);
        if (!tot) {
            char cmd[600];
            snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
            if (system(cmd) != 0)
                fprintf(stderr, "cannot remove %s\n", dir);
        }
    }
    MPI_Finalize();
    return tot ? 1 : 0;
}
