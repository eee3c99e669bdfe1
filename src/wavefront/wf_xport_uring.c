/* The io_uring transport: no helper thread; each worker has its own ring. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "wavefront/wf_worker.h"

#ifdef MPILAB_HAVE_URING
#include <liburing.h>

/* Recorded transfers per slot (reads of the slot's step, its write-back), outstanding
 * counts, and the step/block of the slot's write-back. */
struct wf_uring {
    struct io_uring ring;
    int ring_ok;
    wf_rec rrec[WF_MAXQ], wrec[WF_MAXQ];
    int64_t rpend[WF_MAXQ], wpend[WF_MAXQ], wstep[WF_MAXQ], wbr[WF_MAXQ], wbc[WF_MAXQ];
    int64_t inflight;
};

/* ---- io_uring back end ---------------------------------------------------------------
 * No helper thread: the worker records a step's transfers (wf_step_read / wf_step_write with
 * the slot's wf_rec), submits them all to its own ring and goes on; completions are
 * reaped whenever it has to wait. Up to nslots steps have buffers in flight: the reads of
 * the next nslots-1 steps and the write-backs not yet completed. Ordering is enforced
 * here instead of by a FIFO: a read is submitted only after every write-back of a block
 * it touches completed, and a slot is reused only after its write-back completed. */
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
        rc = io_uring_wait_cqe(&w->ur->ring, &cqe);
    while (rc == -EINTR);
    if (rc < 0) {
        ur_fail(w, w->data->path, "io_uring_wait_cqe", -rc);
        return -2;
    }
    uint64_t ud = io_uring_cqe_get_data64(cqe);
    int res = cqe->res;
    io_uring_cqe_seen(&w->ur->ring, cqe);
    int slot = (int)((ud >> 1) & 63), wr = (int)(ud & 1);
    size_t xi = (size_t)(ud >> 8);
    wf_xfer *x = wr ? &w->ur->wrec[slot].v[xi] : &w->ur->rrec[slot].v[xi];
    w->ur->inflight--;
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
        if (--w->ur->wpend[slot] == 0 && !w->io_failed)
            wf_hint_block(w, w->ur->wbr[slot], w->ur->wbc[slot], 1, 0);
    } else {
        w->ur->rpend[slot]--;
    }
    return w->io_failed ? -1 : 0;
}

