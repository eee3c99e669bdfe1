/* Multilane scatter / gather over a grid of sites (include/mpilab/multilane.h), after
 * Chiba, Endo and Matsuoka: P sender ranks of the root's site each carry one lane of every
 * remote site's blocks across the WAN to one receiver there, which forwards them inside
 * its site.  P = 1 is the single-lane grid baseline (MagPIe, MPICH-G2).
 *
 * Roles for a call (root r in site R, P lanes):
 *   sender k (k = 0..P-1): k = 0 is the root, k >= 1 the k-th lowest non-root rank of R;
 *   lane k of remote site s: its ranks (ascending) with index in [k n_s / P, (k+1) n_s / P)
 *   (floor), whose first rank is the lane's receiver.
 * Blocks between sender, receiver and root travel packed (MPI_PACKED, one block after the
 * other in the lane's rank order); the root and the leaves use the user's datatypes.
 * Messages between one pair of ranks are matched in order (one tag, non-overtaking), which
 * fixes the order below: scatter root -> sender k: lane data for each remote site, then
 * k's own block; gather sender k -> root: own block, then the lane data per remote site. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "coll/coll_internal.h"
#include "coll/multilane_internal.h"
#include "mpilab/coll.h"

#define TAG MPILAB_COLL_TAG

static double marks[MPILAB_ML_NMARKS][2] = {{NAN, NAN}, {NAN, NAN}};

void mpilab_ml_marks_reset(void)
{
    for (int i = 0; i < MPILAB_ML_NMARKS; i++)
        marks[i][0] = marks[i][1] = NAN;
}

void mpilab_ml_mark(int which)
{
    const double t = MPI_Wtime();
    if (isnan(marks[which][0]))
        marks[which][0] = t;
    marks[which][1] = t;
}

double mpilab_ml_mark_get(int which, int last) { return marks[which][last ? 1 : 0]; }

typedef struct {
    const mpilab_grid_t *g;
    int rank, p, root, rsite, lanes;
    size_t block; /* at the root: bytes from one rank's block to the next in its buffer */
} call_t;

static int check_call(call_t *c, const mpilab_grid_t *g, int lanes, int root, MPI_Comm comm)
{
    if (comm == MPI_COMM_NULL)
        return mpilab_ml_fail(MPI_ERR_COMM, "multilane: null communicator");
    if (!g)
        return mpilab_ml_fail(MPI_ERR_ARG, "multilane: no grid description");
    MPI_Comm_rank(comm, &c->rank);
    MPI_Comm_size(comm, &c->p);
    if (g->nranks != c->p)
        return mpilab_ml_fail(MPI_ERR_ARG, "multilane: the grid has %d ranks, the communicator "
                                           "%d", g->nranks, c->p);
    if (root < 0 || root >= c->p)
        return mpilab_ml_fail(MPI_ERR_ROOT, "multilane: root %d out of range", root);
    int pmax = mpilab_grid_lanes_max(g, root);
    if (lanes < 1 || lanes > pmax)
        return mpilab_ml_fail(MPI_ERR_ARG, "multilane: P = %d lanes: need 1 <= P <= P_sup = %d "
                                           "for root %d", lanes, pmax, root);
    c->g = g;
    c->root = root;
    c->rsite = g->site[root];
    c->lanes = lanes;
    return MPI_SUCCESS;
}

/* Argument checks shared by scatter and gather, and at the root the block size of its
 * buffer: `top` / `topcount` / `toptype` are the root's buffer, count and type (send for
 * scatter, receive for gather), `own` / `owncount` every rank's. */
