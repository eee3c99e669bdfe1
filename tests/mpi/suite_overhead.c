/* Measurement overhead of the suite: small-message ping-pong latency measured by mpilab
 * (engine + pingpong entry) and by a bare hand loop of MPI_Send/MPI_Recv, alternating in
 * the same run. Prints one JSON object per size on rank 0. Not a test: bench/ runs it.
 * usage: suite_overhead [BYTES [ROUNDS [ITERS]]] */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

#include "common/common.h"
#include "mpilab/mpilab.h"
#include "mpilab/suite.h"

static int cmp_double(const void *x, const void *y)
{
    double a = *(const double *)x, b = *(const double *)y;
    return (a > b) - (a < b);
}

/* The hand loop, timed the way the engine times pipelined repetitions: `chunks` chunks of
 * `depth` back-to-back round trips, a barrier before each chunk; returns the median over
 * chunks of the one-way time (chunk time / depth / 2). */
static double bare(size_t bytes, size_t depth, size_t chunks, MPI_Comm comm, int rank, unsigned char *buf)
{
    double *t = calloc(chunks, sizeof *t);
    if (!t)
        MPI_Abort(comm, 1);
    for (size_t c = 0; c < chunks; c++) {
        MPI_Barrier(comm);
        double t0 = MPI_Wtime();
        for (size_t k = 0; k < depth; k++) {
            if (rank == 0) {
                MPI_Send(buf, (int)bytes, MPI_BYTE, 1, 1, comm);
                MPI_Recv(buf, (int)bytes, MPI_BYTE, 1, 1, comm, MPI_STATUS_IGNORE);
            } else if (rank == 1) {
                MPI_Recv(buf, (int)bytes, MPI_BYTE, 0, 1, comm, MPI_STATUS_IGNORE);
                MPI_Send(buf, (int)bytes, MPI_BYTE, 0, 1, comm);
            }
        }
        t[c] = (MPI_Wtime() - t0) / (double)depth / 2.0;
    }
    qsort(t, chunks, sizeof *t, cmp_double);
    double med = chunks % 2 ? t[chunks / 2] : 0.5 * (t[chunks / 2 - 1] + t[chunks / 2]);
    free(t);
    MPI_Bcast(&med, 1, MPI_DOUBLE, 0, comm);
    return med;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    long long bytes = 1, rounds = 5, iters = 2000;
    if ((argc > 1 && mpilab_parse_i64(argv[1], &bytes)) || (argc > 2 && mpilab_parse_i64(argv[2], &rounds)) ||
        (argc > 3 && mpilab_parse_i64(argv[3], &iters)) || bytes < 0 || bytes > 1 << 20 || rounds < 1 ||
        iters < 1 || size != 2) {
        if (rank == 0)
            fprintf(stderr, "suite_overhead: usage: suite_overhead [BYTES<=1M [ROUNDS [ITERS]]] on 2 ranks\n");
        MPI_Finalize();
        return 2;
    }
    char err[256];
    mpilab_suite_register();
    mpilab_bench_opts_t bo;
    mpilab_bench_opts_default(&bo);
    /* the engine's samples are single round trips; pipelined isolation amortises the
     * per-repetition barrier the same way the hand loop does */
    bo.isolation = MPILAB_ISO_NONE;
    const size_t chunks = 20;
    bo.pipeline_depth = (size_t)iters / chunks > 0 ? (size_t)iters / chunks : 1;
    bo.prec.min_reps = bo.prec.max_reps = chunks;
    bo.prec.max_time = 0.0; /* exactly `chunks`: no time budget on a loaded machine */
    mpilab_bench_t *b = NULL;
    if (mpilab_bench_init(MPI_COMM_WORLD, &bo, &b, err, sizeof err) != 0)
        MPI_Abort(MPI_COMM_WORLD, 1);
    unsigned char *buf = calloc((size_t)bytes + 1, 1);
    const mpilab_op_t *op = mpilab_ops_find("pingpong", "mpi");
    bare((size_t)bytes, bo.pipeline_depth, 2, MPI_COMM_WORLD, rank, buf); /* warm-up */
    for (long long r = 0; r < rounds; r++) {
        double tb = bare((size_t)bytes, bo.pipeline_depth, chunks, MPI_COMM_WORLD, rank, buf);
        mpilab_result_t res;
        if (mpilab_bench_measure(b, op, (size_t)bytes, MPILAB_TIMING_MAX, &res, err, sizeof err) != 0 ||
            !res.data_ok)
            MPI_Abort(MPI_COMM_WORLD, 1);
        double tm = res.stats.mean / 2.0, tmed = res.stats.median / 2.0;
        if (rank == 0)
            printf("{\"bytes\": %lld, \"round\": %lld, \"bare_s\": %.9g, \"mpilab_mean_s\": %.9g, "
                   "\"mpilab_median_s\": %.9g, \"ratio\": %.6f}\n",
                   bytes, r, tb, tm, tmed, tmed / tb);
        mpilab_result_free(&res);
    }
    free(buf);
    mpilab_bench_finalize(b);
    MPI_Finalize();
    return 0;
}
