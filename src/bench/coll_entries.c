/* The generic collective operations (MPILAB_COLL_ENTRY in include/mpilab/ops.h) and the
 * built-in collective entries. One descriptor per collective says how its buffers are sized
 * and filled, how the entry's implementation (entry->fn, the native MPI call when NULL) is
 * called on them, and how the result is checked; an entry is a collective plus the
 * implementation function it calls. */
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "mpilab/coll.h"
#include "mpilab/ops.h"

#define SENTINEL 0xA5

typedef struct coll_desc coll_desc_t;

typedef struct coll_state {
    const coll_desc_t *desc;
    unsigned char *sbuf, *rbuf;
} coll_state_t;

/* A buffer's size in blocks of `bytes`: none, one, or one per rank. */
enum { NO_BLOCK, ONE_BLOCK, P_BLOCKS };

struct coll_desc {
    const char *name;
    unsigned char send[2], recv[2]; /* blocks at the root [0] and elsewhere [1] */
    /* the send buffer's validation pattern, as check expects it */
    void (*fill)(const mpilab_op_run_t *r, unsigned char *sbuf, size_t sn);
    /* one call of the implementation fn (NULL: the native MPI call) on the buffers */
    int (*call)(const mpilab_op_run_t *r, const coll_state_t *c, mpilab_op_fn fn);
    /* 0 if this rank's result is right */
    int (*check)(const mpilab_op_run_t *r, const coll_state_t *c);
};

static unsigned char reduce_pattern(int rank, size_t index, int size)
{
    unsigned lim = 256u / (unsigned)size; /* size * (lim - 1) < 256 */
    return (unsigned char)(mpilab_ops_pattern(rank, index) % (lim ? lim : 1));
}

/* ---- fills ---- */

static void fill_own(const mpilab_op_run_t *r, unsigned char *sbuf, size_t sn)
{
    for (size_t k = 0; k < sn; k++)
        sbuf[k] = mpilab_ops_pattern(r->rank, k);
}

static void fill_scatter(const mpilab_op_run_t *r, unsigned char *sbuf, size_t sn)
{ /* block for rank d carries pattern(d, .); root only */
    size_t p = (size_t)r->size, b = r->bytes;
    for (size_t d = 0; sn && d < p; d++)
        for (size_t k = 0; k < b; k++)
            sbuf[d * b + k] = mpilab_ops_pattern((int)d, k);
}

static void fill_alltoall(const mpilab_op_run_t *r, unsigned char *sbuf, size_t sn)
{ /* block from s to d carries pattern(s * p + d, .) */
    size_t p = (size_t)r->size, b = r->bytes;
    (void)sn;
    for (size_t d = 0; d < p; d++)
        for (size_t k = 0; k < b; k++)
            sbuf[d * b + k] = mpilab_ops_pattern((int)((size_t)r->rank * p + d), k);
}

static void fill_bcast(const mpilab_op_run_t *r, unsigned char *sbuf, size_t sn)
{ /* the root's data; elsewhere the receive buffer */
    for (size_t k = 0; k < sn; k++)
        sbuf[k] = r->rank == r->root ? mpilab_ops_pattern(r->root, k) : SENTINEL;
}

static void fill_reduce(const mpilab_op_run_t *r, unsigned char *sbuf, size_t sn)
{ /* keep sums below 256: Open MPI 4.1's AVX uint8 sum saturates */
    for (size_t k = 0; k < sn; k++)
        sbuf[k] = reduce_pattern(r->rank, k, r->size);
}

/* ---- checks ---- */

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

static int check_scatter(const mpilab_op_run_t *r, const coll_state_t *c)
{
    for (size_t k = 0; k < r->bytes; k++)
        if (c->rbuf[k] != mpilab_ops_pattern(r->rank, k))
            return 1;
    return 0;
}

static int check_gather(const mpilab_op_run_t *r, const coll_state_t *c)
{
    return r->rank == r->root ? check_blocks(c->rbuf, (size_t)r->size, r->bytes) : 0;
}

static int check_allgather(const mpilab_op_run_t *r, const coll_state_t *c)
{
    return check_blocks(c->rbuf, (size_t)r->size, r->bytes);
}

static int check_bcast(const mpilab_op_run_t *r, const coll_state_t *c)
{
    for (size_t k = 0; k < r->bytes; k++)
        if (c->sbuf[k] != mpilab_ops_pattern(r->root, k))
            return 1;
    return 0;
}

static int check_reduce(const mpilab_op_run_t *r, const coll_state_t *c)
{
    return r->rank == r->root ? check_sum(r, c->rbuf) : 0;
}

