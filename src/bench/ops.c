/* The operation table: built-in entries and user registration (include/mpilab/ops.h). */
#include "mpilab/ops.h"

#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "bench/entries.h"
#include "coll/multilane_entry.h"
#include "mpilab/coll.h"

enum kind { K_SCATTER, K_GATHER, K_BCAST, K_REDUCE, K_ALLREDUCE, K_ALLGATHER, K_ALLTOALL, K_BARRIER };

#define SENTINEL 0xA5

typedef struct opctx {
    enum kind kind;
    MPI_Comm comm;
    int rank, size, root;
    size_t bytes;
    unsigned char *sbuf, *rbuf;
    mpilab_scatter_fn scatter; /* scatter or gather function of this entry */
} opctx_t;

unsigned char mpilab_ops_pattern(int rank, size_t index)
{
    /* a byte that depends on both the rank and the position */
    unsigned long long x = (unsigned long long)(rank + 1) * 2654435761ull + (unsigned long long)index * 40503ull;
    x ^= x >> 13;
    return (unsigned char)(x & 0xffu);
}

static unsigned char reduce_pattern(int rank, size_t index, int size)
{
    unsigned lim = 256u / (unsigned)size; /* size * (lim - 1) < 256 */
    return (unsigned char)(mpilab_ops_pattern(rank, index) % (lim ? lim : 1));
}

static int setup_kind(enum kind kind, mpilab_scatter_fn fn, size_t bytes, int root, MPI_Comm comm, void **out)
{
    if (bytes > INT_MAX)
        return -1;
    opctx_t *c = calloc(1, sizeof *c);
    if (!c)
        return -1;
    c->kind = kind;
    c->comm = comm;
    c->bytes = bytes;
    c->root = root;
    c->scatter = fn;
    MPI_Comm_rank(comm, &c->rank);
    MPI_Comm_size(comm, &c->size);
    size_t p = (size_t)c->size;
    size_t sn = 1, rn = 1;
    switch (kind) {
    case K_SCATTER: sn = bytes * p; rn = bytes; break;
    case K_GATHER: sn = bytes; rn = bytes * p; break;
    case K_BCAST: sn = bytes; rn = 0; break;
    case K_REDUCE:
    case K_ALLREDUCE: sn = bytes; rn = bytes; break;
    case K_ALLGATHER: sn = bytes; rn = bytes * p; break;
    case K_ALLTOALL: sn = bytes * p; rn = bytes * p; break;
    case K_BARRIER: sn = rn = 0; break;
    }
    if ((kind == K_SCATTER || kind == K_GATHER || kind == K_ALLGATHER || kind == K_ALLTOALL) &&
        bytes * p / p != bytes) {
        free(c);
        return -1;
    }
    c->sbuf = malloc(sn ? sn : 1);
    c->rbuf = malloc(rn ? rn : 1);
    if (!c->sbuf || !c->rbuf) {
        free(c->sbuf);
        free(c->rbuf);
        free(c);
        return -1;
    }
    memset(c->rbuf, SENTINEL, rn ? rn : 1);
    switch (kind) {
    case K_SCATTER: /* block for rank r carries pattern(r, .) */
        for (size_t r = 0; r < p; r++)
            for (size_t k = 0; k < bytes; k++)
                c->sbuf[r * bytes + k] = mpilab_ops_pattern((int)r, k);
        break;
    case K_ALLTOALL: /* block from s to d carries pattern(s * p + d, .) */
        for (size_t d = 0; d < p; d++)
            for (size_t k = 0; k < bytes; k++)
                c->sbuf[d * bytes + k] = mpilab_ops_pattern((int)((size_t)c->rank * p + d), k);
        break;
    case K_BCAST: /* the root's data; the others' buffer is the receive buffer */
        for (size_t k = 0; k < bytes; k++)
            c->sbuf[k] = c->rank == root ? mpilab_ops_pattern(root, k) : SENTINEL;
        break;
    case K_REDUCE:
    case K_ALLREDUCE: /* keep sums below 256: Open MPI 4.1's AVX uint8 sum saturates */
        for (size_t k = 0; k < sn; k++)
            c->sbuf[k] = reduce_pattern(c->rank, k, c->size);
        break;
    default:
        for (size_t k = 0; k < sn; k++)
            c->sbuf[k] = mpilab_ops_pattern(c->rank, k);
    }
    *out = c;
    return 0;
}

