/* The generic collective operations (MPILAB_COLL_ENTRY in include/mpilab/ops.h) and the
 * built-in collective entries: each operation sizes, fills, runs and checks its buffers; an
 * entry is an operation plus the implementation function it calls (entry->fn). */
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "mpilab/coll.h"
#include "mpilab/ops.h"

#define SENTINEL 0xA5

typedef struct coll_state {
    unsigned char *sbuf, *rbuf;
} coll_state_t;

static unsigned char reduce_pattern(int rank, size_t index, int size)
{
    unsigned lim = 256u / (unsigned)size; /* size * (lim - 1) < 256 */
    return (unsigned char)(mpilab_ops_pattern(rank, index) % (lim ? lim : 1));
}

/* Bytes of the send and receive buffers of operation `name` for `bytes` on p ranks, on a rank
 * that is the root or not: 0, or -1 on overflow. A scatter's p blocks to send and a gather's
 * p blocks received live on the root only (MPI ignores them elsewhere): on every rank they
 * made p x bytes per rank, p^2 x bytes in all, 64 GiB for a 1 MiB scatter of 256 simulated
 * ranks in one smpimain. */
static int buffer_sizes(const char *name, size_t bytes, size_t p, int at_root, size_t *sn, size_t *rn)
{
    int per_rank = strcmp(name, "scatter") == 0 || strcmp(name, "gather") == 0 ||
                   strcmp(name, "allgather") == 0 || strcmp(name, "alltoall") == 0;
    if (per_rank && bytes && p > SIZE_MAX / bytes)
        return -1;
    size_t all = bytes * p;
    *sn = *rn = bytes;
    if (strcmp(name, "scatter") == 0)
        *sn = at_root ? all : 0;
    else if (strcmp(name, "gather") == 0)
        *rn = at_root ? all : 0;
    else if (strcmp(name, "allgather") == 0)
        *rn = all;
    else if (strcmp(name, "alltoall") == 0)
        *sn = *rn = all;
    else if (strcmp(name, "bcast") == 0)
        *rn = 0;
    else if (strcmp(name, "barrier") == 0)
        *sn = *rn = 0;
    return 0;
}

/* The send buffer's validation pattern, as the operation's check expects it. */
static void fill_send(const mpilab_op_run_t *r, unsigned char *sbuf, size_t sn)
{
    const char *name = r->op->name;
    size_t p = (size_t)r->size, b = r->bytes;
    if (strcmp(name, "scatter") == 0) { /* block for rank d carries pattern(d, .); root only */
        for (size_t d = 0; r->rank == r->root && d < p; d++)
            for (size_t k = 0; k < b; k++)
                sbuf[d * b + k] = mpilab_ops_pattern((int)d, k);
    } else if (strcmp(name, "alltoall") == 0) { /* block from s to d carries pattern(s * p + d, .) */
        for (size_t d = 0; d < p; d++)
            for (size_t k = 0; k < b; k++)
                sbuf[d * b + k] = mpilab_ops_pattern((int)((size_t)r->rank * p + d), k);
    } else if (strcmp(name, "bcast") == 0) { /* the root's data; elsewhere the receive buffer */
        for (size_t k = 0; k < b; k++)
            sbuf[k] = r->rank == r->root ? mpilab_ops_pattern(r->root, k) : SENTINEL;
    } else if (strcmp(name, "reduce") == 0 || strcmp(name, "allreduce") == 0) {
        /* keep sums below 256: Open MPI 4.1's AVX uint8 sum saturates */
        for (size_t k = 0; k < sn; k++)
            sbuf[k] = reduce_pattern(r->rank, k, r->size);
    } else {
        for (size_t k = 0; k < sn; k++)
            sbuf[k] = mpilab_ops_pattern(r->rank, k);
    }
}

int mpilab_coll_setup(mpilab_op_run_t *r)
{
    size_t sn, rn;
    if (r->bytes > INT_MAX || buffer_sizes(r->op->name, r->bytes, (size_t)r->size, r->rank == r->root, &sn, &rn) != 0)
        return -1;
    coll_state_t *c = calloc(1, sizeof *c);
    if (!c)
        return -1;
    c->sbuf = malloc(sn ? sn : 1);
    c->rbuf = malloc(rn ? rn : 1);
    if (!c->sbuf || !c->rbuf) {
        free(c->sbuf);
        free(c->rbuf);
        free(c);
        return -1;
    }
    memset(c->rbuf, SENTINEL, rn ? rn : 1);
    fill_send(r, c->sbuf, sn);
    r->state = c;
    return 0;
}

