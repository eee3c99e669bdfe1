/* libmpilab_ucx_finalize.so: preloaded into the ranks of MPICH (ch4:ucx) jobs that
 * `mpilab testbed run` starts. It keeps a rank answering its UCX peers while MPICH 4.0.x
 * waits in the PMI barrier at the end of MPI_Finalize.
 *
 * Why (docs/pathmig.md, "MPICH"): MPICH 4.0.2's
 * MPIDI_UCX_mpi_finalize_hook closes every endpoint in flush mode (ucp_disconnect_nb),
 * progresses the worker until its own close requests complete, and only then enters
 * MPIR_pmi_barrier, where nothing progresses UCX any more. UCX 1.13's TCP transport
 * flushes an endpoint that sent anything since its last flush by sending a zero-length PUT
 * request and waiting for the peer's PUT acknowledgement (uct_tcp_ep_flush). If a rank has
 * acknowledged its peer's flush request before sending its own (the peer's request came
 * in with the last message and was answered in that receive), the peer's close completes,
 * the peer goes into the PMI barrier, and the rank's own request is never answered: both
 * wait for ever. MPICH 4.2 moved its barrier before the disconnect (upstream commits
 * 08d8105b7b and d6c7cd5b64).
 *
 * What this does: from a rank's first ucp_disconnect_nb on, every UCX call MPICH makes on
 * the main thread and a keeper thread that progresses the rank's workers share one
 * (recursive) lock, so the worker is used by one thread at a time; the keeper progresses
 * the workers until MPICH destroys them, i.e. also during the PMI barrier. Before
 * MPI_Finalize the wrappers only pass the calls on. MPILAB_UCX_FINALIZE=0 turns the keeper
 * off (the calls are passed on unchanged); MPILAB_UCX_FINALIZE_DEBUG=1 prints, when a
 * worker is destroyed, how many events the keeper progressed after the rank's own close
 * requests had been released (the answers the peer would otherwise never have had). */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* RTLD_NEXT */
#endif
#include <dlfcn.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <ucp/api/ucp.h>

#define KEEPER_MAX_WORKERS 64
#define KEEPER_MAX_CLOSES 1024

typedef ucs_status_t (*worker_create_fn)(ucp_context_h, const ucp_worker_params_t *,
                                         ucp_worker_h *);
typedef void (*worker_destroy_fn)(ucp_worker_h);
typedef unsigned (*worker_progress_fn)(ucp_worker_h);
typedef ucs_status_ptr_t (*disconnect_fn)(ucp_ep_h);
typedef int (*is_completed_fn)(void *);
typedef void (*req_void_fn)(void *);
typedef ucs_status_t (*check_status_fn)(void *);

enum { KEEPER_OFF, KEEPER_IDLE, KEEPER_RUNNING, KEEPER_STOPPED };

struct keeper {
    pthread_once_t once;
    pthread_mutex_t lock; /* recursive: MPICH's callbacks call UCX from inside progress */
    pthread_t thread;
    atomic_int state;
    int debug;
    worker_create_fn worker_create;
    worker_destroy_fn worker_destroy;
    worker_progress_fn worker_progress;
    disconnect_fn disconnect;
    is_completed_fn is_completed;
    req_void_fn release, free_req;
    check_status_fn check_status;
    ucp_worker_h workers[KEEPER_MAX_WORKERS];
    int nworkers;
    void *closes[KEEPER_MAX_CLOSES]; /* close requests not yet released */
    int ncloses, closes_lost;        /* closes_lost: more than fit; phase unknown */
    atomic_int closes_done;          /* 1: every close request released (the barrier) */
    atomic_ulong kept_events;        /* progressed by the keeper after closes_done */
};

static struct keeper g_keeper = {.once = PTHREAD_ONCE_INIT};

static void keeper_resolve(void)
{
    struct keeper *k = &g_keeper;
    pthread_mutexattr_t a;
    pthread_mutexattr_init(&a);
    pthread_mutexattr_settype(&a, PTHREAD_MUTEX_RECURSIVE);
    pthread_mutex_init(&k->lock, &a);
    pthread_mutexattr_destroy(&a);
    k->worker_create = (worker_create_fn)dlsym(RTLD_NEXT, "ucp_worker_create");
    k->worker_destroy = (worker_destroy_fn)dlsym(RTLD_NEXT, "ucp_worker_destroy");
    k->worker_progress = (worker_progress_fn)dlsym(RTLD_NEXT, "ucp_worker_progress");
    k->disconnect = (disconnect_fn)dlsym(RTLD_NEXT, "ucp_disconnect_nb");
    k->is_completed = (is_completed_fn)dlsym(RTLD_NEXT, "ucp_request_is_completed");
    k->release = (req_void_fn)dlsym(RTLD_NEXT, "ucp_request_release");
    k->free_req = (req_void_fn)dlsym(RTLD_NEXT, "ucp_request_free");
    k->check_status = (check_status_fn)dlsym(RTLD_NEXT, "ucp_request_check_status");
    const char *off = getenv("MPILAB_UCX_FINALIZE");
    const char *dbg = getenv("MPILAB_UCX_FINALIZE_DEBUG");
    k->debug = dbg && strcmp(dbg, "0") != 0;
    int on = !(off && strcmp(off, "0") == 0) && k->worker_progress && k->disconnect &&
             k->worker_destroy;
    atomic_store(&k->state, on ? KEEPER_IDLE : KEEPER_OFF);
}

static struct keeper *keeper(void)
{
    pthread_once(&g_keeper.once, keeper_resolve);
    return &g_keeper;
}