static int run_ctx(void *vc)
{
    opctx_t *c = vc;
    int n = (int)c->bytes;
    switch (c->kind) {
    case K_SCATTER:
        return c->scatter(c->sbuf, n, MPI_BYTE, c->rbuf, n, MPI_BYTE, c->root, c->comm);
    case K_GATHER:
        return c->scatter(c->sbuf, n, MPI_BYTE, c->rbuf, n, MPI_BYTE, c->root, c->comm);
    case K_BCAST:
        return MPI_Bcast(c->sbuf, n, MPI_BYTE, c->root, c->comm);
    case K_REDUCE:
        return MPI_Reduce(c->sbuf, c->rbuf, n, MPI_UNSIGNED_CHAR, MPI_SUM, c->root, c->comm);
    case K_ALLREDUCE:
        return MPI_Allreduce(c->sbuf, c->rbuf, n, MPI_UNSIGNED_CHAR, MPI_SUM, c->comm);
    case K_ALLGATHER:
        return MPI_Allgather(c->sbuf, n, MPI_BYTE, c->rbuf, n, MPI_BYTE, c->comm);
    case K_ALLTOALL:
        return MPI_Alltoall(c->sbuf, n, MPI_BYTE, c->rbuf, n, MPI_BYTE, c->comm);
    case K_BARRIER:
        return MPI_Barrier(c->comm);
    }
    return MPI_ERR_OTHER;
}

static int validate_ctx(void *vc)
{
    opctx_t *c = vc;
    size_t p = (size_t)c->size, b = c->bytes;
    switch (c->kind) {
    case K_SCATTER:
        for (size_t k = 0; k < b; k++)
            if (c->rbuf[k] != mpilab_ops_pattern(c->rank, k))
                return 1;
        return 0;
    case K_GATHER:
    case K_ALLGATHER:
        if (c->kind == K_GATHER && c->rank != c->root)
            return 0;
        /* every rank's block, in rank order */
        for (size_t r = 0; r < p; r++)
            for (size_t k = 0; k < b; k++)
                if (c->rbuf[r * b + k] != mpilab_ops_pattern((int)r, k))
                    return 1;
        return 0;
    case K_BCAST:
        for (size_t k = 0; k < b; k++)
            if (c->sbuf[k] != mpilab_ops_pattern(c->root, k))
                return 1;
        return 0;
    case K_REDUCE:
    case K_ALLREDUCE:
        if (c->kind == K_REDUCE && c->rank != c->root)
            return 0;
        for (size_t k = 0; k < b; k++) {
            unsigned sum = 0;
            for (size_t r = 0; r < p; r++)
                sum += reduce_pattern((int)r, k, c->size);
            if (c->rbuf[k] != (unsigned char)(sum & 0xffu))
                return 1;
        }
        return 0;
    case K_ALLTOALL:
        for (size_t s = 0; s < p; s++)
            for (size_t k = 0; k < b; k++)
                if (c->rbuf[s * b + k] != mpilab_ops_pattern((int)(s * p + (size_t)c->rank), k))
                    return 1;
        return 0;
    case K_BARRIER:
        return 0;
    }
    return 1;
}

void mpilab_entry_free_bufs(void *ctx, void *sbuf, void *rbuf)
{
    free(sbuf);
    free(rbuf);
    free(ctx);
}

static void teardown_ctx(void *vc)
{
    opctx_t *c = vc;
    if (c)
        mpilab_entry_free_bufs(c, c->sbuf, c->rbuf);
}

static int native_scatter(const void *s, int sc, MPI_Datatype st, void *r, int rc, MPI_Datatype rt, int root, MPI_Comm comm)
{
    return MPI_Scatter(s, sc, st, r, rc, rt, root, comm);
}
static int native_gather(const void *s, int sc, MPI_Datatype st, void *r, int rc, MPI_Datatype rt, int root, MPI_Comm comm)
{
    return MPI_Gather(s, sc, st, r, rc, rt, root, comm);
}

