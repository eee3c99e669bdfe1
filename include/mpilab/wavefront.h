/* mpilab wavefront: out-of-core Livermore loop 23 (frontier-optimized on-disk layouts,
 * pipelined workers with wave chaining, mmap/pread I/O back ends, distributed mode).
 * File format: docs/wavefront.md; algorithm: docs/wavefront-engine.md. */
#ifndef MPILAB_WAVEFRONT_H
#define MPILAB_WAVEFRONT_H

#include <mpi.h>
#include "mpilab/mpi_check.h"
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum {
    MPILAB_WF_ROWMAJOR = 0,
    MPILAB_WF_BLOCK = 1,
    MPILAB_WF_OPTIMIZED = 2
} mpilab_wf_layout;

/* I/O back ends. URING: io_uring with several requests in flight per worker (only if
 * built with liburing; mpilab_wf_io_available). AUTO: uring if an io_uring instance can
 * be created at run time, else pread (the back end used is reported in the stats).
 * DIRECT: pread/pwrite with O_DIRECT (no page cache: every request reaches the device;
 * unaligned transfers go through aligned bounce buffers), with the I/O helper. */
typedef enum {
    MPILAB_WF_IO_PREAD = 0,
    MPILAB_WF_IO_MMAP = 1,
    MPILAB_WF_IO_URING = 2,
    MPILAB_WF_IO_AUTO = 3,
    MPILAB_WF_IO_DIRECT = 4
} mpilab_wf_io;

/* Name <-> enum ("rowmajor", "block", "optimized"; "pread", "mmap", "uring", "auto",
 * "direct").
 * -1 if unknown. */
int mpilab_wf_layout_parse(const char *name);
const char *mpilab_wf_layout_name(int layout);
int mpilab_wf_io_parse(const char *name);
const char *mpilab_wf_io_name(int io);
/* 1 if the io_uring back end can be used here (built with liburing and an io_uring
 * instance can be created now); 0 otherwise, with the reason in `why` if given. */
int mpilab_wf_io_available(int io, char *why, size_t whylen);

/* Create a deterministic problem from `seed`: `data_path` (rows x cols doubles) and
 * `coef_path` (the five planes zb, zu, zv, zr, zz), both row-major. 0 or -1 + err. */
int mpilab_wf_create(const char *data_path, const char *coef_path, int64_t rows, int64_t cols,
                     uint64_t seed, char *err, size_t errlen);

/* Conversion (streaming, block row by block row; outputs written to temporary names and
 * renamed when complete). `in` holds `nin` band files of one matrix (rows in order).
 * Row-major input -> any layout; block/optimized input -> row-major. With nout > 1 the
 * output is split into nout band files `out`.0 .. `out`.<nout-1> at block-row
 * boundaries (mb is then required also for row-major output). For 5-plane coefficient
 * files "optimized" means block layout (they have no frontiers). */
typedef struct {
    int layout;     /* mpilab_wf_layout */
    int64_t mb, nb; /* block rows x block columns (ignored for row-major unless nout > 1) */
    int64_t t;      /* frontier thickness (optimized layout), >= 1 */
    int nout;       /* number of band files to write, >= 1 */
} mpilab_wf_convert_opts;
int mpilab_wf_convert(const char *const *in, int nin, const char *out,
                      const mpilab_wf_convert_opts *o, char *err, size_t errlen);

/* Bytes of matrix payload for a layout (header excluded): the optimized layout adds
 * 4*T*T*planes*sizeof(double) per block. -1 if the geometry is invalid. */
int64_t mpilab_wf_payload_bytes(int layout, int64_t rows, int64_t cols, int64_t mb,
                                int64_t nb, int64_t t, int64_t planes);

typedef struct {
    int64_t iterations;
    int workers;    /* worker threads (shared-memory mode), >= 1 */
    int waves;      /* iterations allowed in flight at once, >= 1 (1 = no wave chaining) */
    int io;         /* mpilab_wf_io */
    int64_t mb, nb; /* blocking for row-major files (0 = take it from the file) */
    int drop_behind; /* write back and drop pages of finished blocks (default on) */
    int no_prefetch; /* 1: no I/O helper thread; every read/write is synchronous in the
                      * worker (the default 0 overlaps block j+1's reads and block j's
                      * write-back with the computation of block j) */
    int queue_depth; /* uring: blocks in flight per worker (buffer slots; reads of up to
                      * queue_depth-1 steps ahead plus write-backs); 0 = 4. Other back
                      * ends ignore it. */
    int chain;       /* mpilab_wf_chain: how waves are chained (default BAND) */
    int io_turns;    /* 1: the workers take turns at the storage: one worker's transfers
                      * (a step's reads, or a write-back) at a time, and no read-ahead
                      * hints (their asynchronous reads would fall outside the turn). For
                      * one disk with one head (a seek disk): the workers' streams no
                      * longer interleave request by request. Thread driver only; pread,
                      * mmap and direct. */
} mpilab_wf_run_opts;

/* Wave chaining granularity. BAND: a worker runs its whole band for iteration n, then
 * n+1 (up to `waves` iterations in flight between workers; every iteration reads and
 * writes every block). BLOCK: iterations are processed in sweeps of `waves`; within a
 * sweep a block is read once, updated by the sweep's consecutive iterations while
 * resident (items (k, r, c) in order of r + c + 2k) and written back once, so the I/O per
 * iteration falls about `waves`-fold. BLOCK supports pread (with or without the I/O
 * helper) and mmap, threads and MPI; not io_uring. */
