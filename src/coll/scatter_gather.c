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

/* Everything we validate up front, per call. */
typedef struct {
    int rank, p;
} comm_info_t;

static int check_common(int root, MPI_Comm comm, comm_info_t *ci)
{
    if (comm == MPI_COMM_NULL)
        return MPI_ERR_COMM;
    int rc = MPI_Comm_size(comm, &ci->p);
    if (rc != MPI_SUCCESS)
        return rc;
    rc = MPI_Comm_rank(comm, &ci->rank);
    if (rc != MPI_SUCCESS)
        return rc;
    if (root < 0 || root >= ci->p)
        return MPI_ERR_ROOT;
    return MPI_SUCCESS;
}

/* Extent of `type` in bytes as size_t; MPI_ERR_TYPE for a negative extent. */
int mpilab_coll_type_extent(MPI_Datatype type, size_t *ext)
{
    MPI_Aint lb, extent;
    int rc = MPI_Type_get_extent(type, &lb, &extent);
    if (rc != MPI_SUCCESS)
        return rc;
    if (extent < 0)
        return MPI_ERR_TYPE;
    *ext = (size_t)extent;
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

/* ---------------------------------------------------------------- linear */

int mpilab_scatter_linear(const void *sendbuf, int sendcount, MPI_Datatype sendtype,
                          void *recvbuf, int recvcount, MPI_Datatype recvtype,
                          int root, MPI_Comm comm)
{
    comm_info_t ci;
    int rc = check_common(root, comm, &ci);
    if (rc != MPI_SUCCESS)
        return rc;
    if (recvbuf == MPI_IN_PLACE || (ci.rank == root && sendbuf == MPI_IN_PLACE))
        return MPI_ERR_BUFFER;
    if (recvcount < 0 || (ci.rank == root && sendcount < 0))
        return MPI_ERR_COUNT;
    if (ci.rank != root)
        return MPI_Recv(recvbuf, recvcount, recvtype, root, MPILAB_COLL_TAG, comm,
                        MPI_STATUS_IGNORE);

    size_t ext;
    if ((rc = mpilab_coll_type_extent(sendtype, &ext)) != MPI_SUCCESS)
        return rc;
    const size_t block = (size_t)sendcount * ext;
    const char *base = sendbuf;
    const size_t p = (size_t)ci.p, r = (size_t)root;
    for (size_t vr = 1; vr < p; vr++) {
        size_t dst = to_actual(vr, r, p);
        rc = MPI_Send(base + dst * block, sendcount, sendtype, (int)dst, MPILAB_COLL_TAG, comm);
        if (rc != MPI_SUCCESS)
            return rc;
    }
    return mpilab_coll_local_copy(base + r * block, sendcount, sendtype, recvbuf, recvcount, recvtype, comm);
}

int mpilab_gather_linear(const void *sendbuf, int sendcount, MPI_Datatype sendtype,
                         void *recvbuf, int recvcount, MPI_Datatype recvtype,
                         int root, MPI_Comm comm)
{
    comm_info_t ci;
    int rc = check_common(root, comm, &ci);
    if (rc != MPI_SUCCESS)
        return rc;
    if (sendbuf == MPI_IN_PLACE || (ci.rank == root && recvbuf == MPI_IN_PLACE))
        return MPI_ERR_BUFFER;
    if (sendcount < 0 || (ci.rank == root && recvcount < 0))
        return MPI_ERR_COUNT;
    if (ci.rank != root)
        return MPI_Send(sendbuf, sendcount, sendtype, root, MPILAB_COLL_TAG, comm);

    size_t ext;
    if ((rc = mpilab_coll_type_extent(recvtype, &ext)) != MPI_SUCCESS)
        return rc;
    const size_t block = (size_t)recvcount * ext;
    char *base = recvbuf;
    const size_t p = (size_t)ci.p, r = (size_t)root;
    for (size_t vr = 1; vr < p; vr++) {
        size_t src = to_actual(vr, r, p);
        rc = MPI_Recv(base + src * block, recvcount, recvtype, (int)src, MPILAB_COLL_TAG, comm,
                      MPI_STATUS_IGNORE);
        if (rc != MPI_SUCCESS)
            return rc;
    }
    return mpilab_coll_local_copy(sendbuf, sendcount, sendtype, base + r * block, recvcount, recvtype, comm);
}

/* ---------------------------------------------------------------- binomial */

/* Root of a scatter: send relative blocks [c, c+n) to child c straight from sendbuf when
 * they are contiguous there, otherwise (the range wraps past rank p-1) pack both pieces. */
static int scatter_root_send(const char *base, size_t block, int sendcount, MPI_Datatype sendtype,
                             size_t c, size_t n, size_t root, size_t p, MPI_Comm comm)
{
    const size_t first = to_actual(c, root, p);
    const int dst = (int)first;
    int cnt, rc;
    if (first + n <= p) {
        if ((rc = mpilab_coll_mul_count(sendcount, n, &cnt)) != MPI_SUCCESS)
            return rc;
        return MPI_Send(base + first * block, cnt, sendtype, dst, MPILAB_COLL_TAG, comm);
    }
    /* Wrapped: actual ranks [first, p) then [0, first + n - p). */
    const size_t n1 = p - first, n2 = n - n1;
    int ibound, c1, c2;
    char *tmp = NULL;
    if ((rc = mpilab_coll_mul_count(sendcount, n1, &c1)) != MPI_SUCCESS ||
        (rc = mpilab_coll_mul_count(sendcount, n2, &c2)) != MPI_SUCCESS ||
        (rc = mpilab_coll_alloc_packed(sendcount, sendtype, n, comm, &tmp, &ibound)) != MPI_SUCCESS)
        return rc;
    int pos = 0;
    rc = MPI_Pack(base + first * block, c1, sendtype, tmp, ibound, &pos, comm);
    if (rc == MPI_SUCCESS)
        rc = MPI_Pack(base, c2, sendtype, tmp, ibound, &pos, comm);
    if (rc == MPI_SUCCESS)
        rc = MPI_Send(tmp, pos, MPI_PACKED, dst, MPILAB_COLL_TAG, comm);
    free(tmp);
    return rc;
}

int mpilab_scatter_binomial(const void *sendbuf, int sendcount, MPI_Datatype sendtype,
                            void *recvbuf, int recvcount, MPI_Datatype recvtype,
                            int root, MPI_Comm comm)
{
    comm_info_t ci;
    int rc = check_common(root, comm, &ci);
    if (rc != MPI_SUCCESS)
        return rc;
    if (recvbuf == MPI_IN_PLACE || (ci.rank == root && sendbuf == MPI_IN_PLACE))
        return MPI_ERR_BUFFER;
    if (recvcount < 0 || (ci.rank == root && sendcount < 0))
        return MPI_ERR_COUNT;

    const size_t p = (size_t)ci.p, r = (size_t)root;
    const size_t vr = ((size_t)ci.rank + p - r) % p;

    if (vr == 0) {
        size_t ext;
        if ((rc = mpilab_coll_type_extent(sendtype, &ext)) != MPI_SUCCESS)
            return rc;
        const size_t block = (size_t)sendcount * ext;
        const char *base = sendbuf;
        size_t mask = 1;
        while (mask < p)
            mask <<= 1;
        for (mask >>= 1; mask > 0; mask >>= 1) {
            if (mask >= p)
                continue;
            size_t n = subtree_blocks(mask, p);
            rc = scatter_root_send(base, block, sendcount, sendtype, mask, n, r, p, comm);
            if (rc != MPI_SUCCESS)
                return rc;
        }
        return mpilab_coll_local_copy(base + r * block, sendcount, sendtype, recvbuf, recvcount, recvtype,
                          comm);
    }

    const size_t lb = lowbit(vr);
    const size_t n = subtree_blocks(vr, p);
    const int parent = (int)to_actual(vr - lb, r, p);
    if (n == 1) /* leaf */
        return MPI_Recv(recvbuf, recvcount, recvtype, parent, MPILAB_COLL_TAG, comm,
                        MPI_STATUS_IGNORE);

    /* Internal node: receive the subtree's blocks packed, keep the first, forward the rest. */
    int ibound;
    char *tmp = NULL;
    if ((rc = mpilab_coll_alloc_packed(recvcount, recvtype, n, comm, &tmp, &ibound)) != MPI_SUCCESS)
        return rc;
    MPI_Status st;
    int got = 0;
    rc = MPI_Recv(tmp, ibound, MPI_PACKED, parent, MPILAB_COLL_TAG, comm, &st);
    if (rc == MPI_SUCCESS)
        rc = MPI_Get_count(&st, MPI_PACKED, &got);
    if (rc == MPI_SUCCESS && (got < 0 || (size_t)got % n != 0))
        rc = MPI_ERR_TRUNCATE;
    if (rc == MPI_SUCCESS) {
        const size_t blk = (size_t)got / n;
        for (size_t mask = lb >> 1; mask > 0 && rc == MPI_SUCCESS; mask >>= 1) {
            if (mask >= n)
                continue;
            size_t cn = subtree_blocks(vr + mask, p);
            rc = MPI_Send(tmp + mask * blk, (int)(cn * blk), MPI_PACKED,
                          (int)to_actual(vr + mask, r, p), MPILAB_COLL_TAG, comm);
        }
        int pos = 0;
        if (rc == MPI_SUCCESS)
            rc = MPI_Unpack(tmp, (int)blk, &pos, recvbuf, recvcount, recvtype, comm);
    }
    free(tmp);
    return rc;
}

/* Root of a gather: receive child c's blocks [c, c+n) straight into recvbuf when they are
 * contiguous there, otherwise receive packed and unpack both pieces. */
static int gather_root_recv(char *base, size_t block, int recvcount, MPI_Datatype recvtype,
                            size_t c, size_t n, size_t root, size_t p, MPI_Comm comm)
{
    const size_t first = to_actual(c, root, p);
    const int src = (int)first;
    int cnt, rc;
    if (first + n <= p) {
        if ((rc = mpilab_coll_mul_count(recvcount, n, &cnt)) != MPI_SUCCESS)
            return rc;
        return MPI_Recv(base + first * block, cnt, recvtype, src, MPILAB_COLL_TAG, comm,
                        MPI_STATUS_IGNORE);
    }
    const size_t n1 = p - first, n2 = n - n1;
    int ibound, c1, c2;
    char *tmp = NULL;
    if ((rc = mpilab_coll_mul_count(recvcount, n1, &c1)) != MPI_SUCCESS ||
        (rc = mpilab_coll_mul_count(recvcount, n2, &c2)) != MPI_SUCCESS ||
        (rc = mpilab_coll_alloc_packed(recvcount, recvtype, n, comm, &tmp, &ibound)) != MPI_SUCCESS)
        return rc;
    MPI_Status st;
    int got = 0, pos = 0;
    rc = MPI_Recv(tmp, ibound, MPI_PACKED, src, MPILAB_COLL_TAG, comm, &st);
    if (rc == MPI_SUCCESS)
        rc = MPI_Get_count(&st, MPI_PACKED, &got);
    if (rc == MPI_SUCCESS)
        rc = MPI_Unpack(tmp, got, &pos, base + first * block, c1, recvtype, comm);
    if (rc == MPI_SUCCESS)
        rc = MPI_Unpack(tmp, got, &pos, base, c2, recvtype, comm);
    free(tmp);
    return rc;
}

int mpilab_gather_binomial(const void *sendbuf, int sendcount, MPI_Datatype sendtype,
                           void *recvbuf, int recvcount, MPI_Datatype recvtype,
                           int root, MPI_Comm comm)
{
    comm_info_t ci;
    int rc = check_common(root, comm, &ci);
    if (rc != MPI_SUCCESS)
        return rc;
    if (sendbuf == MPI_IN_PLACE || (ci.rank == root && recvbuf == MPI_IN_PLACE))
        return MPI_ERR_BUFFER;
    if (sendcount < 0 || (ci.rank == root && recvcount < 0))
        return MPI_ERR_COUNT;

    const size_t p = (size_t)ci.p, r = (size_t)root;
    const size_t vr = ((size_t)ci.rank + p - r) % p;

    if (vr == 0) {
        size_t ext;
        if ((rc = mpilab_coll_type_extent(recvtype, &ext)) != MPI_SUCCESS)
            return rc;
        const size_t block = (size_t)recvcount * ext;
        char *base = recvbuf;
        rc = mpilab_coll_local_copy(sendbuf, sendcount, sendtype, base + r * block, recvcount, recvtype, comm);
        for (size_t mask = 1; mask < p && rc == MPI_SUCCESS; mask <<= 1)
            rc = gather_root_recv(base, block, recvcount, recvtype, mask,
                                  subtree_blocks(mask, p), r, p, comm);
        return rc;
    }

    const size_t lb = lowbit(vr);
    const size_t n = subtree_blocks(vr, p);
    const int parent = (int)to_actual(vr - lb, r, p);
    if (n == 1) /* leaf */
        return MPI_Send(sendbuf, sendcount, sendtype, parent, MPILAB_COLL_TAG, comm);

    /* Internal node: pack own block first, receive the children's packed blocks after it
     * in relative order, send the whole subtree up in one message. */
    int ibound;
    char *tmp = NULL;
    if ((rc = mpilab_coll_alloc_packed(sendcount, sendtype, n, comm, &tmp, &ibound)) != MPI_SUCCESS)
        return rc;
    int pos = 0;
    rc = MPI_Pack(sendbuf, sendcount, sendtype, tmp, ibound, &pos, comm);
    const size_t blk = (size_t)pos;
    size_t filled = 1; /* blocks present at the start of tmp */
    for (size_t mask = 1; mask < lb && rc == MPI_SUCCESS; mask <<= 1) {
        if (mask >= n)
            break;
        size_t cn = subtree_blocks(vr + mask, p);
        MPI_Status st;
        int got = 0;
        rc = MPI_Recv(tmp + mask * blk, (int)(cn * blk), MPI_PACKED,
                      (int)to_actual(vr + mask, r, p), MPILAB_COLL_TAG, comm, &st);
        if (rc == MPI_SUCCESS)
            rc = MPI_Get_count(&st, MPI_PACKED, &got);
        if (rc == MPI_SUCCESS && (size_t)got != cn * blk)
            rc = MPI_ERR_TRUNCATE;
        filled = mask + cn;
    }
    if (rc == MPI_SUCCESS)
        rc = MPI_Send(tmp, (int)(filled * blk), MPI_PACKED, parent, MPILAB_COLL_TAG, comm);
    free(tmp);
    return rc;
}
