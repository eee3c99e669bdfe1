/* Internal pieces of the wavefront capability: the kernel, the file header, block I/O. */
#ifndef MPILAB_WF_INTERNAL_H
#define MPILAB_WF_INTERNAL_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "mpilab/wavefront.h"
#include "wavefront/wf_layout.h"

#define WF_MAGIC "MPILABWF"
/* 2: block records of layouts with rec_align start page aligned (zero padding between
 * them); 1: packed records (still read). */
#define WF_VERSION 2u
#define WF_VERSION_PADDED 2u
#define WF_HDR_BYTES 4096
#define WF_ELEM_F64 1u

/* Livermore loop 23, one point. The single definition every schedule uses, so the
 * floating-point expression order is identical everywhere (sources built with
 * -ffp-contract=off). */
static inline double wf_kernel(double c, double n, double s, double w, double e, double zb,
                               double zu, double zv, double zr, double zz)
{
    double q = n * zb + w * zv + e * zu + s * zr + zz - c;
    return c + 0.175 * q;
}

/* On-disk header (first WF_HDR_BYTES of every file, rest zero). Native byte order. */
typedef struct {
    char magic[8];
    uint32_t version, layout, elem, planes;
    uint64_t rows, cols;      /* rows held by this file, columns */
    uint64_t row0, total_rows; /* first global row of this band, rows of the whole matrix */
    uint64_t mb, nb, t;       /* blocking (0 for row-major), frontier thickness */
    uint64_t payload;         /* bytes after the header */
    /* crash consistency of in-place runs: state WF_STATE_RUNNING is written (and synced)
     * before a run modifies the file and cleared, with iters_done advanced, after the
     * run's data is on disk; a file still marked RUNNING holds a mix of iterations */
    uint32_t state, reserved;
    uint64_t iters_done;      /* iterations applied in place since the file was made */
} wf_hdr;
enum { WF_STATE_CLEAN = 0, WF_STATE_RUNNING = 1 };

/* A file I/O back end: how a wf_file's bytes are moved (pread/pwrite, the mapping, or
 * O_DIRECT with aligned bounce buffers). The engine's asynchronous io_uring transport is
 * built on the pread back end (wf_xport.h). */
typedef struct wf_file_s wf_file;
typedef struct wf_io_ops {
    int io;         /* mpilab_wf_io */
    int open_flags; /* added to open(2) */
    int hints;      /* page-cache hints (fadvise/madvise) are meaningful */
    int (*read)(wf_file *f, void *dst, size_t len, off_t off, char *err, size_t el);
    int (*write)(wf_file *f, const void *src, size_t len, off_t off, char *err, size_t el);
} wf_io_ops;
const wf_io_ops *wf_io_ops_get(int io); /* URING -> the pread ops; NULL if unknown */
#define WF_DIRECT_ALIGN 4096

struct wf_file_s {
    int fd;
    int io;             /* mpilab_wf_io */
    int writable;
    wf_hdr h;
    const wf_layout *lay;
    const wf_io_ops *ops;
    unsigned char *map; /* mmap of the whole file (io == MMAP) */
    size_t maplen;
    pthread_mutex_t wmu; /* O_DIRECT: serialises read-modify-write of shared sectors */
    int wmu_ok;
    char path[4096];
};

/* Open and validate (magic, version, element type, geometry, exact file size). */
int wf_open(wf_file *f, const char *path, int writable, int io, char *err, size_t errlen);
void wf_close(wf_file *f);
/* Rewrite the header (state, iters_done) and sync it. */
int wf_write_header(wf_file *f, char *err, size_t errlen);
/* Byte offset of element (r, c) of a plane of a row-major file. */
off_t wf_rowmajor_off(const wf_hdr *h, int plane, int64_t r, int64_t c);

/* Geometry helpers for blocked files (layout BLOCK / OPTIMIZED). */
int64_t wf_nblockrows(const wf_hdr *h);
int64_t wf_nblockcols(const wf_hdr *h);
int64_t wf_block_h(const wf_hdr *h, int64_t br);
int64_t wf_block_w(const wf_hdr *h, int64_t bc);
off_t wf_block_off(const wf_hdr *h, int64_t br, int64_t bc); /* from file start */
size_t wf_block_bytes(const wf_hdr *h, int64_t br, int64_t bc);   /* all planes */

/* Whole transfers with pread/pwrite (short transfers and EINTR handled); errors name path. */
int wf_pread_full(int fd, void *dst, size_t len, off_t off, const char *path, char *err,
                  size_t errlen);
int wf_pwrite_full(int fd, const void *src, size_t len, off_t off, const char *path, char *err,
                   size_t errlen);
/* Raw I/O through the back end (pread/pwrite loops or memcpy from the mapping). */
int wf_read(wf_file *f, void *dst, size_t len, off_t off, wf_ctr *ctr, char *err, size_t el);
int wf_write(wf_file *f, const void *src, size_t len, off_t off, wf_ctr *ctr, char *err,
             size_t el);
void wf_willneed(wf_file *f, off_t off, size_t len);
void wf_done(wf_file *f, off_t off, size_t len, int dirty);

/* Region reads/writes of block (br, bc) of a file in any layout (for row-major files
 * the blocking is given by mb, nb). dst is h x w doubles with row stride `ld`.
 * `tmp` is scratch of wf_scratch_doubles() doubles. plane selects the coefficient. */
/* Asynchronous I/O (io_uring back end): with `rec` set, the region functions below do not
 * transfer anything; in WF_REC_RECORD mode every raw transfer they would make is appended
 * to `rec` (file, buffer, length, offset; counted in *ctr), to be submitted by the caller,
 * and the copy/unpack work after it runs on whatever the buffers hold. Once the recorded
 * reads completed, calling the same function again in WF_REC_REPLAY mode (no transfers,
 * no counting) redoes that copy/unpack work on the data that arrived. The buffers named
 * (scratch `tmp` included) must therefore stay untouched between the two calls. */
enum { WF_REC_RECORD = 1, WF_REC_REPLAY = 2 };
typedef struct {
    void *buf;
    size_t len;
    off_t off;
    int write;
    struct wf_file_s *f;
} wf_xfer;
typedef struct {
    int mode;
    wf_xfer *v;
    size_t n, cap;
} wf_rec;

typedef struct wf_blockio_s {
    int64_t mb, nb; /* blocking in effect */
    double *tmp;
    wf_rec *rec;    /* NULL: synchronous transfers */
} wf_blockio;
size_t wf_scratch_doubles(const wf_hdr *h, int64_t mb, int64_t nb);
/* Block I/O through the file's layout entry (f->lay): see wf_layout.h. */
/* Pack / unpack one h x w block (row stride ld) to / from the optimized serial order. */
void wf_pack_opt(const double *src, size_t ld, int64_t h, int64_t w, int64_t t, double *out);
void wf_unpack_opt(const double *in, int64_t h, int64_t w, int64_t t, double *dst, size_t ld);

#endif
