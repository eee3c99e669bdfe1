/* The plainest MPI ping-pong: MPI_Send/MPI_Recv between ranks 0 and 1, 200 warm-up round
 * trips, then ITERS timed one by one; rank 0 prints the median and the minimum half round
 * trip in microseconds. No mpilab code: what an independent program sees on this machine.
 * Usage: minpp BYTES [ITERS] */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

static int mp_cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    long n = argc > 1 ? atol(argv[1]) : 0;
    long iters = argc > 2 ? atol(argv[2]) : (n > 100000 ? 300 : 2000);
    if (n < 0 || n > (1L << 30) || iters < 1 || iters > 10000000) {
        if (rank == 0)
            fprintf(stderr, "minpp: usage: minpp BYTES [ITERS]\n");
        MPI_Finalize();
        return 2;
    }
    char *buf = calloc((size_t)n + 1, 1);
    double *d = malloc(sizeof(double) * (size_t)iters);
    if (!buf || !d)
        MPI_Abort(MPI_COMM_WORLD, 1);
    for (long i = -200; i < iters; i++) {
        double t0 = MPI_Wtime();
        if (rank == 0) {
            MPI_Send(buf, (int)n, MPI_CHAR, 1, 0, MPI_COMM_WORLD);
            MPI_Recv(buf, (int)n, MPI_CHAR, 1, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        } else if (rank == 1) {
            MPI_Recv(buf, (int)n, MPI_CHAR, 0, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            MPI_Send(buf, (int)n, MPI_CHAR, 0, 0, MPI_COMM_WORLD);
        }
        if (i >= 0)
            d[i] = (MPI_Wtime() - t0) / 2;
    }
    if (rank == 0) {
        qsort(d, (size_t)iters, sizeof d[0], mp_cmp);
        printf("%.3f %.3f\n", d[iters / 2] * 1e6, d[0] * 1e6);
    }
    free(buf);
    free(d);
    MPI_Finalize();
    return 0;
}
