/* Opt_Scatter, after MPIBlib: measure every scatter implementation at a few message sizes
 * at start-up, build mpilab's tuned dispatcher from the measured table, then use it like
 * MPI_Scatter.  Uses only the public headers:
 *
 *   mpicc opt_scatter.c $(pkg-config --cflags --libs mpilab) -o opt_scatter
 *   mpirun -np 4 ./opt_scatter [--reps N] [--max-bytes B]
 *
 * Timing: a barrier before every repetition, each rank's local time, the maximum over
 * ranks (MPI_Allreduce), the median over repetitions.  The table is therefore identical
 * on every rank, which the dispatcher needs (all ranks must pick the same algorithm). */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <mpi.h>

#include "mpilab/coll.h"

#define NIMPL 3
#define MAXSIZES 32

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Median over `reps` barrier-separated repetitions of the slowest rank's time. */
static double measure(mpilab_scatter_fn fn, const char *sendbuf, char *recvbuf, int count,
                      int reps, MPI_Comm comm)
{
    double *t = malloc((size_t)reps * sizeof *t);
    if (!t)
        MPI_Abort(comm, 1);
    fn(sendbuf, count, MPI_BYTE, recvbuf, count, MPI_BYTE, 0, comm); /* warm-up */
    for (int r = 0; r < reps; r++) {
        MPI_Barrier(comm);
        double t0 = MPI_Wtime();
        fn(sendbuf, count, MPI_BYTE, recvbuf, count, MPI_BYTE, 0, comm);
        double local = MPI_Wtime() - t0;
        MPI_Allreduce(&local, &t[r], 1, MPI_DOUBLE, MPI_MAX, comm);
    }
    qsort(t, (size_t)reps, sizeof *t, cmp_double);
    double med = reps % 2 ? t[reps / 2] : 0.5 * (t[reps / 2 - 1] + t[reps / 2]);
    free(t);
    return med;
}

static int parse_long(const char *s, long lo, long hi, long *out)
{
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || end == s || *end || v < lo || v > hi)
        return -1;
    *out = v;
    return 0;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, p;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &p);

    long reps = 20, max_bytes = 262144;
    static const struct option longopts[] = {{"reps", required_argument, NULL, 'r'},
                                             {"max-bytes", required_argument, NULL, 'm'},
                                             {"help", no_argument, NULL, 'h'},
                                             {NULL, 0, NULL, 0}};
    int c;
    while ((c = getopt_long(argc, argv, "r:m:h", longopts, NULL)) != -1) {
        const char *bad = NULL;
        if (c == 'r' && parse_long(optarg, 1, 100000, &reps) != 0)
            bad = "--reps needs an integer 1..100000";
        else if (c == 'm' && parse_long(optarg, 1, INT_MAX / 64, &max_bytes) != 0)
            bad = "--max-bytes needs an integer 1..33554431";
        else if (c == 'h' || c == '?') {
            if (rank == 0)
                fprintf(c == 'h' ? stdout : stderr,
                        "usage: opt_scatter [--reps N] [--max-bytes B]\n");
            MPI_Finalize();
            return c == 'h' ? 0 : 2;
        }
        if (bad) {
            if (rank == 0)
                fprintf(stderr, "opt_scatter: %s (got '%s')\n", bad, optarg);
            MPI_Finalize();
            return 2;
        }
    }

    const mpilab_scatter_fn impls[NIMPL] = {mpilab_scatter_linear, mpilab_scatter_binomial,
                                            MPI_Scatter};
    const char *names[NIMPL] = {"linear", "binomial", "native"};
    size_t sizes[MAXSIZES], nsizes = 0;
    for (size_t b = 16; b <= (size_t)max_bytes && nsizes < MAXSIZES; b *= 8)
        sizes[nsizes++] = b;

    char *sendbuf = malloc((size_t)max_bytes * (size_t)p);
    char *recvbuf = malloc((size_t)max_bytes), *check = malloc((size_t)max_bytes);
    if (!sendbuf || !recvbuf || !check)
        MPI_Abort(MPI_COMM_WORLD, 1);
    for (size_t i = 0; i < (size_t)max_bytes * (size_t)p; i++)
        sendbuf[i] = (char)(i * 31 + 7);

    /* 1. measure: times[s * NIMPL + i] */
    double times[MAXSIZES * NIMPL];
    for (size_t s = 0; s < nsizes; s++)
        for (size_t i = 0; i < NIMPL; i++)
            times[s * NIMPL + i] = measure(impls[i], sendbuf, recvbuf, (int)sizes[s], (int)reps,
                                           MPI_COMM_WORLD);

    /* 2. build the dispatcher */
    mpilab_tuned_t *opt = mpilab_tuned_scatter_create(NIMPL, impls, names, nsizes, sizes, times);
    if (!opt) {
        if (rank == 0)
            fprintf(stderr, "opt_scatter: %s\n", mpilab_coll_last_error());
        MPI_Abort(MPI_COMM_WORLD, 1);
    }

    /* 3. use it instead of MPI_Scatter, and check it against MPI_Scatter */
    if (rank == 0) {
        printf("opt_scatter: %d ranks, %ld reps, median of max-over-ranks times (us)\n", p, reps);
        printf("%10s %10s %10s %10s   %s\n", "bytes", names[0], names[1], names[2], "chosen");
    }
    int errors = 0;
    for (size_t s = 0; s < nsizes; s++) {
        int count = (int)sizes[s];
        memset(recvbuf, 0, (size_t)count);
        mpilab_tuned_scatter(opt, sendbuf, count, MPI_BYTE, recvbuf, count, MPI_BYTE, 0,
                             MPI_COMM_WORLD);
        MPI_Scatter(sendbuf, count, MPI_BYTE, check, count, MPI_BYTE, 0, MPI_COMM_WORLD);
        errors += memcmp(recvbuf, check, (size_t)count) != 0;
        if (rank == 0)
            printf("%10zu %10.2f %10.2f %10.2f   %s\n", sizes[s], 1e6 * times[s * NIMPL],
                   1e6 * times[s * NIMPL + 1], 1e6 * times[s * NIMPL + 2],
                   mpilab_tuned_choice(opt, sizes[s]));
    }
    int total = 0;
    MPI_Allreduce(&errors, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0)
        printf("tuned scatter data %s MPI_Scatter\n", total ? "DIFFERS from" : "matches");
    mpilab_tuned_free(opt);
    free(sendbuf);
    free(recvbuf);
    free(check);
    MPI_Finalize();
    return total ? 1 : 0;
}
