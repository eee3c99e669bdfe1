/* The "p2p:roundtrip" entry: a round trip between every pair of ranks. The runner measures it
 * per pair with mpilab_p2p_measure (MPILAB_OP_ALLPAIRS); setup/run/validate make it an
 * ordinary, checkable entry (mpilab_ops_check): one run is every pair's round trip in turn. */
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "mpilab/ops.h"

#define TAG_P2P 7301
#define SENTINEL 0xA5

typedef struct rtctx {
    MPI_Comm comm;
    int rank, size;
    size_t bytes;
    unsigned char *sbuf, *rbuf; /* rbuf: one block per rank (what that rank sent us) */
    int ran;
} rtctx_t;

static int rt_setup(mpilab_op_run_t *r)
{
    size_t bytes = r->bytes;
    rtctx_t *c = calloc(1, sizeof *c);
    if (!c || bytes > INT_MAX) {
        free(c);
        return -1;
    }
    c->comm = r->comm;
    c->bytes = bytes;
    c->rank = r->rank;
    c->size = r->size;
    size_t p = (size_t)c->size;
    if (bytes && p > SIZE_MAX / bytes) {
        free(c);
        return -1;
    }
    size_t rn = bytes * p;
    c->sbuf = malloc(bytes ? bytes : 1);
    c->rbuf = malloc(rn ? rn : 1);
    if (!c->sbuf || !c->rbuf) {
        free(c->sbuf);
        free(c->rbuf);
        free(c);
        return -1;
    }
    for (size_t k = 0; k < bytes; k++)
        c->sbuf[k] = mpilab_ops_pattern(c->rank, k);
    memset(c->rbuf, SENTINEL, rn ? rn : 1);
    r->state = c;
    return 0;
}

static int rt_run(mpilab_op_run_t *r)
{
    rtctx_t *c = r->state;
    int n = (int)c->bytes;
    for (int i = 0; i < c->size; i++)
        for (int j = i + 1; j < c->size; j++) {
            int rc = MPI_SUCCESS;
            if (c->rank == i) {
                rc = MPI_Send(c->sbuf, n, MPI_BYTE, j, TAG_P2P, c->comm);
                if (rc == MPI_SUCCESS)
                    rc = MPI_Recv(c->rbuf + (size_t)j * c->bytes, n, MPI_BYTE, j, TAG_P2P, c->comm,
                                  MPI_STATUS_IGNORE);
            } else if (c->rank == j) {
                rc = MPI_Recv(c->rbuf + (size_t)i * c->bytes, n, MPI_BYTE, i, TAG_P2P, c->comm, MPI_STATUS_IGNORE);
                if (rc == MPI_SUCCESS)
                    rc = MPI_Send(c->sbuf, n, MPI_BYTE, i, TAG_P2P, c->comm);
            }
            if (rc != MPI_SUCCESS)
                return rc;
        }
    c->ran = 1;
    return MPI_SUCCESS;
}

static int rt_validate(mpilab_op_run_t *run)
{
    const rtctx_t *c = run->state;
    if (!c->ran)
        return 1;
    for (int r = 0; r < c->size; r++)
        for (size_t k = 0; r != c->rank && k < c->bytes; k++)
            if (c->rbuf[(size_t)r * c->bytes + k] != mpilab_ops_pattern(r, k))
                return 1;
    return 0;
}

static void rt_teardown(mpilab_op_run_t *r)
{
    rtctx_t *c = r->state;
    if (c) {
        free(c->sbuf);
        free(c->rbuf);
        free(c);
    }
    r->state = NULL;
}

MPILAB_ENTRIES(p2p, {
    .name = "p2p",
    .impl = "roundtrip",
    .bytes_desc = "message each way (--p2p-back: the reply)",
    .flags = MPILAB_OP_ALLPAIRS,
    .setup = rt_setup,
    .run = rt_run,
    .validate = rt_validate,
    .teardown = rt_teardown,
    .family = "p2p",
    .model = MPILAB_MODEL_P2P_FIT,
    .figure = MPILAB_FIGURE_ROUND_TRIP,
});
