/* Recipe (docs/architecture.md, "Add a collective implementation") for a collective other
 * than scatter and gather: a ring broadcast in one file, built as a plugin:
 *   mpicc -shared -fPIC -I<mpilab>/include recipe_bcast.c -o ring.so
 *   mpirun -np 4 mpilab-bench --entries ./ring.so --ops bcast:ring
 * Rank root+1 receives from the root, every rank passes the message on to the next one. The
 * function has MPI_Bcast's signature (mpilab_bcast_fn); MPILAB_COLL_ENTRY turns it into an
 * entry, the bcast operation brings the buffers, the data check and the data volume.
 *
 * For the test that follows this recipe (tests/mpi/recipe_plugin.sh): every process counts
 * the ring's calls and, when MPILAB_RECIPE_CALLS is set, writes the count at exit to the
 * file named by it plus ".<pid>", the proof that the measured function is this one. */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "mpilab/ops.h"

#define RING_TAG 21

static long ring_calls; /* the test's proof only */

static int ring_bcast(void *buf, int count, MPI_Datatype type, int root, MPI_Comm comm)
{
    int rank, size;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    ring_calls++;
    int vr = (rank - root + size) % size, rc = MPI_SUCCESS;
    if (vr > 0)
        rc = MPI_Recv(buf, count, type, (rank - 1 + size) % size, RING_TAG, comm, MPI_STATUS_IGNORE);
    if (rc == MPI_SUCCESS && vr < size - 1)
        rc = MPI_Send(buf, count, type, (rank + 1) % size, RING_TAG, comm);
    return rc;
}

__attribute__((destructor)) static void ring_report_calls(void)
{
    const char *path = getenv("MPILAB_RECIPE_CALLS");
    if (!path || !*path)
        return;
    char name[4096];
    snprintf(name, sizeof name, "%s.%ld", path, (long)getpid());
    FILE *f = fopen(name, "w");
    if (f) {
        fprintf(f, "%ld\n", ring_calls);
        fclose(f);
    }
}

MPILAB_PLUGIN_ENTRIES(MPILAB_COLL_ENTRY(bcast, "ring", ring_bcast, 0, MPILAB_MODEL_NONE));
