/* Linear and binomial-tree scatter and gather with MPI_Scatter / MPI_Gather semantics.
 *
 * Tree shape (shared with src/model/predict.c): ranks are renumbered relative to the root,
 * vr = (rank - root) mod p.  A node vr > 0 has parent vr - lowbit(vr) and owns the blocks
 * of relative ranks [vr, vr + min(lowbit(vr), p - vr)); the root owns all p.  Scatter
 * sends to children from the largest mask down, gather receives from the smallest mask up.
 *
 * Data that passes through a non-root internal node travels as MPI_PACKED (the node
 * neither knows nor needs the user datatype layout of the blocks it forwards); leaves and
 * the root use the user's datatypes directly, which MPI allows on either side of a packed
 * message.  Only the one subtree whose blocks wrap past rank p-1 in the root's buffer is
 * packed / unpacked by the root.  MPI_IN_PLACE is not supported (returns MPI_ERR_BUFFER).
 */
#include <limits.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "mpilab/coll.h"
#include "coll/coll_internal.h"

/* Bytes from one rank's block to the next in a root's buffer: count times the extent of
 * `type` (MPI_ERR_TYPE for a negative extent). */
int mpilab_coll_block_size(int count, MPI_Datatype type, size_t *block)
{
    MPI_Aint lb, extent;
    int rc = MPI_Type_get_extent(type, &lb, &extent);
    if (rc != MPI_SUCCESS)
        return rc;
    if (extent < 0)
        return MPI_ERR_TYPE;
    *block = (size_t)count * (size_t)extent;
    return MPI_SUCCESS;
}

/* Upper bound of the packed size of one block of `count` elements of `type`. */
int mpilab_coll_pack_bound(int count, MPI_Datatype type, MPI_Comm comm, size_t *out)
{
    int sz = 0;
    int rc = MPI_Pack_size(count, type, comm, &sz);
    if (rc != MPI_SUCCESS)
        return rc;
    *out = (size_t)sz;
    return MPI_SUCCESS;
}

/* count * nblocks as an MPI int count, or MPI_ERR_COUNT if it does not fit. */
int mpilab_coll_mul_count(int count, size_t nblocks, int *out)
{
    if (count < 0)
        return MPI_ERR_COUNT;
    if (nblocks != 0 && (size_t)count > (size_t)INT_MAX / nblocks)
        return MPI_ERR_COUNT;
    *out = (int)((size_t)count * nblocks);
    return MPI_SUCCESS;
}

int mpilab_coll_size_to_int(size_t v, int *out)
{
    if (v > (size_t)INT_MAX)
        return MPI_ERR_COUNT;
    *out = (int)v;
    return MPI_SUCCESS;
}

/* Local copy between two typed buffers with matching signatures (via pack/unpack, so
 * any pair of datatypes works). */
int mpilab_coll_local_copy(const void *src, int scount, MPI_Datatype stype,
                      void *dst, int rcount, MPI_Datatype rtype, MPI_Comm comm)
{
    size_t bound;
    int rc = mpilab_coll_pack_bound(scount, stype, comm, &bound);
    if (rc != MPI_SUCCESS)
        return rc;
    int ibound;
    if ((rc = mpilab_coll_size_to_int(bound, &ibound)) != MPI_SUCCESS)
        return rc;
    char *tmp = malloc(bound ? bound : 1);
    if (!tmp)
        return MPI_ERR_NO_MEM;
    int pos = 0;
    rc = MPI_Pack(src, scount, stype, tmp, ibound, &pos, comm);
    if (rc == MPI_SUCCESS) {
        int used = pos;
        pos = 0;
        rc = MPI_Unpack(tmp, used, &pos, dst, rcount, rtype, comm);
    }
    free(tmp);
    return rc;
}

/* Temporary buffer for n packed blocks of `count` elements of `type`: *buf (free it) and
 * its size as an MPI int count. */
int mpilab_coll_alloc_packed(int count, MPI_Datatype type, size_t n, MPI_Comm comm, char **buf,
                        int *ibound)
{
    size_t b1;
    int rc = mpilab_coll_pack_bound(count, type, comm, &b1);
    if (rc != MPI_SUCCESS)
        return rc;
    if (b1 != 0 && n > SIZE_MAX / b1)
        return MPI_ERR_COUNT;
    const size_t total = b1 * n;
    if ((rc = mpilab_coll_size_to_int(total, ibound)) != MPI_SUCCESS)
        return rc;
    *buf = malloc(total > 0 ? total : 1);
    return *buf ? MPI_SUCCESS : MPI_ERR_NO_MEM;
}

static size_t lowbit(size_t v) { return v & (~v + 1); }