/* Allreduce (collective): the root's result checked byte by byte, every other rank's
 * against the root's digest. */
static int check_allreduce(const mpilab_op_run_t *r, const coll_state_t *c)
{
    int at_root = r->rank == r->root;
    unsigned long long h = at_root ? digest(c->rbuf, r->bytes) : 0;
    int bad = at_root ? check_sum(r, c->rbuf) : 0;
    if (MPI_Bcast(&h, 1, MPI_UNSIGNED_LONG_LONG, r->root, r->comm) != MPI_SUCCESS)
        return 1;
    return at_root ? bad : digest(c->rbuf, r->bytes) != h;
}

static int check_alltoall(const mpilab_op_run_t *r, const coll_state_t *c)
{
    size_t p = (size_t)r->size, b = r->bytes;
    for (size_t s = 0; s < p; s++)
        for (size_t k = 0; k < b; k++)
            if (c->rbuf[s * b + k] != mpilab_ops_pattern((int)(s * p + (size_t)r->rank), k))
                return 1;
    return 0;
}

static int check_nothing(const mpilab_op_run_t *r, const coll_state_t *c)
{
    (void)r, (void)c;
    return 0;
}

/* ---- calls: the entry's implementation, or the native MPI call with the same signature ---- */

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

static int native_bcast(void *b, int n, MPI_Datatype t, int root, MPI_Comm comm)
{
    return MPI_Bcast(b, n, t, root, comm);
}

static int native_reduce(const void *s, void *rb, int n, MPI_Datatype t, MPI_Op op, int root, MPI_Comm comm)
{
    return MPI_Reduce(s, rb, n, t, op, root, comm);
}

static int native_allreduce(const void *s, void *rb, int n, MPI_Datatype t, MPI_Op op, MPI_Comm comm)
{
    return MPI_Allreduce(s, rb, n, t, op, comm);
}

static int native_allgather(const void *s, int sc, MPI_Datatype st, void *rb, int rc, MPI_Datatype rt,
                            MPI_Comm comm)
{
    return MPI_Allgather(s, sc, st, rb, rc, rt, comm);
}

static int native_alltoall(const void *s, int sc, MPI_Datatype st, void *rb, int rc, MPI_Datatype rt,
                           MPI_Comm comm)
{
    return MPI_Alltoall(s, sc, st, rb, rc, rt, comm);
}

static int native_barrier(MPI_Comm comm)
{
    return MPI_Barrier(comm);
}

static int call_scatter(const mpilab_op_run_t *r, const coll_state_t *c, mpilab_op_fn fn)
{
    mpilab_scatter_fn f = fn ? (mpilab_scatter_fn)fn : native_scatter;
    int n = (int)r->bytes;
    return f(c->sbuf, n, MPI_BYTE, c->rbuf, n, MPI_BYTE, r->root, r->comm);
}

static int call_gather(const mpilab_op_run_t *r, const coll_state_t *c, mpilab_op_fn fn)
{
    mpilab_gather_fn f = fn ? (mpilab_gather_fn)fn : native_gather;
    int n = (int)r->bytes;
    return f(c->sbuf, n, MPI_BYTE, c->rbuf, n, MPI_BYTE, r->root, r->comm);
}

static int call_bcast(const mpilab_op_run_t *r, const coll_state_t *c, mpilab_op_fn fn)
{
    mpilab_bcast_fn f = fn ? (mpilab_bcast_fn)fn : native_bcast;
    return f(c->sbuf, (int)r->bytes, MPI_BYTE, r->root, r->comm);
}

static int call_reduce(const mpilab_op_run_t *r, const coll_state_t *c, mpilab_op_fn fn)
{
    mpilab_reduce_fn f = fn ? (mpilab_reduce_fn)fn : native_reduce;
    return f(c->sbuf, c->rbuf, (int)r->bytes, MPI_UNSIGNED_CHAR, MPI_SUM, r->root, r->comm);
}

static int call_allreduce(const mpilab_op_run_t *r, const coll_state_t *c, mpilab_op_fn fn)
{
    mpilab_allreduce_fn f = fn ? (mpilab_allreduce_fn)fn : native_allreduce;
    return f(c->sbuf, c->rbuf, (int)r->bytes, MPI_UNSIGNED_CHAR, MPI_SUM, r->comm);
}

static int call_allgather(const mpilab_op_run_t *r, const coll_state_t *c, mpilab_op_fn fn)
{
    mpilab_allgather_fn f = fn ? (mpilab_allgather_fn)fn : native_allgather;
    int n = (int)r->bytes;
    return f(c->sbuf, n, MPI_BYTE, c->rbuf, n, MPI_BYTE, r->comm);
}