void mpilab_coll_teardown(mpilab_op_run_t *r)
{
    coll_state_t *c = r->state;
    if (c) {
        free(c->sbuf);
        free(c->rbuf);
        free(c);
    }
    r->state = NULL;
}

/* Every rank's block in rank order (gather, allgather). */
static int check_blocks(const unsigned char *buf, size_t p, size_t b)
{
    for (size_t d = 0; d < p; d++)
        for (size_t k = 0; k < b; k++)
            if (buf[d * b + k] != mpilab_ops_pattern((int)d, k))
                return 1;
    return 0;
}

/* The expected sums cost bytes x p to compute: on every rank of an allreduce that was p^2 x
 * bytes in one simulator process holding every simulated rank (4 G steps for 1 MiB at 64
 * ranks, most of a simulated survey's CPU time). The root checks every byte against them;
 * the others compare a 64-bit FNV-1a digest of their result with the root's. */
static int check_sum(const mpilab_op_run_t *r, const unsigned char *buf)
{
    for (size_t k = 0; k < r->bytes; k++) {
        unsigned sum = 0;
        for (int d = 0; d < r->size; d++)
            sum += reduce_pattern(d, k, r->size);
        if (buf[k] != (unsigned char)(sum & 0xffu))
            return 1;
    }
    return 0;
}

static unsigned long long digest(const unsigned char *buf, size_t n)
{
    unsigned long long h = 14695981039346656037ull;
    for (size_t k = 0; k < n; k++)
        h = (h ^ buf[k]) * 1099511628211ull;
    return h;
}

/* Allreduce (collective): the root's result checked byte by byte, every other rank's
 * against the root's digest. */
static int check_allreduce(const mpilab_op_run_t *r, const unsigned char *buf)
{
    int at_root = r->rank == r->root;
    unsigned long long h = at_root ? digest(buf, r->bytes) : 0;
    int bad = at_root ? check_sum(r, buf) : 0;
    if (MPI_Bcast(&h, 1, MPI_UNSIGNED_LONG_LONG, r->root, r->comm) != MPI_SUCCESS)
        return 1;
    return at_root ? bad : digest(buf, r->bytes) != h;
}

int mpilab_coll_validate(mpilab_op_run_t *r)
{
    const coll_state_t *c = r->state;
    const char *name = r->op->name;
    size_t p = (size_t)r->size, b = r->bytes;
    int at_root = r->rank == r->root;
    if (strcmp(name, "scatter") == 0) {
        for (size_t k = 0; k < b; k++)
            if (c->rbuf[k] != mpilab_ops_pattern(r->rank, k))
                return 1;
        return 0;
    }
    if (strcmp(name, "gather") == 0)
        return at_root ? check_blocks(c->rbuf, p, b) : 0;
    if (strcmp(name, "allgather") == 0)
        return check_blocks(c->rbuf, p, b);
    if (strcmp(name, "bcast") == 0) {
        for (size_t k = 0; k < b; k++)
            if (c->sbuf[k] != mpilab_ops_pattern(r->root, k))
                return 1;
        return 0;
    }
    if (strcmp(name, "reduce") == 0)
        return at_root ? check_sum(r, c->rbuf) : 0;
    if (strcmp(name, "allreduce") == 0)
        return check_allreduce(r, c->rbuf);
    if (strcmp(name, "alltoall") == 0) {
        for (size_t s = 0; s < p; s++)
            for (size_t k = 0; k < b; k++)
                if (c->rbuf[s * b + k] != mpilab_ops_pattern((int)(s * p + (size_t)r->rank), k))
                    return 1;
        return 0;
    }
    return strcmp(name, "barrier") == 0 ? 0 : 1;
}

/* The entry's implementation with MPI_Scatter's signature (scatter and gather). */
static int call_rooted(mpilab_op_run_t *r, mpilab_scatter_fn native)
{
    const coll_state_t *c = r->state;
    mpilab_scatter_fn f = r->op->fn ? (mpilab_scatter_fn)r->op->fn : native;
    int n = (int)r->bytes;
    return f(c->sbuf, n, MPI_BYTE, c->rbuf, n, MPI_BYTE, r->root, r->comm);
}

