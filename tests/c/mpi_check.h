/* Legacy spelling of the C test kit (kit.h, MPI mode) for MPI test programs not yet split
 * into named cases: FAIL() is the kit's (counts a failure on this rank), mpi_check_rank the
 * kit's rank (set it after MPI_Init), mpi_check_done() sums the failures over the job, prints
 * one line on rank 0 and returns the exit status. New tests use kit.h directly. */
#ifndef MPI_CHECK_H
#define MPI_CHECK_H
#include <math.h>
#include <mpi.h>
#include <stdio.h>

#define MPILAB_KIT_MPI
#include "kit.h"

#define mpi_check_rank kit_rank

static inline int rel_eq(double a, double b, double tol)
{
    return fabs(a - b) <= tol * fabs(b);
}

static inline int mpi_check_done(const char *what)
{
    int all = 0;
    MPI_Allreduce(&kit_failures, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (kit_rank == 0)
        printf("%s: %s\n", what, all ? "FAILED" : "ok");
    return all ? 1 : 0;
}
#endif