static int begin(call_t *c, const mpilab_grid_t *g, int lanes, int root, MPI_Comm comm,
                 const void *top, int topcount, MPI_Datatype toptype, const void *own,
                 int owncount)
{
    int rc = check_call(c, g, lanes, root, comm);
    if (rc != MPI_SUCCESS)
        return rc;
    if (own == MPI_IN_PLACE || (c->rank == root && top == MPI_IN_PLACE))
        return mpilab_ml_fail(MPI_ERR_BUFFER, "multilane: MPI_IN_PLACE is not supported");
    if (owncount < 0 || (c->rank == root && topcount < 0))
        return mpilab_ml_fail(MPI_ERR_COUNT, "multilane: negative count");
    c->block = 0;
    return c->rank == root ? mpilab_coll_block_size(topcount, toptype, &c->block) : MPI_SUCCESS;
}

/* Sender k of the root's site. */
static int sender(const call_t *c, int k)
{
    if (k == 0)
        return c->root;
    for (int i = 0, seen = 0;; i++) {
        int r = mpilab_grid_site_rank(c->g, c->rsite, i);
        if (r != c->root && ++seen == k)
            return r;
    }
}

/* Sender index of a rank of the root's site (0 for the root), or -1 if it is no sender. */
static int sender_index(const call_t *c, int rank)
{
    if (rank == c->root)
        return 0;
    for (int k = 1; k < c->lanes; k++)
        if (sender(c, k) == rank)
            return k;
    return -1;
}

/* Lane k of site s: first index and number of ranks. */
static void lane_range(const call_t *c, int s, int k, int *first, int *n)
{
    const long ns = mpilab_grid_site_size(c->g, s);
    const long a = (long)k * ns / c->lanes, b = (long)(k + 1) * ns / c->lanes;
    *first = (int)a;
    *n = (int)(b - a);
}

/* Lane of index i in site s. */
static int lane_of(const call_t *c, int s, int i)
{
    for (int k = 0; k < c->lanes; k++) {
        int f, n;
        lane_range(c, s, k, &f, &n);
        if (i >= f && i < f + n)
            return k;
    }
    return -1;
}

static int index_in_site(const call_t *c, int s, int rank)
{
    for (int i = 0; i < mpilab_grid_site_size(c->g, s); i++)
        if (mpilab_grid_site_rank(c->g, s, i) == rank)
            return i;
    return -1;
}

/* The calling rank's lane at its (remote) site: the site *s, the lane *k, the lane's first
 * index *f and number of ranks *n.  Returns whether the rank is the lane's receiver (its
 * first rank). */
static int own_lane(const call_t *c, int *s, int *k, int *f, int *n)
{
    *s = c->g->site[c->rank];
    const int i = index_in_site(c, *s, c->rank);
    *k = lane_of(c, *s, i);
    lane_range(c, *s, *k, f, n);
    return i == *f;
}

/* Pack the blocks of lane (k, s) from the root's send buffer: *buf (free it), *len bytes. */
static int pack_lane(const call_t *c, int s, int k, const char *base, size_t block, int count,
                     MPI_Datatype type, MPI_Comm comm, char **buf, int *len)
{
    int f, n, ibound, rc;
    lane_range(c, s, k, &f, &n);
    if ((rc = mpilab_coll_alloc_packed(count, type, (size_t)n, comm, buf, &ibound)) != MPI_SUCCESS)
        return rc;
    int pos = 0;
    for (int j = 0; j < n && rc == MPI_SUCCESS; j++) {
        int r = mpilab_grid_site_rank(c->g, s, f + j);
        rc = MPI_Pack(base + (size_t)r * block, count, type, *buf, ibound, &pos, comm);
    }
    *len = pos;
    if (rc != MPI_SUCCESS) {
        free(*buf);
        *buf = NULL;
    }
    return rc;
}

static void free_all(char **bufs, int n)
{
    if (!bufs)
        return;
    for (int i = 0; i < n; i++)
        free(bufs[i]);
    free(bufs);
}

static int wait_all(int n, MPI_Request *req, int rc)
{
    /* wait even after an error: the buffers must not be freed under a pending request */
    int rc2 = n > 0 ? mpilab_ml_wait(n, req, NULL) : MPI_SUCCESS;
    return rc != MPI_SUCCESS ? rc : rc2;
}

/* A sender's lanes: a packed buffer per site (NULL where none) and the requests posted on
 * them. */
