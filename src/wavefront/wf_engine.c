/* The engine's drivers: worker set-up (shared by the thread and the MPI driver), buffers,
 * threads (mpilab_wf_run), the run-state marker and the statistics. The MPI ranks' driver
 * (mpilab_wf_run_mpi) is wf_engine_mpi.c. The pieces: wf_worker.h. */
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

long wf_maxrss_kb(void)
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
 * read: 2.6x slower measured, docs/wavefront-engine.md). */
static void no_readahead(worker *w)
{
    if (!w->prefetch)
        return;
    if (w->data->ops->hints && !w->data->map && w->data->lay->exact_reads)
        posix_fadvise(w->data->fd, 0, 0, POSIX_FADV_RANDOM);
    if (w->coef->ops->hints && !w->coef->map && w->coef->lay->blocked)
        posix_fadvise(w->coef->fd, 0, 0, POSIX_FADV_RANDOM);
}

int wf_worker_body(worker *w)
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
    if (wf_worker_body(w)) {
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

void wf_worker_free(worker *w)
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
void wf_dev_io(int64_t *rd, int64_t *wr)
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

int wf_stats_alloc_times(mpilab_wf_stats *st, int n)
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
int wf_resolve_io(int *io, int queue_depth, int chain, char *err, size_t errlen)
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
int wf_check_setup(const wf_file *d, const wf_file *c, const mpilab_wf_run_opts *o,
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
int wf_worker_setup(worker *w, int id, int nworkers, wf_file *d, wf_file *c, int64_t b0,
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
int wf_mark_running(wf_file *d, char *err, size_t errlen)
{
    d->h.state = WF_STATE_RUNNING;
    return wf_write_header(d, err, errlen);
}

int wf_mark_done(wf_file *d, int64_t iters, char *err, size_t errlen)
{
    d->h.state = WF_STATE_CLEAN;
    d->h.iters_done += (uint64_t)iters;
    return wf_write_header(d, err, errlen);
}

void wf_fill_stats(mpilab_wf_stats *st, const wf_file *d, const wf_file *c, int64_t mb,
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

/* The thread driver's 2P channels: chans[2i] carries the bottom frontiers from worker i-1
 * to i, chans[2i+1] the top frontiers from worker i to i-1; -1 when out of memory (the
 * channels made so far are counted in sh->nchans, for the clean-up). */
static int chans_init(wf_shared *sh, wf_chan *chans, int P, int64_t nb, int64_t nbc, int chain)
{
    sh->chans = chans;
    for (int i = 0; i < 2 * P; i++) {
        wf_chan *ch = &chans[i];
        pthread_mutex_init(&ch->mu, NULL);
        pthread_cond_init(&ch->cv, NULL);
        ch->seg = (size_t)nb + (chain == MPILAB_WF_CHAIN_BLOCK ? 2 : 0); /* + tag */
        ch->cap = 2 * nbc + 2;
        ch->sh = sh;
        ch->ring = malloc((size_t)ch->cap * ch->seg * 8);
        sh->nchans = i + 1;
        if (!ch->ring)
            return -1;
    }
    return 0;
}

/* The thread driver's statistics from its P workers (after wf_fill_stats): back end, pool,
 * buffers, per-iteration times (from t0), volumes and per-worker times; -1 when out of
 * memory (st freed). */
static int workers_stats(mpilab_wf_stats *st, const worker *ws, int P, const wf_chan *chans,
                         const mpilab_wf_run_opts *o, int io, double t0)
{
    st->prefetch = ws[0].prefetch;
    st->io = io;
    st->queue_depth = ws[0].chain ? ws[0].ch.npool : ws[0].nslots;
    st->chain = o->chain;
    for (int i = 0; i < P; i++)
        st->buffer_bytes += ws[i].buf_bytes;
    st->buffer_bytes += 2 * (int64_t)P * chans[0].cap * (int64_t)chans[0].seg * 8;
    st->iter_s = calloc((size_t)(o->iterations > 0 ? o->iterations : 1), sizeof(double));
    if (!st->iter_s || wf_stats_alloc_times(st, P)) {
        mpilab_wf_stats_free(st);
        return -1;
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
    st->maxrss_kb = wf_maxrss_kb();
    return 0;
}

/* The thread driver's run: the P workers' threads started and joined, then the data synced
 * and marked done (an out-of-core run is done when its results are on disk: the time
 * includes it). The wall clock before and after in t, /proc/self/io before and after in dev
 * (read, write, read, write); -1 with the message in err when the run failed. */
static int run_threads(wf_shared *sh, worker *ws, int P, wf_file *d, const char *data_path,
                       int64_t iters, double t[2], int64_t dev[4], char *err, size_t errlen)
{
    pthread_t *tids = calloc((size_t)P, sizeof *tids);
    if (!tids) {
        ERR("out of memory");
        return -1;
    }
    wf_dev_io(&dev[0], &dev[1]);
    t[0] = wf_now();
    int started = 0;
    for (int i = 0; i < P; i++) {
        if (pthread_create(&tids[i], NULL, worker_thread, &ws[i]) != 0) {
            wf_shared_fail(sh, "cannot create worker thread");
            break;
        }
        started++;
    }
    for (int i = 0; i < started; i++)
        pthread_join(tids[i], NULL);
    free(tids);
    if (!sh->abort && fdatasync(d->fd) != 0) {
        ERR("%s: fdatasync failed: %s", data_path, strerror(errno));
        return -1;
    }
    if (!sh->abort && iters > 0 && wf_mark_done(d, iters, err, errlen))
        return -1;
    t[1] = wf_now();
    wf_dev_io(&dev[2], &dev[3]);
    if (sh->abort) {
        ERR("%s", sh->err);
        return -1;
    }
    return 0;
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
    if (wf_resolve_io(&io, o->queue_depth, o->chain, err, errlen))
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
    if (wf_check_setup(&d, &c, o, &mb, &nb, err, errlen))
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
    if (chans_init(&sh, chans, P, nb, nbc, o->chain)) {
        ERR("out of memory");
        goto out;
    }
    /* chans[2i]: BF from worker i-1 to i; chans[2i+1]: TF from worker i to i-1 */
    for (int i = 0; i < P; i++) {
        worker *w = &ws[i];
        w->sh = &sh;
        w->up_bf = i > 0 ? &chans[2 * i] : NULL;
        w->up_tf = i > 0 ? &chans[2 * i + 1] : NULL;
        w->down_bf = i + 1 < P ? &chans[2 * (i + 1)] : NULL;
        w->down_tf = i + 1 < P ? &chans[2 * (i + 1) + 1] : NULL;
        if (wf_worker_setup(w, i, P, &d, &c, nbr * i / P, nbr * (i + 1) / P, mb, nb, io, o, err,
                         errlen))
            goto out;
        w->turn = o->io_turns ? &sh.turn : NULL;
    }
    if (o->iterations > 0 && wf_mark_running(&d, err, errlen))
        goto out;
    double t[2];
    int64_t dev[4];
    if (run_threads(&sh, ws, P, &d, data_path, o->iterations, t, dev, err, errlen))
        goto out;
    wf_fill_stats(st, &d, &c, mb, nb, P, o->iterations);
    st->total_s = t[1] - t[0];
    st->dev_read_bytes = dev[0] >= 0 && dev[2] >= 0 ? dev[2] - dev[0] : -1;
    st->dev_write_bytes = dev[1] >= 0 && dev[3] >= 0 ? dev[3] - dev[1] : -1;
    if (workers_stats(st, ws, P, chans, o, io, t[0])) {
        ERR("out of memory");
        goto out;
    }
    rc = 0;
out:
    if (ws)
        for (int i = 0; i < P; i++)
            wf_worker_free(&ws[i]);
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