#define SETUP(fname, kind, fn)                                                           \
    static int fname(size_t bytes, int root, MPI_Comm comm, void **ctx)                  \
    {                                                                                    \
        return setup_kind(kind, fn, bytes, root, comm, ctx);                             \
    }
SETUP(su_scatter_native, K_SCATTER, native_scatter)
SETUP(su_scatter_linear, K_SCATTER, mpilab_scatter_linear)
SETUP(su_scatter_binomial, K_SCATTER, mpilab_scatter_binomial)
SETUP(su_gather_native, K_GATHER, native_gather)
SETUP(su_gather_linear, K_GATHER, mpilab_gather_linear)
SETUP(su_gather_binomial, K_GATHER, mpilab_gather_binomial)
SETUP(su_scatter_multilane, K_SCATTER, mpilab_multilane_entry_scatter)
SETUP(su_scatter_single_lane, K_SCATTER, mpilab_single_lane_entry_scatter)
SETUP(su_gather_multilane, K_GATHER, mpilab_multilane_entry_gather)
SETUP(su_gather_single_lane, K_GATHER, mpilab_single_lane_entry_gather)
SETUP(su_bcast, K_BCAST, NULL)
SETUP(su_reduce, K_REDUCE, NULL)
SETUP(su_allreduce, K_ALLREDUCE, NULL)
SETUP(su_allgather, K_ALLGATHER, NULL)
SETUP(su_alltoall, K_ALLTOALL, NULL)
SETUP(su_barrier, K_BARRIER, NULL)

#define R MPILAB_OP_ROOTED
#define O MPILAB_OP_OPSPEC
#define COLL(n, i, d, f, s, m)                                                                        \
    static const mpilab_op_t n##_##i = {.name = #n, .impl = #i, .bytes_desc = d, .flags = f, .setup = s,  \
                                        .run = run_ctx, .validate = validate_ctx,                      \
                                        .teardown = teardown_ctx, .family = "collective", .model = m}
COLL(scatter, native, "per-rank block", R, su_scatter_native, MPILAB_MODEL_NONE);
COLL(scatter, linear, "per-rank block", R | O, su_scatter_linear, MPILAB_MODEL_SCATTER_LINEAR);
COLL(scatter, binomial, "per-rank block", R | O, su_scatter_binomial, MPILAB_MODEL_SCATTER_BINOMIAL);
COLL(gather, native, "per-rank block", R, su_gather_native, MPILAB_MODEL_NONE);
COLL(gather, linear, "per-rank block", R | O, su_gather_linear, MPILAB_MODEL_GATHER_LINEAR);
COLL(gather, binomial, "per-rank block", R | O, su_gather_binomial, MPILAB_MODEL_GATHER_BINOMIAL);
/* multi-site grids (docs/multilane.md): the grid comes from $MPILAB_MULTILANE_SITES, P from
 * $MPILAB_MULTILANE_LANES; the runner's models.multilane predicts them */
#define G MPILAB_OP_GRID
COLL(scatter, multilane, "per-rank block", R | G, su_scatter_multilane, MPILAB_MODEL_NONE);
COLL(gather, multilane, "per-rank block", R | G, su_gather_multilane, MPILAB_MODEL_NONE);
static const mpilab_op_t scatter_single_lane = {
    .name = "scatter", .impl = "single-lane", .bytes_desc = "per-rank block", .flags = R | G,
    .setup = su_scatter_single_lane, .run = run_ctx, .validate = validate_ctx,
    .teardown = teardown_ctx, .family = "collective", .model = MPILAB_MODEL_NONE};
static const mpilab_op_t gather_single_lane = {
    .name = "gather", .impl = "single-lane", .bytes_desc = "per-rank block", .flags = R | G,
    .setup = su_gather_single_lane, .run = run_ctx, .validate = validate_ctx,
    .teardown = teardown_ctx, .family = "collective", .model = MPILAB_MODEL_NONE};
COLL(bcast, native, "message", R, su_bcast, MPILAB_MODEL_NONE);
COLL(reduce, native, "message (unsigned char sum)", R, su_reduce, MPILAB_MODEL_NONE);
COLL(allreduce, native, "message (unsigned char sum)", 0, su_allreduce, MPILAB_MODEL_NONE);
COLL(allgather, native, "per-rank block", 0, su_allgather, MPILAB_MODEL_NONE);
COLL(alltoall, native, "per-pair block", 0, su_alltoall, MPILAB_MODEL_NONE);
COLL(barrier, native, "none (bytes ignored)", 0, su_barrier, MPILAB_MODEL_NONE);

