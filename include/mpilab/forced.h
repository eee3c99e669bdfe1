/* The MPI library's own collective algorithms as entries (docs/tune.md): for every
 * collective mpilab measures natively (scatter, gather, bcast, reduce, allreduce, allgather,
 * alltoall, barrier), one entry per algorithm the library offers, read from its MPI_T control
 * variables (never a hard-coded list):
 *   Open MPI: coll_tuned_<coll>_algorithm, its enumerator's items (0 "ignore" left out);
 *     setup writes the variable and duplicates the communicator, so that the tuned module
 *     of the new communicator reads the forced algorithm (Open MPI reads it per
 *     communicator); the launch needs --mca coll_tuned_use_dynamic_rules 1.
 *   MPICH: MPIR_CVAR_<COLL>_INTRA_ALGORITHM, whose names are listed in its description
 *     ("name - Force ..." lines, the value being the position in that list, "auto" = 0);
 *     setup writes the variable (global: MPICH reads it at every call) and teardown puts
 *     "auto" back.
 * Entries are named op:ompi_<algorithm> or op:mpich_<algorithm> (non-word characters as _),
 * with the native entry's buffers, data check, family and volume, and the variable's value
 * in `param`. The native entry stays the library's default decision. */
#ifndef MPILAB_FORCED_H
#define MPILAB_FORCED_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Register the forced-algorithm entries of the MPI library this process runs on (after
 * MPI_Init; origin "mpi:<variable>"). Returns the number registered (>= 0), or -1 with one
 * line in err (no MPI_T, Open MPI without coll_tuned_use_dynamic_rules, a description
 * MPICH's format does not fit, a refused registration). */
int mpilab_forced_register(char *err, size_t errlen);

/* MPICH's algorithm names from the description of MPIR_CVAR_<COLL>_INTRA_ALGORITHM, in
 * value order (names[0] = "auto"): MPICH joins the description's lines without a separator,
 * so the names are found by the column their " - " stands in (aligned in each list after the
 * "auto - ..." line). Writes at most max names of at most 63 characters into names; returns
 * the count, or -1 when the text does not have that form. Pure (unit-tested). */
int mpilab_forced_mpich_names(const char *desc, char names[][64], int max);

#ifdef __cplusplus
}
#endif
#endif
