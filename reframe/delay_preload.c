/* A slowdown of known size for the ReFrame checks' own test (docs/reframe.md): preloaded
 * (LD_PRELOAD) into an MPI program, every MPI_Send first spins for $MPILAB_DELAY_US
 * microseconds, then calls PMPI_Send. The program itself is unchanged.
 *   mpicc -shared -fPIC reframe/delay_preload.c -o delay.so */
#include <mpi.h>
#include <stdlib.h>

int MPI_Send(const void *buf, int count, MPI_Datatype type, int dest, int tag, MPI_Comm comm)
{
    const char *e = getenv("MPILAB_DELAY_US");
    double d = e ? atof(e) * 1e-6 : 0.0;
    if (d > 0) {
        double until = PMPI_Wtime() + d;
        while (PMPI_Wtime() < until) {
        }
    }
    return PMPI_Send(buf, count, type, dest, tag, comm);
}