/* Number of blocks in the subtree of relative rank vr (vr > 0). */
static size_t subtree_blocks(size_t vr, size_t p)
{
    size_t lb = lowbit(vr);
    return lb < p - vr ? lb : p - vr;
}

static size_t to_actual(size_t vr, size_t root, size_t p) { return (vr + root) % p; }

/* A call's checked arguments and the calling rank's place in it. */
typedef struct {
    int rank;
    size_t p, root;
    size_t vr;    /* the rank relative to the root, (rank - root) mod p */
    size_t block; /* at the root: bytes from one rank's block to the next in its buffer */
} call_t;

/* Argument checks shared by scatter and gather: the communicator and the root, then the
 * buffers and counts, and at the root the block size of its buffer.  `top` / `topcount` /
 * `toptype` are the root's buffer, count and type (send for scatter, receive for gather),
 * `own` / `owncount` every rank's. */
static int begin(call_t *c, int root, MPI_Comm comm, const void *top, int topcount,
                 MPI_Datatype toptype, const void *own, int owncount)
{
    if (comm == MPI_COMM_NULL)
        return MPI_ERR_COMM;
    int p, rank;
    int rc = MPI_Comm_size(comm, &p);
    if (rc != MPI_SUCCESS)
        return rc;
    rc = MPI_Comm_rank(comm, &rank);
    if (rc != MPI_SUCCESS)
        return rc;
    if (root < 0 || root >= p)
        return MPI_ERR_ROOT;
    if (own == MPI_IN_PLACE || (rank == root && top == MPI_IN_PLACE))
        return MPI_ERR_BUFFER;
    if (owncount < 0 || (rank == root && topcount < 0))
        return MPI_ERR_COUNT;
    c->rank = rank;
    c->p = (size_t)p;
    c->root = (size_t)root;
    c->vr = ((size_t)rank + c->p - c->root) % c->p;
    c->block = 0;
    return rank == root ? mpilab_coll_block_size(topcount, toptype, &c->block) : MPI_SUCCESS;
}

/* ---------------------------------------------------------------- linear */

int mpilab_scatter_linear(const void *sendbuf, int sendcount, MPI_Datatype sendtype,
                          void *recvbuf, int recvcount, MPI_Datatype recvtype,
                          int root, MPI_Comm comm)
{
    call_t c;
    int rc = begin(&c, root, comm, sendbuf, sendcount, sendtype, recvbuf, recvcount);
    if (rc != MPI_SUCCESS)
        return rc;
    if (c.rank != root)
        return MPI_Recv(recvbuf, recvcount, recvtype, root, MPILAB_COLL_TAG, comm,
                        MPI_STATUS_IGNORE);

    const char *base = sendbuf;
    for (size_t vr = 1; vr < c.p; vr++) {
        size_t dst = to_actual(vr, c.root, c.p);
        rc = MPI_Send(base + dst * c.block, sendcount, sendtype, (int)dst, MPILAB_COLL_TAG, comm);
        if (rc != MPI_SUCCESS)
            return rc;
    }
    return mpilab_coll_local_copy(base + c.root * c.block, sendcount, sendtype, recvbuf, recvcount,
                                  recvtype, comm);
}

int mpilab_gather_linear(const void *sendbuf, int sendcount, MPI_Datatype sendtype,
                         void *recvbuf, int recvcount, MPI_Datatype recvtype,
                         int root, MPI_Comm comm)
{
    call_t c;
    int rc = begin(&c, root, comm, recvbuf, recvcount, recvtype, sendbuf, sendcount);
    if (rc != MPI_SUCCESS)
        return rc;
    if (c.rank != root)
        return MPI_Send(sendbuf, sendcount, sendtype, root, MPILAB_COLL_TAG, comm);

    char *base = recvbuf;
    for (size_t vr = 1; vr < c.p; vr++) {
        size_t src = to_actual(vr, c.root, c.p);
        rc = MPI_Recv(base + src * c.block, recvcount, recvtype, (int)src, MPILAB_COLL_TAG, comm,
                      MPI_STATUS_IGNORE);
        if (rc != MPI_SUCCESS)
            return rc;
    }
    return mpilab_coll_local_copy(sendbuf, sendcount, sendtype, base + c.root * c.block, recvcount,
                                  recvtype, comm);
}

/* ---------------------------------------------------------------- binomial */

/* A non-root node of the tree (vr > 0): lowbit(vr), the blocks of its subtree and its
 * parent's actual rank. */
typedef struct {
    size_t lb, n;
    int parent;
} node_t;

static node_t node_of(const call_t *c)
{
    const size_t lb = lowbit(c->vr);
    return (node_t){.lb = lb, .n = subtree_blocks(c->vr, c->p),
                    .parent = (int)to_actual(c->vr - lb, c->root, c->p)};
}

