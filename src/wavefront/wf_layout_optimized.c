/* Optimized (frontier) layout, data files only: per block, stored contiguously, the top
 * frontier (T rows), the left frontier (T columns, all rows), the interior, the right
 * frontier (T columns, all rows), the bottom frontier (T rows); the four T x T corners are
 * duplicated (4*T*T extra doubles per block). From format version 2 every record starts at
 * a multiple of 4 KiB (zero padding after it), so a block's write-back is page aligned:
 * through a page cache (FUSE's write-through in particular) an unaligned write whose
 * first page is not cached is sent as two requests. The east halo of block (br, bc) is the left
 * frontier of block (br, bc+1), which follows the block on disk after only that block's
 * top frontier: the engine's block read is extended over it, so the block and its east
 * halo are one request (no second request, hence no seek, per block). */
#include <string.h>

#include "wavefront/wf_internal.h"

static int64_t opt_extra(int64_t t) { return 4 * t * t; }

static const char *opt_check(int64_t rows, int64_t cols, int64_t mb, int64_t nb, int64_t t)
{
    const char *why = wf_check_blocked(rows, cols, mb, nb);
    if (why)
        return why;
    if (t < 1)
        return "frontier thickness must be >= 1";
    int64_t hl = rows % mb ? rows % mb : mb, wl = cols % nb ? cols % nb : nb;
    if (hl < 2 * t || wl < 2 * t || mb < 2 * t || nb < 2 * t)
        return "every block (also the last, partial ones) must be at least 2T x 2T "
               "in the optimized layout";
    return NULL;
}

void wf_pack_opt(const double *src, size_t ld, int64_t h, int64_t w, int64_t t, double *out)
{
    size_t k = 0;
    for (int64_t i = 0; i < t; i++) /* top frontier */
        for (int64_t j = 0; j < w; j++)
            out[k++] = src[(size_t)i * ld + (size_t)j];
    for (int64_t i = 0; i < h; i++) /* left frontier */
        for (int64_t j = 0; j < t; j++)
            out[k++] = src[(size_t)i * ld + (size_t)j];
    for (int64_t i = t; i < h - t; i++) /* interior */
        for (int64_t j = t; j < w - t; j++)
            out[k++] = src[(size_t)i * ld + (size_t)j];
    for (int64_t i = 0; i < h; i++) /* right frontier */
        for (int64_t j = w - t; j < w; j++)
            out[k++] = src[(size_t)i * ld + (size_t)j];
    for (int64_t i = h - t; i < h; i++) /* bottom frontier */
        for (int64_t j = 0; j < w; j++)
            out[k++] = src[(size_t)i * ld + (size_t)j];
}

void wf_unpack_opt(const double *in, int64_t h, int64_t w, int64_t t, double *dst, size_t ld)
{
    size_t k = 0;
    for (int64_t i = 0; i < t; i++)
        for (int64_t j = 0; j < w; j++)
            dst[(size_t)i * ld + (size_t)j] = in[k++];
    for (int64_t i = 0; i < h; i++)
        for (int64_t j = 0; j < t; j++)
            dst[(size_t)i * ld + (size_t)j] = in[k++];
    for (int64_t i = t; i < h - t; i++)
        for (int64_t j = t; j < w - t; j++)
            dst[(size_t)i * ld + (size_t)j] = in[k++];
    for (int64_t i = 0; i < h; i++)
        for (int64_t j = w - t; j < w; j++)
            dst[(size_t)i * ld + (size_t)j] = in[k++];
    for (int64_t i = h - t; i < h; i++)
        for (int64_t j = 0; j < w; j++)
            dst[(size_t)i * ld + (size_t)j] = in[k++];
}

static int opt_read_block(wf_file *f, wf_blockio *b, int64_t br, int64_t bc, int plane,
                          double *dst, size_t ld, wf_ctr *ctr, char *err, size_t el)
{
    (void)plane; /* data files only (one plane) */
    int64_t r0, c0, h, w;
    wf_blk_dims(f, b, br, bc, &r0, &c0, &h, &w);
    if (wf_bread(f, b, b->tmp, wf_block_bytes(&f->h, br, bc), wf_block_off(&f->h, br, bc), ctr,
                 err, el))
        return -1;
    wf_unpack_opt(b->tmp, h, w, (int64_t)f->h.t, dst, ld);
    return 0;
}

/* What opt_read_block_east reads: the record and, if block bc+1 exists, up to the end of
 * that block's left frontier. Hinted as one range, so the page cache fetches it in one
 * batch of sequential requests instead of a later synchronous read of the next record's
 * first page (a separate visit of the disk, often after another worker's request). */
static void opt_read_range(const wf_file *f, const wf_blockio *b, int64_t br, int64_t bc,
                           off_t *off, size_t *len)
{
    (void)b;
    *off = wf_block_off(&f->h, br, bc);
    *len = wf_block_bytes(&f->h, br, bc);
    if (bc + 1 < wf_nblockcols(&f->h)) {
        const int64_t t = (int64_t)f->h.t, h = wf_block_h(&f->h, br);
        *len = (size_t)(wf_block_off(&f->h, br, bc + 1) - *off) +
               (size_t)((t * wf_block_w(&f->h, bc + 1) + h * t) * 8);
    }
}