typedef struct {
    int S, nreq;
    char **bufs;
    MPI_Request *req;
} lanes_t;

/* Room for S sites' buffers and nmax requests; MPI_ERR_NO_MEM (nothing to free) if not. */
static int lanes_alloc(lanes_t *l, int S, size_t nmax)
{
    l->S = S;
    l->nreq = 0;
    l->bufs = calloc((size_t)S, sizeof *l->bufs);
    l->req = malloc(nmax * sizeof *l->req);
    if (!l->bufs || !l->req) {
        free(l->bufs);
        free(l->req);
        return MPI_ERR_NO_MEM;
    }
    return MPI_SUCCESS;
}

static void lanes_free(lanes_t *l)
{
    free(l->req);
    free_all(l->bufs, l->S);
}

/* Wait for every posted request (after an error too), then free: rc, else the wait's. */
static int lanes_finish(lanes_t *l, int rc)
{
    rc = wait_all(l->nreq, l->req, rc);
    lanes_free(l);
    return rc;
}

/* ------------------------------------------------------------------ scatter */

static int scatter_root(const call_t *c, const void *sendbuf, int sendcount, MPI_Datatype sendtype,
                        void *recvbuf, int recvcount, MPI_Datatype recvtype, MPI_Comm comm)
{
    const size_t block = c->block;
    const char *base = sendbuf;
    const int S = c->g->nsites;
    int rc = MPI_SUCCESS;
    /* (1) prepare: each other sender's lanes, sender by sender */
    for (int k = 1; k < c->lanes && rc == MPI_SUCCESS; k++)
        for (int s = 0; s < S && rc == MPI_SUCCESS; s++) {
            if (s == c->rsite)
                continue;
            char *buf = NULL;
            int len = 0;
            rc = pack_lane(c, s, k, base, block, sendcount, sendtype, comm, &buf, &len);
            if (rc == MPI_SUCCESS)
                rc = mpilab_ml_send(buf, len, MPI_PACKED, sender(c, k), TAG, comm);
            free(buf);
        }
    if (rc != MPI_SUCCESS)
        return rc;
    mpilab_ml_mark(MPILAB_ML_MARK_WAN_START);
    /* (2) the root's own lanes, one per remote site, in flight while (3) runs */
    lanes_t l;
    if ((rc = lanes_alloc(&l, S, (size_t)S)) != MPI_SUCCESS)
        return rc;
    for (int s = 0; s < S && rc == MPI_SUCCESS; s++) {
        if (s == c->rsite)
            continue;
        int len = 0, f, n;
        lane_range(c, s, 0, &f, &n);
        rc = pack_lane(c, s, 0, base, block, sendcount, sendtype, comm, &l.bufs[s], &len);
        if (rc == MPI_SUCCESS)
            rc = MPI_Isend(l.bufs[s], len, MPI_PACKED, mpilab_grid_site_rank(c->g, s, f), TAG,
                           comm, &l.req[l.nreq++]);
    }
    /* (3) the root's own site, all blocks in flight at once (as the forwarding above) */
    const int n0 = mpilab_grid_site_size(c->g, c->rsite);
    MPI_Request *hreq = malloc((size_t)n0 * sizeof *hreq);
    int nh = 0;
    if (!hreq && rc == MPI_SUCCESS)
        rc = MPI_ERR_NO_MEM;
    for (int i = 0; i < n0 && rc == MPI_SUCCESS; i++) {
        int r = mpilab_grid_site_rank(c->g, c->rsite, i);
        if (r != c->root)
            rc = MPI_Isend(base + (size_t)r * block, sendcount, sendtype, r, TAG, comm,
                           &hreq[nh++]);
    }
    rc = wait_all(nh, hreq, rc);
    free(hreq);
    if (rc == MPI_SUCCESS)
        rc = mpilab_coll_local_copy(base + (size_t)c->root * block, sendcount, sendtype, recvbuf,
                                    recvcount, recvtype, comm);
    return lanes_finish(&l, rc);
}