/* The built-in table, in --list order: each entry carries its own knowledge. */
static const mpilab_op_t *const builtin[] = {
    &mpilab_entry_p2p_roundtrip,
    &scatter_native, &scatter_linear, &scatter_binomial,
    &gather_native, &gather_linear, &gather_binomial,
    &scatter_multilane, &scatter_single_lane, &gather_multilane, &gather_single_lane,
    &bcast_native, &reduce_native, &allreduce_native, &allgather_native, &alltoall_native, &barrier_native,
};
#define NBUILTIN (sizeof builtin / sizeof builtin[0])

static mpilab_op_t *registered;
static size_t nregistered;

size_t mpilab_ops_count(void)
{
    return NBUILTIN + nregistered;
}

const mpilab_op_t *mpilab_ops_get(size_t k)
{
    if (k < NBUILTIN)
        return builtin[k];
    if (k < NBUILTIN + nregistered)
        return &registered[k - NBUILTIN];
    return NULL;
}

const mpilab_op_t *mpilab_ops_find(const char *name, const char *impl)
{
    for (size_t k = 0; k < mpilab_ops_count(); k++) {
        const mpilab_op_t *op = mpilab_ops_get(k);
        if (strcmp(op->name, name) == 0 && strcmp(op->impl, impl) == 0)
            return op;
    }
    return NULL;
}

const char *mpilab_op_timings(const mpilab_op_t *op)
{
    if (op->flags & MPILAB_OP_ALLPAIRS)
        return "p2p";
    return (op->flags & MPILAB_OP_OPSPEC) ? "max,root,global,opspec" : "max,root,global";
}

void mpilab_derived_clear(mpilab_derived_t *d)
{
    double nan = NAN;
    *d = (mpilab_derived_t){.bandwidth_Bps = nan, .msg_rate = nan, .latency_s = nan, .cpu_avail = nan,
                            .poll_interval = nan, .poll_interval_s = nan, .work_rate = nan,
                            .overlap_pct = nan, .t_comm = nan, .t_comp = nan, .t_total = nan,
                            .cpu_avail_peer = nan};
}

int mpilab_ops_register(const mpilab_op_t *op)
{
    if (!op || !op->name || !op->impl || !op->setup || !op->run || !op->validate || !op->teardown)
        return -1;
    if (op->derived && *op->derived && !op->derive)
        return -1;
    if (mpilab_ops_find(op->name, op->impl))
        return -1;
    mpilab_op_t *n = realloc(registered, (nregistered + 1) * sizeof *n);
    if (!n)
        return -1;
    registered = n;
    registered[nregistered] = *op;
    if (!registered[nregistered].bytes_desc)
        registered[nregistered].bytes_desc = "user-defined";
    if (!registered[nregistered].family)
        registered[nregistered].family = "user";
    nregistered++;
    return 0;
}

void mpilab_ops_clear_registered(void)
{
    free(registered);
    registered = NULL;
    nregistered = 0;
}

int mpilab_ops_check(const mpilab_op_t *op, size_t bytes, int root, MPI_Comm comm)
{
    void *ctx = NULL;
    int bad = op->setup(bytes, root, comm, &ctx) != 0;
    int anybad = 0;
    MPI_Allreduce(&bad, &anybad, 1, MPI_INT, MPI_LOR, comm);
    if (anybad) {
        if (!bad)
            op->teardown(ctx);
        return -1;
    }
    int failed = op->run(ctx) != MPI_SUCCESS, anyfailed = 0;
    /* validate runs on every rank or on none: it may communicate (ops.h) */
    MPI_Allreduce(&failed, &anyfailed, 1, MPI_INT, MPI_LOR, comm);
    if (anyfailed) {
        op->teardown(ctx);
        return -1;
    }
    int wrong = op->validate(ctx) != 0, anywrong = 0;
    op->teardown(ctx);
    MPI_Allreduce(&wrong, &anywrong, 1, MPI_INT, MPI_LOR, comm);
    return anywrong ? 1 : 0;
}
