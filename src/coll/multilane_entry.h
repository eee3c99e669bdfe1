/* Internal: the functions behind the operation-table entries scatter/gather "multilane" and
 * "single-lane" (src/bench/ops.c).  MPI_Scatter / MPI_Gather signatures; on the first call
 * on a communicator without an attached grid (mpilab_multilane_attach) they build one,
 * collectively, from $MPILAB_MULTILANE_SITES (testbed, hostfile:PATH, map:PATH, detect;
 * default testbed) with P from $MPILAB_MULTILANE_LANES (default 0: P_sup for each root) and
 * attach it; a failure returns MPI_ERR_ARG on every rank with the reason in
 * mpilab_multilane_last_error(). */
#ifndef MPILAB_MULTILANE_ENTRY_H
#define MPILAB_MULTILANE_ENTRY_H

#include <mpi.h>

int mpilab_multilane_entry_scatter(const void *sendbuf, int sendcount, MPI_Datatype sendtype,
                                   void *recvbuf, int recvcount, MPI_Datatype recvtype, int root,
                                   MPI_Comm comm);
int mpilab_multilane_entry_gather(const void *sendbuf, int sendcount, MPI_Datatype sendtype,
                                  void *recvbuf, int recvcount, MPI_Datatype recvtype, int root,
                                  MPI_Comm comm);
int mpilab_single_lane_entry_scatter(const void *sendbuf, int sendcount, MPI_Datatype sendtype,
                                     void *recvbuf, int recvcount, MPI_Datatype recvtype,
                                     int root, MPI_Comm comm);
int mpilab_single_lane_entry_gather(const void *sendbuf, int sendcount, MPI_Datatype sendtype,
                                    void *recvbuf, int recvcount, MPI_Datatype recvtype, int root,
                                    MPI_Comm comm);
/* The grid source and P the entries use ($MPILAB_MULTILANE_SITES / _LANES with defaults);
 * lanes -1 if the variable is not a non-negative integer. */
const char *mpilab_multilane_entry_sites(void);
int mpilab_multilane_entry_lanes(void);

#endif