/* A non-root rank of the root's site: forward its lanes if it is a sender, take its block. */
static int scatter_home(const call_t *c, void *recvbuf, int recvcount, MPI_Datatype recvtype,
                        MPI_Comm comm)
{
    const int k = sender_index(c, c->rank);
    if (k <= 0)
        return mpilab_ml_recv(recvbuf, recvcount, recvtype, c->root, TAG, comm, MPI_STATUS_IGNORE);
    const int S = c->g->nsites;
    lanes_t l;
    int rc = lanes_alloc(&l, S, (size_t)S);
    if (rc != MPI_SUCCESS)
        return rc;
    for (int s = 0; s < S && rc == MPI_SUCCESS; s++) {
        if (s == c->rsite)
            continue;
        int f, n, ibound, got = 0;
        lane_range(c, s, k, &f, &n);
        rc = mpilab_coll_alloc_packed(recvcount, recvtype, (size_t)n, comm, &l.bufs[s], &ibound);
        MPI_Status st;
        if (rc == MPI_SUCCESS)
            rc = mpilab_ml_recv(l.bufs[s], ibound, MPI_PACKED, c->root, TAG, comm, &st);
        if (rc == MPI_SUCCESS)
            rc = MPI_Get_count(&st, MPI_PACKED, &got);
        mpilab_ml_mark(MPILAB_ML_MARK_WAN_START);
        if (rc == MPI_SUCCESS) /* (2) start this lane as soon as its data is here */
            rc = MPI_Isend(l.bufs[s], got, MPI_PACKED, mpilab_grid_site_rank(c->g, s, f), TAG,
                           comm, &l.req[l.nreq++]);
    }
    if (rc == MPI_SUCCESS)
        rc = mpilab_ml_recv(recvbuf, recvcount, recvtype, c->root, TAG, comm, MPI_STATUS_IGNORE);
    return lanes_finish(&l, rc);
}

/* A rank of a remote site: the lane's receiver forwards its run; the others take a block. */
static int scatter_remote(const call_t *c, void *recvbuf, int recvcount, MPI_Datatype recvtype,
                          MPI_Comm comm)
{
    int s, k, f, n;
    if (!own_lane(c, &s, &k, &f, &n))
        return mpilab_ml_recv(recvbuf, recvcount, recvtype, mpilab_grid_site_rank(c->g, s, f), TAG, comm,
                        MPI_STATUS_IGNORE);
    char *buf = NULL;
    int ibound, got = 0;
    int rc = mpilab_coll_alloc_packed(recvcount, recvtype, (size_t)n, comm, &buf, &ibound);
    if (rc != MPI_SUCCESS)
        return rc;
    MPI_Status st;
    rc = mpilab_ml_recv(buf, ibound, MPI_PACKED, sender(c, k), TAG, comm, &st);
    mpilab_ml_mark(MPILAB_ML_MARK_WAN_END);
    if (rc == MPI_SUCCESS)
        rc = MPI_Get_count(&st, MPI_PACKED, &got);
    if (rc == MPI_SUCCESS && (got < 0 || got % n != 0))
        rc = MPI_ERR_TRUNCATE;
    const int blk = rc == MPI_SUCCESS ? got / n : 0;
    /* (3) forward the run's other blocks, all in flight at once (they share this node's LAN
     * link either way; posted together, no child waits for the previous one to be drained
     * by a rank that the scheduler has not woken yet), then unpack our own (the first) */
    MPI_Request *req = n > 1 ? malloc((size_t)(n - 1) * sizeof *req) : NULL;
    int nreq = 0;
    if (n > 1 && !req && rc == MPI_SUCCESS)
        rc = MPI_ERR_NO_MEM;
    for (int j = 1; j < n && rc == MPI_SUCCESS; j++)
        rc = MPI_Isend(buf + (size_t)j * (size_t)blk, blk, MPI_PACKED,
                       mpilab_grid_site_rank(c->g, s, f + j), TAG, comm, &req[nreq++]);
    int pos = 0;
    if (rc == MPI_SUCCESS)
        rc = MPI_Unpack(buf, blk, &pos, recvbuf, recvcount, recvtype, comm);
    rc = wait_all(nreq, req, rc);
    free(req);
    free(buf);
    return rc;
}

