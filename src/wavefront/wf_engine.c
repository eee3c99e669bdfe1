/* The pipelined out-of-core engine: workers own bands of block rows, hand frontiers to
 * their neighbours block by block (threads: bounded queues; MPI: Isend/Irecv) and chain
 * waves (a worker starts iteration n+1 as soon as its dependencies allow, bounded by the
 * number of waves in flight). */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "wavefront/wf_internal.h"

#ifdef MPILAB_HAVE_URING
#include <liburing.h>
#endif

#define ERR(...) snprintf(err, errlen, __VA_ARGS__)

void mpilab_wf_stats_free(mpilab_wf_stats *st)
{
    if (!st)
        return;
    free(st->iter_s);
    free(st->compute_s);
    free(st->io_wait_s);
    free(st->dep_wait_s);
    free(st->io_busy_s);
    st->iter_s = st->compute_s = st->io_wait_s = st->dep_wait_s = st->io_busy_s = NULL;
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static long maxrss_kb(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return ru.ru_maxrss;
}

/* ---- frontier queues between threads ------------------------------------------------ */

typedef struct shared shared;

typedef struct {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    double *ring;
    size_t seg;
    int64_t cap, head, tail;
    shared *sh;
} chan;

struct shared {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int64_t done_iters;
    volatile int abort;
    char err[512];
    chan *chans; /* all queues, to wake them on abort */
    int nchans;
};

static void shared_fail(shared *sh, const char *msg)
{
    pthread_mutex_lock(&sh->mu);
    if (!sh->abort)
        snprintf(sh->err, sizeof sh->err, "%s", msg);
    sh->abort = 1;
    pthread_cond_broadcast(&sh->cv);
    pthread_mutex_unlock(&sh->mu);
    for (int i = 0; i < sh->nchans; i++) {
        pthread_mutex_lock(&sh->chans[i].mu);
        pthread_cond_broadcast(&sh->chans[i].cv);
        pthread_mutex_unlock(&sh->chans[i].mu);
    }
}

static int chan_put(chan *c, const double *v, size_t n)
{
    pthread_mutex_lock(&c->mu);
    while (c->head - c->tail >= c->cap && !c->sh->abort)
        pthread_cond_wait(&c->cv, &c->mu);
    if (c->sh->abort) {
        pthread_mutex_unlock(&c->mu);
        return -1;
    }
    memcpy(c->ring + (size_t)(c->head % c->cap) * c->seg, v, n * sizeof *v);
    c->head++;
    pthread_cond_broadcast(&c->cv);
    pthread_mutex_unlock(&c->mu);
    return 0;
}

static int chan_get(chan *c, double *v, size_t n)
{
    pthread_mutex_lock(&c->mu);
    while (c->head == c->tail && !c->sh->abort)
        pthread_cond_wait(&c->cv, &c->mu);
    if (c->sh->abort) {
        pthread_mutex_unlock(&c->mu);
        return -1;
    }
    memcpy(v, c->ring + (size_t)(c->tail % c->cap) * c->seg, n * sizeof *v);
    c->tail++;
    pthread_cond_broadcast(&c->cv);
    pthread_mutex_unlock(&c->mu);
    return 0;
}

/* ---- MPI links ---------------------------------------------------------------------- */

enum { TAG_BF = 4101, TAG_TF = 4102, TAG_WAVE = 4103 };

typedef struct {
    int peer, tag;
    size_t seg;
    /* sends: ring of buffers, a slot is reused after its request completed */
    int nsend;
    double *sbuf;
    MPI_Request *sreq;
    int64_t sent;
    /* receives: two pre-posted */
    double *rbuf;
    MPI_Request rreq[2];
    int64_t posted, got, expect;
} mpilink;

static void ml_post(mpilink *l, MPI_Comm comm)
{
    while (l->posted < l->expect && l->posted < l->got + 2) {
        int s = (int)(l->posted % 2);
        MPI_Irecv(l->rbuf + (size_t)s * l->seg, (int)l->seg, MPI_DOUBLE, l->peer, l->tag, comm,
                  &l->rreq[s]);
        l->posted++;
    }
}

/* ---- the worker --------------------------------------------------------------------- */

/* ---- the worker --------------------------------------------------------------------- */

/* One step of a worker = one block (br, bc) of one iteration. With prefetch, a helper
 * thread per worker executes the worker's block reads and write-backs in submission order
 * (FIFO): the reads of step s+1 are submitted before step s is computed (into the other of
 * two buffer slots), the write-back of step s right after. Step s+1's reads are submitted
 * after step s's write instead when they touch block s (one or two blocks per band), so
 * every read sees exactly the data the sequential order would. */
enum { OP_READ = 1, OP_WRITE = 2, OP_CREAD = 3, OP_CWRITE = 4 };
#define WF_IOQ 4
#define WF_MAXQ 32           /* largest queue depth (buffer slots per worker) */
#define WF_URING_ENTRIES 256 /* submission queue entries per worker ring */

typedef struct {
    int kind, slot;
    int64_t it, br, bc;
} ioop;

typedef struct worker {
    int id, nworkers;
    wf_file *data, *coef;
    wf_blockio dio, cio;
    int64_t b0, b1, nbc, mb, nb, cols, row0, total;
    int64_t iters;
    int waves, drop, hints, prefetch;
    int nslots; /* buffer slots: 1 without prefetch, 2 with the helper, D with uring */
    int uring;
    /* neighbours: threads */
    shared *sh;
    chan *up_bf, *down_bf; /* BF from the upper worker, to the lower worker */
    chan *up_tf, *down_tf; /* TF to the upper worker, from the lower worker */
    /* neighbours: MPI */
    MPI_Comm comm;
    int mpi;
    mpilink l_up_tf_send, l_down_bf_send, l_up_bf_recv, l_down_tf_recv;
    MPI_Request *wave_req;
    int has_up, has_down;
    /* buffers: halo'd block, coefficients, east halo and block I/O state per slot */
    double *hb[WF_MAXQ], *cfb[WF_MAXQ], *lfs[WF_MAXQ], *north, *west, *seg;
    wf_blockio dios[WF_MAXQ], lfios[WF_MAXQ], cios[WF_MAXQ], wios[WF_MAXQ];
    int64_t rseq[WF_MAXQ];
#ifdef MPILAB_HAVE_URING
    /* io_uring: recorded transfers per slot (reads of the slot's step, its write-back),
     * outstanding counts, and the step/block of the slot's write-back */
    struct io_uring ring;
    int ring_ok;
    wf_rec rrec[WF_MAXQ], wrec[WF_MAXQ];
    int64_t rpend[WF_MAXQ], wpend[WF_MAXQ], wstep[WF_MAXQ], wbr[WF_MAXQ], wbc[WF_MAXQ];
    int64_t inflight;
#endif
    /* I/O helper */
    pthread_t io_tid;
    pthread_mutex_t io_mu;
    pthread_cond_t io_cv;
    int io_started, io_stop, io_failed;
    ioop q[WF_IOQ];
    int64_t submitted, completed;
    char ioerr[512];
    /* block chaining (chain == MPILAB_WF_CHAIN_BLOCK): a pool of npool block slots (the
     * halo'd block, its 5 coefficient blocks, the east halo), the slot holding each block
     * of the band (-1: none), the read sequence of each slot, the free slots; the top
     * frontiers received from the lower neighbour, stored per column until used (tfk: the
     * iteration held, WF_TF_EMPTY if none); one tagged segment (k, c, values). */
    int chain;
    int npool, nfree;
    double **xhb, **xcf, **xlf;
    int64_t *xseq;
    int *xfree, *slot_of;
    double *tfst, *segx;
    int64_t *tfk;
    int64_t buf_bytes; /* engine buffers allocated for this worker */
    /* results */
    int64_t bytes_r, bytes_w;
    double t_compute, t_iowait, t_depwait, t_iobusy;
    double *t_done;
    char err[512];
    int failed;
} worker;

static int link_send(worker *w, mpilink *l, chan *c, const double *v, size_t n)
{
    if (!w->mpi)
        return chan_put(c, v, n);
    int s = (int)(l->sent % l->nsend);
    if (l->sent >= l->nsend)
        MPI_Wait(&l->sreq[s], MPI_STATUS_IGNORE);
    double *b = l->sbuf + (size_t)s * l->seg;
    memcpy(b, v, n * sizeof *v);
    MPI_Isend(b, (int)n, MPI_DOUBLE, l->peer, l->tag, w->comm, &l->sreq[s]);
    l->sent++;
    return 0;
}

static int link_recv(worker *w, mpilink *l, chan *c, double *v, size_t n)
{
    if (!w->mpi)
        return chan_get(c, v, n);
    ml_post(l, w->comm);
    int s = (int)(l->got % 2);
    MPI_Wait(&l->rreq[s], MPI_STATUS_IGNORE);
    memcpy(v, l->rbuf + (size_t)s * l->seg, n * sizeof *v);
    l->got++;
    ml_post(l, w->comm);
    return 0;
}

static int gate_wait(worker *w, int64_t it)
{
    if (w->id != 0 || it < w->waves || w->nworkers == 1)
        return 0;
    if (w->mpi) {
        int tok = 0;
        MPI_Recv(&tok, 1, MPI_INT, w->nworkers - 1, TAG_WAVE, w->comm, MPI_STATUS_IGNORE);
        return 0;
    }
    shared *sh = w->sh;
    pthread_mutex_lock(&sh->mu);
    while (sh->done_iters < it - w->waves + 1 && !sh->abort)
        pthread_cond_wait(&sh->cv, &sh->mu);
    int rc = sh->abort ? -1 : 0;
    pthread_mutex_unlock(&sh->mu);
    return rc;
}

static void iter_done(worker *w, int64_t it)
{
    if (w->id != w->nworkers - 1 || w->nworkers == 1)
        return;
    if (w->mpi) {
        if (it < w->iters - w->waves) {
            static const int tok = 1;
            MPI_Isend(&tok, 1, MPI_INT, 0, TAG_WAVE, w->comm, &w->wave_req[it]);
        }
        return;
    }
    pthread_mutex_lock(&w->sh->mu);
    w->sh->done_iters = it + 1;
    pthread_cond_broadcast(&w->sh->cv);
    pthread_mutex_unlock(&w->sh->mu);
}

static void hint_block(worker *w, int64_t br, int64_t bc, int done, int64_t iter_left)
{
    if (!w->hints)
        return;
    if (done && !w->drop && !w->data->map)
        return;
    if (!done && iter_left <= 0)
        return;
    off_t off;
    size_t len;
    if (w->data->h.layout != MPILAB_WF_ROWMAJOR) {
        wf_block_range(w->data, &w->dio, br, bc, &off, &len);
        if (done)
            wf_done(w->data, off, len, w->drop);
        else
            wf_willneed(w->data, off, len);
    }
    if (w->coef->h.layout != MPILAB_WF_ROWMAJOR) {
        wf_block_range(w->coef, &w->cio, br, bc, &off, &len);
        if (done) {
            if (w->drop || w->coef->map)
                wf_done(w->coef, off, len, 0);
        } else {
            wf_willneed(w->coef, off, len);
        }
    }
}

static int64_t blk_h(const worker *w, int64_t br)
{
    int64_t r = (int64_t)w->data->h.rows - br * w->mb;
    return r < w->mb ? r : w->mb;
}

static int64_t blk_w(const worker *w, int64_t bc)
{
    int64_t c = w->cols - bc * w->nb;
    return c < w->nb ? c : w->nb;
}

/* The step after (it, br, bc) in a worker's order; 0 if there is none. */
static int next_step(const worker *w, int64_t *it, int64_t *br, int64_t *bc)
{
    if (++*bc < w->nbc)
        return 1;
    *bc = 0;
    if (++*br < w->b1)
        return 1;
    *br = w->b0;
    return ++*it < w->iters;
}

/* Reads of one step, into slot `slot`: the block (into the halo'd buffer), the old left
 * frontier of the next block (east halo: one contiguous read in the optimized layout, a
 * strided gather of MB elements in the block and row-major layouts), the 5 coefficient
 * blocks, and the old top frontier of the block below (south halo) when it is in this
 * worker's band. Then a read-ahead hint for the step after (synchronous back ends).
 * With io_uring this runs twice per step: once recording the transfers, once replaying
 * the copies after they completed (wf_rec); all buffers it uses belong to the slot. */
static int step_read(worker *w, const ioop *op, char *err, size_t errlen)
{
    const int64_t ld = w->nb + 2, br = op->br, bc = op->bc;
    const int64_t h = blk_h(w, br), wd = blk_w(w, bc);
    const int sl = op->slot;
    double *H = w->hb[sl], *lf = w->lfs[sl];
    if (wf_read_block(w->data, &w->dios[sl], br, bc, 0, H + ld + 1, (size_t)ld, &w->bytes_r, err,
                      errlen))
        return -1;
    if (bc + 1 < w->nbc) {
        if (wf_read_lf(w->data, &w->lfios[sl], br, bc + 1, lf, &w->bytes_r, err, errlen))
            return -1;
        for (int64_t i = 0; i < h; i++)
            H[(i + 1) * ld + wd + 1] = lf[i];
    }
    size_t pl = (size_t)(h * wd);
    for (int p = 0; p < 5; p++)
        if (wf_read_block(w->coef, &w->cios[sl], br, bc, p, w->cfb[sl] + p * pl, (size_t)wd,
                          &w->bytes_r, err, errlen))
            return -1;
    if (br + 1 < w->b1 &&
        wf_read_tf(w->data, &w->dios[sl], br + 1, bc, H + (size_t)((h + 1) * ld) + 1,
                   &w->bytes_r, err, errlen))
        return -1;
    int64_t it = op->it, nbr = br, nbc = bc;
    if (!w->uring && next_step(w, &it, &nbr, &nbc))
        hint_block(w, nbr, nbc, 0, 1);
    return 0;
}

static int step_write(worker *w, const ioop *op, char *err, size_t errlen)
{
    const int64_t ld = w->nb + 2;
    if (wf_write_block(w->data, &w->wios[op->slot], op->br, op->bc, w->hb[op->slot] + ld + 1,
                       (size_t)ld, &w->bytes_w, err, errlen))
        return -1;
    if (!w->uring)
        hint_block(w, op->br, op->bc, 1, 0);
    return 0;
}

static int chain_read(worker *w, const ioop *op, char *err, size_t errlen);
static int chain_write(worker *w, const ioop *op, char *err, size_t errlen);

static int io_exec(worker *w, const ioop *op, char *err, size_t errlen)
{
    switch (op->kind) {
    case OP_READ: return step_read(w, op, err, errlen);
    case OP_WRITE: return step_write(w, op, err, errlen);
    case OP_CREAD: return chain_read(w, op, err, errlen);
    default: return chain_write(w, op, err, errlen);
    }
}

static void *io_thread(void *arg)
{
    worker *w = arg;
    pthread_mutex_lock(&w->io_mu);
    for (;;) {
        while (w->completed == w->submitted && !w->io_stop)
            pthread_cond_wait(&w->io_cv, &w->io_mu);
        if (w->completed == w->submitted)
            break;
        ioop op = w->q[w->completed % WF_IOQ];
        int skip = w->io_failed;
        pthread_mutex_unlock(&w->io_mu);
        int rc = 0;
        if (!skip) {
            double t0 = now_s();
            rc = io_exec(w, &op, w->ioerr, sizeof w->ioerr);
            w->t_iobusy += now_s() - t0;
        }
        pthread_mutex_lock(&w->io_mu);
        if (rc)
            w->io_failed = 1;
        w->completed++;
        pthread_cond_broadcast(&w->io_cv);
    }
    pthread_mutex_unlock(&w->io_mu);
    return NULL;
}

/* Queue an I/O operation (without prefetch: do it now). Returns its sequence number
 * (> 0), or -1 on failure. */
static int64_t io_submit(worker *w, int kind, int slot, int64_t it, int64_t br, int64_t bc)
{
    ioop op = {kind, slot, it, br, bc};
    if (!w->prefetch) {
        double t0 = now_s();
        int rc = io_exec(w, &op, w->err, sizeof w->err);
        w->t_iowait += now_s() - t0;
        return rc ? -1 : ++w->submitted;
    }
    double t0 = now_s();
    pthread_mutex_lock(&w->io_mu);
    while (w->submitted - w->completed >= WF_IOQ)
        pthread_cond_wait(&w->io_cv, &w->io_mu);
    w->q[w->submitted % WF_IOQ] = op;
    int64_t seq = ++w->submitted;
    pthread_cond_broadcast(&w->io_cv);
    pthread_mutex_unlock(&w->io_mu);
    w->t_iowait += now_s() - t0;
    return seq;
}

/* Wait until operation `seq` (and all before it) completed. */
static int io_wait(worker *w, int64_t seq)
{
    if (!w->prefetch)
        return 0;
    double t0 = now_s();
    pthread_mutex_lock(&w->io_mu);
    while (w->completed < seq)
        pthread_cond_wait(&w->io_cv, &w->io_mu);
    int failed = w->io_failed;
    pthread_mutex_unlock(&w->io_mu);
    w->t_iowait += now_s() - t0;
    if (failed) {
        snprintf(w->err, sizeof w->err, "%s", w->ioerr);
        return -1;
    }
    return 0;
}

static int io_start(worker *w)
{
    w->submitted = w->completed = 0;
    w->io_stop = w->io_failed = 0;
    if (!w->prefetch || w->uring)
        return 0;
    pthread_mutex_init(&w->io_mu, NULL);
    pthread_cond_init(&w->io_cv, NULL);
    if (pthread_create(&w->io_tid, NULL, io_thread, w) != 0) {
        pthread_mutex_destroy(&w->io_mu);
        pthread_cond_destroy(&w->io_cv);
        snprintf(w->err, sizeof w->err, "cannot create an I/O helper thread");
        return -1;
    }
    w->io_started = 1;
    return 0;
}

/* Stop the helper after the queued operations (or at once if one failed). */
static void io_stop(worker *w)
{
    if (!w->io_started)
        return;
    pthread_mutex_lock(&w->io_mu);
    w->io_stop = 1;
    pthread_cond_broadcast(&w->io_cv);
    pthread_mutex_unlock(&w->io_mu);
    pthread_join(w->io_tid, NULL);
    pthread_mutex_destroy(&w->io_mu);
    pthread_cond_destroy(&w->io_cv);
    w->io_started = 0;
}

/* ---- io_uring back end ---------------------------------------------------------------
 * No helper thread: the worker records a step's transfers (step_read / step_write with
 * the slot's wf_rec), submits them all to its own ring and goes on; completions are
 * reaped whenever it has to wait. Up to nslots steps have buffers in flight: the reads of
 * the next nslots-1 steps and the write-backs not yet completed. Ordering is enforced
 * here instead of by a FIFO: a read is submitted only after every write-back of a block
 * it touches completed, and a slot is reused only after its write-back completed. */
#ifdef MPILAB_HAVE_URING
static void ur_fail(worker *w, const char *path, const char *what, int e)
{
    if (!w->io_failed)
        snprintf(w->ioerr, sizeof w->ioerr, "%.300s: %s failed: %s", path, what, strerror(e));
    w->io_failed = 1;
}

/* Reap one completion (waiting for it). */
static int ur_reap(worker *w)
{
    struct io_uring_cqe *cqe;
    int rc;
    do
        rc = io_uring_wait_cqe(&w->ring, &cqe);
    while (rc == -EINTR);
    if (rc < 0) {
        ur_fail(w, w->data->path, "io_uring_wait_cqe", -rc);
        return -2;
    }
    uint64_t ud = io_uring_cqe_get_data64(cqe);
    int res = cqe->res;
    io_uring_cqe_seen(&w->ring, cqe);
    int slot = (int)((ud >> 1) & 63), wr = (int)(ud & 1);
    size_t xi = (size_t)(ud >> 8);
    wf_xfer *x = wr ? &w->wrec[slot].v[xi] : &w->rrec[slot].v[xi];
    w->inflight--;
    if (res < 0 && res != -EAGAIN && res != -EINTR) {
        ur_fail(w, x->f->path, wr ? "write" : "read", -res);
    } else if ((size_t)(res < 0 ? 0 : res) < x->len) {
        /* short transfer (or EAGAIN/EINTR): finish it synchronously */
        size_t done = res < 0 ? 0 : (size_t)res;
        if (!wr && res == 0) {
            if (!w->io_failed)
                snprintf(w->ioerr, sizeof w->ioerr, "%.300s: unexpected end of file at offset %lld",
                         x->f->path, (long long)x->off);
            w->io_failed = 1;
        } else if (!w->io_failed) {
            unsigned char *b = x->buf;
            int r2 = wr ? wf_write(x->f, b + done, x->len - done, x->off + (off_t)done, NULL,
                                   w->ioerr, sizeof w->ioerr)
                        : wf_read(x->f, b + done, x->len - done, x->off + (off_t)done, NULL,
                                  w->ioerr, sizeof w->ioerr);
            if (r2)
                w->io_failed = 1;
        }
    }
    if (wr) {
        if (--w->wpend[slot] == 0 && !w->io_failed)
            hint_block(w, w->wbr[slot], w->wbc[slot], 1, 0);
    } else {
        w->rpend[slot]--;
    }
    return w->io_failed ? -1 : 0;
}

/* Submit the transfers recorded in r (slot, direction). */
static int ur_submit(worker *w, wf_rec *r, int slot, int wr, int64_t *pend)
{
    unsigned cap = w->ring.cq.ring_entries;
    for (size_t i = 0; i < r->n; i++) {
        struct io_uring_sqe *sqe;
        while (w->inflight >= (int64_t)cap || !(sqe = io_uring_get_sqe(&w->ring))) {
            int rc = io_uring_submit(&w->ring);
            if (rc < 0 && rc != -EAGAIN && rc != -EBUSY && rc != -EINTR) {
                ur_fail(w, w->data->path, "io_uring_submit", -rc);
                return -1;
            }
            if (w->inflight >= (int64_t)cap || rc <= 0)
                if (ur_reap(w))
                    return -1;
        }
        wf_xfer *x = &r->v[i];
        if (wr)
            io_uring_prep_write(sqe, x->f->fd, x->buf, (unsigned)x->len, (uint64_t)x->off);
        else
            io_uring_prep_read(sqe, x->f->fd, x->buf, (unsigned)x->len, (uint64_t)x->off);
        io_uring_sqe_set_data64(sqe, ((uint64_t)i << 8) | ((uint64_t)slot << 1) | (uint64_t)wr);
        (*pend)++;
        w->inflight++;
    }
    int rc;
    do
        rc = io_uring_submit(&w->ring);
    while (rc == -EINTR);
    if (rc < 0 && rc != -EAGAIN && rc != -EBUSY) {
        ur_fail(w, w->data->path, "io_uring_submit", -rc);
        return -1;
    }
    return 0;
}

/* Reap everything still in flight (also after a failure: the buffers must be idle
 * before they are freed). */
static int ur_drain(worker *w)
{
    if (!w->ring_ok)
        return 0;
    io_uring_submit(&w->ring);
    while (w->inflight > 0)
        if (ur_reap(w) == -2)
            return -1;
    return w->io_failed ? -1 : 0;
}
#endif

/* Largest step index before (it, br, bc) whose write-back touches a block this step
 * reads (the block itself, the next block's left frontier, the top frontier of the
 * block below): those are the previous iteration's steps; -1 if none. */
static int64_t conflict_max(const worker *w, int64_t it, int64_t br, int64_t bc)
{
    if (it == 0)
        return -1;
    const int64_t spi = (w->b1 - w->b0) * w->nbc, k = (br - w->b0) * w->nbc + bc;
    int64_t km = k;
    if (bc + 1 < w->nbc)
        km = k + 1;
    if (br + 1 < w->b1)
        km = k + w->nbc;
    return (it - 1) * spi + km;
}

/* Start the reads of step t (slot t % nslots). */
static int read_submit(worker *w, int64_t t, int64_t it, int64_t br, int64_t bc)
{
    const int slot = (int)(t % w->nslots);
    if (!w->uring) {
        w->rseq[slot] = io_submit(w, OP_READ, slot, it, br, bc);
        return w->rseq[slot] < 0 ? -1 : 0;
    }
#ifdef MPILAB_HAVE_URING
    double t0 = now_s();
    const int64_t cm = conflict_max(w, it, br, bc);
    for (int k = 0; k < w->nslots; k++)
        while (w->wpend[k] > 0 && (k == slot || w->wstep[k] <= cm))
            if (ur_reap(w))
                goto fail;
    w->t_iowait += now_s() - t0;
    ioop op = {OP_READ, slot, it, br, bc};
    w->rrec[slot].n = 0;
    w->rrec[slot].mode = WF_REC_RECORD;
    if (step_read(w, &op, w->ioerr, sizeof w->ioerr))
        goto fail;
    if (ur_submit(w, &w->rrec[slot], slot, 0, &w->rpend[slot]))
        goto fail;
    w->rseq[slot] = t; /* remembered for the replay */
    return 0;
fail:
    snprintf(w->err, sizeof w->err, "%s", w->ioerr);
    return -1;
#else
    return -1;
#endif
}

/* Wait for the reads of step t (coordinates it, br, bc), so slot t % nslots is ready. */
static int read_wait(worker *w, int64_t t, int64_t it, int64_t br, int64_t bc)
{
    const int slot = (int)(t % w->nslots);
    if (!w->uring)
        return io_wait(w, w->rseq[slot]);
#ifdef MPILAB_HAVE_URING
    double t0 = now_s();
    while (w->rpend[slot] > 0)
        if (ur_reap(w)) {
            snprintf(w->err, sizeof w->err, "%s", w->ioerr);
            return -1;
        }
    w->t_iowait += now_s() - t0;
    ioop op = {OP_READ, slot, it, br, bc};
    w->rrec[slot].mode = WF_REC_REPLAY;
    return step_read(w, &op, w->err, sizeof w->err);
#else
    (void)it, (void)br, (void)bc;
    return -1;
#endif
}

/* Start the write-back of step t from its slot. */
static int write_submit(worker *w, int64_t t, int64_t it, int64_t br, int64_t bc)
{
    const int slot = (int)(t % w->nslots);
    if (!w->uring)
        return io_submit(w, OP_WRITE, slot, it, br, bc) < 0 ? -1 : 0;
#ifdef MPILAB_HAVE_URING
    ioop op = {OP_WRITE, slot, it, br, bc};
    w->wrec[slot].n = 0;
    w->wrec[slot].mode = WF_REC_RECORD;
    w->wstep[slot] = t;
    w->wbr[slot] = br;
    w->wbc[slot] = bc;
    if (step_write(w, &op, w->err, sizeof w->err))
        return -1;
    if (ur_submit(w, &w->wrec[slot], slot, 1, &w->wpend[slot])) {
        snprintf(w->err, sizeof w->err, "%s", w->ioerr);
        return -1;
    }
    return 0;
#else
    return -1;
#endif
}

/* Wait for every transfer of the worker (the last write-backs). */
static int io_drain(worker *w)
{
    if (!w->uring)
        return io_wait(w, w->submitted);
#ifdef MPILAB_HAVE_URING
    double t0 = now_s();
    int rc = ur_drain(w);
    w->t_iowait += now_s() - t0;
    if (rc)
        snprintf(w->err, sizeof w->err, "%s", w->ioerr);
    return rc;
#else
    return -1;
#endif
}

/* The read cursor: the next step whose reads have not been submitted. */
typedef struct {
    int has;
    int64_t t, it, br, bc;
} rcursor;

/* Submit the reads of the steps up to `bound`, in order, while every write-back they
 * depend on was submitted (steps <= written). */
static int pump(worker *w, rcursor *rc, int64_t bound, int64_t written)
{
    while (rc->has && rc->t <= bound && conflict_max(w, rc->it, rc->br, rc->bc) <= written) {
        if (read_submit(w, rc->t, rc->it, rc->br, rc->bc))
            return -1;
        rc->t++;
        rc->has = next_step(w, &rc->it, &rc->br, &rc->bc);
    }
    return 0;
}

/* A worker's steps. Step s uses slot s % D (D = nslots). The reads of steps up to s+D-1
 * are in flight while s is computed (fewer when a read depends on a write-back not yet
 * submitted); after step s's write-back and frontier sends (which read its buffer), the
 * slot is free for step s+D. D = 1 (no prefetch) is the synchronous engine, D = 2 the
 * double-buffered helper. */
static int worker_steps(worker *w)
{
    const int64_t ld = w->nb + 2;
    const int D = w->nslots;
    /* initial top frontiers (iteration "-1") for the upper neighbour */
    if (w->has_up) {
        for (int64_t bc = 0; bc < w->nbc; bc++) {
            if (wf_read_tf(w->data, &w->dio, w->b0, bc, w->seg, &w->bytes_r, w->err,
                           sizeof w->err))
                return -1;
            double t0 = now_s();
            if (link_send(w, &w->l_up_tf_send, w->up_tf, w->seg, (size_t)blk_w(w, bc)))
                return -1;
            w->t_depwait += now_s() - t0;
        }
    }
    if (w->iters <= 0)
        return 0;
    rcursor rc = {1, 0, 0, w->b0, 0};
    if (pump(w, &rc, D - 1, -1))
        return -1;
    int64_t s = 0;
    for (int64_t it = 0; it < w->iters; it++) {
        double t0 = now_s();
        if (gate_wait(w, it))
            return -1;
        w->t_depwait += now_s() - t0;
        for (int64_t br = w->b0; br < w->b1; br++) {
            const int64_t h = blk_h(w, br);
            const int64_t rg0 = w->row0 + br * w->mb;
            /* rows of the block that are interior rows of the whole matrix */
            const int64_t ilo = rg0 == 0 ? 1 : 0;
            const int64_t ihi = rg0 + h == w->total ? h - 1 : h;
            for (int64_t bc = 0; bc < w->nbc; bc++, s++) {
                const int slot = (int)(s % D);
                double *H = w->hb[slot];
                const int64_t c0 = bc * w->nb, wd = blk_w(w, bc);
                const int64_t jlo = c0 == 0 ? 1 : 0;
                const int64_t jhi = c0 + wd == w->cols ? wd - 1 : wd;
                if (read_wait(w, s, it, br, bc))
                    return -1;
                /* north halo: updated bottom row of the block above */
                t0 = now_s();
                if (br == w->b0) {
                    if (w->has_up &&
                        link_recv(w, &w->l_up_bf_recv, w->up_bf, H + 1, (size_t)wd))
                        return -1;
                } else {
                    memcpy(H + 1, w->north + c0, (size_t)wd * 8);
                }
                /* south halo from the lower neighbour (else read from disk with the block) */
                if (br + 1 == w->b1 && w->has_down &&
                    link_recv(w, &w->l_down_tf_recv, w->down_tf, H + (size_t)((h + 1) * ld) + 1,
                              (size_t)wd))
                    return -1;
                double t1 = now_s();
                w->t_depwait += t1 - t0;
                /* west halo: right frontier of the previous block (kept in memory) */
                if (bc > 0)
                    for (int64_t i = 0; i < h; i++)
                        H[(i + 1) * ld] = w->west[i];
                size_t pl = (size_t)(h * wd);
                const double *cf = w->cfb[slot];
                const double *zb = cf, *zu = cf + pl, *zv = cf + 2 * pl, *zr = cf + 3 * pl,
                             *zz = cf + 4 * pl;
                for (int64_t i = ilo; i < ihi; i++) {
                    double *row = H + (i + 1) * ld + 1;
                    const int64_t k0 = i * wd;
                    for (int64_t j = jlo; j < jhi; j++) {
                        double *p = row + j;
                        const int64_t k = k0 + j;
                        *p = wf_kernel(*p, p[-ld], p[ld], p[-1], p[1], zb[k], zu[k], zv[k], zr[k],
                                       zz[k]);
                    }
                }
                for (int64_t i = 0; i < h; i++)
                    w->west[i] = H[(i + 1) * ld + wd];
                memcpy(w->north + c0, H + h * ld + 1, (size_t)wd * 8);
                w->t_compute += now_s() - t1;
                if (write_submit(w, s, it, br, bc))
                    return -1;
                t0 = now_s();
                if (br + 1 == w->b1 && w->has_down &&
                    link_send(w, &w->l_down_bf_send, w->down_bf, H + h * ld + 1, (size_t)wd))
                    return -1;
                if (br == w->b0 && w->has_up && it + 1 < w->iters &&
                    link_send(w, &w->l_up_tf_send, w->up_tf, H + ld + 1, (size_t)wd))
                    return -1;
                w->t_depwait += now_s() - t0;
                /* the sends read this slot's buffer: only now may step s+D reuse it */
                if (pump(w, &rc, s + D, s))
                    return -1;
            }
        }
        w->t_done[it] = w->mpi ? MPI_Wtime() : now_s();
        iter_done(w, it);
    }
    return io_drain(w); /* the last write-backs */
}

/* ---- block chaining ------------------------------------------------------------------
 * Iterations run in sweeps of W = waves (the last sweep may be shorter). Within a sweep a
 * worker processes the items (k, r, c) of its band, iteration k of block (r, c), in order
 * of the key r + c + 2k (ties: by r, then k). Item (k, r, c) needs (k, r-1, c) and
 * (k, r, c-1) done (north and west halos at iteration k) and (k, r+1, c), (k, r, c+1) not
 * yet done (south and east halos still at iteration k-1): their keys are t-1 and t+1, so
 * the order is legal and the halos can be copied from the neighbours' resident buffers.
 * A block is read once per sweep, at its first item (with the east and south halos of
 * iteration k0-1 from disk, as in the band schedule), written back after its last item,
 * and its buffer is kept one key longer (the neighbours below and to the right read its
 * edges then). Resident blocks per block row of the band: at most 2W (keys t-2W+1..t),
 * plus two slots for the reads the I/O helper does ahead (WF_CHAIN_AHEAD; each read also
 * hints the block after it to the kernel). Sweeps are not
 * chained inside a worker (sweep s+1's first read waits until sweep s released all its
 * blocks), but workers chain freely: a worker may start sweep s+1 while its lower
 * neighbour still works on sweep s. Frontier segments between workers carry their
 * (iteration, block column) tag: the bottom frontiers arrive in the order they are used
 * (both sides order a block row's items by (c + 2k, k)), the top frontiers do not at
 * sweep boundaries and are stored per column until used (at most one pending per column:
 * the next one needs this worker's bottom frontier of the iteration after). */
#define WF_TF_EMPTY INT64_MIN

typedef struct {
    int has;
    int64_t s, d, lr; /* sweep, diagonal lr + c, local block row */
} lcursor;

/* Reads the I/O helper may have queued ahead of the block being started. */
#define WF_CHAIN_AHEAD 2

static int64_t chain_pool(int64_t R, int64_t nbc, int waves, int prefetch)
{
    int64_t per_row = 2 * (int64_t)waves < nbc ? 2 * (int64_t)waves : nbc;
    int64_t n = R * per_row + (prefetch ? WF_CHAIN_AHEAD : 0);
    return n < R * nbc ? n : R * nbc;
}

static void lcursor_fix(const worker *w, lcursor *lc);

static int chain_read(worker *w, const ioop *op, char *err, size_t errlen)
{
    const int64_t ld = w->nb + 2, br = op->br, bc = op->bc;
    const int64_t h = blk_h(w, br), wd = blk_w(w, bc);
    double *H = w->xhb[op->slot], *lf = w->xlf[op->slot];
    if (wf_read_block(w->data, &w->dio, br, bc, 0, H + ld + 1, (size_t)ld, &w->bytes_r, err,
                      errlen))
        return -1;
    if (bc + 1 < w->nbc) {
        if (wf_read_lf(w->data, &w->dio, br, bc + 1, lf, &w->bytes_r, err, errlen))
            return -1;
        for (int64_t i = 0; i < h; i++)
            H[(i + 1) * ld + wd + 1] = lf[i];
    }
    size_t pl = (size_t)(h * wd);
    for (int p = 0; p < 5; p++)
        if (wf_read_block(w->coef, &w->cio, br, bc, p, w->xcf[op->slot] + p * pl, (size_t)wd,
                          &w->bytes_r, err, errlen))
            return -1;
    if (br + 1 < w->b1 &&
        wf_read_tf(w->data, &w->dio, br + 1, bc, H + (size_t)((h + 1) * ld) + 1, &w->bytes_r,
                   err, errlen))
        return -1;
    /* the block is now in its buffer for the whole sweep and its pages will not be read
     * again before the write-back: with drop-behind, drop them from the page cache at once
     * (under a memory limit they would only push other pages out) */
    if (w->drop && w->data->h.layout != MPILAB_WF_ROWMAJOR) {
        off_t off;
        size_t len;
        wf_block_range(w->data, &w->dio, br, bc, &off, &len);
        wf_done(w->data, off, len, 0);
        if (w->coef->h.layout != MPILAB_WF_ROWMAJOR) {
            wf_block_range(w->coef, &w->cio, br, bc, &off, &len);
            wf_done(w->coef, off, len, 0);
        }
    }
    /* read-ahead hint for the block read after this one (the kernel fetches it while the
     * next read is served) */
    lcursor nx = {1, op->it, br - w->b0 + bc, br - w->b0 + 1};
    lcursor_fix(w, &nx);
    if (nx.has)
        hint_block(w, w->b0 + nx.lr, nx.d - nx.lr, 0, 1);
    return 0;
}

static int chain_write(worker *w, const ioop *op, char *err, size_t errlen)
{
    const int64_t ld = w->nb + 2;
    if (wf_write_block(w->data, &w->dio, op->br, op->bc, w->xhb[op->slot] + ld + 1, (size_t)ld,
                       &w->bytes_w, err, errlen))
        return -1;
    hint_block(w, op->br, op->bc, 1, 0);
    return 0;
}

/* Move the cursor to the next existing block: blocks of a sweep in order of (lr + c, lr),
 * then the next sweep. */
static void lcursor_fix(const worker *w, lcursor *lc)
{
    const int64_t R = w->b1 - w->b0, nbc = w->nbc;
    for (;;) {
        while (lc->d <= R - 1 + nbc - 1) {
            const int64_t lo = lc->d - (nbc - 1) > 0 ? lc->d - (nbc - 1) : 0;
            if (lc->lr < lo)
                lc->lr = lo;
            if (lc->lr < R && lc->lr <= lc->d)
                return;
            lc->d++;
            lc->lr = 0;
        }
        lc->s++;
        lc->d = lc->lr = 0;
        if (lc->s * (int64_t)w->waves >= w->iters) {
            lc->has = 0;
            return;
        }
    }
}

/* Submit the read of the next block of sweep `sweep` if a slot is free (1), or not (0);
 * -1 on failure. */
static int chain_submit(worker *w, lcursor *lc, int64_t sweep)
{
    if (!lc->has || lc->s != sweep || w->nfree == 0)
        return 0;
    const int64_t c = lc->d - lc->lr, idx = lc->lr * w->nbc + c;
    const int slot = w->xfree[--w->nfree];
    w->slot_of[idx] = slot;
    w->xseq[slot] = io_submit(w, OP_CREAD, slot, lc->s, w->b0 + lc->lr, c);
    if (w->xseq[slot] < 0)
        return -1;
    lc->lr++;
    lcursor_fix(w, lc);
    return 1;
}

/* Receive the bottom frontier of iteration k, column c from the upper neighbour. */
static int chain_get_bf(worker *w, int64_t k, int64_t c, double *dst, int64_t wd)
{
    const size_t sg = (size_t)w->nb + 2;
    if (link_recv(w, &w->l_up_bf_recv, w->up_bf, w->segx, sg))
        return -1;
    if (w->segx[0] != (double)k || w->segx[1] != (double)c) {
        snprintf(w->err, sizeof w->err,
                 "internal: bottom frontier (%g, %g) received where (%lld, %lld) was expected",
                 w->segx[0], w->segx[1], (long long)k, (long long)c);
        return -1;
    }
    memcpy(dst, w->segx + 2, (size_t)wd * 8);
    return 0;
}

/* The top frontier of iteration k, column c from the lower neighbour (stored per column
 * until used: they arrive in the neighbour's order). */
static int chain_get_tf(worker *w, int64_t k, int64_t c, double *dst, int64_t wd)
{
    const size_t sg = (size_t)w->nb + 2;
    while (w->tfk[c] != k) {
        if (link_recv(w, &w->l_down_tf_recv, w->down_tf, w->segx, sg))
            return -1;
        double kk = w->segx[0], cc = w->segx[1];
        if (!(cc >= 0 && cc < (double)w->nbc) || w->tfk[(int64_t)cc] != WF_TF_EMPTY) {
            snprintf(w->err, sizeof w->err,
                     "internal: top frontier (%g, %g) received with no room for it", kk, cc);
            return -1;
        }
        const int64_t ci = (int64_t)cc;
        memcpy(w->tfst + ci * w->nb, w->segx + 2, (size_t)blk_w(w, ci) * 8);
        w->tfk[ci] = (int64_t)kk;
    }
    memcpy(dst, w->tfst + c * w->nb, (size_t)wd * 8);
    w->tfk[c] = WF_TF_EMPTY;
    return 0;
}

static int chain_send(worker *w, mpilink *l, chan *ch, int64_t k, int64_t c, const double *v,
                      int64_t wd)
{
    w->segx[0] = (double)k;
    w->segx[1] = (double)c;
    memcpy(w->segx + 2, v, (size_t)wd * 8);
    return link_send(w, l, ch, w->segx, (size_t)wd + 2);
}

static int chain_steps(worker *w)
{
    const int64_t ld = w->nb + 2, R = w->b1 - w->b0, nbc = w->nbc, K = w->iters;
    const int64_t W = w->waves;
    for (int64_t c = 0; c < nbc; c++)
        w->tfk[c] = WF_TF_EMPTY;
    if (K <= 0)
        return 0;
    /* initial top frontiers (iteration -1) for the upper neighbour */
    if (w->has_up)
        for (int64_t bc = 0; bc < nbc; bc++) {
            if (wf_read_tf(w->data, &w->dio, w->b0, bc, w->seg, &w->bytes_r, w->err,
                           sizeof w->err))
                return -1;
            double t0 = now_s();
            if (chain_send(w, &w->l_up_tf_send, w->up_tf, -1, bc, w->seg, blk_w(w, bc)))
                return -1;
            w->t_depwait += now_s() - t0;
        }
    lcursor lc = {1, 0, 0, 0};
    int64_t *live = malloc((size_t)(R * nbc) * sizeof *live); /* blocks in release order */
    if (!live) {
        snprintf(w->err, sizeof w->err, "out of memory");
        return -1;
    }
    int rc = -1;
    int64_t ahead = 0; /* reads submitted whose block's first item has not started */
    for (int64_t s = 0; s * W < K; s++) {
        const int64_t k0 = s * W, Wk = K - k0 < W ? K - k0 : W;
        const int64_t dmax = (R - 1) + (nbc - 1) + 2 * (Wk - 1);
        int64_t lhead = 0, ltail = 0;
        for (int64_t d2 = 0; d2 <= dmax; d2++) {
            /* release the blocks whose neighbours no longer need them (key < d2) */
            while (lhead < ltail) {
                const int64_t idx = live[lhead], lr = idx / nbc, c = idx % nbc;
                if (lr + c + 2 * Wk - 1 >= d2)
                    break;
                w->xfree[w->nfree++] = w->slot_of[idx];
                w->slot_of[idx] = -1;
                lhead++;
            }
            for (int64_t lr = 0; lr < R; lr++) {
                const int64_t br = w->b0 + lr, h = blk_h(w, br);
                const int64_t rg0 = w->row0 + br * w->mb;
                const int64_t ilo = rg0 == 0 ? 1 : 0;
                const int64_t ihi = rg0 + h == w->total ? h - 1 : h;
                for (int64_t kk = 0; kk < Wk; kk++) {
                    const int64_t c = d2 - lr - 2 * kk, k = k0 + kk;
                    if (c < 0 || c >= nbc)
                        continue;
                    const int64_t idx = lr * nbc + c;
                    const int64_t c0 = c * w->nb, wd = blk_w(w, c);
                    const int64_t jlo = c0 == 0 ? 1 : 0;
                    const int64_t jhi = c0 + wd == w->cols ? wd - 1 : wd;
                    if (kk == 0) {
                        /* first item of the block in this sweep: its read */
                        while (w->slot_of[idx] < 0) {
                            int r = chain_submit(w, &lc, s);
                            if (r < 0)
                                goto out;
                            if (r == 0) {
                                snprintf(w->err, sizeof w->err,
                                         "internal: no buffer slot for block (%lld, %lld)",
                                         (long long)br, (long long)c);
                                goto out;
                            }
                            ahead++;
                        }
                        ahead--;
                        live[ltail++] = idx;
                        if (io_wait(w, w->xseq[w->slot_of[idx]]))
                            goto out;
                        /* overlap the next block's read with this computation */
                        while (w->prefetch && ahead < WF_CHAIN_AHEAD) {
                            int r = chain_submit(w, &lc, s);
                            if (r < 0)
                                goto out;
                            if (r == 0)
                                break;
                            ahead++;
                        }
                    }
                    const int slot = w->slot_of[idx];
                    double *H = w->xhb[slot];
                    double t0 = now_s();
                    /* north halo: iteration k of the block above */
                    if (lr > 0) {
                        const double *N = w->xhb[w->slot_of[idx - nbc]];
                        memcpy(H + 1, N + blk_h(w, br - 1) * ld + 1, (size_t)wd * 8);
                    } else if (w->has_up && chain_get_bf(w, k, c, H + 1, wd)) {
                        goto out;
                    }
                    /* south halo: iteration k-1 of the block below (read with the block
                     * for the sweep's first iteration inside the band) */
                    double *S = H + (size_t)((h + 1) * ld) + 1;
                    if (lr + 1 < R) {
                        if (kk > 0) {
                            const double *B = w->xhb[w->slot_of[idx + nbc]];
                            memcpy(S, B + ld + 1, (size_t)wd * 8);
                        }
                    } else if (w->has_down && chain_get_tf(w, k - 1, c, S, wd)) {
                        goto out;
                    }
                    double t1 = now_s();
                    w->t_depwait += t1 - t0;
                    /* west halo: iteration k of the block to the left */
                    if (c > 0) {
                        const double *Wb = w->xhb[w->slot_of[idx - 1]];
                        const int64_t ww = blk_w(w, c - 1);
                        for (int64_t i = 0; i < h; i++)
                            H[(i + 1) * ld] = Wb[(i + 1) * ld + ww];
                    }
                    /* east halo: iteration k-1 of the block to the right (from disk for
                     * the sweep's first iteration) */
                    if (kk > 0 && c + 1 < nbc) {
                        const double *E = w->xhb[w->slot_of[idx + 1]];
                        for (int64_t i = 0; i < h; i++)
                            H[(i + 1) * ld + wd + 1] = E[(i + 1) * ld + 1];
                    }
                    size_t pl = (size_t)(h * wd);
                    const double *cf = w->xcf[slot];
                    const double *zb = cf, *zu = cf + pl, *zv = cf + 2 * pl, *zr = cf + 3 * pl,
                                 *zz = cf + 4 * pl;
                    for (int64_t i = ilo; i < ihi; i++) {
                        double *row = H + (i + 1) * ld + 1;
                        const int64_t q0 = i * wd;
                        for (int64_t j = jlo; j < jhi; j++) {
                            double *p = row + j;
                            const int64_t q = q0 + j;
                            *p = wf_kernel(*p, p[-ld], p[ld], p[-1], p[1], zb[q], zu[q], zv[q],
                                           zr[q], zz[q]);
                        }
                    }
                    w->t_compute += now_s() - t1;
                    if (kk == Wk - 1 && io_submit(w, OP_CWRITE, slot, s, br, c) < 0)
                        goto out;
                    t0 = now_s();
                    if (lr == R - 1 && w->has_down &&
                        chain_send(w, &w->l_down_bf_send, w->down_bf, k, c, H + h * ld + 1, wd))
                        goto out;
                    if (lr == 0 && w->has_up && k + 1 < K &&
                        chain_send(w, &w->l_up_tf_send, w->up_tf, k, c, H + ld + 1, wd))
                        goto out;
                    w->t_depwait += now_s() - t0;
                    if (lr == R - 1 && c == nbc - 1)
                        w->t_done[k] = w->mpi ? MPI_Wtime() : now_s();
                }
            }
        }
        /* end of the sweep: every block was written back; free all slots */
        for (; lhead < ltail; lhead++) {
            w->xfree[w->nfree++] = w->slot_of[live[lhead]];
            w->slot_of[live[lhead]] = -1;
        }
    }
    rc = io_wait(w, w->submitted); /* the last write-backs */
out:
    free(live);
    return rc;
}

/* With the I/O helper and pread, a step's reads of a blocked coefficient file and of an
 * optimized-layout data file are exact (one request per block or frontier) and the
 * WILLNEED hint covers the step after: the kernel's own readahead would only add pages
 * beyond the request, which under a tight memory limit are often evicted before use. It is
 * switched off for those file descriptions. Block and row-major data keep it: their east
 * frontier is a strided gather of MB elements, which readahead turns into sequential reads
 * of pages the next step needs anyway (without it each element costs a synchronous page
 * read: 2.6x slower measured, docs/wavefront.md). */
static void no_readahead(worker *w)
{
    if (!w->prefetch && !w->uring)
        return;
    if (!w->data->map && w->data->h.layout == MPILAB_WF_OPTIMIZED)
        posix_fadvise(w->data->fd, 0, 0, POSIX_FADV_RANDOM);
    if (!w->coef->map && w->coef->h.layout != MPILAB_WF_ROWMAJOR)
        posix_fadvise(w->coef->fd, 0, 0, POSIX_FADV_RANDOM);
}

static int worker_body(worker *w)
{
    no_readahead(w);
    if (io_start(w))
        return -1;
    int rc = w->chain ? chain_steps(w) : worker_steps(w);
    io_stop(w);
#ifdef MPILAB_HAVE_URING
    if (w->uring && ur_drain(w) && !rc) {
        snprintf(w->err, sizeof w->err, "%s", w->ioerr);
        rc = -1;
    }
#endif
    if (!rc && w->io_failed) {
        snprintf(w->err, sizeof w->err, "%s", w->ioerr);
        rc = -1;
    }
    return rc;
}

static void *worker_thread(void *arg)
{
    worker *w = arg;
    if (worker_body(w)) {
        w->failed = 1;
        shared_fail(w->sh, w->err[0] ? w->err : "worker failed");
    }
    return NULL;
}

/* Back end and buffer slots of a worker (io already resolved: never AUTO). */
static void worker_io_init(worker *w, int io, const mpilab_wf_run_opts *o)
{
    w->uring = io == MPILAB_WF_IO_URING;
    if (w->uring) {
        w->nslots = o->no_prefetch ? 1 : o->queue_depth > 0 ? o->queue_depth : 4;
        w->prefetch = w->nslots > 1;
    } else {
        w->prefetch = !o->no_prefetch;
        w->nslots = w->prefetch ? 2 : 1;
    }
}

/* Buffers (and the io_uring instance) of a worker. Resident per worker: nslots x (the
 * halo'd block, 5 coefficient blocks, east halo), plus with io_uring a block of scratch
 * per slot (packed/strided transfers land there), plus a row of N and a column of MB. */
static int worker_alloc(worker *w, char *err, size_t errlen)
{
    int64_t mb = w->mb, nb = w->nb;
    const int64_t t = w->data->h.t ? (int64_t)w->data->h.t : 1;
    const int64_t slot_bytes = ((mb + 2) * (nb + 2) + 5 * mb * nb + mb) * 8;
    if (w->chain) {
        const int64_t R = w->b1 - w->b0;
        w->npool = (int)chain_pool(R, w->nbc, w->waves, w->prefetch);
        w->nfree = w->npool;
        w->xhb = calloc((size_t)w->npool, sizeof *w->xhb);
        w->xcf = calloc((size_t)w->npool, sizeof *w->xcf);
        w->xlf = calloc((size_t)w->npool, sizeof *w->xlf);
        w->xseq = calloc((size_t)w->npool, sizeof *w->xseq);
        w->xfree = calloc((size_t)w->npool, sizeof *w->xfree);
        w->slot_of = malloc((size_t)(R * w->nbc) * sizeof *w->slot_of);
        w->tfst = malloc((size_t)(w->nbc * nb) * 8);
        w->tfk = malloc((size_t)w->nbc * sizeof *w->tfk);
        w->segx = malloc((size_t)(nb + 2) * 8);
        if (!w->xhb || !w->xcf || !w->xlf || !w->xseq || !w->xfree || !w->slot_of || !w->tfst ||
            !w->tfk || !w->segx)
            goto oom;
        for (int64_t i = 0; i < R * w->nbc; i++)
            w->slot_of[i] = -1;
        for (int s = 0; s < w->npool; s++) {
            w->xfree[s] = w->npool - 1 - s;
            w->xhb[s] = calloc((size_t)((mb + 2) * (nb + 2)), 8);
            w->xcf[s] = malloc((size_t)(5 * mb * nb) * 8);
            w->xlf[s] = malloc((size_t)mb * 8);
            if (!w->xhb[s] || !w->xcf[s] || !w->xlf[s])
                goto oom;
        }
        w->buf_bytes += w->npool * slot_bytes + (w->nbc * nb + nb + 2) * 8;
    }
    w->buf_bytes += (w->chain ? 0 : w->nslots * slot_bytes) +
                    (int64_t)(w->cols + mb + nb) * 8 +
                    (int64_t)(wf_scratch_doubles(&w->data->h, mb, nb) +
                              wf_scratch_doubles(&w->coef->h, mb, nb)) * 8;
    for (int s = 0; s < (w->chain ? 0 : w->nslots); s++) {
        w->hb[s] = calloc((size_t)((mb + 2) * (nb + 2)), 8);
        w->cfb[s] = malloc((size_t)(5 * mb * nb) * 8);
        w->lfs[s] = malloc((size_t)mb * 8);
        if (!w->hb[s] || !w->cfb[s] || !w->lfs[s])
            goto oom;
    }
    w->north = calloc((size_t)w->cols, 8);
    w->west = calloc((size_t)mb, 8);
    w->seg = malloc((size_t)nb * 8);
    w->dio.mb = w->cio.mb = mb;
    w->dio.nb = w->cio.nb = nb;
    w->dio.tmp = malloc(wf_scratch_doubles(&w->data->h, mb, nb) * 8);
    w->cio.tmp = malloc(wf_scratch_doubles(&w->coef->h, mb, nb) * 8);
    w->t_done = calloc((size_t)(w->iters > 0 ? w->iters : 1), sizeof(double));
    if (!w->north || !w->west || !w->seg || !w->dio.tmp || !w->cio.tmp || !w->t_done)
        goto oom;
    for (int s = 0; s < w->nslots; s++) {
        w->dios[s] = w->lfios[s] = w->wios[s] = w->dio;
        w->cios[s] = w->cio;
    }
#ifdef MPILAB_HAVE_URING
    if (w->uring) {
        for (int s = 0; s < w->nslots; s++) {
            /* the coefficient reads go straight to their buffer (row stride = width) */
            w->dios[s].tmp = malloc(wf_scratch_doubles(&w->data->h, mb, nb) * 8);
            w->lfios[s].tmp = malloc((size_t)(mb * t) * 8);
            if (!w->dios[s].tmp || !w->lfios[s].tmp)
                goto oom;
            w->dios[s].rec = w->lfios[s].rec = w->cios[s].rec = &w->rrec[s];
            w->buf_bytes += (int64_t)(wf_scratch_doubles(&w->data->h, mb, nb) + (size_t)(mb * t)) * 8;
            w->wios[s] = w->dios[s]; /* the write-back packs into the slot's scratch */
            w->wios[s].rec = &w->wrec[s];
        }
        int rc = io_uring_queue_init(WF_URING_ENTRIES, &w->ring, 0);
        if (rc < 0) {
            ERR("io_uring back end unavailable: io_uring_queue_init failed: %s", strerror(-rc));
            return -1;
        }
        w->ring_ok = 1;
    }
#else
    (void)t;
    if (w->uring) {
        ERR("io_uring back end not built in (liburing was not found at build time)");
        return -1;
    }
#endif
    return 0;
oom:
    ERR("out of memory");
    return -1;
}

static void worker_free(worker *w)
{
    for (int s = 0; s < w->npool; s++) {
        free(w->xhb[s]);
        free(w->xcf[s]);
        free(w->xlf[s]);
    }
    free(w->xhb);
    free(w->xcf);
    free(w->xlf);
    free(w->xseq);
    free(w->xfree);
    free(w->slot_of);
    free(w->tfst);
    free(w->tfk);
    free(w->segx);
    w->xhb = w->xcf = w->xlf = NULL;
    w->xseq = w->tfk = NULL;
    w->xfree = w->slot_of = NULL;
    w->tfst = w->segx = NULL;
    w->npool = 0;
    for (int s = 0; s < WF_MAXQ; s++) {
        free(w->hb[s]);
        free(w->cfb[s]);
        free(w->lfs[s]);
        w->hb[s] = w->cfb[s] = w->lfs[s] = NULL;
    }
#ifdef MPILAB_HAVE_URING
    if (w->uring)
        for (int s = 0; s < WF_MAXQ; s++) {
            if (w->dios[s].tmp != w->dio.tmp)
                free(w->dios[s].tmp);
            if (w->lfios[s].tmp != w->dio.tmp)
                free(w->lfios[s].tmp);
            w->dios[s].tmp = w->lfios[s].tmp = NULL;
            free(w->rrec[s].v);
            free(w->wrec[s].v);
            w->rrec[s].v = w->wrec[s].v = NULL;
        }
    if (w->ring_ok)
        io_uring_queue_exit(&w->ring);
    w->ring_ok = 0;
#endif
    free(w->north);
    free(w->west);
    free(w->seg);
    free(w->dio.tmp);
    free(w->cio.tmp);
    free(w->t_done);
    w->north = w->west = w->seg = w->dio.tmp = w->cio.tmp = w->t_done = NULL;
}

/* /proc/self/io read_bytes and write_bytes; -1 if unavailable. */
static void dev_io(int64_t *rd, int64_t *wr)
{
    *rd = *wr = -1;
    FILE *f = fopen("/proc/self/io", "r");
    if (!f)
        return;
    char line[128];
    long long v;
    while (fgets(line, sizeof line, f)) {
        if (sscanf(line, "read_bytes: %lld", &v) == 1)
            *rd = v;
        else if (sscanf(line, "write_bytes: %lld", &v) == 1)
            *wr = v;
    }
    fclose(f);
}

static int stats_alloc_times(mpilab_wf_stats *st, int n)
{
    st->compute_s = calloc((size_t)n, sizeof(double));
    st->io_wait_s = calloc((size_t)n, sizeof(double));
    st->dep_wait_s = calloc((size_t)n, sizeof(double));
    st->io_busy_s = calloc((size_t)n, sizeof(double));
    return st->compute_s && st->io_wait_s && st->dep_wait_s && st->io_busy_s ? 0 : -1;
}

int mpilab_wf_io_available(int io, char *why, size_t whylen)
{
    char buf[256];
    if (!why) {
        why = buf;
        whylen = sizeof buf;
    }
    if (io == MPILAB_WF_IO_PREAD || io == MPILAB_WF_IO_MMAP || io == MPILAB_WF_IO_AUTO)
        return 1;
    if (io != MPILAB_WF_IO_URING) {
        snprintf(why, whylen, "unknown I/O back end");
        return 0;
    }
#ifdef MPILAB_HAVE_URING
    struct io_uring r;
    int rc = io_uring_queue_init(4, &r, 0);
    if (rc < 0) {
        snprintf(why, whylen, "io_uring_queue_init failed: %s", strerror(-rc));
        return 0;
    }
    io_uring_queue_exit(&r);
    return 1;
#else
    snprintf(why, whylen, "not built in (liburing was not found at build time)");
    return 0;
#endif
}

/* The back end to use: AUTO becomes uring where it works, else pread; an explicit uring
 * that cannot work is an error naming the reason. */
static int resolve_io(int *io, int queue_depth, int chain, char *err, size_t errlen)
{
    char why[256];
    if (queue_depth < 0 || queue_depth > WF_MAXQ) {
        ERR("queue depth must be 1..%d (got %d)", WF_MAXQ, queue_depth);
        return -1;
    }
    if (chain != MPILAB_WF_CHAIN_BAND && chain != MPILAB_WF_CHAIN_BLOCK) {
        ERR("unknown wave chaining (expected band or block)");
        return -1;
    }
    if (chain == MPILAB_WF_CHAIN_BLOCK) {
        if (*io == MPILAB_WF_IO_URING) {
            ERR("block chaining does not support the io_uring back end (use pread or mmap)");
            return -1;
        }
        if (*io == MPILAB_WF_IO_AUTO)
            *io = MPILAB_WF_IO_PREAD;
    }
    if (*io == MPILAB_WF_IO_AUTO) {
        *io = mpilab_wf_io_available(MPILAB_WF_IO_URING, NULL, 0) ? MPILAB_WF_IO_URING
                                                                  : MPILAB_WF_IO_PREAD;
        return 0;
    }
    if (*io < MPILAB_WF_IO_PREAD || *io > MPILAB_WF_IO_URING) {
        ERR("unknown I/O back end");
        return -1;
    }
    if (!mpilab_wf_io_available(*io, why, sizeof why)) {
        ERR("io_uring back end unavailable: %s", why);
        return -1;
    }
    return 0;
}

/* Validate options and the pair of files; fill blocking. */
static int check_setup(const wf_file *d, const wf_file *c, const mpilab_wf_run_opts *o,
                       int64_t *mb, int64_t *nb, char *err, size_t errlen)
{
    if (d->h.planes != 1) {
        ERR("%s: is a coefficient file (5 planes), expected the data matrix", d->path);
        return -1;
    }
    if (c->h.planes != 5) {
        ERR("%s: is not a coefficient file (expected 5 planes)", c->path);
        return -1;
    }
    if (c->h.rows != d->h.rows || c->h.cols != d->h.cols || c->h.row0 != d->h.row0 ||
        c->h.total_rows != d->h.total_rows) {
        ERR("%s: %llux%llu does not match the data %s (%llux%llu)", c->path,
            (unsigned long long)c->h.rows, (unsigned long long)c->h.cols, d->path,
            (unsigned long long)d->h.rows, (unsigned long long)d->h.cols);
        return -1;
    }
    if (o->iterations < 0) {
        ERR("iterations must be >= 0");
        return -1;
    }
    if (o->waves < 1) {
        ERR("waves must be >= 1");
        return -1;
    }
    *mb = o->mb;
    *nb = o->nb;
    const wf_file *blocked = d->h.layout != MPILAB_WF_ROWMAJOR   ? d
                             : c->h.layout != MPILAB_WF_ROWMAJOR ? c
                                                                  : NULL;
    if (blocked) {
        if ((*mb && *mb != (int64_t)blocked->h.mb) || (*nb && *nb != (int64_t)blocked->h.nb)) {
            ERR("%s: blocked %llux%llu, but %lldx%lld was asked", blocked->path,
                (unsigned long long)blocked->h.mb, (unsigned long long)blocked->h.nb,
                (long long)*mb, (long long)*nb);
            return -1;
        }
        *mb = (int64_t)blocked->h.mb;
        *nb = (int64_t)blocked->h.nb;
        if (blocked == d && c->h.layout != MPILAB_WF_ROWMAJOR &&
            (c->h.mb != d->h.mb || c->h.nb != d->h.nb)) {
            ERR("%s: blocking %llux%llu differs from the data's %llux%llu", c->path,
                (unsigned long long)c->h.mb, (unsigned long long)c->h.nb,
                (unsigned long long)d->h.mb, (unsigned long long)d->h.nb);
            return -1;
        }
    } else if (*mb < 1 || *nb < 1) {
        ERR("%s: row-major data needs a block size (--mb, --nb)", d->path);
        return -1;
    }
    if (*mb > (int64_t)d->h.rows || *nb > (int64_t)d->h.cols) {
        ERR("block %lldx%lld larger than the %llux%llu matrix", (long long)*mb, (long long)*nb,
            (unsigned long long)d->h.rows, (unsigned long long)d->h.cols);
        return -1;
    }
    return 0;
}

static void fill_stats(mpilab_wf_stats *st, const wf_file *d, const wf_file *c, int64_t mb,
                       int64_t nb, int nw, int64_t iters)
{
    memset(st, 0, sizeof *st);
    st->iterations = iters;
    st->rows = (int64_t)d->h.total_rows;
    st->cols = (int64_t)d->h.cols;
    st->mb = mb;
    st->nb = nb;
    st->t = (int64_t)d->h.t;
    st->layout = (int)d->h.layout;
    st->coef_layout = (int)c->h.layout;
    st->workers = nw;
}

int mpilab_wf_run(const char *data_path, const char *coef_path, const mpilab_wf_run_opts *o,
                  mpilab_wf_stats *st, char *err, size_t errlen)
{
    memset(st, 0, sizeof *st);
    if (o->workers < 1) {
        ERR("workers must be >= 1 (got %d)", o->workers);
        return -1;
    }
    int io = o->io;
    if (resolve_io(&io, o->queue_depth, o->chain, err, errlen))
        return -1;
    wf_file d, c;
    if (wf_open(&d, data_path, 1, io, err, errlen))
        return -1;
    if (wf_open(&c, coef_path, 0, io, err, errlen)) {
        wf_close(&d);
        return -1;
    }
    int rc = -1;
    int64_t mb, nb;
    worker *ws = NULL;
    chan *chans = NULL;
    int P = o->workers;
    shared sh;
    memset(&sh, 0, sizeof sh);
    pthread_mutex_init(&sh.mu, NULL);
    pthread_cond_init(&sh.cv, NULL);
    if (check_setup(&d, &c, o, &mb, &nb, err, errlen))
        goto out;
    if (d.h.row0 != 0 || d.h.rows != d.h.total_rows) {
        ERR("%s: is one band of a larger matrix; run band files with --mpi", data_path);
        goto out;
    }
    int64_t nbr = ((int64_t)d.h.rows + mb - 1) / mb, nbc = ((int64_t)d.h.cols + nb - 1) / nb;
    if (P > nbr) {
        ERR("%d workers but only %lld block rows (use fewer workers or smaller --mb)", P,
            (long long)nbr);
        goto out;
    }
    ws = calloc((size_t)P, sizeof *ws);
    chans = calloc((size_t)(2 * P), sizeof *chans);
    if (!ws || !chans) {
        ERR("out of memory");
        goto out;
    }
    sh.chans = chans;
    for (int i = 0; i < 2 * P; i++) {
        chan *ch = &chans[i];
        pthread_mutex_init(&ch->mu, NULL);
        pthread_cond_init(&ch->cv, NULL);
        ch->seg = (size_t)nb + (o->chain == MPILAB_WF_CHAIN_BLOCK ? 2 : 0); /* + tag */
        ch->cap = 2 * nbc + 2;
        ch->sh = &sh;
        ch->ring = malloc((size_t)ch->cap * ch->seg * 8);
        sh.nchans = i + 1;
        if (!ch->ring) {
            ERR("out of memory");
            goto out;
        }
    }
    /* chans[2i]: BF from worker i-1 to i; chans[2i+1]: TF from worker i to i-1 */
    for (int i = 0; i < P; i++) {
        worker *w = &ws[i];
        w->id = i;
        w->nworkers = P;
        w->data = &d;
        w->coef = &c;
        w->b0 = nbr * i / P;
        w->b1 = nbr * (i + 1) / P;
        w->nbc = nbc;
        w->mb = mb;
        w->nb = nb;
        w->cols = (int64_t)d.h.cols;
        w->row0 = 0;
        w->total = (int64_t)d.h.total_rows;
        w->iters = o->iterations;
        w->waves = o->waves;
        w->drop = o->drop_behind;
        w->hints = 1;
        w->chain = o->chain;
        worker_io_init(w, io, o);
        w->sh = &sh;
        w->has_up = i > 0;
        w->has_down = i + 1 < P;
        w->up_bf = i > 0 ? &chans[2 * i] : NULL;
        w->up_tf = i > 0 ? &chans[2 * i + 1] : NULL;
        w->down_bf = i + 1 < P ? &chans[2 * (i + 1)] : NULL;
        w->down_tf = i + 1 < P ? &chans[2 * (i + 1) + 1] : NULL;
        if (worker_alloc(w, err, errlen))
            goto out;
    }
    pthread_t *tids = calloc((size_t)P, sizeof *tids);
    if (!tids) {
        ERR("out of memory");
        goto out;
    }
    int64_t dr0, dw0, dr1, dw1;
    dev_io(&dr0, &dw0);
    double t0 = now_s();
    int started = 0;
    for (int i = 0; i < P; i++) {
        if (pthread_create(&tids[i], NULL, worker_thread, &ws[i]) != 0) {
            shared_fail(&sh, "cannot create worker thread");
            break;
        }
        started++;
    }
    for (int i = 0; i < started; i++)
        pthread_join(tids[i], NULL);
    /* an out-of-core run is done when its results are on disk: the time includes it */
    if (!sh.abort && fdatasync(d.fd) != 0) {
        ERR("%s: fdatasync failed: %s", data_path, strerror(errno));
        free(tids);
        goto out;
    }
    double t1 = now_s();
    dev_io(&dr1, &dw1);
    free(tids);
    if (sh.abort) {
        ERR("%s", sh.err);
        goto out;
    }
    fill_stats(st, &d, &c, mb, nb, P, o->iterations);
    st->prefetch = ws[0].prefetch;
    st->io = io;
    st->queue_depth = ws[0].chain ? ws[0].npool : ws[0].nslots;
    st->chain = o->chain;
    for (int i = 0; i < P; i++)
        st->buffer_bytes += ws[i].buf_bytes;
    st->buffer_bytes += 2 * (int64_t)P * chans[0].cap * (int64_t)chans[0].seg * 8;
    st->total_s = t1 - t0;
    st->dev_read_bytes = dr0 >= 0 && dr1 >= 0 ? dr1 - dr0 : -1;
    st->dev_write_bytes = dw0 >= 0 && dw1 >= 0 ? dw1 - dw0 : -1;
    st->iter_s = calloc((size_t)(o->iterations > 0 ? o->iterations : 1), sizeof(double));
    if (!st->iter_s || stats_alloc_times(st, P)) {
        mpilab_wf_stats_free(st);
        ERR("out of memory");
        goto out;
    }
    double prev = t0;
    for (int64_t it = 0; it < o->iterations; it++) {
        double m = 0;
        for (int i = 0; i < P; i++)
            if (ws[i].t_done[it] > m)
                m = ws[i].t_done[it];
        st->iter_s[it] = m - prev;
        prev = m;
    }
    for (int i = 0; i < P; i++) {
        st->bytes_read += ws[i].bytes_r;
        st->bytes_written += ws[i].bytes_w;
        st->compute_s[i] = ws[i].t_compute;
        st->io_wait_s[i] = ws[i].t_iowait;
        st->dep_wait_s[i] = ws[i].t_depwait;
        st->io_busy_s[i] = ws[i].t_iobusy;
    }
    st->maxrss_kb = maxrss_kb();
    rc = 0;
out:
    if (ws)
        for (int i = 0; i < P; i++)
            worker_free(&ws[i]);
    free(ws);
    if (chans)
        for (int i = 0; i < sh.nchans; i++) {
            free(chans[i].ring);
            pthread_mutex_destroy(&chans[i].mu);
            pthread_cond_destroy(&chans[i].cv);
        }
    free(chans);
    pthread_mutex_destroy(&sh.mu);
    pthread_cond_destroy(&sh.cv);
    wf_close(&d);
    wf_close(&c);
    return rc;
}

/* ---- distributed mode --------------------------------------------------------------- */

static int band_path(char *buf, size_t len, const char *base, int rank, int size)
{
    snprintf(buf, len, "%s.%d", base, rank);
    if (size == 1 && access(buf, F_OK) != 0)
        snprintf(buf, len, "%s", base);
    return 0;
}

/* Agree on failure: returns 1 if any rank failed; err then holds the first failing rank's
 * message on every rank. */
static int any_failed(MPI_Comm comm, int failed, char *err, size_t errlen)
{
    int rank, size;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    int who = failed ? rank : size, first = size;
    MPI_Allreduce(&who, &first, 1, MPI_INT, MPI_MIN, comm);
    if (first == size)
        return 0;
    char msg[512];
    snprintf(msg, sizeof msg, "%s", rank == first ? err : "");
    MPI_Bcast(msg, (int)sizeof msg, MPI_CHAR, first, comm);
    snprintf(err, errlen, "%s", msg);
    return 1;
}

static int mlink_init(mpilink *l, int peer, int tag, size_t seg, int nsend, int64_t expect)
{
    memset(l, 0, sizeof *l);
    l->peer = peer;
    l->tag = tag;
    l->seg = seg;
    l->nsend = nsend;
    l->expect = expect;
    l->rreq[0] = l->rreq[1] = MPI_REQUEST_NULL;
    if (nsend) {
        l->sbuf = malloc((size_t)nsend * seg * 8);
        l->sreq = malloc((size_t)nsend * sizeof *l->sreq);
        if (!l->sbuf || !l->sreq)
            return -1;
        for (int i = 0; i < nsend; i++)
            l->sreq[i] = MPI_REQUEST_NULL;
    } else {
        l->rbuf = malloc(2 * seg * 8);
        if (!l->rbuf)
            return -1;
    }
    return 0;
}

static void mlink_finish(mpilink *l)
{
    if (l->sreq) {
        int n = l->sent < l->nsend ? (int)l->sent : l->nsend;
        MPI_Waitall(n, l->sreq, MPI_STATUSES_IGNORE);
    }
    free(l->sbuf);
    free(l->sreq);
    free(l->rbuf);
    memset(l, 0, sizeof *l);
}

int mpilab_wf_run_mpi(MPI_Comm comm, const char *data_base, const char *coef_base,
                      const mpilab_wf_run_opts *o, mpilab_wf_stats *st, char *err, size_t errlen)
{
    memset(st, 0, sizeof *st);
    err[0] = '\0';
    int rank, size;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    char dp[4096], cp[4096];
    band_path(dp, sizeof dp, data_base, rank, size);
    band_path(cp, sizeof cp, coef_base, rank, size);
    wf_file d, c;
    memset(&d, 0, sizeof d);
    memset(&c, 0, sizeof c);
    d.fd = c.fd = -1;
    int64_t mb = 0, nb = 0;
    int bad = 0, io = o->io;
    if (resolve_io(&io, o->queue_depth, o->chain, err, errlen))
        bad = 1;
    else if (wf_open(&d, dp, 1, io, err, errlen))
        bad = 1;
    else if (wf_open(&c, cp, 0, io, err, errlen))
        bad = 1;
    else if (check_setup(&d, &c, o, &mb, &nb, err, errlen))
        bad = 1;
    /* the bands must tile the matrix in rank order */
    unsigned long long mine[3] = {bad ? 0 : d.h.row0, bad ? 0 : d.h.rows,
                                  bad ? 0 : d.h.total_rows};
    unsigned long long *all = malloc((size_t)size * sizeof mine);
    long long mbnb[2] = {mb, nb}, mbnb_max[2] = {0, 0};
    if (!all) {
        ERR("out of memory");
        bad = 1;
    }
    if (any_failed(comm, bad, err, errlen)) {
        free(all);
        wf_close(&d);
        wf_close(&c);
        return -1;
    }
    MPI_Allgather(mine, 3, MPI_UNSIGNED_LONG_LONG, all, 3, MPI_UNSIGNED_LONG_LONG, comm);
    MPI_Allreduce(mbnb, mbnb_max, 2, MPI_LONG_LONG, MPI_MAX, comm);
    for (int r = 0; r < size && !bad; r++) {
        unsigned long long expect0 = r ? all[3 * (r - 1)] + all[3 * (r - 1) + 1] : 0;
        if (all[3 * r] != expect0 || all[3 * r + 2] != all[2]) {
            if (rank == r)
                ERR("%s: band rows %llu.. do not continue the previous rank's band (expected "
                    "row %llu)", dp, all[3 * r], expect0);
            bad = rank == r;
        }
    }
    if (rank == size - 1 && !bad && all[3 * rank] + all[3 * rank + 1] != all[3 * rank + 2]) {
        ERR("%s: bands end at row %llu of %llu (more band files than ranks?)", dp,
            all[3 * rank] + all[3 * rank + 1], all[3 * rank + 2]);
        bad = 1;
    }
    if (!bad && (mbnb_max[0] != mb || mbnb_max[1] != nb)) {
        ERR("%s: blocking differs between ranks", dp);
        bad = 1;
    }
    if (!bad && (int64_t)d.h.row0 % mb != 0) {
        ERR("%s: band does not start at a block-row boundary", dp);
        bad = 1;
    }
    free(all);
    worker w;
    memset(&w, 0, sizeof w);
    w.id = rank;
    w.nworkers = size;
    w.data = &d;
    w.coef = &c;
    w.mb = mb > 0 ? mb : 1;
    w.nb = nb > 0 ? nb : 1;
    w.cols = (int64_t)d.h.cols;
    w.iters = o->iterations;
    int64_t nbc = (w.cols + w.nb - 1) / w.nb;
    if (!bad) {
        w.b0 = 0;
        w.b1 = ((int64_t)d.h.rows + mb - 1) / mb;
        w.nbc = nbc;
        w.row0 = (int64_t)d.h.row0;
        w.total = (int64_t)d.h.total_rows;
        w.waves = o->waves;
        w.drop = o->drop_behind;
        w.hints = 1;
        w.chain = o->chain;
        worker_io_init(&w, io, o);
        w.mpi = 1;
        w.comm = comm;
        w.has_up = rank > 0;
        w.has_down = rank + 1 < size;
        int nsend = (int)(2 * nbc + 2);
        int64_t expect = o->iterations * nbc;
        const size_t sg = (size_t)nb + (o->chain == MPILAB_WF_CHAIN_BLOCK ? 2 : 0); /* + tag */
        const int aok = worker_alloc(&w, err, errlen) == 0;
        int ok = aok;
        if (ok && w.has_up)
            ok = !mlink_init(&w.l_up_tf_send, rank - 1, TAG_TF, sg, nsend, 0) &&
                 !mlink_init(&w.l_up_bf_recv, rank - 1, TAG_BF, sg, 0, expect);
        if (ok && w.has_down)
            ok = !mlink_init(&w.l_down_bf_send, rank + 1, TAG_BF, sg, nsend, 0) &&
                 !mlink_init(&w.l_down_tf_recv, rank + 1, TAG_TF, sg, 0, expect);
        w.buf_bytes += (int64_t)(w.has_up + w.has_down) * (nsend + 2) * (int64_t)sg * 8;
        w.wave_req = calloc((size_t)(o->iterations > 0 ? o->iterations : 1), sizeof(MPI_Request));
        if (!ok || !w.wave_req) {
            if (aok)
                ERR("out of memory");
            bad = 1;
        } else {
            for (int64_t i = 0; i < o->iterations; i++)
                w.wave_req[i] = MPI_REQUEST_NULL;
        }
    }
    int rc = -1;
    if (any_failed(comm, bad, err, errlen))
        goto out;
    int64_t dr0, dw0, dr1, dw1;
    dev_io(&dr0, &dw0);
    MPI_Barrier(comm);
    double t0 = MPI_Wtime();
    if (worker_body(&w)) {
        /* a failure mid-run (I/O error): the neighbours would wait forever */
        fprintf(stderr, "mpilab-wavefront: rank %d: %s\n", rank, w.err);
        MPI_Abort(comm, 2);
    }
    mlink_finish(&w.l_up_tf_send);
    mlink_finish(&w.l_down_bf_send);
    mlink_finish(&w.l_up_bf_recv);
    mlink_finish(&w.l_down_tf_recv);
    if (o->iterations > 0)
        MPI_Waitall((int)o->iterations, w.wave_req, MPI_STATUSES_IGNORE);
    /* the run is done when the results are on disk (a failure here is reported, not
     * hidden: the data may be incomplete) */
    if (fdatasync(d.fd) != 0) {
        fprintf(stderr, "mpilab-wavefront: rank %d: %s: fdatasync failed: %s\n", rank, dp,
                strerror(errno));
        MPI_Abort(comm, 2);
    }
    double t1 = MPI_Wtime() - t0;
    dev_io(&dr1, &dw1);
    int64_t k = o->iterations;
    double *rel = calloc((size_t)(k > 0 ? k : 1), sizeof(double));
    double *mx = calloc((size_t)(k > 0 ? k : 1), sizeof(double));
    for (int64_t i = 0; i < k && rel; i++)
        rel[i] = w.t_done[i] - t0;
    long long iob[3] = {w.bytes_r, w.bytes_w, w.buf_bytes}, iosum[3] = {0, 0, 0};
    long rss = maxrss_kb(), rssmax = 0;
    double tmax = 0;
    if (rel && mx)
        MPI_Reduce(rel, mx, (int)(k > 0 ? k : 1), MPI_DOUBLE, MPI_MAX, 0, comm);
    MPI_Reduce(iob, iosum, 3, MPI_LONG_LONG, MPI_SUM, 0, comm);
    MPI_Reduce(&rss, &rssmax, 1, MPI_LONG, MPI_MAX, 0, comm);
    MPI_Reduce(&t1, &tmax, 1, MPI_DOUBLE, MPI_MAX, 0, comm);
    /* device bytes: -1 on any rank without /proc/self/io makes the sum meaningless */
    long long dev[3] = {dr0 >= 0 && dr1 >= 0 ? dr1 - dr0 : 0, dw0 >= 0 && dw1 >= 0 ? dw1 - dw0 : 0,
                        dr0 < 0 || dr1 < 0 || dw0 < 0 || dw1 < 0},
              devsum[3] = {0, 0, 0};
    MPI_Reduce(dev, devsum, 3, MPI_LONG_LONG, MPI_SUM, 0, comm);
    double tw[4] = {w.t_compute, w.t_iowait, w.t_depwait, w.t_iobusy};
    double *twall = rank == 0 ? calloc((size_t)size * 4, sizeof(double)) : NULL;
    MPI_Gather(tw, 4, MPI_DOUBLE, twall, 4, MPI_DOUBLE, 0, comm);
    fill_stats(st, &d, &c, mb, nb, size, k);
    st->prefetch = w.prefetch;
    st->io = io;
    st->queue_depth = w.chain ? w.npool : w.nslots;
    st->chain = o->chain;
    st->buffer_bytes = iosum[2];
    st->dev_read_bytes = devsum[2] ? -1 : devsum[0];
    st->dev_write_bytes = devsum[2] ? -1 : devsum[1];
    if (rank == 0 && twall && stats_alloc_times(st, size) == 0)
        for (int r = 0; r < size; r++) {
            st->compute_s[r] = twall[4 * r];
            st->io_wait_s[r] = twall[4 * r + 1];
            st->dep_wait_s[r] = twall[4 * r + 2];
            st->io_busy_s[r] = twall[4 * r + 3];
        }
    free(twall);
    st->total_s = tmax;
    st->bytes_read = iosum[0];
    st->bytes_written = iosum[1];
    st->maxrss_kb = rssmax;
    st->iter_s = calloc((size_t)(k > 0 ? k : 1), sizeof(double));
    if (st->iter_s && mx && rank == 0) {
        double prev = 0;
        for (int64_t i = 0; i < k; i++) {
            st->iter_s[i] = mx[i] - prev;
            prev = mx[i];
        }
    }
    free(rel);
    free(mx);
    rc = 0;
out:
    worker_free(&w);
    free(w.wave_req);
    mlink_finish(&w.l_up_tf_send);
    mlink_finish(&w.l_down_bf_send);
    mlink_finish(&w.l_up_bf_recv);
    mlink_finish(&w.l_down_tf_recv);
    wf_close(&d);
    wf_close(&c);
    return rc;
}
