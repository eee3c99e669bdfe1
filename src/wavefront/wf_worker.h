/* The engine's worker, split by concern:
 *   wf_links.c        frontier hand-off between workers (thread queues, MPI links), wave gate
 *   wf_xport.c        the transport interface and the synchronous / I/O-helper transport
 *                     (pread, mmap and O_DIRECT files)
 *   wf_xport_uring.c  the io_uring transport (requests in flight, record/replay)
 *   wf_band.c         band chaining: a worker's steps, block by block, iteration by iteration
 *   wf_chain.c        block chaining: sweeps of W iterations per read of a block
 *   wf_engine.c       worker set-up (shared by the thread and the MPI driver), buffers,
 *                     the two drivers and the statistics
 * The on-disk layouts are a table (wf_layout.h); the file I/O back ends are wf_io_ops. */
#ifndef MPILAB_WF_WORKER_H
#define MPILAB_WF_WORKER_H

#include <mpi.h>
#include <pthread.h>
#include <stdint.h>
#include <time.h>

#include "wavefront/wf_internal.h"

#define WF_IOQ 4
#define WF_MAXQ 32           /* largest queue depth (buffer slots per worker) */
#define WF_URING_ENTRIES 256 /* submission queue entries per worker ring */
#define WF_CHAIN_AHEAD 2     /* block chaining: reads the I/O helper may queue ahead */
#define WF_TF_EMPTY INT64_MIN

/* The real monotonic clock. The parentheses keep SMPI's smpi_helpers.h from turning the
 * call into smpi_clock_gettime, which reads the simulated clock and, called from a thread
 * that is not a simulated rank (the I/O helper), crashes inside SimGrid (wavefront_dist
 * did, SIGSEGV). Simulated time is MPI_Wtime's. */