/* Where the root keeps child `child`'s blocks [child, child + n) (relative ranks): actual
 * ranks [first, first + n) when they are contiguous in its buffer, otherwise (the range
 * wraps past rank p-1) [first, p) then [0, first + n - p), which travel packed. */
typedef struct {
    size_t first; /* the child's actual rank, where its blocks start */
    int c1, c2;   /* element counts of the two pieces (all n blocks in c1 when contiguous) */
    char *tmp;    /* wrapped: a buffer for the n blocks packed (free it); NULL when contiguous */
    int ibound;   /* the size of tmp */
} span_t;

static int root_span(const call_t *c, size_t child, size_t n, int count, MPI_Datatype type,
                     MPI_Comm comm, span_t *s)
{
    s->first = to_actual(child, c->root, c->p);
    s->c2 = 0;
    s->tmp = NULL;
    s->ibound = 0;
    if (s->first + n <= c->p)
        return mpilab_coll_mul_count(count, n, &s->c1);
    const size_t n1 = c->p - s->first, n2 = n - n1;
    int rc;
    if ((rc = mpilab_coll_mul_count(count, n1, &s->c1)) != MPI_SUCCESS ||
        (rc = mpilab_coll_mul_count(count, n2, &s->c2)) != MPI_SUCCESS)
        return rc;
    return mpilab_coll_alloc_packed(count, type, n, comm, &s->tmp, &s->ibound);
}

/* Root of a scatter: send child `child` its n blocks straight from sendbuf when they are
 * contiguous there, otherwise pack both pieces. */
static int scatter_root_send(const call_t *c, const char *base, int sendcount,
                             MPI_Datatype sendtype, size_t child, size_t n, MPI_Comm comm)
{
    span_t s;
    int rc = root_span(c, child, n, sendcount, sendtype, comm, &s);
    if (rc != MPI_SUCCESS)
        return rc;
    const int dst = (int)s.first;
    if (!s.tmp)
        return MPI_Send(base + s.first * c->block, s.c1, sendtype, dst, MPILAB_COLL_TAG, comm);
    int pos = 0;
    rc = MPI_Pack(base + s.first * c->block, s.c1, sendtype, s.tmp, s.ibound, &pos, comm);
    if (rc == MPI_SUCCESS)
        rc = MPI_Pack(base, s.c2, sendtype, s.tmp, s.ibound, &pos, comm);
    if (rc == MPI_SUCCESS)
        rc = MPI_Send(s.tmp, pos, MPI_PACKED, dst, MPILAB_COLL_TAG, comm);
    free(s.tmp);
    return rc;
}

int mpilab_scatter_binomial(const void *sendbuf, int sendcount, MPI_Datatype sendtype,
                            void *recvbuf, int recvcount, MPI_Datatype recvtype,
                            int root, MPI_Comm comm)
{
    call_t c;
    int rc = begin(&c, root, comm, sendbuf, sendcount, sendtype, recvbuf, recvcount);
    if (rc != MPI_SUCCESS)
        return rc;

    if (c.vr == 0) {
        const char *base = sendbuf;
        size_t mask = 1;
        while (mask < c.p)
            mask <<= 1;
        for (mask >>= 1; mask > 0; mask >>= 1) {
            if (mask >= c.p)
                continue;
            rc = scatter_root_send(&c, base, sendcount, sendtype, mask, subtree_blocks(mask, c.p),
                                   comm);
            if (rc != MPI_SUCCESS)
                return rc;
        }
        return mpilab_coll_local_copy(base + c.root * c.block, sendcount, sendtype, recvbuf,
                                      recvcount, recvtype, comm);
    }

    const node_t nd = node_of(&c);
    if (nd.n == 1) /* leaf */
        return MPI_Recv(recvbuf, recvcount, recvtype, nd.parent, MPILAB_COLL_TAG, comm,
                        MPI_STATUS_IGNORE);

    /* Internal node: receive the subtree's blocks packed, keep the first, forward the rest. */
    int ibound;
    char *tmp = NULL;
    if ((rc = mpilab_coll_alloc_packed(recvcount, recvtype, nd.n, comm, &tmp, &ibound)) != MPI_SUCCESS)
        return rc;
    MPI_Status st;
    int got = 0;
    rc = MPI_Recv(tmp, ibound, MPI_PACKED, nd.parent, MPILAB_COLL_TAG, comm, &st);
    if (rc == MPI_SUCCESS)
        rc = MPI_Get_count(&st, MPI_PACKED, &got);
    if (rc == MPI_SUCCESS && (got < 0 || (size_t)got % nd.n != 0))
        rc = MPI_ERR_TRUNCATE;
    if (rc == MPI_SUCCESS) {
        const size_t blk = (size_t)got / nd.n;
        for (size_t mask = nd.lb >> 1; mask > 0 && rc == MPI_SUCCESS; mask >>= 1) {
            if (mask >= nd.n)
                continue;
            size_t cn = subtree_blocks(c.vr + mask, c.p);
            rc = MPI_Send(tmp + mask * blk, (int)(cn * blk), MPI_PACKED,
                          (int)to_actual(c.vr + mask, c.root, c.p), MPILAB_COLL_TAG, comm);
        }
        int pos = 0;
        if (rc == MPI_SUCCESS)
            rc = MPI_Unpack(tmp, (int)blk, &pos, recvbuf, recvcount, recvtype, comm);
    }
    free(tmp);
    return rc;
}