static int native_scatter(const void *s, int sc, MPI_Datatype st, void *rb, int rc, MPI_Datatype rt, int root,
                          MPI_Comm comm)
{
    return MPI_Scatter(s, sc, st, rb, rc, rt, root, comm);
}

static int native_gather(const void *s, int sc, MPI_Datatype st, void *rb, int rc, MPI_Datatype rt, int root,
                         MPI_Comm comm)
{
    return MPI_Gather(s, sc, st, rb, rc, rt, root, comm);
}

int mpilab_coll_run_scatter(mpilab_op_run_t *r)
{
    return call_rooted(r, native_scatter);
}

int mpilab_coll_run_gather(mpilab_op_run_t *r)
{
    return call_rooted(r, native_gather);
}

int mpilab_coll_run_bcast(mpilab_op_run_t *r)
{
    const coll_state_t *c = r->state;
    return MPI_Bcast(c->sbuf, (int)r->bytes, MPI_BYTE, r->root, r->comm);
}

int mpilab_coll_run_reduce(mpilab_op_run_t *r)
{
    const coll_state_t *c = r->state;
    return MPI_Reduce(c->sbuf, c->rbuf, (int)r->bytes, MPI_UNSIGNED_CHAR, MPI_SUM, r->root, r->comm);
}

int mpilab_coll_run_allreduce(mpilab_op_run_t *r)
{
    const coll_state_t *c = r->state;
    return MPI_Allreduce(c->sbuf, c->rbuf, (int)r->bytes, MPI_UNSIGNED_CHAR, MPI_SUM, r->comm);
}

int mpilab_coll_run_allgather(mpilab_op_run_t *r)
{
    const coll_state_t *c = r->state;
    int n = (int)r->bytes;
    return MPI_Allgather(c->sbuf, n, MPI_BYTE, c->rbuf, n, MPI_BYTE, r->comm);
}

int mpilab_coll_run_alltoall(mpilab_op_run_t *r)
{
    const coll_state_t *c = r->state;
    int n = (int)r->bytes;
    return MPI_Alltoall(c->sbuf, n, MPI_BYTE, c->rbuf, n, MPI_BYTE, r->comm);
}

int mpilab_coll_run_barrier(mpilab_op_run_t *r)
{
    return MPI_Barrier(r->comm);
}

#define O MPILAB_OP_OPSPEC
/* mpilab's own scatter and gather (coll.h) and the native collectives, in --list order */
MPILAB_ENTRIES(coll,
               MPILAB_COLL_ENTRY(scatter, "native", 0, 0, MPILAB_MODEL_NONE),
               MPILAB_COLL_ENTRY(scatter, "linear", mpilab_scatter_linear, O, MPILAB_MODEL_SCATTER_LINEAR),
               MPILAB_COLL_ENTRY(scatter, "binomial", mpilab_scatter_binomial, O, MPILAB_MODEL_SCATTER_BINOMIAL),
               MPILAB_COLL_ENTRY(gather, "native", 0, 0, MPILAB_MODEL_NONE),
               MPILAB_COLL_ENTRY(gather, "linear", mpilab_gather_linear, O, MPILAB_MODEL_GATHER_LINEAR),
               MPILAB_COLL_ENTRY(gather, "binomial", mpilab_gather_binomial, O, MPILAB_MODEL_GATHER_BINOMIAL),
               MPILAB_COLL_ENTRY(bcast, "native", 0, 0, MPILAB_MODEL_NONE),
               MPILAB_COLL_ENTRY(reduce, "native", 0, 0, MPILAB_MODEL_NONE),
               MPILAB_COLL_ENTRY(allreduce, "native", 0, 0, MPILAB_MODEL_NONE),
               MPILAB_COLL_ENTRY(allgather, "native", 0, 0, MPILAB_MODEL_NONE),
               MPILAB_COLL_ENTRY(alltoall, "native", 0, 0, MPILAB_MODEL_NONE),
               MPILAB_COLL_ENTRY(barrier, "native", 0, 0, MPILAB_MODEL_NONE));
