/* Recipe (docs/architecture.md, "Add a collective implementation"), the whole of it: a
 * scatter implementation in one file, built as a plugin and loaded by the tools:
 *   mpicc -shared -fPIC -I<mpilab>/include recipe_scatter.c -o flat.so
 *   mpirun -np 4 mpilab-bench --entries ./flat.so --ops scatter:flat_isend
 * The root posts every block at once (MPI_Isend) and waits. MPILAB_COLL_ENTRY turns the
 * function into an entry: the scatter operation brings the buffers, the data check, the
 * data volume and the family; the entry adds operation-specific timing and declares that the
 * linear scatter pattern predicts it (mpilab_models_hockney then predicts its measurements).
 * tests/mpi/recipe_check.c and tests/mpi/recipe_plugin.sh check it. */
#include <stdlib.h>
#include <string.h>

#include "mpilab/ops.h"

static int flat_isend_scatter(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                              int recvcount, MPI_Datatype recvtype, int root, MPI_Comm comm)
{
    int rank, size;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    if (rank != root)
        return MPI_Recv(recvbuf, recvcount, recvtype, root, 12, comm, MPI_STATUS_IGNORE);
    MPI_Aint lb, extent;
    MPI_Type_get_extent(sendtype, &lb, &extent);
    MPI_Request *rq = malloc((size_t)size * sizeof *rq);
    MPI_Status *st = malloc((size_t)size * sizeof *st); /* MPICH + GCC 12 flag MPI_STATUSES_IGNORE */
    if (!rq || !st) {
        free(rq);
        free(st);
        return MPI_ERR_NO_MEM;
    }
    int k = 0, rc = MPI_SUCCESS;
    for (int r = 0; r < size && rc == MPI_SUCCESS; r++)
        if (r != root)
            rc = MPI_Isend((const char *)sendbuf + (size_t)r * (size_t)sendcount * (size_t)extent, sendcount,
                           sendtype, r, 12, comm, &rq[k++]);
    /* the root's own block: a local copy through MPI (any datatype) */
    if (rc == MPI_SUCCESS)
        rc = MPI_Sendrecv((const char *)sendbuf + (size_t)root * (size_t)sendcount * (size_t)extent, sendcount,
                          sendtype, root, 13, recvbuf, recvcount, recvtype, root, 13, comm, MPI_STATUS_IGNORE);
    int rc2 = MPI_Waitall(k, rq, st);
    free(rq);
    free(st);
    return rc != MPI_SUCCESS ? rc : rc2;
}

MPILAB_PLUGIN_ENTRIES(MPILAB_COLL_ENTRY(scatter, "flat_isend", flat_isend_scatter, MPILAB_OP_OPSPEC,
                                        MPILAB_MODEL_SCATTER_LINEAR));
