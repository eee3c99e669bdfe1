/* Frontier hand-off between workers: bounded queues between threads, Isend/Irecv links
 * between MPI ranks; the wave gate; agreeing on failure across ranks. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "wavefront/wf_worker.h"

/* ---- frontier queues between threads ------------------------------------------------ */

void wf_shared_fail(wf_shared *sh, const char *msg)
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

static int chan_put(wf_chan *c, const double *v, size_t n)
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

static int chan_get(wf_chan *c, double *v, size_t n)
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

/* MPI_Waitall on n requests with real status arrays (MPICH's MPI_STATUSES_IGNORE, a
 * sentinel pointer, trips GCC's -Wstringop-overflow through MPI_Waitall's access
 * attribute). */
void wf_waitall(int n, MPI_Request *req)
{
    MPI_Status st[16];
    for (int i = 0; i < n; i += 16)
        MPI_Waitall(n - i < 16 ? n - i : 16, req + i, st);
}

static void ml_post(wf_mlink *l, MPI_Comm comm)
{
    while (l->posted < l->expect && l->posted < l->got + 2) {
        int s = (int)(l->posted % 2);
        MPI_Irecv(l->rbuf + (size_t)s * l->seg, (int)l->seg, MPI_DOUBLE, l->peer, l->tag, comm,
                  &l->rreq[s]);
        l->posted++;
    }
}
int wf_link_send(worker *w, wf_mlink *l, wf_chan *c, const double *v, size_t n)
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

int wf_link_recv(worker *w, wf_mlink *l, wf_chan *c, double *v, size_t n)
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

int wf_gate_wait(worker *w, int64_t it)
{
    if (w->id != 0 || it < w->waves || w->nworkers == 1)
        return 0;
    if (w->mpi) {
        int tok = 0;
        MPI_Recv(&tok, 1, MPI_INT, w->nworkers - 1, WF_TAG_WAVE, w->comm, MPI_STATUS_IGNORE);
        return 0;
    }
    wf_shared *sh = w->sh;
    pthread_mutex_lock(&sh->mu);
    while (sh->done_iters < it - w->waves + 1 && !sh->abort)
        pthread_cond_wait(&sh->cv, &sh->mu);
    int rc = sh->abort ? -1 : 0;
    pthread_mutex_unlock(&sh->mu);
    return rc;
}

void wf_iter_done(worker *w, int64_t it)
{
    if (w->id != w->nworkers - 1 || w->nworkers == 1)
        return;
    if (w->mpi) {
        if (it < w->iters - w->waves) {
            static const int tok = 1;
            MPI_Isend(&tok, 1, MPI_INT, 0, WF_TAG_WAVE, w->comm, &w->wave_req[it]);
        }
        return;
    }
    pthread_mutex_lock(&w->sh->mu);
    w->sh->done_iters = it + 1;
    pthread_cond_broadcast(&w->sh->cv);
    pthread_mutex_unlock(&w->sh->mu);
}
/* Agree on failure: returns 1 if any rank failed; err then holds the first failing rank's
 * message on every rank. */
int wf_any_failed(MPI_Comm comm, int failed, char *err, size_t errlen)
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

int wf_mlink_init(wf_mlink *l, int peer, int tag, size_t seg, int nsend, int64_t expect)
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

void wf_mlink_finish(wf_mlink *l)
{
    if (l->sreq) {
        int n = l->sent < l->nsend ? (int)l->sent : l->nsend;
        wf_waitall(n, l->sreq);
    }
    free(l->sbuf);
    free(l->sreq);
    free(l->rbuf);
    memset(l, 0, sizeof *l);
}