/* The main thread's UCX calls take the lock once the keeper runs (and after it stopped,
 * when the thread is gone, the lock costs nothing but is harmless). */
static int keeper_locking(struct keeper *k)
{
    int s = atomic_load_explicit(&k->state, memory_order_acquire);
    return s == KEEPER_RUNNING;
}

static void *keeper_main(void *arg)
{
    struct keeper *k = arg;
    const struct timespec pause = {0, 50000}; /* 50 us when nothing was there */
    while (atomic_load_explicit(&k->state, memory_order_acquire) == KEEPER_RUNNING) {
        unsigned n = 0;
        pthread_mutex_lock(&k->lock);
        int barrier = atomic_load(&k->closes_done);
        for (int i = 0; i < k->nworkers; i++) {
            n += k->worker_progress(k->workers[i]);
        }
        pthread_mutex_unlock(&k->lock);
        if (barrier && n) {
            atomic_fetch_add(&k->kept_events, n);
        }
        if (!n) {
            nanosleep(&pause, NULL);
        }
    }
    return NULL;
}

ucs_status_t ucp_worker_create(ucp_context_h context, const ucp_worker_params_t *params,
                               ucp_worker_h *worker_p)
{
    struct keeper *k = keeper();
    if (!k->worker_create) {
        return UCS_ERR_UNSUPPORTED;
    }
    ucs_status_t st = k->worker_create(context, params, worker_p);
    if (st == UCS_OK && atomic_load(&k->state) == KEEPER_IDLE) {
        pthread_mutex_lock(&k->lock);
        if (k->nworkers < KEEPER_MAX_WORKERS) {
            k->workers[k->nworkers++] = *worker_p;
        }
        pthread_mutex_unlock(&k->lock);
    }
    return st;
}

ucs_status_ptr_t ucp_disconnect_nb(ucp_ep_h ep)
{
    struct keeper *k = keeper();
    int expected = KEEPER_IDLE;
    pthread_mutex_lock(&k->lock);
    if (atomic_compare_exchange_strong(&k->state, &expected, KEEPER_RUNNING) &&
        pthread_create(&k->thread, NULL, keeper_main, k) != 0) {
        atomic_store(&k->state, KEEPER_OFF); /* no thread: behave as without the keeper */
    }
    ucs_status_ptr_t r = k->disconnect(ep);
    if (UCS_PTR_IS_PTR(r)) {
        if (k->ncloses < KEEPER_MAX_CLOSES) {
            k->closes[k->ncloses++] = r;
        } else {
            k->closes_lost = 1;
        }
    }
    pthread_mutex_unlock(&k->lock);
    return r;
}

unsigned ucp_worker_progress(ucp_worker_h worker)
{
    struct keeper *k = keeper();
    if (!keeper_locking(k)) {
        return k->worker_progress(worker);
    }
    pthread_mutex_lock(&k->lock);
    unsigned n = k->worker_progress(worker);
    pthread_mutex_unlock(&k->lock);
    return n;
}

int ucp_request_is_completed(void *request)
{
    struct keeper *k = keeper();
    if (!keeper_locking(k)) {
        return k->is_completed(request);
    }
    pthread_mutex_lock(&k->lock);
    int done = k->is_completed(request);
    pthread_mutex_unlock(&k->lock);
    return done;
}

ucs_status_t ucp_request_check_status(void *request)
{
    struct keeper *k = keeper();
    if (!keeper_locking(k)) {
        return k->check_status(request);
    }
    pthread_mutex_lock(&k->lock);
    ucs_status_t st = k->check_status(request);
    pthread_mutex_unlock(&k->lock);
    return st;
}

/* A released close request: once all are, the rank has left UCX for the PMI barrier. */
static void keeper_forget_close(struct keeper *k, void *request)
{
    for (int i = 0; i < k->ncloses; i++) {
        if (k->closes[i] == request) {
            k->closes[i] = k->closes[--k->ncloses];
            if (!k->ncloses && !k->closes_lost) {
                atomic_store(&k->closes_done, 1);
            }
            return;
        }
    }
}

static void keeper_release(struct keeper *k, req_void_fn fn, void *request)
{
    if (!keeper_locking(k)) {
        fn(request);
        return;
    }
    pthread_mutex_lock(&k->lock);
    fn(request);
    keeper_forget_close(k, request);
    pthread_mutex_unlock(&k->lock);
}

void ucp_request_release(void *request)
{
    struct keeper *k = keeper();
    keeper_release(k, k->release, request);
}

void ucp_request_free(void *request)
{
    struct keeper *k = keeper();
    keeper_release(k, k->free_req, request);
}

void ucp_worker_destroy(ucp_worker_h worker)
{
    struct keeper *k = keeper();
    int expected = KEEPER_RUNNING;
    if (atomic_compare_exchange_strong(&k->state, &expected, KEEPER_STOPPED)) {
        pthread_join(k->thread, NULL);
        if (k->debug) {
            fprintf(stderr, "mpilab-ucx-finalize: pid %ld: %lu event(s) progressed after "
                    "the rank's own close requests completed\n", (long)getpid(),
                    atomic_load(&k->kept_events));
        }
    }
    pthread_mutex_lock(&k->lock);
    for (int i = 0; i < k->nworkers; i++) {
        if (k->workers[i] == worker) {
            k->workers[i] = k->workers[--k->nworkers];
            break;
        }
    }
    pthread_mutex_unlock(&k->lock);
    k->worker_destroy(worker);
}
