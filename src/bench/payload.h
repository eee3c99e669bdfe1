/* Payload buffers whose bytes nobody reads: the point-to-point round trips time them, they
 * check no data. Internal to the bench capability. */
#ifndef MPILAB_SRC_BENCH_PAYLOAD_H
#define MPILAB_SRC_BENCH_PAYLOAD_H

#include <mpi.h>
#include <stddef.h>

#include "mpilab/mpi_check.h" /* MPILAB_MPI_IS_SMPI */
#include <stdlib.h>

/* n bytes (at least 1), or NULL. Simulated (SimGrid SMPI), every simulated rank lives in one
 * process: private buffers would take ranks x bytes of its memory (two 1 MiB buffers a rank:
 * 2 GiB at 1024 ranks) and SMPI would copy every message's bytes. SMPI_SHARED_MALLOC gives
 * blocks that all ranks share and whose messages SMPI moves without copying (their contents
 * are undefined, which a payload nobody reads allows). Elsewhere: calloc. */
static inline void *mpilab_payload_alloc(size_t n)
{
#ifdef MPILAB_MPI_IS_SMPI
    return SMPI_SHARED_MALLOC(n ? n : 1);
#else
    return calloc(n ? n : 1, 1);
#endif
}

/* Frees what mpilab_payload_alloc returned (NULL is allowed). */
static inline void mpilab_payload_free(void *p)
{
    if (!p)
        return;
#ifdef MPILAB_MPI_IS_SMPI
    SMPI_SHARED_FREE(p);
#else
    free(p);
#endif
}

#endif
