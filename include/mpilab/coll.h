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

typedef int (*mpilab_scatter_fn)(const void *sendbuf, int sendcount, MPI_Datatype sendtype,
                                 void *recvbuf, int recvcount, MPI_Datatype recvtype,
                                 int root, MPI_Comm comm);
typedef int (*mpilab_gather_fn)(const void *sendbuf, int sendcount, MPI_Datatype sendtype,
                                void *recvbuf, int recvcount, MPI_Datatype recvtype,
                                int root, MPI_Comm comm);

/* Linear: the root sends (receives) each block directly. */
int mpilab_scatter_linear(const void *sendbuf, int sendcount, MPI_Datatype sendtype,
                          void *recvbuf, int recvcount, MPI_Datatype recvtype,
                          int root, MPI_Comm comm);
int mpilab_gather_linear(const void *sendbuf, int sendcount, MPI_Datatype sendtype,
                         void *recvbuf, int recvcount, MPI_Datatype recvtype,
                         int root, MPI_Comm comm);
/* Binomial tree: ceil(log2 p) stages, subtrees' blocks forwarded in one message. */
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