/* ------------------------------------------------------------------ gather */

static int gather_root(const call_t *c, const void *sendbuf, int sendcount, MPI_Datatype sendtype,
                       void *recvbuf, int recvcount, MPI_Datatype recvtype, MPI_Comm comm)
{
    const size_t block = c->block;
    char *base = recvbuf;
    int rc = MPI_SUCCESS;
    const int S = c->g->nsites, P = c->lanes;
    const int n0 = mpilab_grid_site_size(c->g, c->rsite);
    /* requests: one per home rank, one per (lane, remote site); packed buffers per lane */
    const size_t nmax = (size_t)n0 + (size_t)P * (size_t)S;
    MPI_Request *req = malloc(nmax * sizeof *req);
    MPI_Status *st = malloc(nmax * sizeof *st);
    char **bufs = calloc((size_t)P * (size_t)S, sizeof *bufs);
    int *which = malloc(nmax * sizeof *which); /* request -> lane buffer index, or -1 */
    if (!req || !st || !bufs || !which) {
        free(req);
        free(st);
        free(bufs);
        free(which);
        return MPI_ERR_NO_MEM;
    }
    int nreq = 0;
    /* reversed schedule: the own site, the own lanes, then the other senders' lanes; per
     * sender its own block comes first */
    for (int i = 0; i < n0 && rc == MPI_SUCCESS; i++) {
        int r = mpilab_grid_site_rank(c->g, c->rsite, i);
        if (r == c->root)
            continue;
        which[nreq] = -1;
        rc = MPI_Irecv(base + (size_t)r * block, recvcount, recvtype, r, TAG, comm, &req[nreq++]);
    }
    for (int k = 0; k < P && rc == MPI_SUCCESS; k++)
        for (int s = 0; s < S && rc == MPI_SUCCESS; s++) {
            if (s == c->rsite)
                continue;
            int f, n, ibound, src;
            lane_range(c, s, k, &f, &n);
            src = k == 0 ? mpilab_grid_site_rank(c->g, s, f) : sender(c, k);
            rc = mpilab_coll_alloc_packed(recvcount, recvtype, (size_t)n, comm,
                                          &bufs[k * S + s], &ibound);
            if (rc == MPI_SUCCESS) {
                which[nreq] = k * S + s;
                rc = MPI_Irecv(bufs[k * S + s], ibound, MPI_PACKED, src, TAG, comm, &req[nreq++]);
            }
        }
    if (rc == MPI_SUCCESS)
        rc = mpilab_coll_local_copy(sendbuf, sendcount, sendtype, base + (size_t)c->root * block,
                                    recvcount, recvtype, comm);
    int rcw = nreq > 0 ? mpilab_ml_wait(nreq, req, st) : MPI_SUCCESS;
    if (rc == MPI_SUCCESS)
        rc = rcw;
    for (int q = 0; q < nreq && rc == MPI_SUCCESS; q++) {
        if (which[q] < 0)
            continue;
        const int k = which[q] / S, s = which[q] % S;
        int f, n, got = 0, pos = 0;
        lane_range(c, s, k, &f, &n);
        rc = MPI_Get_count(&st[q], MPI_PACKED, &got);
        for (int j = 0; j < n && rc == MPI_SUCCESS; j++) {
            int r = mpilab_grid_site_rank(c->g, s, f + j);
            rc = MPI_Unpack(bufs[which[q]], got, &pos, base + (size_t)r * block, recvcount,
                            recvtype, comm);
        }
        if (rc == MPI_SUCCESS && pos != got)
            rc = MPI_ERR_TRUNCATE;
    }
    free(req);
    free(st);
    free(which);
    free_all(bufs, P * S);
    return rc;
}

