/* Checking helpers shared by MPI test programs: FAIL() counts a failure on this rank,
 * mpi_check_done() sums them over the job, prints one line on rank 0 and returns the
 * exit status. */
#ifndef MPI_CHECK_H
#define MPI_CHECK_H
#include <math.h>
#include <mpi.h>
#include <stdio.h>

static int mpi_check_failures, mpi_check_rank;
#define FAIL(...)                                                                 \
    do {                                                                          \
        fprintf(stderr, "rank %d: ", mpi_check_rank);                             \
        fprintf(stderr, __VA_ARGS__);                                             \
        mpi_check_failures++;                                                     \
    } while (0)

static inline int rel_eq(double a, double b, double tol)
{
    return fabs(a - b) <= tol * fabs(b);
}

static inline int mpi_check_done(const char *what)
{
    int all = 0;
    MPI_Allreduce(&mpi_check_failures, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (mpi_check_rank == 0)
        printf("%s: %s\n", what, all ? "FAILED" : "ok");
    return all ? 1 : 0;
}
#endif
