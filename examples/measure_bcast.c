/* Use libmpilab's measurement engine from an application at run time: measure the native
 * broadcast at a few sizes with two timing methods, and the round trips between all pairs
 * of ranks, then print what was measured.
 *
 *   mpicc measure_bcast.c $(pkg-config --cflags --libs mpilab) -o measure_bcast
 *   mpirun -np 4 ./measure_bcast
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

#include "mpilab/mpilab.h"

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);

    mpilab_bench_opts_t opts;
    mpilab_bench_opts_default(&opts);
    opts.prec.max_reps = 50; /* repeat until 2.5% at 95% confidence, or 50 times */
    mpilab_bench_t *bench = NULL;
    char err[256];
    if (mpilab_bench_init(MPI_COMM_WORLD, &opts, &bench, err, sizeof err) != 0) {
        if (rank == 0)
            fprintf(stderr, "measure_bcast: %s\n", err);
        MPI_Finalize();
        return 1;
    }
    const mpilab_op_t *bcast = mpilab_ops_find("bcast", "native");
    const size_t sizes[] = {8, 1024, 65536};
    const mpilab_timing_t methods[] = {MPILAB_TIMING_MAX, MPILAB_TIMING_ROOT};
    int status = 0;
    for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++)
        for (size_t m = 0; m < 2; m++) {
            mpilab_result_t r;
            if (mpilab_bench_measure(bench, bcast, sizes[s], methods[m], &r, err, sizeof err) != 0) {
                if (rank == 0)
                    fprintf(stderr, "measure_bcast: %s\n", err);
                status = 1;
                continue;
            }
            if (!r.data_ok)
                status = 1;
            if (rank == 0)
                printf("bcast %7zu B %-4s: %9.3f us +- %7.3f us, %3zu reps%s\n", sizes[s],
                       mpilab_timing_name(methods[m]), r.stats.mean * 1e6, r.stats.ci_half * 1e6,
                       r.stats.reps, r.data_ok ? "" : " WRONG DATA");
            mpilab_result_free(&r);
        }

    if (size > 1) {
        size_t npairs = (size_t)size * (size_t)(size - 1) / 2;
        mpilab_p2p_result_t *pairs = calloc(npairs, sizeof *pairs);
        if (pairs && mpilab_p2p_measure(MPI_COMM_WORLD, 1024, 1024, MPILAB_P2P_PARALLEL, &opts.prec, pairs) ==
                         MPI_SUCCESS) {
            for (size_t k = 0; k < npairs; k++) {
                if (rank == 0)
                    printf("round trip %d<->%d, 1 KiB: %.3f us (%zu reps)\n", pairs[k].pair.i, pairs[k].pair.j,
                           pairs[k].stats.mean * 1e6, pairs[k].stats.reps);
                mpilab_p2p_result_free(&pairs[k]);
            }
        } else {
            status = 1;
        }
        free(pairs);
    }
    mpilab_bench_finalize(bench);
    MPI_Finalize();
    return status;
}