static int gather_home(const call_t *c, const void *sendbuf, int sendcount, MPI_Datatype sendtype,
                       MPI_Comm comm)
{
    const int k = sender_index(c, c->rank);
    if (k <= 0)
        return mpilab_ml_send(sendbuf, sendcount, sendtype, c->root, TAG, comm);
    const int S = c->g->nsites;
    lanes_t l;
    int rc = lanes_alloc(&l, S, (size_t)S + 1);
    if (rc != MPI_SUCCESS)
        return rc;
    int *site_of_req = malloc((size_t)S * sizeof *site_of_req);
    if (!site_of_req) {
        lanes_free(&l);
        return MPI_ERR_NO_MEM;
    }
    /* (2) every lane of this sender at once, posted before our own block goes to the root
     * (which may wait behind the other senders' blocks on the root's link) */
    for (int s = 0; s < S && rc == MPI_SUCCESS; s++) {
        if (s == c->rsite)
            continue;
        int f, n, ibound;
        lane_range(c, s, k, &f, &n);
        rc = mpilab_coll_alloc_packed(sendcount, sendtype, (size_t)n, comm, &l.bufs[s], &ibound);
        if (rc == MPI_SUCCESS) {
            site_of_req[l.nreq] = s;
            rc = MPI_Irecv(l.bufs[s], ibound, MPI_PACKED, mpilab_grid_site_rank(c->g, s, f), TAG,
                           comm, &l.req[l.nreq++]);
        }
    }
    /* our own block first on the way to the root, then (1 reversed) the lanes in site
     * order: the root matches them in that order */
    MPI_Request own = MPI_REQUEST_NULL;
    if (rc == MPI_SUCCESS)
        rc = MPI_Isend(sendbuf, sendcount, sendtype, c->root, TAG, comm, &own);
    for (int q = 0; q < l.nreq; q++) {
        MPI_Status st;
        int got = 0;
        int rcw = mpilab_ml_wait(1, &l.req[q], &st);
        mpilab_ml_mark(MPILAB_ML_MARK_WAN_END);
        if (rc == MPI_SUCCESS)
            rc = rcw;
        if (rc == MPI_SUCCESS)
            rc = MPI_Get_count(&st, MPI_PACKED, &got);
        if (rc == MPI_SUCCESS)
            rc = mpilab_ml_send(l.bufs[site_of_req[q]], got, MPI_PACKED, c->root, TAG, comm);
    }
    int rcw = mpilab_ml_wait(1, &own, NULL);
    if (rc == MPI_SUCCESS)
        rc = rcw;
    free(site_of_req);
    lanes_free(&l);
    return rc;
}

static int gather_remote(const call_t *c, const void *sendbuf, int sendcount,
                         MPI_Datatype sendtype, MPI_Comm comm)
{
    int s, k, f, n;
    if (!own_lane(c, &s, &k, &f, &n))
        return mpilab_ml_send(sendbuf, sendcount, sendtype, mpilab_grid_site_rank(c->g, s, f), TAG, comm);
    char *buf = NULL;
    int ibound, pos = 0;
    int rc = mpilab_coll_alloc_packed(sendcount, sendtype, (size_t)n, comm, &buf, &ibound);
    if (rc != MPI_SUCCESS)
        return rc;
    rc = MPI_Pack(sendbuf, sendcount, sendtype, buf, ibound, &pos, comm);
    const int blk = pos;
    MPI_Request *req = malloc((size_t)n * sizeof *req);
    MPI_Status *st = malloc((size_t)n * sizeof *st);
    int nreq = 0;
    if (!req || !st)
        rc = MPI_ERR_NO_MEM;
    /* (3 reversed) the run's blocks, in rank order behind our own */
    for (int j = 1; j < n && rc == MPI_SUCCESS; j++)
        rc = MPI_Irecv(buf + (size_t)j * (size_t)blk, blk, MPI_PACKED,
                       mpilab_grid_site_rank(c->g, s, f + j), TAG, comm, &req[nreq++]);
    int rcw = nreq > 0 ? mpilab_ml_wait(nreq, req, st) : MPI_SUCCESS;
    if (rc == MPI_SUCCESS)
        rc = rcw;
    for (int q = 0; q < nreq && rc == MPI_SUCCESS; q++) {
        int got = 0;
        rc = MPI_Get_count(&st[q], MPI_PACKED, &got);
        if (rc == MPI_SUCCESS && got != blk)
            rc = MPI_ERR_TRUNCATE;
    }
    mpilab_ml_mark(MPILAB_ML_MARK_WAN_START);
    if (rc == MPI_SUCCESS) /* (2 reversed) the whole run across the WAN */
        rc = mpilab_ml_send(buf, n * blk, MPI_PACKED, sender(c, k), TAG, comm);
    free(req);
    free(st);
    free(buf);
    return rc;
}

