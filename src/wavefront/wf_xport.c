/* The transport interface's synchronous / I/O-helper implementation (file back ends
 * pread, mmap and O_DIRECT). With prefetch, a helper thread per worker executes the
 * worker's reads and write-backs in submission order (FIFO): the reads of step s+1 are
 * submitted before step s is computed (into the other of two buffer slots), the
 * write-back of step s right after; step s+1's reads are submitted after step s's write
 * instead when they touch block s, so every read sees what the sequential order would.
 * Without prefetch every transfer is done at once in the worker. */
#include <stdio.h>
#include <string.h>

#include "wavefront/wf_worker.h"

/* Page-cache hints for block (br, bc): WILLNEED before it is read, drop-behind after its
 * write-back (back ends without page cache ignore them). */
void wf_hint_block(worker *w, int64_t br, int64_t bc, int done, int64_t iter_left)
{
    if (!w->hints)
        return;
    /* io_turns: a WILLNEED hint's reads are asynchronous, served after the turn ended
     * between the other workers' requests; the helper's reads a step ahead prefetch */
    if (!done && w->turn)
        return;
    if (done && !w->drop && !w->data->map)
        return;
    if (!done && iter_left <= 0)
        return;
    off_t off;
    size_t len;
    /* only for blocked layouts: a row-major block spans whole rows */
    if (w->data->lay->blocked) {
        if (!done && w->data->lay->read_range)
            w->data->lay->read_range(w->data, &w->dio, br, bc, &off, &len);
        else
            w->data->lay->range(w->data, &w->dio, br, bc, &off, &len);
        if (done)
            wf_done(w->data, off, len, w->drop);
        else
            wf_willneed(w->data, off, len);
    }
    if (w->coef->lay->blocked) {
        w->coef->lay->range(w->coef, &w->cio, br, bc, &off, &len);
        if (done) {
            if (w->drop || w->coef->map)
                wf_done(w->coef, off, len, 0);
        } else {
            wf_willneed(w->coef, off, len);
        }
    }
}
static int io_exec_op(worker *w, const wf_ioop *op, char *err, size_t errlen)
{
    switch (op->kind) {
    case WF_OP_READ: return wf_step_read(w, op, err, errlen);
    case WF_OP_WRITE: return wf_step_write(w, op, err, errlen);
    case WF_OP_CREAD: return wf_chain_read(w, op, err, errlen);
    case WF_OP_CWRITE: return wf_chain_write(w, op, err, errlen);
    default: snprintf(err, errlen, "internal: unknown I/O operation %d", op->kind); return -1;
    }
}

/* One operation; with io_turns inside the storage turn, so that a step's reads (block,
 * coefficients, halo) or a write-back reach the disk without another worker's requests
 * in between (the head then moves once per operation instead of once per request). */
static int io_exec(worker *w, const wf_ioop *op, char *err, size_t errlen)
{
    if (!w->turn)
        return io_exec_op(w, op, err, errlen);
    pthread_mutex_lock(w->turn);
    int rc = io_exec_op(w, op, err, errlen);
    pthread_mutex_unlock(w->turn);
    return rc;
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
        wf_ioop op = w->q[w->completed % WF_IOQ];
        int skip = w->io_failed;
        pthread_mutex_unlock(&w->io_mu);
        int rc = 0;
        if (!skip) {
            double t0 = wf_now();
            rc = io_exec(w, &op, w->ioerr, sizeof w->ioerr);
            w->t_iobusy += wf_now() - t0;
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
int64_t wf_io_submit(worker *w, int kind, int slot, int64_t it, int64_t br, int64_t bc)
{
    wf_ioop op = {kind, slot, it, br, bc};
    if (!w->prefetch) {
        double t0 = wf_now();
        int rc = io_exec(w, &op, w->err, sizeof w->err);
        w->t_iowait += wf_now() - t0;
        return rc ? -1 : ++w->submitted;
    }
    double t0 = wf_now();
    pthread_mutex_lock(&w->io_mu);
    while (w->submitted - w->completed >= WF_IOQ)
        pthread_cond_wait(&w->io_cv, &w->io_mu);
    w->q[w->submitted % WF_IOQ] = op;
    int64_t seq = ++w->submitted;
    pthread_cond_broadcast(&w->io_cv);
    pthread_mutex_unlock(&w->io_mu);
    w->t_iowait += wf_now() - t0;
    return seq;
}

/* Wait until operation `seq` (and all before it) completed. */
int wf_io_wait(worker *w, int64_t seq)
{
    if (!w->prefetch)
        return 0;
    double t0 = wf_now();
    pthread_mutex_lock(&w->io_mu);
    while (w->completed < seq)
        pthread_cond_wait(&w->io_cv, &w->io_mu);
    int failed = w->io_failed;
    pthread_mutex_unlock(&w->io_mu);
    w->t_iowait += wf_now() - t0;
    if (failed) {
        snprintf(w->err, sizeof w->err, "%s", w->ioerr);
        return -1;
    }
    return 0;
}

static int helper_start(worker *w)
{
    w->submitted = w->completed = 0;
    w->io_stop = w->io_failed = 0;
    if (!w->prefetch)
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
static void helper_stop(worker *w)
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

static int helper_read_submit(worker *w, int64_t t, int64_t it, int64_t br, int64_t bc)
{
    const int slot = (int)(t % w->nslots);
    w->rseq[slot] = wf_io_submit(w, WF_OP_READ, slot, it, br, bc);
    return w->rseq[slot] < 0 ? -1 : 0;
}

static int helper_read_wait(worker *w, int64_t t, int64_t it, int64_t br, int64_t bc)
{
    (void)it, (void)br, (void)bc;
    return wf_io_wait(w, w->rseq[t % w->nslots]);
}

static int helper_write_submit(worker *w, int64_t t, int64_t it, int64_t br, int64_t bc)
{
    return wf_io_submit(w, WF_OP_WRITE, (int)(t % w->nslots), it, br, bc) < 0 ? -1 : 0;
}

static int helper_drain(worker *w) { return wf_io_wait(w, w->submitted); }

static int helper_alloc(worker *w, char *err, size_t errlen)
{
    (void)w, (void)err, (void)errlen;
    return 0;
}

static void helper_release(worker *w) { (void)w; }

const wf_xport wf_xport_helper = {
    .name = "helper",
    .alloc = helper_alloc,
    .release = helper_release,
    .start = helper_start,
    .stop = helper_stop,
    .read_submit = helper_read_submit,
    .read_wait = helper_read_wait,
    .write_submit = helper_write_submit,
    .drain = helper_drain,
};