typedef enum { MPILAB_WF_CHAIN_BAND = 0, MPILAB_WF_CHAIN_BLOCK = 1 } mpilab_wf_chain;
int mpilab_wf_chain_parse(const char *name); /* "band" | "block"; -1 if unknown */
const char *mpilab_wf_chain_name(int chain);

typedef struct {
    int64_t iterations;
    double total_s;
    double *iter_s;         /* per-iteration time (completion of the last band), malloc'd */
    int64_t bytes_read, bytes_written;
    long maxrss_kb;         /* getrusage peak RSS (max over ranks in MPI mode) */
    int64_t rows, cols, mb, nb, t;
    int layout, coef_layout;
    int workers;            /* threads, or ranks in MPI mode */
    int prefetch;           /* 1 if reads/writes were overlapped by I/O helper threads */
    /* Where each worker's time went (arrays of `workers` entries, malloc'd; seconds):
     * compute_s: the kernel loop; io_wait_s: waiting for its block's reads (or doing
     * them, without prefetch) and for the final write-backs; dep_wait_s: waiting for
     * frontiers from neighbours, for room in their queues and for the wave gate.
     * io_busy_s: time the worker's I/O helper spent in reads/writes (0 without
     * prefetch: then it is part of io_wait_s). */
    double *compute_s, *io_wait_s, *dep_wait_s, *io_busy_s;
    /* Bytes the storage layer actually read/wrote for the run (/proc/self/io
     * read_bytes/write_bytes deltas, summed over ranks; -1 if unavailable). Unlike
     * bytes_read they include readahead and exclude page-cache hits. */
    int64_t dev_read_bytes, dev_write_bytes;
    int io;                 /* back end actually used (AUTO resolved) */
    int queue_depth;        /* buffer slots per worker (1 no prefetch, 2 helper, D uring;
                             * block chaining: the block pool, see docs/wavefront-engine.md) */
    int chain;              /* mpilab_wf_chain used */
    int64_t buffer_bytes;   /* engine buffers allocated (all workers/ranks summed) */
    /* Requests the engine issued (raw transfers: one pread/pwrite or io_uring request
     * each; with O_DIRECT what reaches the device, up to the kernel splitting large ones),
     * summed over workers or ranks. With bytes_read/bytes_written they feed a device
     * model's I/O bound (requests x per-request cost + bytes / bandwidth). */
    int64_t requests_read, requests_written;
} mpilab_wf_stats;
void mpilab_wf_stats_free(mpilab_wf_stats *st);

/* Run k iterations in place on `data_path` with P threads. */
int mpilab_wf_run(const char *data_path, const char *coef_path, const mpilab_wf_run_opts *o,
                  mpilab_wf_stats *st, char *err, size_t errlen);

/* Distributed mode: collective over comm; each rank owns the band stored in its own
 * files (one worker per rank, frontiers exchanged with MPI_Isend/MPI_Irecv). Stats are
 * complete on rank 0. All ranks return the same status. */
int mpilab_wf_run_mpi(MPI_Comm comm, const char *data_path, const char *coef_path,
                      const mpilab_wf_run_opts *o, mpilab_wf_stats *st, char *err,
                      size_t errlen);

/* What a matrix file holds after in-place runs: the iterations applied to it since it was
 * made (`iters_done`), and whether an in-place run was interrupted (`interrupted` = 1: a
 * run marked the file before modifying it and never cleared the mark, e.g. it was killed;
 * its blocks then hold a mix of iterations). 0, or -1 + err if the file is unusable. */
int mpilab_wf_file_state(const char *path, int64_t *iters_done, int *interrupted, char *err,
                         size_t errlen);

/* Stale temporary outputs of an earlier conversion or creation that was killed:
 * `<out>.tmp.<pid>` files next to `out` whose process <pid> no longer runs. With
 * remove = 1 they are deleted. Returns how many were found (and removed), -1 on error;
 * the names are written (one per line, truncated to fit) into `list` if given. */
int mpilab_wf_stale_temps(const char *out, int remove, char *list, size_t listlen, char *err,
                          size_t errlen);

/* Load a matrix (one file or band files, any layout) into memory row-major
 * (planes x rows x cols doubles, malloc'd). */
int mpilab_wf_load(const char *const *in, int nin, double **out, int64_t *rows, int64_t *cols,
                   int64_t *planes, char *err, size_t errlen);

/* In-core reference: the plain sequential loop over interior points, k iterations. */
void mpilab_wf_reference(double *data, const double *coef, int64_t rows, int64_t cols,
                         int64_t iterations);

/* FNV-1a 64-bit hash of n doubles' bytes (checksum printed by verify). */
uint64_t mpilab_wf_checksum(const double *v, size_t n);

/* In-core bounds, measured on this machine. Triad a[i] = b[i] + s*c[i] over three arrays
 * of n doubles with `threads` threads (best of `reps`); returns bytes/s counting 24 bytes
 * per element (no write-allocate). -1 on allocation failure. */
double mpilab_wf_triad_bandwidth(size_t n, int threads, int reps);
/* Loop-23 element updates per second of the in-memory sequential loop on a rows x cols
 * problem (best of `reps` single iterations). -1 on allocation failure. */
double mpilab_wf_kernel_rate(int64_t rows, int64_t cols, int reps);

#ifdef __cplusplus
}
#endif
#endif