/* Submit the transfers recorded in r (slot, direction). */
static int ur_submit(worker *w, wf_rec *r, int slot, int wr, int64_t *pend)
{
    unsigned cap = w->ur->ring.cq.ring_entries;
    for (size_t i = 0; i < r->n; i++) {
        struct io_uring_sqe *sqe;
        while (w->ur->inflight >= (int64_t)cap || !(sqe = io_uring_get_sqe(&w->ur->ring))) {
            int rc = io_uring_submit(&w->ur->ring);
            if (rc < 0 && rc != -EAGAIN && rc != -EBUSY && rc != -EINTR) {
                ur_fail(w, w->data->path, "io_uring_submit", -rc);
                return -1;
            }
            if (w->ur->inflight >= (int64_t)cap || rc <= 0)
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
        w->ur->inflight++;
    }
    int rc;
    do
        rc = io_uring_submit(&w->ur->ring);
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
    if (!w->ur->ring_ok)
        return 0;
    io_uring_submit(&w->ur->ring);
    while (w->ur->inflight > 0)
        if (ur_reap(w) == -2)
            return -1;
    return w->io_failed ? -1 : 0;
}

static int ur_read_submit(worker *w, int64_t t, int64_t it, int64_t br, int64_t bc)
{
    const int slot = (int)(t % w->nslots);
    double t0 = wf_now();
    const int64_t cm = wf_conflict_max(w, it, br, bc);
    for (int k = 0; k < w->nslots; k++)
        while (w->ur->wpend[k] > 0 && (k == slot || w->ur->wstep[k] <= cm))
            if (ur_reap(w))
                goto fail;
    w->t_iowait += wf_now() - t0;
    wf_ioop op = {WF_OP_READ, slot, it, br, bc};
    w->ur->rrec[slot].n = 0;
    w->ur->rrec[slot].mode = WF_REC_RECORD;
    if (wf_step_read(w, &op, w->ioerr, sizeof w->ioerr))
        goto fail;
    if (ur_submit(w, &w->ur->rrec[slot], slot, 0, &w->ur->rpend[slot]))
        goto fail;
    w->rseq[slot] = t; /* remembered for the replay */
    return 0;
fail:
    snprintf(w->err, sizeof w->err, "%s", w->ioerr);
    return -1;
}

/* Wait for the reads of step t, then replay their copy/unpack work. */
static int ur_read_wait(worker *w, int64_t t, int64_t it, int64_t br, int64_t bc)
{
    const int slot = (int)(t % w->nslots);
    double t0 = wf_now();
    while (w->ur->rpend[slot] > 0)
        if (ur_reap(w)) {
            snprintf(w->err, sizeof w->err, "%s", w->ioerr);
            return -1;
        }
    w->t_iowait += wf_now() - t0;
    wf_ioop op = {WF_OP_READ, slot, it, br, bc};
    w->ur->rrec[slot].mode = WF_REC_REPLAY;
    return wf_step_read(w, &op, w->err, sizeof w->err);
}

static int ur_write_submit(worker *w, int64_t t, int64_t it, int64_t br, int64_t bc)
{
    const int slot = (int)(t % w->nslots);
    wf_ioop op = {WF_OP_WRITE, slot, it, br, bc};
    w->ur->wrec[slot].n = 0;
    w->ur->wrec[slot].mode = WF_REC_RECORD;
    w->ur->wstep[slot] = t;
    w->ur->wbr[slot] = br;
    w->ur->wbc[slot] = bc;
    if (wf_step_write(w, &op, w->err, sizeof w->err))
        return -1;
    if (ur_submit(w, &w->ur->wrec[slot], slot, 1, &w->ur->wpend[slot])) {
        snprintf(w->err, sizeof w->err, "%s", w->ioerr);
        return -1;
    }
    return 0;
}

static int ur_io_drain(worker *w)
{
    double t0 = wf_now();
    int rc = ur_drain(w);
    w->t_iowait += wf_now() - t0;
    if (rc)
        snprintf(w->err, sizeof w->err, "%s", w->ioerr);
    return rc;
}

/* Per slot: its own scratch (packed transfers land there between record and replay) and
 * transfer records; the ring. */
static int ur_alloc(worker *w, char *err, size_t errlen)
{
    const int64_t mb = w->mb, nb = w->nb;
    w->ur = calloc(1, sizeof *w->ur);
    if (!w->ur)
        goto oom;
    for (int s = 0; s < w->nslots; s++) {
        /* the coefficient reads go straight to their buffer (row stride = width) */
        w->dios[s].tmp = malloc(wf_scratch_doubles(&w->data->h, mb, nb) * 8);
        if (!w->dios[s].tmp)
            goto oom;
        w->dios[s].rec = w->cios[s].rec = &w->ur->rrec[s];
        w->buf_bytes += (int64_t)wf_scratch_doubles(&w->data->h, mb, nb) * 8;
        w->wios[s] = w->dios[s]; /* the write-back packs into the slot's scratch */
        w->wios[s].rec = &w->ur->wrec[s];
    }
    int rc = io_uring_queue_init(WF_URING_ENTRIES, &w->ur->ring, 0);
    if (rc < 0) {
        snprintf(err, errlen, "io_uring back end unavailable: io_uring_queue_init failed: %s",
                 strerror(-rc));
        return -1;
    }
    w->ur->ring_ok = 1;
    return 0;
oom:
    snprintf(err, errlen, "out of memory");
    return -1;
}

static void ur_release(worker *w)
{
    if (!w->ur)
        return;
    for (int s = 0; s < WF_MAXQ; s++) {
        if (w->dios[s].tmp != w->dio.tmp)
            free(w->dios[s].tmp);
        w->dios[s].tmp = NULL;
        free(w->ur->rrec[s].v);
        free(w->ur->wrec[s].v);
    }
    if (w->ur->ring_ok)
        io_uring_queue_exit(&w->ur->ring);
    free(w->ur);
    w->ur = NULL;
}

static int ur_start(worker *w)
{
    w->io_failed = 0;
    return 0;
}

/* Reap what is still in flight (the buffers must be idle before they are freed). */
static void ur_stop(worker *w) { ur_drain(w); }

const wf_xport wf_xport_uring = {
    .name = "uring",
    .alloc = ur_alloc,
    .release = ur_release,
    .start = ur_start,
    .stop = ur_stop,
    .read_submit = ur_read_submit,
    .read_wait = ur_read_wait,
    .write_submit = ur_write_submit,
    .drain = ur_io_drain,
};

int wf_uring_built(void) { return 1; }

int wf_uring_probe(char *why, size_t whylen)
{
    struct io_uring r;
    int rc = io_uring_queue_init(4, &r, 0);
    if (rc < 0) {
        snprintf(why, whylen, "io_uring_queue_init failed: %s", strerror(-rc));
        return 0;
    }
    io_uring_queue_exit(&r);
    return 1;
}

#else /* not built with liburing: the transport refuses to start */

static int ur_alloc(worker *w, char *err, size_t errlen)
{
    (void)w;
    snprintf(err, errlen, "io_uring back end not built in (liburing was not found at build time)");
    return -1;
}

static void ur_release(worker *w) { (void)w; }

const wf_xport wf_xport_uring = {.name = "uring", .alloc = ur_alloc, .release = ur_release};

int wf_uring_built(void) { return 0; }

int wf_uring_probe(char *why, size_t whylen)
{
    snprintf(why, whylen, "not built in (liburing was not found at build time)");
    return 0;
}
#endif