/* Root of a gather: receive child `child`'s n blocks straight into recvbuf when they are
 * contiguous there, otherwise receive packed and unpack both pieces. */
static int gather_root_recv(const call_t *c, char *base, int recvcount, MPI_Datatype recvtype,
                            size_t child, size_t n, MPI_Comm comm)
{
    span_t s;
    int rc = root_span(c, child, n, recvcount, recvtype, comm, &s);
    if (rc != MPI_SUCCESS)
        return rc;
    const int src = (int)s.first;
    if (!s.tmp)
        return MPI_Recv(base + s.first * c->block, s.c1, recvtype, src, MPILAB_COLL_TAG, comm,
                        MPI_STATUS_IGNORE);
    MPI_Status st;
    int got = 0, pos = 0;
    rc = MPI_Recv(s.tmp, s.ibound, MPI_PACKED, src, MPILAB_COLL_TAG, comm, &st);
    if (rc == MPI_SUCCESS)
        rc = MPI_Get_count(&st, MPI_PACKED, &got);
    if (rc == MPI_SUCCESS)
        rc = MPI_Unpack(s.tmp, got, &pos, base + s.first * c->block, s.c1, recvtype, comm);
    if (rc == MPI_SUCCESS)
        rc = MPI_Unpack(s.tmp, got, &pos, base, s.c2, recvtype, comm);
    free(s.tmp);
    return rc;
}

int mpilab_gather_binomial(const void *sendbuf, int sendcount, MPI_Datatype sendtype,
                           void *recvbuf, int recvcount, MPI_Datatype recvtype,
                           int root, MPI_Comm comm)
{
    call_t c;
    int rc = begin(&c, root, comm, recvbuf, recvcount, recvtype, sendbuf, sendcount);
    if (rc != MPI_SUCCESS)
        return rc;

    if (c.vr == 0) {
        char *base = recvbuf;
        rc = mpilab_coll_local_copy(sendbuf, sendcount, sendtype, base + c.root * c.block,
                                    recvcount, recvtype, comm);
        for (size_t mask = 1; mask < c.p && rc == MPI_SUCCESS; mask <<= 1)
            rc = gather_root_recv(&c, base, recvcount, recvtype, mask, subtree_blocks(mask, c.p),
                                  comm);
        return rc;
    }

    const node_t nd = node_of(&c);
    if (nd.n == 1) /* leaf */
        return MPI_Send(sendbuf, sendcount, sendtype, nd.parent, MPILAB_COLL_TAG, comm);

    /* Internal node: pack own block first, receive the children's packed blocks after it
     * in relative order, send the whole subtree up in one message. */
    int ibound;
    char *tmp = NULL;
    if ((rc = mpilab_coll_alloc_packed(sendcount, sendtype, nd.n, comm, &tmp, &ibound)) != MPI_SUCCESS)
        return rc;
    int pos = 0;
    rc = MPI_Pack(sendbuf, sendcount, sendtype, tmp, ibound, &pos, comm);
    const size_t blk = (size_t)pos;
    size_t filled = 1; /* blocks present at the start of tmp */
    for (size_t mask = 1; mask < nd.lb && rc == MPI_SUCCESS; mask <<= 1) {
        if (mask >= nd.n)
            break;
        size_t cn = subtree_blocks(c.vr + mask, c.p);
        MPI_Status st;
        int got = 0;
        rc = MPI_Recv(tmp + mask * blk, (int)(cn * blk), MPI_PACKED,
                      (int)to_actual(c.vr + mask, c.root, c.p), MPILAB_COLL_TAG, comm, &st);
        if (rc == MPI_SUCCESS)
            rc = MPI_Get_count(&st, MPI_PACKED, &got);
        if (rc == MPI_SUCCESS && (size_t)got != cn * blk)
            rc = MPI_ERR_TRUNCATE;
        filled = mask + cn;
    }
    if (rc == MPI_SUCCESS)
        rc = MPI_Send(tmp, (int)(filled * blk), MPI_PACKED, nd.parent, MPILAB_COLL_TAG, comm);
    free(tmp);
    return rc;
}
