/* The on-disk layouts as a table: everything the file code, the conversion and the
 * engine need to know about a layout is one wf_layout entry, defined in one file
 * (wf_layout_rowmajor.c, wf_layout_block.c, wf_layout_optimized.c). Adding a layout is a
 * new file plus one line in wf_layout.c's table; nothing else switches on the layout. */
#ifndef MPILAB_WF_LAYOUT_H
#define MPILAB_WF_LAYOUT_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct wf_file_s;
struct wf_blockio_s;

/* Transfers counted by the engine: bytes and requests (raw transfers issued). */
typedef struct {
    int64_t bytes, reqs;
} wf_ctr;

typedef struct wf_layout {
    int id;            /* mpilab_wf_layout value stored in the header */
    const char *name;  /* canonical name */
    const char *alias; /* also accepted when parsing, or NULL */
    /* 1: the matrix is stored as MB x NB blocks, each contiguous (the header holds mb, nb);
     * 0: row-major (the engine's blocking comes from the run options) */
    int blocked;
    /* 1: the header's frontier thickness t is used (must be 1..1024); 0: it must be 0 */
    int uses_t;
    /* layout used instead for 5-plane coefficient files (which have no frontiers); the
     * layout's own id if it serves them too */
    int coef_layout;
    /* 1: every read the engine issues is exactly what a step needs (one request per
     * block or frontier), so kernel readahead only adds pages beyond the request */
    int exact_reads;
    /* doubles per block and plane stored beyond the block's h x w elements */
    int64_t (*extra)(int64_t t);
    /* 0: block records are packed back to back; else every record starts at a multiple of
     * this many bytes in the file (zero padding after a record), so that a block's
     * write-back is page aligned (one request through a page cache, no partial first
     * page). Applies to files of format version >= 2 (WF_VERSION_PADDED). */
    int64_t rec_align;
    /* NULL if the blocking is valid for this layout, else a static reason */
    const char *(*check)(int64_t rows, int64_t cols, int64_t mb, int64_t nb, int64_t t);
    /* Block (br, bc), plane `plane`, into dst (h x w, row stride ld). */
    int (*read_block)(struct wf_file_s *f, struct wf_blockio_s *b, int64_t br, int64_t bc,
                      int plane, double *dst, size_t ld, wf_ctr *ctr, char *err, size_t el);
    /* The data block (br, bc) into dst and, if block (br, bc+1) exists, its old left
     * frontier (the east halo, h values) into lf. A layout may fold both into one request. */
    int (*read_block_east)(struct wf_file_s *f, struct wf_blockio_s *b, int64_t br, int64_t bc,
                           double *dst, size_t ld, double *lf, wf_ctr *ctr, char *err,
                           size_t el);
    /* All planes of block (br, bc) of a coefficient file into dst (plane p at p*h*w, row
     * stride w). A layout may read them in one request. */
    int (*read_coef)(struct wf_file_s *f, struct wf_blockio_s *b, int64_t br, int64_t bc,
                     double *dst, wf_ctr *ctr, char *err, size_t el);
    int (*write_block)(struct wf_file_s *f, struct wf_blockio_s *b, int64_t br, int64_t bc,
                       const double *src, size_t ld, wf_ctr *ctr, char *err, size_t el);
    /* first column (left frontier) / first row (top frontier) of block (br, bc) */
    int (*read_lf)(struct wf_file_s *f, struct wf_blockio_s *b, int64_t br, int64_t bc,
                   double *dst, wf_ctr *ctr, char *err, size_t el);
    int (*read_tf)(struct wf_file_s *f, struct wf_blockio_s *b, int64_t br, int64_t bc,
                   double *dst, wf_ctr *ctr, char *err, size_t el);
    /* byte range covering block (br, bc) (for hints: dropped after its write-back) */
    void (*range)(const struct wf_file_s *f, const struct wf_blockio_s *b, int64_t br,
                  int64_t bc, off_t *off, size_t *len);
    /* byte range read_block_east reads for block (br, bc), for the WILLNEED hint before
     * it is read; NULL: `range` */
    void (*read_range)(const struct wf_file_s *f, const struct wf_blockio_s *b, int64_t br,
                       int64_t bc, off_t *off, size_t *len);
    /* Conversion (blocked layouts): one h x w block of `planes` planes between a strip
     * (row stride ld, plane stride ps) and its serial on-disk form. pack returns the
     * doubles written. NULL for row-major. */
    size_t (*pack)(const double *src, size_t ld, size_t ps, int64_t h, int64_t w, int64_t t,
                   int64_t planes, double *out);
    void (*unpack)(const double *in, int64_t h, int64_t w, int64_t t, int64_t planes,
                   double *dst, size_t ld, size_t ps);
} wf_layout;

/* The entry for a header's layout id; NULL if unknown. */
const wf_layout *wf_layout_get(int id);
/* The layout a file of `planes` planes is written in when `id` is asked. */
int wf_layout_for_planes(int id, int64_t planes);

/* The layout entries (one file each). */
extern const wf_layout wf_layout_rowmajor, wf_layout_block, wf_layout_optimized;

/* Shared by the layouts: the common blocked-layout check, the generic read_block_east
 * (read_block + read_lf), and transfers that honour the io_uring record mode. */
const char *wf_check_blocked(int64_t rows, int64_t cols, int64_t mb, int64_t nb);
int wf_read_block_east_generic(struct wf_file_s *f, struct wf_blockio_s *b, int64_t br,
                               int64_t bc, double *dst, size_t ld, double *lf, wf_ctr *ctr,
                               char *err, size_t el);
int wf_read_coef_generic(struct wf_file_s *f, struct wf_blockio_s *b, int64_t br, int64_t bc,
                         double *dst, wf_ctr *ctr, char *err, size_t el);
int wf_bread(struct wf_file_s *f, const struct wf_blockio_s *b, void *dst, size_t len,
             off_t off, wf_ctr *ctr, char *err, size_t el);
int wf_bwrite(struct wf_file_s *f, const struct wf_blockio_s *b, const void *src, size_t len,
              off_t off, wf_ctr *ctr, char *err, size_t el);
void wf_blk_dims(const struct wf_file_s *f, const struct wf_blockio_s *b, int64_t br,
                 int64_t bc, int64_t *r0, int64_t *c0, int64_t *h, int64_t *w);
void wf_blocked_range(const struct wf_file_s *f, const struct wf_blockio_s *b, int64_t br,
                      int64_t bc, off_t *off, size_t *len);
int wf_blocked_read_tf(struct wf_file_s *f, struct wf_blockio_s *b, int64_t br, int64_t bc,
                       double *dst, wf_ctr *ctr, char *err, size_t el);

#endif
