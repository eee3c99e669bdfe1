/* mpilab's own collective implementations and the tuned dispatcher.
 *
 * The implementations have exactly the signatures of MPI_Scatter / MPI_Gather so that
 * they are interchangeable with the native calls in the operation table and in the
 * dispatcher (counts are int only because MPI's signature is). */
#ifndef MPILAB_COLL_H
#define MPILAB_COLL_H

#include <mpi.h>
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

#ifdef __cplusplus
}
#endif
#endif
