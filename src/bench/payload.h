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
 * are undefined, which a payload nobody reads allows). Elsewhere: every byte written (a
 * non-zero pattern), as IMB and OSU write theirs. A block never written (calloc's fresh
 * mapping) reads from the kernel's one shared zero page: a 1 MiB send then copies one 4 KiB
 * page, resident in the cache, 256 times, and its time is that of the writes alone (p2p read
 * 56 us one-way at 1 MiB on shared memory against IMB's 70 us; docs/bench.md, "Buffers"). */
static inline void *mpilab_payload_alloc(size_t n)
{
#ifdef MPILAB_MPI_IS_SMPI
    return SMPI_SHARED_MALLOC(n ? n : 1);
#else
    size_t len = n ? n : 1;
    unsigned char *p = malloc(len);
    for (size_t k = 0; p && k < len; k++)
        p[k] = (unsigned char)(k * 131u + 7u);
    return p;
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
