/* Internal pieces shared by the wavefront's file tools: output files (wf_outfile.c), band
 * sources (wf_source.c) and the layout conversion (wf_convert.c) that uses both. */
#ifndef MPILAB_WF_BANDIO_H
#define MPILAB_WF_BANDIO_H

#include <signal.h>
#include <stdint.h>

#include "wavefront/wf_internal.h"

/* ---- output files: written to PATH.tmp.PID, renamed into place when all are complete ---- */
typedef struct {
    char path[4096], tmp[4200];
    int fd;
    wf_hdr h;
} wf_outfile;

/* Create the temporary file of `path` (a regular file or a new name) with header `h`,
 * after removing stale temporaries of killed runs. */
int wf_out_create(wf_outfile *o, const char *path, const wf_hdr *h, char *err, size_t errlen);
/* Close and remove the temporaries of o[0..n). */
void wf_out_abort(wf_outfile *o, int n);
/* Check sizes, sync and rename o[0..n) into place; on failure all are removed. */
int wf_out_commit(wf_outfile *o, int n, char *err, size_t errlen);
/* SIGINT, SIGTERM and SIGHUP held back while outputs are written (wf_sig_hold), so an
 * interrupted run removes its temporaries before the signal takes effect: the write loops
 * stop at wf_sig_pending(), the caller aborts its outputs, then wf_sig_release() restores
 * the mask and the held signal acts as it would have (by default it ends the process). */
typedef struct {
    sigset_t old;
} wf_sighold;
void wf_sig_hold(wf_sighold *g);
int wf_sig_pending(void);
void wf_sig_release(const wf_sighold *g);
/* A header of the current format version (the blocking only for blocked layouts). */
void wf_fill_hdr(wf_hdr *h, int layout, int64_t planes, int64_t rows, int64_t cols,
                 int64_t row0, int64_t total, int64_t mb, int64_t nb, int64_t t);
/* Check the blocking; returns NULL if fine, else a static reason (wf_file.c). */
const char *wf_check_blocking(int layout, int64_t rows, int64_t cols, int64_t mb, int64_t nb,
                              int64_t t);

/* ---- sources: one matrix stored as band files ---- */
typedef struct {
    wf_file *f;
    int n;
    int64_t rows, cols, planes;
    int layout;
    uint64_t iters_done;
} wf_source;

/* Open the bands in[0..nin) and check that they continue each other (rows, layout,
 * blocking, iterations) and that none holds an interrupted in-place run. */
int wf_src_open(wf_source *s, const char *const *in, int nin, char *err, size_t errlen);
void wf_src_close(wf_source *s);
/* Strip callback: rows [r, r+h) of all planes in buf (plane-major, row stride cols). */
typedef int (*wf_strip_fn)(void *ctx, int64_t r, int64_t h, const double *buf, char *err,
                           size_t errlen);
/* Walk a source strip by strip. Row-major sources: strips ending at the given boundaries
 * `bound(bctx, r)` (next row at which a strip must end; NULL: strips of about 8 MiB);
 * blocked: one block row each. */
int wf_src_walk(wf_source *s, int64_t (*bound)(void *, int64_t), void *bctx, wf_strip_fn fn,
                void *ctx, char *err, size_t errlen);

#endif
