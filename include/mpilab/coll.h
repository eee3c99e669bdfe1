/* mpilab's own collective implementations and the tuned dispatcher.
 *
 * The implementations have exactly the signatures of MPI_Scatter / MPI_Gather so that
 * they are interchangeable with the native calls in the operation table and in the
 * dispatcher (counts are int only because MPI's signature is). */
#ifndef MPILAB_COLL_H
#define MPILAB_COLL_H

#include <mpi.h>
#include "mpilab/mpi_check.h"
#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Point-to-point tag used by mpilab's collectives on the user's communicator: do not have
 * point-to-point messages with this tag in flight on that communicator during a call. */
#define MPILAB_COLL_TAG 0x6d6c

typedef int (*mpilab_scatter_fn)(const void *sendbuf, int sendcount, MPI_Datatype sendtype,
                                 void *recvbuf, int recvcount, MPI_Datatype recvtype,
                                 int root, MPI_Comm comm);
typedef int (*mpilab_gather_fn)(const void *sendbuf, int sendcount, MPI_Datatype sendtype,
                                void *recvbuf, int recvcount, MPI_Datatype recvtype,
                                int root, MPI_Comm comm);

/* The signature an implementation of each collective operation has (the MPI call's own): what
 * MPILAB_COLL_ENTRY (mpilab/ops.h) takes as its function, checked at compile time. */
typedef int (*mpilab_bcast_fn)(void *buffer, int count, MPI_Datatype datatype, int root, MPI_Comm comm);
typedef int (*mpilab_reduce_fn)(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype,
                                MPI_Op op, int root, MPI_Comm comm);
typedef int (*mpilab_allreduce_fn)(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype,
                                   MPI_Op op, MPI_Comm comm);
typedef int (*mpilab_allgather_fn)(const void *sendbuf, int sendcount, MPI_Datatype sendtype,
                                   void *recvbuf, int recvcount, MPI_Datatype recvtype, MPI_Comm comm);
typedef int (*mpilab_alltoall_fn)(const void *sendbuf, int sendcount, MPI_Datatype sendtype,
                                  void *recvbuf, int recvcount, MPI_Datatype recvtype, MPI_Comm comm);
typedef int (*mpilab_barrier_fn)(MPI_Comm comm);

/* All four follow MPI_Scatter / MPI_Gather semantics for any root, any communicator size
 * and any datatypes with matching signatures (send/recv types may differ).  MPI_IN_PLACE
 * is NOT supported (MPI_ERR_BUFFER).  They return MPI_SUCCESS or an MPI error class
 * (MPI_ERR_ROOT, MPI_ERR_COUNT when a subtree's count exceeds INT_MAX, ...); they do not
 * invoke the communicator's error handler themselves.
 *
 * Linear: the root sends (receives) each block directly, one blocking message after
 * another in relative rank order root+1, root+2, ... (mod p). */
int mpilab_scatter_linear(const void *sendbuf, int sendcount, MPI_Datatype sendtype,
                          void *recvbuf, int recvcount, MPI_Datatype recvtype,
                          int root, MPI_Comm comm);
int mpilab_gather_linear(const void *sendbuf, int sendcount, MPI_Datatype sendtype,
                         void *recvbuf, int recvcount, MPI_Datatype recvtype,
                         int root, MPI_Comm comm);
/* Binomial tree: ceil(log2 p) stages, subtrees' blocks forwarded in one message.  With
 * vr = (rank - root) mod p, node vr > 0 has parent vr - lowbit(vr) and a subtree of
 * min(lowbit(vr), p - vr) blocks; scatter's stage k uses mask 2^(L-1-k) (L = ceil(log2 p)),
 * gather runs the same stages in reverse.  Non-root internal nodes use a temporary
 * buffer (packed data). */
int mpilab_scatter_binomial(const void *sendbuf, int sendcount, MPI_Datatype sendtype,
                            void *recvbuf, int recvcount, MPI_Datatype recvtype,
                            int root, MPI_Comm comm);
int mpilab_gather_binomial(const void *sendbuf, int sendcount, MPI_Datatype sendtype,
                           void *recvbuf, int recvcount, MPI_Datatype recvtype,
                           int root, MPI_Comm comm);

/* ------------------------------------------------------------------------------------
 * Tuned dispatcher (run-time selection, after MPIBlib's Opt_Scatter): given the measured
 * time of each implementation at a few message sizes, every call runs the implementation
 * predicted fastest for its size.
 *
 * Table: `sizes[nsizes]` are bytes per rank (one block), strictly increasing;
 * `times[s * nimpl + i]` is the time of implementation i at sizes[s] (row-major by size),
 * finite and >= 0; nimpl >= 1, nsizes >= 1; names[i] non-NULL (copied).
 *
 * Choice for a call moving b bytes per rank: each implementation's time is linearly
 * interpolated between the two measured sizes around b (clamped to the first / last row
 * outside the table), and the smallest wins; ties go to the lower index.  b is
 * recvcount * size(recvtype) for scatter and sendcount * size(sendtype) for gather, which
 * MPI requires to be the same on every rank, so all ranks choose the same implementation
 * PROVIDED they were given the same table (broadcast a measured table from one rank).
 *
 * Errors: create returns NULL, sets errno (EINVAL / ENOMEM) and a one-line reason readable
 * with mpilab_coll_last_error() (per thread, valid until the next failing call). */
typedef struct mpilab_tuned mpilab_tuned_t;

mpilab_tuned_t *mpilab_tuned_scatter_create(size_t nimpl, const mpilab_scatter_fn *impls,
                                            const char *const *names, size_t nsizes,
                                            const size_t *sizes, const double *times);
mpilab_tuned_t *mpilab_tuned_gather_create(size_t nimpl, const mpilab_gather_fn *impls,
                                           const char *const *names, size_t nsizes,
                                           const size_t *sizes, const double *times);
/* Drop-in MPI_Scatter / MPI_Gather.  MPI_ERR_ARG if t is NULL or of the other kind;
 * otherwise whatever the chosen implementation returns. */
int mpilab_tuned_scatter(const mpilab_tuned_t *t, const void *sendbuf, int sendcount,
                         MPI_Datatype sendtype, void *recvbuf, int recvcount,
                         MPI_Datatype recvtype, int root, MPI_Comm comm);
int mpilab_tuned_gather(const mpilab_tuned_t *t, const void *sendbuf, int sendcount,
                        MPI_Datatype sendtype, void *recvbuf, int recvcount,
                        MPI_Datatype recvtype, int root, MPI_Comm comm);
/* The implementation chosen for `bytes` per rank: its index (0 if t is NULL), or its
 * name (owned by t; NULL if t is NULL). */
size_t mpilab_tuned_choice_index(const mpilab_tuned_t *t, size_t bytes);
const char *mpilab_tuned_choice(const mpilab_tuned_t *t, size_t bytes);
void mpilab_tuned_free(mpilab_tuned_t *t);

/* Reason for the last failed mpilab_tuned_*_create in this thread ("" if none). */
const char *mpilab_coll_last_error(void);

#ifdef __cplusplus
}
#endif
#endif