static inline double wf_now(void)
{
    struct timespec ts;
    (clock_gettime)(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* ---- hand-off between workers (wf_links.c) ---- */

typedef struct wf_shared wf_shared;
typedef struct {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    double *ring;
    size_t seg;
    int64_t cap, head, tail;
    wf_shared *sh;
} wf_chan;

struct wf_shared {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int64_t done_iters;
    volatile int abort;
    char err[512];
    wf_chan *chans; /* all queues, to wake them on abort */
    int nchans;
    pthread_mutex_t turn; /* io_turns: held by a worker's transfers (wf_xport.c) */
};

enum { WF_TAG_BF = 4101, WF_TAG_TF = 4102, WF_TAG_WAVE = 4103 };

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
} wf_mlink;

/* ---- I/O operations of the helper transport ---- */

/* OP_READ / OP_WRITE: a band-chaining step's reads / write-back; OP_CREAD / OP_CWRITE: a
 * block-chaining block's read / write-back. */
enum { WF_OP_READ = 1, WF_OP_WRITE = 2, WF_OP_CREAD = 3, WF_OP_CWRITE = 4 };
typedef struct {
    int kind, slot;
    int64_t it, br, bc;
} wf_ioop;

/* Block chaining state (chain == MPILAB_WF_CHAIN_BLOCK): a pool of npool block slots (the
 * halo'd block, its 5 coefficient blocks, the east halo), the slot holding each block of
 * the band (-1: none), the read sequence of each slot, the free slots; the top frontiers
 * received from the lower neighbour, stored per column until used (tfk: the iteration
 * held, WF_TF_EMPTY if none); one tagged segment (k, c, values). */
typedef struct {
    int npool, nfree;
    double **xhb, **xcf, **xlf;
    int64_t *xseq;
    int *xfree, *slot_of;
    double *tfst, *segx;
    int64_t *tfk;
} wf_chainst;

typedef struct wf_xport wf_xport;
struct wf_uring; /* the io_uring transport's state (wf_xport_uring.c) */

typedef struct worker {
    /* geometry: block rows [b0, b1) of the band held by `data`, nbc block columns */
    int id, nworkers;
    wf_file *data, *coef;
    wf_blockio dio, cio;
    int64_t b0, b1, nbc, mb, nb, cols, row0, total;
    int64_t iters;
    int waves, chain, drop, hints;
    double sim_cell_flops; /* mpilab_wf_run_opts.sim_cell_flops */
    pthread_mutex_t *turn; /* io_turns: the storage turn shared by the workers; else NULL */
    /* transport */
    const wf_xport *xp;
    int prefetch; /* 1: transfers overlap the computation (helper thread or io_uring) */
    int nslots;   /* buffer slots: 1 without prefetch, 2 with the helper, D with uring */
    struct wf_uring *ur;
    /* neighbours: threads */
    wf_shared *sh;
    wf_chan *up_bf, *down_bf; /* BF from the upper worker, to the lower worker */
    wf_chan *up_tf, *down_tf; /* TF to the upper worker, from the lower worker */
    /* neighbours: MPI */
    MPI_Comm comm;
    int mpi;
    wf_mlink l_up_tf_send, l_down_bf_send, l_up_bf_recv, l_down_tf_recv;
    MPI_Request *wave_req;
    int has_up, has_down;
    /* band chaining buffers: halo'd block, coefficients, east halo and block I/O state per
     * slot; the north row and west column carried between blocks */
    double *hb[WF_MAXQ], *cfb[WF_MAXQ], *lfs[WF_MAXQ], *north, *west, *seg;
    wf_blockio dios[WF_MAXQ], lfios[WF_MAXQ], cios[WF_MAXQ], wios[WF_MAXQ];
    int64_t rseq[WF_MAXQ];
    /* I/O helper thread (FIFO of operations) */
    pthread_t io_tid;
    pthread_mutex_t io_mu;
    pthread_cond_t io_cv;
    int io_started, io_stop, io_failed;
    wf_ioop q[WF_IOQ];
    int64_t submitted, completed;
    char ioerr[512];
    wf_chainst ch;
    int64_t buf_bytes; /* engine buffers allocated for this worker */
    /* results */
    wf_ctr rd, wr;
    double t_compute, t_iowait, t_depwait, t_iobusy;
    double *t_done;
    char err[512];
    int failed;
} worker;

/* A transport moves a worker's band-chaining steps: the reads of step t into slot
 * t % nslots (read_submit, then read_wait before the step is computed), its write-back
 * (write_submit), and everything still in flight (drain). */
struct wf_xport {
    const char *name;
    int (*alloc)(worker *w, char *err, size_t errlen); /* per-worker state, after buffers */
    void (*release)(worker *w);
    int (*start)(worker *w);
    void (*stop)(worker *w);
    int (*read_submit)(worker *w, int64_t t, int64_t it, int64_t br, int64_t bc);
    int (*read_wait)(worker *w, int64_t t, int64_t it, int64_t br, int64_t bc);
    int (*write_submit)(worker *w, int64_t t, int64_t it, int64_t br, int64_t bc);
    int (*drain)(worker *w);
};
extern const wf_xport wf_xport_helper; /* pread, mmap, O_DIRECT (helper thread or not) */
extern const wf_xport wf_xport_uring;  /* io_uring (only if built with liburing) */
int wf_uring_built(void);
int wf_uring_probe(char *why, size_t whylen); /* 1 if a ring can be created now */

/* wf_engine.c: what the thread driver shares with the distributed one (wf_engine_mpi.c) */
long wf_maxrss_kb(void);
int wf_worker_body(worker *w);
void wf_worker_free(worker *w);
void wf_dev_io(int64_t *rd, int64_t *wr); /* /proc/self/io read and write bytes; -1 if none */
int wf_stats_alloc_times(mpilab_wf_stats *st, int n);
int wf_resolve_io(int *io, int queue_depth, int chain, char *err, size_t errlen);
int wf_check_setup(const wf_file *d, const wf_file *c, const mpilab_wf_run_opts *o, int64_t *mb,
                   int64_t *nb, char *err, size_t errlen);
int wf_worker_setup(worker *w, int id, int nworkers, wf_file *d, wf_file *c, int64_t b0,
                    int64_t b1, int64_t mb, int64_t nb, int io, const mpilab_wf_run_opts *o,
                    char *err, size_t errlen);
int wf_mark_running(wf_file *d, char *err, size_t errlen);
int wf_mark_done(wf_file *d, int64_t iters, char *err, size_t errlen);
void wf_fill_stats(mpilab_wf_stats *st, const wf_file *d, const wf_file *c, int64_t mb,
                   int64_t nb, int nw, int64_t iters);

/* wf_links.c */
void wf_shared_fail(wf_shared *sh, const char *msg);
int wf_link_send(worker *w, wf_mlink *l, wf_chan *c, const double *v, size_t n);
int wf_link_recv(worker *w, wf_mlink *l, wf_chan *c, double *v, size_t n);
int wf_gate_wait(worker *w, int64_t it);
void wf_iter_done(worker *w, int64_t it);
int wf_mlink_init(wf_mlink *l, int peer, int tag, size_t seg, int nsend, int64_t expect);
void wf_mlink_finish(wf_mlink *l);
int wf_any_failed(MPI_Comm comm, int failed, char *err, size_t errlen);
void wf_waitall(int n, MPI_Request *req);

/* wf_xport.c: the helper thread, also used by block chaining */
int64_t wf_io_submit(worker *w, int kind, int slot, int64_t it, int64_t br, int64_t bc);
int wf_io_wait(worker *w, int64_t seq);
void wf_hint_block(worker *w, int64_t br, int64_t bc, int done, int64_t iter_left);

/* wf_band.c */
int wf_next_step(const worker *w, int64_t *it, int64_t *br, int64_t *bc);
int wf_step_read(worker *w, const wf_ioop *op, char *err, size_t errlen);
int wf_step_write(worker *w, const wf_ioop *op, char *err, size_t errlen);
int64_t wf_conflict_max(const worker *w, int64_t it, int64_t br, int64_t bc);
int wf_band_steps(worker *w);

/* wf_chain.c */
int64_t wf_chain_pool(int64_t R, int64_t nbc, int waves, int prefetch);
int wf_chain_read(worker *w, const wf_ioop *op, char *err, size_t errlen);
int wf_chain_write(worker *w, const wf_ioop *op, char *err, size_t errlen);
int wf_chain_steps(worker *w);

static inline int64_t wf_blk_h(const worker *w, int64_t br)
{
    int64_t r = (int64_t)w->data->h.rows - br * w->mb;
    return r < w->mb ? r : w->mb;
}

static inline int64_t wf_blk_w(const worker *w, int64_t bc)
{
    int64_t c = w->cols - bc * w->nb;
    return c < w->nb ? c : w->nb;
}

/* The simulated time of a block's computation (SMPI build, MPI mode, sim_cell_flops > 0):
 * cells x sim_cell_flops operations executed on the simulated host; elsewhere nothing. */
static inline void wf_sim_compute(const worker *w, int64_t cells)
{
#ifdef SMPI_H
    if (w->mpi && w->sim_cell_flops > 0 && cells > 0)
        smpi_execute_flops(w->sim_cell_flops * (double)cells);
#else
    (void)w;
    (void)cells;
#endif
}

/* The kernel over one halo'd block H (row stride ld): rows [ilo, ihi), columns [jlo, jhi)
 * of the h x wd block, coefficients cf (5 planes of h x wd). */
static inline void wf_block_kernel(double *H, int64_t ld, int64_t h, int64_t wd, int64_t ilo,
                                   int64_t ihi, int64_t jlo, int64_t jhi, const double *cf)
{
    const size_t pl = (size_t)(h * wd);
    const double *zb = cf, *zu = cf + pl, *zv = cf + 2 * pl, *zr = cf + 3 * pl, *zz = cf + 4 * pl;
    for (int64_t i = ilo; i < ihi; i++) {
        double *row = H + (i + 1) * ld + 1;
        const int64_t k0 = i * wd;
        for (int64_t j = jlo; j < jhi; j++) {
            double *p = row + j;
            const int64_t k = k0 + j;
            *p = wf_kernel(*p, p[-ld], p[ld], p[-1], p[1], zb[k], zu[k], zv[k], zr[k], zz[k]);
        }
    }
}

#endif