static int call_alltoall(const mpilab_op_run_t *r, const coll_state_t *c, mpilab_op_fn fn)
{
    mpilab_alltoall_fn f = fn ? (mpilab_alltoall_fn)fn : native_alltoall;
    int n = (int)r->bytes;
    return f(c->sbuf, n, MPI_BYTE, c->rbuf, n, MPI_BYTE, r->comm);
}

static int call_barrier(const mpilab_op_run_t *r, const coll_state_t *c, mpilab_op_fn fn)
{
    (void)c;
    mpilab_barrier_fn f = fn ? (mpilab_barrier_fn)fn : native_barrier;
    return f(r->comm);
}

/* ---- the descriptors ---- */

static const coll_desc_t COLLS[] = {
    {"scatter", {P_BLOCKS, NO_BLOCK}, {ONE_BLOCK, ONE_BLOCK}, fill_scatter, call_scatter, check_scatter},
    {"gather", {ONE_BLOCK, ONE_BLOCK}, {P_BLOCKS, NO_BLOCK}, fill_own, call_gather, check_gather},
    {"bcast", {ONE_BLOCK, ONE_BLOCK}, {NO_BLOCK, NO_BLOCK}, fill_bcast, call_bcast, check_bcast},
    {"reduce", {ONE_BLOCK, ONE_BLOCK}, {ONE_BLOCK, ONE_BLOCK}, fill_reduce, call_reduce, check_reduce},
    {"allreduce", {ONE_BLOCK, ONE_BLOCK}, {ONE_BLOCK, ONE_BLOCK}, fill_reduce, call_allreduce, check_allreduce},
    {"allgather", {ONE_BLOCK, ONE_BLOCK}, {P_BLOCKS, P_BLOCKS}, fill_own, call_allgather, check_allgather},
    {"alltoall", {P_BLOCKS, P_BLOCKS}, {P_BLOCKS, P_BLOCKS}, fill_alltoall, call_alltoall, check_alltoall},
    {"barrier", {NO_BLOCK, NO_BLOCK}, {NO_BLOCK, NO_BLOCK}, fill_own, call_barrier, check_nothing},
};
#define NCOLLS (sizeof COLLS / sizeof COLLS[0])

const char *mpilab_coll_op_name(size_t k)
{
    return k < NCOLLS ? COLLS[k].name : NULL;
}

static const coll_desc_t *coll_find(const char *name)
{
    for (size_t k = 0; name && k < NCOLLS; k++)
        if (strcmp(COLLS[k].name, name) == 0)
            return &COLLS[k];
    return NULL;
}

/* Bytes of `blocks` blocks of `bytes` on p ranks: 0 on success, -1 on overflow. A scatter's p
 * blocks to send and a gather's p blocks received live on the root only (MPI ignores them
 * elsewhere): on every rank they made p x bytes per rank, p^2 x bytes in all, 64 GiB for a
 * 1 MiB scatter of 256 simulated ranks in one smpimain. */
static int blocks_bytes(unsigned blocks, size_t bytes, size_t p, size_t *n)
{
    if (blocks == P_BLOCKS && bytes && p > SIZE_MAX / bytes)
        return -1;
    *n = blocks == NO_BLOCK ? 0 : blocks == ONE_BLOCK ? bytes : bytes * p;
    return 0;
}

int mpilab_coll_setup(mpilab_op_run_t *r)
{
    const coll_desc_t *d = coll_find(r->op->name);
    size_t sn, rn, p = (size_t)r->size;
    int other = r->rank != r->root;
    if (!d || r->bytes > INT_MAX || blocks_bytes(d->send[other], r->bytes, p, &sn) != 0 ||
        blocks_bytes(d->recv[other], r->bytes, p, &rn) != 0)
        return -1;
    coll_state_t *c = calloc(1, sizeof *c);
    if (!c)
        return -1;
    c->desc = d;
    c->sbuf = malloc(sn ? sn : 1);
    c->rbuf = malloc(rn ? rn : 1);
    if (!c->sbuf || !c->rbuf) {
        free(c->sbuf);
        free(c->rbuf);
        free(c);
        return -1;
    }
    memset(c->rbuf, SENTINEL, rn ? rn : 1);
    d->fill(r, c->sbuf, sn);
    r->state = c;
    return 0;
}

int mpilab_coll_run(mpilab_op_run_t *r)
{
    const coll_state_t *c = r->state;
    return c->desc->call(r, c, r->op->fn);
}

int mpilab_coll_validate(mpilab_op_run_t *r)
{
    const coll_state_t *c = r->state;
    return c->desc->check(r, c);
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
