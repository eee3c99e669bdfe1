/* The engine's drivers: worker set-up (shared by the thread and the MPI driver), buffers,
 * threads (mpilab_wf_run) and MPI ranks (mpilab_wf_run_mpi), the run-state marker and the
 * statistics. The pieces: wf_worker.h. */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "wavefront/wf_worker.h"

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

static long maxrss_kb(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return ru.ru_maxrss;
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
    if (!w->prefetch)
        return;
    if (w->data->ops->hints && !w->data->map && w->data->lay->exact_reads)
        posix_fadvise(w->data->fd, 0, 0, POSIX_FADV_RANDOM);
    if (w->coef->ops->hints && !w->coef->map && w->coef->lay->blocked)
        posix_fadvise(w->coef->fd, 0, 0, POSIX_FADV_RANDOM);
}

static int worker_body(worker *w)
{
    no_readahead(w);
    if (w->xp->start(w))
        return -1;
    int rc = w->chain ? wf_chain_steps(w) : wf_band_steps(w);
    w->xp->stop(w); /* after the queued transfers (or at once after a failure) */
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
        wf_shared_fail(w->sh, w->err[0] ? w->err : "worker failed");
    }
    return NULL;
}

/* Back end and buffer slots of a worker (io already resolved: never AUTO). */
static void worker_io_init(worker *w, int io, const mpilab_wf_run_opts *o)
{
    w->xp = io == MPILAB_WF_IO_URING ? &wf_xport_uring : &wf_xport_helper;
    if (io == MPILAB_WF_IO_URING) {
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
    const int64_t slot_bytes = ((mb + 2) * (nb + 2) + 5 * mb * nb + mb) * 8;
    if (w->chain) {
        const int64_t R = w->b1 - w->b0;
        w->ch.npool = (int)wf_chain_pool(R, w->nbc, w->waves, w->prefetch);
        w->ch.nfree = w->ch.npool;
        w->ch.xhb = calloc((size_t)w->ch.npool, sizeof *w->ch.xhb);
        w->ch.xcf = calloc((size_t)w->ch.npool, sizeof *w->ch.xcf);
        w->ch.xlf = calloc((size_t)w->ch.npool, sizeof *w->ch.xlf);
        w->ch.xseq = calloc((size_t)w->ch.npool, sizeof *w->ch.xseq);
        w->ch.xfree = calloc((size_t)w->ch.npool, sizeof *w->ch.xfree);
        w->ch.slot_of = malloc((size_t)(R * w->nbc) * sizeof *w->ch.slot_of);
        w->ch.tfst = malloc((size_t)(w->nbc * nb) * 8);
        w->ch.tfk = malloc((size_t)w->nbc * sizeof *w->ch.tfk);
        w->ch.segx = malloc((size_t)(nb + 2) * 8);
        if (!w->ch.xhb || !w->ch.xcf || !w->ch.xlf || !w->ch.xseq || !w->ch.xfree || !w->ch.slot_of || !w->ch.tfst ||
            !w->ch.tfk || !w->ch.segx)
            goto oom;
        for (int64_t i = 0; i < R * w->nbc; i++)
            w->ch.slot_of[i] = -1;
        for (int s = 0; s < w->ch.npool; s++) {
            w->ch.xfree[s] = w->ch.npool - 1 - s;
            w->ch.xhb[s] = calloc((size_t)((mb + 2) * (nb + 2)), 8);
            w->ch.xcf[s] = malloc((size_t)(5 * mb * nb) * 8);
            w->ch.xlf[s] = malloc((size_t)mb * 8);
            if (!w->ch.xhb[s] || !w->ch.xcf[s] || !w->ch.xlf[s])
                goto oom;
        }
        w->buf_bytes += w->ch.npool * slot_bytes + (w->nbc * nb + nb + 2) * 8;
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
        w->dios[s] = w->wios[s] = w->dio;
        w->cios[s] = w->cio;
    }
    if (w->xp->alloc(w, err, errlen))
        return -1;
    return 0;
oom:
    ERR("out of memory");
    return -1;
}

static void worker_free(worker *w)
{
    for (int s = 0; s < w->ch.npool; s++) {
        free(w->ch.xhb[s]);
        free(w->ch.xcf[s]);
        free(w->ch.xlf[s]);
    }
    free(w->ch.xhb);
    free(w->ch.xcf);
    free(w->ch.xlf);
    free(w->ch.xseq);
    free(w->ch.xfree);
    free(w->ch.slot_of);
    free(w->ch.tfst);
    free(w->ch.tfk);
    free(w->ch.segx);
    w->ch.xhb = w->ch.xcf = w->ch.xlf = NULL;
    w->ch.xseq = w->ch.tfk = NULL;
    w->ch.xfree = w->ch.slot_of = NULL;
    w->ch.tfst = w->ch.segx = NULL;
    w->ch.npool = 0;
    for (int s = 0; s < WF_MAXQ; s++) {
        free(w->hb[s]);
        free(w->cfb[s]);
        free(w->lfs[s]);
        w->hb[s] = w->cfb[s] = w->lfs[s] = NULL;
    }
    if (w->xp)
        w->xp->release(w);
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
    if (io == MPILAB_WF_IO_PREAD || io == MPILAB_WF_IO_MMAP || io == MPILAB_WF_IO_AUTO ||
        io == MPILAB_WF_IO_DIRECT)
        return 1;
    if (io != MPILAB_WF_IO_URING) {
        snprintf(why, whylen, "unknown I/O back end");
        return 0;
    }
    return wf_uring_probe(why, whylen);
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
            ERR("block chaining does not support the io_uring back end (use pread, direct or mmap)");
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
    if (!wf_io_ops_get(*io)) {
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
    if (d->h.state == WF_STATE_RUNNING) {
        ERR("%s: an earlier in-place run (from iteration %llu) was interrupted: the file holds "
            "a mix of iterations (make it again from the initial matrix)",
            d->path, (unsigned long long)d->h.iters_done);
        return -1;
    }
    *mb = o->mb;
    *nb = o->nb;
    const wf_file *blocked = d->lay->blocked ? d : c->lay->blocked ? c : NULL;
    if (blocked) {
        if ((*mb && *mb != (int64_t)blocked->h.mb) || (*nb && *nb != (int64_t)blocked->h.nb)) {
            ERR("%s: blocked %llux%llu, but %lldx%lld was asked", blocked->path,
                (unsigned long long)blocked->h.mb, (unsigned long long)blocked->h.nb,
                (long long)*mb, (long long)*nb);
            return -1;
        }
        *mb = (int64_t)blocked->h.mb;
        *nb = (int64_t)blocked->h.nb;
        if (blocked == d && c->lay->blocked &&
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

/* One worker's set-up, shared by the thread and the MPI driver: block rows [b0, b1) of the
 * band held by the files d, c; options; transport; buffers. */
static int worker_setup(worker *w, int id, int nworkers, wf_file *d, wf_file *c, int64_t b0,
                        int64_t b1, int64_t mb, int64_t nb, int io, const mpilab_wf_run_opts *o,
                        char *err, size_t errlen)
{
    w->id = id;
    w->nworkers = nworkers;
    w->data = d;
    w->coef = c;
    w->b0 = b0;
    w->b1 = b1;
    w->mb = mb;
    w->nb = nb;
    w->cols = (int64_t)d->h.cols;
    w->nbc = (w->cols + nb - 1) / nb;
    w->row0 = (int64_t)d->h.row0;
    w->total = (int64_t)d->h.total_rows;
    w->iters = o->iterations;
    w->waves = o->waves;
    w->drop = o->drop_behind;
    w->hints = 1;
    w->chain = o->chain;
    w->has_up = id > 0;
    w->has_down = id + 1 < nworkers;
    worker_io_init(w, io, o);
    return worker_alloc(w, err, errlen);
}

/* The run-state marker (crash consistency of in-place runs): set and synced before the
 * first block is modified, cleared with the iteration count advanced once the data is on
 * disk. A killed run leaves it set; open, verify and convert then refuse the file. */
static int mark_running(wf_file *d, char *err, size_t errlen)
{
    d->h.state = WF_STATE_RUNNING;
    return wf_write_header(d, err, errlen);
}

static int mark_done(wf_file *d, int64_t iters, char *err, size_t errlen)
{
    d->h.state = WF_STATE_CLEAN;
    d->h.iters_done += (uint64_t)iters;
    return wf_write_header(d, err, errlen);
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
    if (o->io_turns && io == MPILAB_WF_IO_URING) {
        ERR("--io-turns does not support the io_uring back end (use pread, direct or mmap)");
        return -1;
    }
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
    wf_chan *chans = NULL;
    int P = o->workers;
    wf_shared sh;
    memset(&sh, 0, sizeof sh);
    pthread_mutex_init(&sh.mu, NULL);
    pthread_cond_init(&sh.cv, NULL);
    pthread_mutex_init(&sh.turn, NULL);
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
        wf_chan *ch = &chans[i];
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
        w->sh = &sh;
        w->up_bf = i > 0 ? &chans[2 * i] : NULL;
        w->up_tf = i > 0 ? &chans[2 * i + 1] : NULL;
        w->down_bf = i + 1 < P ? &chans[2 * (i + 1)] : NULL;
        w->down_tf = i + 1 < P ? &chans[2 * (i + 1) + 1] : NULL;
        if (worker_setup(w, i, P, &d, &c, nbr * i / P, nbr * (i + 1) / P, mb, nb, io, o, err,
                         errlen))
            goto out;
        w->turn = o->io_turns ? &sh.turn : NULL;
    }
    if (o->iterations > 0 && mark_running(&d, err, errlen))
        goto out;
    pthread_t *tids = calloc((size_t)P, sizeof *tids);
    if (!tids) {
        ERR("out of memory");
        goto out;
    }
    int64_t dr0, dw0, dr1, dw1;
    dev_io(&dr0, &dw0);
    double t0 = wf_now();
    int started = 0;
    for (int i = 0; i < P; i++) {
        if (pthread_create(&tids[i], NULL, worker_thread, &ws[i]) != 0) {
            wf_shared_fail(&sh, "cannot create worker thread");
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
    if (!sh.abort && o->iterations > 0 && mark_done(&d, o->iterations, err, errlen)) {
        free(tids);
        goto out;
    }
    double t1 = wf_now();
    dev_io(&dr1, &dw1);
    free(tids);
    if (sh.abort) {
        ERR("%s", sh.err);
        goto out;
    }
    fill_stats(st, &d, &c, mb, nb, P, o->iterations);
    st->prefetch = ws[0].prefetch;
    st->io = io;
    st->queue_depth = ws[0].chain ? ws[0].ch.npool : ws[0].nslots;
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
        st->bytes_read += ws[i].rd.bytes;
        st->bytes_written += ws[i].wr.bytes;
        st->requests_read += ws[i].rd.reqs;
        st->requests_written += ws[i].wr.reqs;
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
    pthread_mutex_destroy(&sh.turn);
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
    else if (o->io_turns) {
        ERR("--io-turns is for the thread driver (ranks do not share a turn)");
        bad = 1;
    }
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
    if (wf_any_failed(comm, bad, err, errlen)) {
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
    w.data = &d;
    w.coef = &c;
    w.iters = o->iterations;
    int64_t nbc = nb > 0 ? ((int64_t)d.h.cols + nb - 1) / nb : 1;
    if (!bad) {
        w.mpi = 1;
        w.comm = comm;
        const int aok = worker_setup(&w, rank, size, &d, &c, 0, ((int64_t)d.h.rows + mb - 1) / mb,
                                     mb, nb, io, o, err, errlen) == 0;
        int nsend = (int)(2 * nbc + 2);
        int64_t expect = o->iterations * nbc;
        const size_t sg = (size_t)nb + (o->chain == MPILAB_WF_CHAIN_BLOCK ? 2 : 0); /* + tag */
        int ok = aok;
        if (ok && w.has_up)
            ok = !wf_mlink_init(&w.l_up_tf_send, rank - 1, WF_TAG_TF, sg, nsend, 0) &&
                 !wf_mlink_init(&w.l_up_bf_recv, rank - 1, WF_TAG_BF, sg, 0, expect);
        if (ok && w.has_down)
            ok = !wf_mlink_init(&w.l_down_bf_send, rank + 1, WF_TAG_BF, sg, nsend, 0) &&
                 !wf_mlink_init(&w.l_down_tf_recv, rank + 1, WF_TAG_TF, sg, 0, expect);
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
    if (wf_any_failed(comm, bad, err, errlen))
        goto out;
    /* every rank marks its band file; if one cannot, the others clear their mark again */
    const int marked = o->iterations > 0 && mark_running(&d, err, errlen) == 0;
    if (wf_any_failed(comm, o->iterations > 0 && !marked, err, errlen)) {
        if (marked) {
            char e2[256];
            d.h.state = WF_STATE_CLEAN;
            wf_write_header(&d, e2, sizeof e2);
        }
        goto out;
    }
    int64_t dr0, dw0, dr1, dw1;
    dev_io(&dr0, &dw0);
    MPI_Barrier(comm);
    double t0 = MPI_Wtime();
    if (worker_body(&w)) {
        /* a failure mid-run (I/O error): the neighbours would wait forever */
        fprintf(stderr, "mpilab-wavefront: rank %d: %s\n", rank, w.err);
        MPI_Abort(comm, 2);
    }
    wf_mlink_finish(&w.l_up_tf_send);
    wf_mlink_finish(&w.l_down_bf_send);
    wf_mlink_finish(&w.l_up_bf_recv);
    wf_mlink_finish(&w.l_down_tf_recv);
    if (o->iterations > 0)
        wf_waitall((int)o->iterations, w.wave_req);
    /* the run is done when the results are on disk (a failure here is reported, not
     * hidden: the data may be incomplete) */
    if (fdatasync(d.fd) != 0) {
        fprintf(stderr, "mpilab-wavefront: rank %d: %s: fdatasync failed: %s\n", rank, dp,
                strerror(errno));
        MPI_Abort(comm, 2);
    }
    if (o->iterations > 0 && mark_done(&d, o->iterations, err, errlen)) {
        fprintf(stderr, "mpilab-wavefront: rank %d: %s\n", rank, err);
        MPI_Abort(comm, 2);
    }
    double t1 = MPI_Wtime() - t0;
    dev_io(&dr1, &dw1);
    int64_t k = o->iterations;
    double *rel = calloc((size_t)(k > 0 ? k : 1), sizeof(double));
    double *mx = calloc((size_t)(k > 0 ? k : 1), sizeof(double));
    for (int64_t i = 0; i < k && rel; i++)
        rel[i] = w.t_done[i] - t0;
    long long iob[5] = {w.rd.bytes, w.wr.bytes, w.buf_bytes, w.rd.reqs, w.wr.reqs},
              iosum[5] = {0, 0, 0, 0, 0};
    long rss = maxrss_kb(), rssmax = 0;
    double tmax = 0;
    if (rel && mx)
        MPI_Reduce(rel, mx, (int)(k > 0 ? k : 1), MPI_DOUBLE, MPI_MAX, 0, comm);
    MPI_Reduce(iob, iosum, 5, MPI_LONG_LONG, MPI_SUM, 0, comm);
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
    st->queue_depth = w.chain ? w.ch.npool : w.nslots;
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
    st->requests_read = iosum[3];
    st->requests_written = iosum[4];
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
    wf_mlink_finish(&w.l_up_tf_send);
    wf_mlink_finish(&w.l_down_bf_send);
    wf_mlink_finish(&w.l_up_bf_recv);
    wf_mlink_finish(&w.l_down_tf_recv);
    wf_close(&d);
    wf_close(&c);
    return rc;
}