/* ------------------------------------------------------------------ entry points */

/* Scatter (op 0) or gather (op 1) over grid g with `lanes` lanes: the argument checks, then
 * the calling rank's part as the root, another rank of the root's site, or a remote rank. */
static int run_multilane(int op, const void *sendbuf, int sendcount, MPI_Datatype sendtype,
                         void *recvbuf, int recvcount, MPI_Datatype recvtype, int root,
                         MPI_Comm comm, const mpilab_grid_t *g, int lanes)
{
    call_t c;
    int rc = op == 0 ? begin(&c, g, lanes, root, comm, sendbuf, sendcount, sendtype, recvbuf,
                             recvcount)
                     : begin(&c, g, lanes, root, comm, recvbuf, recvcount, recvtype, sendbuf,
                             sendcount);
    if (rc != MPI_SUCCESS)
        return rc;
    if (c.rank == root)
        return (op == 0 ? scatter_root : gather_root)(&c, sendbuf, sendcount, sendtype, recvbuf,
                                                      recvcount, recvtype, comm);
    if (g->site[c.rank] == c.rsite)
        return op == 0 ? scatter_home(&c, recvbuf, recvcount, recvtype, comm)
                       : gather_home(&c, sendbuf, sendcount, sendtype, comm);
    return op == 0 ? scatter_remote(&c, recvbuf, recvcount, recvtype, comm)
                   : gather_remote(&c, sendbuf, sendcount, sendtype, comm);
}

int mpilab_scatter_multilane(const void *sendbuf, int sendcount, MPI_Datatype sendtype,
                             void *recvbuf, int recvcount, MPI_Datatype recvtype, int root,
                             MPI_Comm comm, const mpilab_grid_t *g, int lanes)
{
    return run_multilane(0, sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, root,
                         comm, g, lanes);
}

int mpilab_gather_multilane(const void *sendbuf, int sendcount, MPI_Datatype sendtype,
                            void *recvbuf, int recvcount, MPI_Datatype recvtype, int root,
                            MPI_Comm comm, const mpilab_grid_t *g, int lanes)
{
    return run_multilane(1, sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, root,
                         comm, g, lanes);
}

int mpilab_scatter_single_lane(const void *sendbuf, int sendcount, MPI_Datatype sendtype,
                               void *recvbuf, int recvcount, MPI_Datatype recvtype, int root,
                               MPI_Comm comm, const mpilab_grid_t *g)
{
    return mpilab_scatter_multilane(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype,
                                    root, comm, g, 1);
}

int mpilab_gather_single_lane(const void *sendbuf, int sendcount, MPI_Datatype sendtype,
                              void *recvbuf, int recvcount, MPI_Datatype recvtype, int root,
                              MPI_Comm comm, const mpilab_grid_t *g)
{
    return mpilab_gather_multilane(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype,
                                   root, comm, g, 1);
}

/* ------------------------------------------------------------------ attached grid */

typedef struct {
    mpilab_grid_t *g;
    int lanes;
} attach_t;

