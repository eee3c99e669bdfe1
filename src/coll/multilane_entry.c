/* The operation-table entries' multilane / single-lane functions (multilane_entry.h). */
#include <errno.h>
#include <limits.h>
#include <stdlib.h>

#include "coll/multilane_entry.h"
#include "coll/multilane_internal.h"
#include "mpilab/ops.h"

const char *mpilab_multilane_entry_sites(void)
{
    const char *s = getenv("MPILAB_MULTILANE_SITES");
    return s && *s ? s : "testbed";
}

int mpilab_multilane_entry_lanes(void)
{
    const char *s = getenv("MPILAB_MULTILANE_LANES");
    if (!s || !*s)
        return 0;
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (*end || errno || v < 0 || v > INT_MAX)
        return -1;
    return (int)v;
}

/* Attach the environment's grid to comm unless one is attached (collective on first use). */
static int ensure(MPI_Comm comm)
{
    if (mpilab_multilane_attached_grid(comm))
        return MPI_SUCCESS;
    const int lanes = mpilab_multilane_entry_lanes();
    if (lanes < 0)
        return mpilab_ml_fail(MPI_ERR_ARG, "MPILAB_MULTILANE_LANES: not a number >= 0");
    mpilab_grid_t *g = mpilab_grid_build(comm, mpilab_multilane_entry_sites());
    if (!g)
        return MPI_ERR_ARG;
    int rc = mpilab_multilane_attach(comm, g, lanes);
    mpilab_grid_free(g);
    return rc;
}

#define ENTRY(name, fn)                                                                       \
    int name(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,       \
             int recvcount, MPI_Datatype recvtype, int root, MPI_Comm comm)                   \
    {                                                                                         \
        int rc = ensure(comm);                                                                \
        return rc != MPI_SUCCESS ? rc                                                         \
                                 : fn(sendbuf, sendcount, sendtype, recvbuf, recvcount,       \
                                      recvtype, root, comm);                                  \
    }
ENTRY(mpilab_multilane_entry_scatter, mpilab_scatter_multilane_attached)
ENTRY(mpilab_multilane_entry_gather, mpilab_gather_multilane_attached)
ENTRY(mpilab_single_lane_entry_scatter, mpilab_scatter_single_lane_attached)
ENTRY(mpilab_single_lane_entry_gather, mpilab_gather_single_lane_attached)

/* multi-site grids (docs/multilane.md): selected only as name:impl (MPILAB_OP_GRID); the
 * runner's models.multilane predicts them */
#define RG (MPILAB_OP_GRID)
MPILAB_ENTRIES(multilane,
               MPILAB_COLL_ENTRY(scatter, "multilane", mpilab_multilane_entry_scatter, RG, MPILAB_MODEL_NONE),
               MPILAB_COLL_ENTRY(scatter, "single-lane", mpilab_single_lane_entry_scatter, RG, MPILAB_MODEL_NONE),
               MPILAB_COLL_ENTRY(gather, "multilane", mpilab_multilane_entry_gather, RG, MPILAB_MODEL_NONE),
               MPILAB_COLL_ENTRY(gather, "single-lane", mpilab_single_lane_entry_gather, RG, MPILAB_MODEL_NONE));
