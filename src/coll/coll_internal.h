/* Helpers shared by mpilab's collective implementations (scatter_gather.c, multilane.c).
 * Internal to the library: not installed.  All return MPI_SUCCESS or an MPI error class. */
#ifndef MPILAB_COLL_INTERNAL_H
#define MPILAB_COLL_INTERNAL_H

#include <mpi.h>
#include <stddef.h>

/* Bytes from one rank's block to the next in a root's buffer: count times the extent of
 * `type` (MPI_ERR_TYPE if the extent is negative). */
int mpilab_coll_block_size(int count, MPI_Datatype type, size_t *block);
/* Upper bound of the packed size of `count` elements of `type`. */
int mpilab_coll_pack_bound(int count, MPI_Datatype type, MPI_Comm comm, size_t *out);
/* count * nblocks as an int count, or MPI_ERR_COUNT. */
int mpilab_coll_mul_count(int count, size_t nblocks, int *out);
int mpilab_coll_size_to_int(size_t v, int *out);
/* Copy between typed buffers of matching signatures (through pack / unpack). */
int mpilab_coll_local_copy(const void *src, int scount, MPI_Datatype stype, void *dst,
                           int rcount, MPI_Datatype rtype, MPI_Comm comm);
/* A buffer for n packed blocks of `count` `type` (*buf, free it) and its size as int. */
int mpilab_coll_alloc_packed(int count, MPI_Datatype type, size_t n, MPI_Comm comm, char **buf,
                             int *ibound);

#endif