static int keyval = MPI_KEYVAL_INVALID;

static int attach_delete(MPI_Comm comm, int key, void *val, void *extra)
{
    (void)comm;
    (void)key;
    (void)extra;
    attach_t *a = val;
    if (a) {
        mpilab_grid_free(a->g);
        free(a);
    }
    return MPI_SUCCESS;
}

int mpilab_multilane_attach(MPI_Comm comm, const mpilab_grid_t *g, int lanes)
{
    if (!g || lanes < 0)
        return mpilab_ml_fail(MPI_ERR_ARG, "multilane: attach needs a grid and P >= 0");
    int p;
    MPI_Comm_size(comm, &p);
    if (p != g->nranks)
        return mpilab_ml_fail(MPI_ERR_ARG, "multilane: the grid has %d ranks, the communicator "
                                           "%d", g->nranks, p);
    if (keyval == MPI_KEYVAL_INVALID) {
        int rc = MPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, attach_delete, &keyval, NULL);
        if (rc != MPI_SUCCESS)
            return rc;
    }
    attach_t *a = malloc(sizeof *a);
    if (!a || !(a->g = mpilab_ml_grid_copy(g))) {
        free(a);
        return mpilab_ml_fail(MPI_ERR_NO_MEM, "multilane: out of memory");
    }
    a->lanes = lanes;
    int rc = MPI_Comm_set_attr(comm, keyval, a); /* replaces (and deletes) an older one */
    if (rc != MPI_SUCCESS)
        attach_delete(comm, keyval, a, NULL);
    return rc;
}

int mpilab_multilane_detach(MPI_Comm comm)
{
    if (keyval == MPI_KEYVAL_INVALID)
        return MPI_SUCCESS;
    return MPI_Comm_delete_attr(comm, keyval);
}

static const attach_t *attached(MPI_Comm comm)
{
    void *v = NULL;
    int flag = 0;
    if (keyval == MPI_KEYVAL_INVALID || comm == MPI_COMM_NULL ||
        MPI_Comm_get_attr(comm, keyval, &v, &flag) != MPI_SUCCESS || !flag) {
        mpilab_ml_fail(MPI_ERR_ARG, "multilane: no grid attached to the communicator "
                                    "(mpilab_multilane_attach)");
        return NULL;
    }
    return v;
}

const mpilab_grid_t *mpilab_multilane_attached_grid(MPI_Comm comm)
{
    void *v = NULL;
    int flag = 0;
    if (keyval == MPI_KEYVAL_INVALID || comm == MPI_COMM_NULL ||
        MPI_Comm_get_attr(comm, keyval, &v, &flag) != MPI_SUCCESS || !flag)
        return NULL;
    return ((const attach_t *)v)->g;
}

/* The attached grid's collective: op 0 scatter, 1 gather; single: P = 1. */
static int run_attached(int op, int single, const void *sendbuf, int sendcount,
                        MPI_Datatype sendtype, void *recvbuf, int recvcount,
                        MPI_Datatype recvtype, int root, MPI_Comm comm)
{
    const attach_t *a = attached(comm);
    if (!a)
        return MPI_ERR_ARG;
    const int lanes = single ? 1 : a->lanes > 0 ? a->lanes : mpilab_grid_lanes_max(a->g, root);
    return run_multilane(op, sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, root,
                         comm, a->g, lanes);
}

#define ATTACHED(name, op, single)                                                           \
    int name(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,      \
             int recvcount, MPI_Datatype recvtype, int root, MPI_Comm comm)                  \
    {                                                                                        \
        return run_attached(op, single, sendbuf, sendcount, sendtype, recvbuf, recvcount,    \
                            recvtype, root, comm);                                           \
    }
ATTACHED(mpilab_scatter_multilane_attached, 0, 0)
ATTACHED(mpilab_gather_multilane_attached, 1, 0)
ATTACHED(mpilab_scatter_single_lane_attached, 0, 1)
ATTACHED(mpilab_gather_single_lane_attached, 1, 1)
