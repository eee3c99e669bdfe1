/* The engine's distributed driver (mpilab_wf_run_mpi): one band file per rank, the bands'
 * checks, the frontier links between neighbouring ranks and the statistics gathered on rank
 * 0. The worker set-up and the statistics helpers it shares with the thread driver are in
 * wf_engine.c (declared in wf_worker.h). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "wavefront/wf_worker.h"

#define ERR(...) snprintf(err, errlen, __VA_ARGS__)

static int band_path(char *buf, size_t len, const char *base, int rank, int size)
{
    snprintf(buf, len, "%s.%d", base, rank);
    if (size == 1 && access(buf, F_OK) != 0)
        snprintf(buf, len, "%s", base);
    return 0;
}

/* The distributed driver's bands: every rank's failure so far is shared (-1: some rank
 * failed, the message in err), then the bands must tile the matrix in rank order with one
 * blocking, each starting at a block-row boundary; returns this rank's bad flag. */
static int check_bands(MPI_Comm comm, int rank, int size, const wf_file *dd, int64_t mb,
                       int64_t nb, int bad, const char *dp, char *err, size_t errlen)
{
    /* the bands must tile the matrix in rank order */
    unsigned long long mine[3] = {bad ? 0 : dd->h.row0, bad ? 0 : dd->h.rows,
                                  bad ? 0 : dd->h.total_rows};
    unsigned long long *all = malloc((size_t)size * sizeof mine);
    long long mbnb[2] = {mb, nb}, mbnb_max[2] = {0, 0};
    if (!all) {
        ERR("out of memory");
        bad = 1;
    }
    if (wf_any_failed(comm, bad, err, errlen)) {
        free(all);
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
    if (!bad && (int64_t)dd->h.row0 % mb != 0) {
        ERR("%s: band does not start at a block-row boundary", dp);
        bad = 1;
    }
    free(all);
    return bad;
}

/* The distributed driver's statistics on rank 0: volumes, buffers and device bytes summed,
 * memory and wall time the ranks' maxima, per-iteration times from the latest rank, each
 * rank's time accounting (after a run that started at t0 and took t1 on this rank). */
static void gather_stats(MPI_Comm comm, int rank, int size, const worker *wp, const wf_file *d,
                         const wf_file *c, int64_t mb, int64_t nb, int io,
                         const mpilab_wf_run_opts *o, double t0, double t1,
                         const int64_t devio[4], mpilab_wf_stats *st)
{
    const int64_t dr0 = devio[0], dw0 = devio[1], dr1 = devio[2], dw1 = devio[3];
    int64_t k = o->iterations;
    double *rel = calloc((size_t)(k > 0 ? k : 1), sizeof(double));
    double *mx = calloc((size_t)(k > 0 ? k : 1), sizeof(double));
    for (int64_t i = 0; i < k && rel; i++)
        rel[i] = wp->t_done[i] - t0;
    long long iob[5] = {wp->rd.bytes, wp->wr.bytes, wp->buf_bytes, wp->rd.reqs, wp->wr.reqs},
              iosum[5] = {0, 0, 0, 0, 0};
    long rss = wf_maxrss_kb(), rssmax = 0;
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
    double tw[4] = {wp->t_compute, wp->t_iowait, wp->t_depwait, wp->t_iobusy};
    double *twall = rank == 0 ? calloc((size_t)size * 4, sizeof(double)) : NULL;
    MPI_Gather(tw, 4, MPI_DOUBLE, twall, 4, MPI_DOUBLE, 0, comm);
    wf_fill_stats(st, d, c, mb, nb, size, k);
    st->prefetch = wp->prefetch;
    st->io = io;
    st->queue_depth = wp->chain ? wp->ch.npool : wp->nslots;
    st->chain = o->chain;
    st->buffer_bytes = iosum[2];
    st->dev_read_bytes = devsum[2] ? -1 : devsum[0];
    st->dev_write_bytes = devsum[2] ? -1 : devsum[1];
    if (rank == 0 && twall && wf_stats_alloc_times(st, size) == 0)
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
}

/* This rank's worker: its band (all of the band file's block rows), the frontier links to
 * the ranks above and below (a ring of 2 NBC + 2 segments to send, NBC per iteration to
 * receive) and a wave request per iteration; -1 with the message in err. */
static int mpi_worker_setup(worker *w, MPI_Comm comm, int rank, int size, wf_file *d, wf_file *c,
                            int64_t mb, int64_t nb, int io, const mpilab_wf_run_opts *o,
                            char *err, size_t errlen)
{
    int64_t nbc = nb > 0 ? ((int64_t)d->h.cols + nb - 1) / nb : 1;
    w->mpi = 1;
    w->comm = comm;
    const int aok = wf_worker_setup(w, rank, size, d, c, 0, ((int64_t)d->h.rows + mb - 1) / mb,
                                    mb, nb, io, o, err, errlen) == 0;
    int nsend = (int)(2 * nbc + 2);
    int64_t expect = o->iterations * nbc;
    const size_t sg = (size_t)nb + (o->chain == MPILAB_WF_CHAIN_BLOCK ? 2 : 0); /* + tag */
    int ok = aok;
    if (ok && w->has_up)
        ok = !wf_mlink_init(&w->l_up_tf_send, rank - 1, WF_TAG_TF, sg, nsend, 0) &&
             !wf_mlink_init(&w->l_up_bf_recv, rank - 1, WF_TAG_BF, sg, 0, expect);
    if (ok && w->has_down)
        ok = !wf_mlink_init(&w->l_down_bf_send, rank + 1, WF_TAG_BF, sg, nsend, 0) &&
             !wf_mlink_init(&w->l_down_tf_recv, rank + 1, WF_TAG_TF, sg, 0, expect);
    w->buf_bytes += (int64_t)(w->has_up + w->has_down) * (nsend + 2) * (int64_t)sg * 8;
    w->wave_req = calloc((size_t)(o->iterations > 0 ? o->iterations : 1), sizeof(MPI_Request));
    if (!ok || !w->wave_req) {
        if (aok)
            ERR("out of memory");
        return -1;
    }
    for (int64_t i = 0; i < o->iterations; i++)
        w->wave_req[i] = MPI_REQUEST_NULL;
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
    if (wf_resolve_io(&io, o->queue_depth, o->chain, err, errlen))
        bad = 1;
    else if (o->io_turns) {
        ERR("--io-turns is for the thread driver (ranks do not share a turn)");
        bad = 1;
    }
    else if (wf_open(&d, dp, 1, io, err, errlen))
        bad = 1;
    else if (wf_open(&c, cp, 0, io, err, errlen))
        bad = 1;
    else if (wf_check_setup(&d, &c, o, &mb, &nb, err, errlen))
        bad = 1;
    bad = check_bands(comm, rank, size, &d, mb, nb, bad, dp, err, errlen);
    if (bad < 0) {
        wf_close(&d);
        wf_close(&c);
        return -1;
    }
    worker w;
    memset(&w, 0, sizeof w);
    w.data = &d;
    w.coef = &c;
    w.iters = o->iterations;
    if (!bad && mpi_worker_setup(&w, comm, rank, size, &d, &c, mb, nb, io, o, err, errlen))
        bad = 1;
    int rc = -1;
    if (wf_any_failed(comm, bad, err, errlen))
        goto out;
    /* every rank marks its band file; if one cannot, the others clear their mark again */
    const int marked = o->iterations > 0 && wf_mark_running(&d, err, errlen) == 0;
    if (wf_any_failed(comm, o->iterations > 0 && !marked, err, errlen)) {
        if (marked) {
            char e2[256];
            d.h.state = WF_STATE_CLEAN;
            wf_write_header(&d, e2, sizeof e2);
        }
        goto out;
    }
    int64_t dr0, dw0, dr1, dw1;
    wf_dev_io(&dr0, &dw0);
    MPI_Barrier(comm);
    double t0 = MPI_Wtime();
    if (wf_worker_body(&w)) {
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
    if (o->iterations > 0 && wf_mark_done(&d, o->iterations, err, errlen)) {
        fprintf(stderr, "mpilab-wavefront: rank %d: %s\n", rank, err);
        MPI_Abort(comm, 2);
    }
    double t1 = MPI_Wtime() - t0;
    wf_dev_io(&dr1, &dw1);
    const int64_t devio[4] = {dr0, dw0, dr1, dw1};
    gather_stats(comm, rank, size, &w, &d, &c, mb, nb, io, o, t0, t1, devio, st);
    rc = 0;
out:
    wf_worker_free(&w);
    free(w.wave_req);
    wf_mlink_finish(&w.l_up_tf_send);
    wf_mlink_finish(&w.l_down_bf_send);
    wf_mlink_finish(&w.l_up_bf_recv);
    wf_mlink_finish(&w.l_down_tf_recv);
    wf_close(&d);
    wf_close(&c);
    return rc;
}