/* One request: the block, its record's padding, then block bc+1's top frontier (T x w1, skipped) and left
 * frontier (h x T; its first column is the east halo). */
static int opt_read_block_east(wf_file *f, wf_blockio *b, int64_t br, int64_t bc, double *dst,
                               size_t ld, double *lf, wf_ctr *ctr, char *err, size_t el)
{
    int64_t r0, c0, h, w;
    wf_blk_dims(f, b, br, bc, &r0, &c0, &h, &w);
    const int64_t t = (int64_t)f->h.t;
    const off_t off = wf_block_off(&f->h, br, bc);
    size_t len = wf_block_bytes(&f->h, br, bc), next = 0; /* next: record bc+1 in tmp */
    int64_t w1 = 0;
    if (bc + 1 < wf_nblockcols(&f->h)) {
        w1 = wf_block_w(&f->h, bc + 1);
        next = (size_t)(wf_block_off(&f->h, br, bc + 1) - off); /* padding included */
        len = next + (size_t)((t * w1 + h * t) * 8);
    }
    if (wf_bread(f, b, b->tmp, len, off, ctr, err, el))
        return -1;
    wf_unpack_opt(b->tmp, h, w, t, dst, ld);
    if (next) {
        const double *l = b->tmp + next / 8 + (size_t)(t * w1);
        for (int64_t i = 0; i < h; i++)
            lf[i] = l[i * t];
    }
    return 0;
}

/* With O_DIRECT the write-back covers the record's zero padding too: a record of a
 * padded (version 2) file then ends on a sector boundary, so the write needs no
 * read-modify-write of its last, partial sector (traced on the seek disk: that 4 KiB
 * read cost a seek of its own and a seek back to the record's start, per block). The
 * block layout's records (h x w doubles) are sector aligned already. */
static int opt_write_block(wf_file *f, wf_blockio *b, int64_t br, int64_t bc, const double *src,
                           size_t ld, wf_ctr *ctr, char *err, size_t el)
{
    int64_t r0, c0, h, w;
    wf_blk_dims(f, b, br, bc, &r0, &c0, &h, &w);
    wf_pack_opt(src, ld, h, w, (int64_t)f->h.t, b->tmp);
    size_t len = wf_block_bytes(&f->h, br, bc);
    if (f->io == MPILAB_WF_IO_DIRECT && f->h.version >= WF_VERSION_PADDED) {
        const size_t al = (size_t)f->lay->rec_align, padded = (len + al - 1) / al * al;
        memset((char *)b->tmp + len, 0, padded - len);
        len = padded;
    }
    return wf_bwrite(f, b, b->tmp, len, wf_block_off(&f->h, br, bc), ctr, err, el);
}

/* contiguous left frontier: one read */
static int opt_read_lf(wf_file *f, wf_blockio *b, int64_t br, int64_t bc, double *dst,
                       wf_ctr *ctr, char *err, size_t el)
{
    int64_t r0, c0, h, w;
    wf_blk_dims(f, b, br, bc, &r0, &c0, &h, &w);
    int64_t t = (int64_t)f->h.t;
    off_t off = wf_block_off(&f->h, br, bc) + (off_t)(t * w * 8);
    if (t == 1)
        return wf_bread(f, b, dst, (size_t)h * 8, off, ctr, err, el);
    if (wf_bread(f, b, b->tmp, (size_t)(h * t) * 8, off, ctr, err, el))
        return -1;
    for (int64_t i = 0; i < h; i++)
        dst[i] = b->tmp[i * t];
    return 0;
}

static size_t opt_pack(const double *src, size_t ld, size_t ps, int64_t h, int64_t w, int64_t t,
                       int64_t planes, double *out)
{
    size_t k = 0;
    for (int64_t p = 0; p < planes; p++) {
        wf_pack_opt(src + (size_t)p * ps, ld, h, w, t, out + k);
        k += (size_t)(h * w + 4 * t * t);
    }
    return k;
}

static void opt_unpack(const double *in, int64_t h, int64_t w, int64_t t, int64_t planes,
                       double *dst, size_t ld, size_t ps)
{
    for (int64_t p = 0; p < planes; p++)
        wf_unpack_opt(in + (size_t)(p * (h * w + 4 * t * t)), h, w, t, dst + (size_t)p * ps, ld);
}

const wf_layout wf_layout_optimized = {
    .id = MPILAB_WF_OPTIMIZED,
    .name = "optimized",
    .alias = "opt",
    .blocked = 1,
    .uses_t = 1,
    .coef_layout = MPILAB_WF_BLOCK, /* coefficients have no frontiers */
    .exact_reads = 1,
    .extra = opt_extra,
    .rec_align = 4096,
    .check = opt_check,
    .read_block = opt_read_block,
    .read_block_east = opt_read_block_east,
    .read_coef = wf_read_coef_generic,
    .write_block = opt_write_block,
    .read_lf = opt_read_lf,
    .read_tf = wf_blocked_read_tf,
    .range = wf_blocked_range,
    .read_range = opt_read_range,
    .pack = opt_pack,
    .unpack = opt_unpack,
};
