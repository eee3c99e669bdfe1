/* Waiting without spinning: the multilane collectives run many ranks per core on the
 * emulated grid, where a rank spinning in MPI_Recv takes the CPU from the ranks that move
 * the data.  These waits test the requests (which drives MPI's progress) a few times, then
 * sleep 50 us between tests.
 *
 * Simulated (SimGrid SMPI) they are plain MPI_Waitall: simulated ranks share no CPU, and
 * there the polling itself would be wrong twice over. Each MPI_Test and each nanosleep
 * advances the rank's simulated clock (SMPI's smpi/test injection; smpi_helpers.h turns
 * nanosleep into smpi_nanosleep), so the naps would be measured as communication time; and
 * SMPI 3.32's MPI_Testall frees the requests that completed in a call that returns
 * flag = 0 and reports an empty status for them in the call that finally returns
 * flag = 1 (MPI says a false flag modifies neither), so a receive's MPI_Get_count read 0
 * bytes and the multilane gather's MPI_Unpack failed (coll_multilane and mpilab-multilane
 * aborted in SMPI's MPI_Unpack). */
#include <time.h>

#include "coll/multilane_internal.h"
#include "mpilab/mpi_check.h"

#define SPINS 16
#define NAP_NS 50000L

int mpilab_ml_wait(int n, MPI_Request *req, MPI_Status *st)
{
    if (n <= 0)
        return MPI_SUCCESS;
    if (st == MPI_STATUS_IGNORE)
        st = NULL;
#ifdef MPILAB_MPI_IS_SMPI
    return MPI_Waitall(n, req, st ? st : MPI_STATUSES_IGNORE);
#else
    for (int k = 0;; k++) {
        int flag = 0;
        int rc = MPI_Testall(n, req, &flag, st ? st : MPI_STATUSES_IGNORE);
        if (rc != MPI_SUCCESS || flag)
            return rc;
        if (k >= SPINS) {
            struct timespec ts = {0, NAP_NS};
            nanosleep(&ts, NULL);
        }
    }
#endif
}

int mpilab_ml_send(const void *buf, int count, MPI_Datatype type, int dst, int tag, MPI_Comm comm)
{
    MPI_Request r;
    int rc = MPI_Isend(buf, count, type, dst, tag, comm, &r);
    return rc != MPI_SUCCESS ? rc : mpilab_ml_wait(1, &r, NULL);
}

int mpilab_ml_recv(void *buf, int count, MPI_Datatype type, int src, int tag, MPI_Comm comm,
                   MPI_Status *st)
{
    MPI_Request r;
    int rc = MPI_Irecv(buf, count, type, src, tag, comm, &r);
    return rc != MPI_SUCCESS ? rc : mpilab_ml_wait(1, &r, st);
}

int mpilab_ml_barrier(MPI_Comm comm)
{
    MPI_Request r;
    int rc = MPI_Ibarrier(comm, &r);
    return rc != MPI_SUCCESS ? rc : mpilab_ml_wait(1, &r, NULL);
}

int mpilab_ml_allreduce(const void *in, void *out, int count, MPI_Datatype type, MPI_Op op,
                        MPI_Comm comm)
{
    MPI_Request r;
    int rc = MPI_Iallreduce(in, out, count, type, op, comm, &r);
    return rc != MPI_SUCCESS ? rc : mpilab_ml_wait(1, &r, NULL);
}
