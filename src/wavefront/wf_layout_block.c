/* Block layout: each MB x NB block contiguous, row-major inside; in a 5-plane coefficient
 * file the planes of one block follow each other. The left frontier is a strided column:
 * h single-element reads. */
#include <string.h>

#include "wavefront/wf_internal.h"

static int64_t blk_extra(int64_t t)
{
    (void)t;
    return 0;
}

static const char *blk_check(int64_t rows, int64_t cols, int64_t mb, int64_t nb, int64_t t)
{
    (void)t;
    return wf_check_blocked(rows, cols, mb, nb);
}

static int blk_read_block(wf_file *f, wf_blockio *b, int64_t br, int64_t bc, int plane,
                          double *dst, size_t ld, wf_ctr *ctr, char *err, size_t el)
{
    int64_t r0, c0, h, w;
    wf_blk_dims(f, b, br, bc, &r0, &c0, &h, &w);
    off_t off = wf_block_off(&f->h, br, bc) + (off_t)((int64_t)plane * h * w * 8);
    if (ld == (size_t)w)
        return wf_bread(f, b, dst, (size_t)(h * w) * 8, off, ctr, err, el);
    if (wf_bread(f, b, b->tmp, (size_t)(h * w) * 8, off, ctr, err, el))
        return -1;
    for (int64_t i = 0; i < h; i++)
        memcpy(dst + (size_t)i * ld, b->tmp + i * w, (size_t)w * 8);
    return 0;
}

/* the planes of a block are stored one after the other: one request */
static int blk_read_coef(wf_file *f, wf_blockio *b, int64_t br, int64_t bc, double *dst,
                         wf_ctr *ctr, char *err, size_t el)
{
    return wf_bread(f, b, dst, wf_block_bytes(&f->h, br, bc), wf_block_off(&f->h, br, bc), ctr,
                    err, el);
}

static int blk_write_block(wf_file *f, wf_blockio *b, int64_t br, int64_t bc, const double *src,
                           size_t ld, wf_ctr *ctr, char *err, size_t el)
{
    int64_t r0, c0, h, w;
    wf_blk_dims(f, b, br, bc, &r0, &c0, &h, &w);
    off_t off = wf_block_off(&f->h, br, bc);
    if (ld == (size_t)w)
        return wf_bwrite(f, b, src, (size_t)(h * w) * 8, off, ctr, err, el);
    for (int64_t i = 0; i < h; i++)
        memcpy(b->tmp + i * w, src + (size_t)i * ld, (size_t)w * 8);
    return wf_bwrite(f, b, b->tmp, (size_t)(h * w) * 8, off, ctr, err, el);
}

/* strided column inside the block: h small reads */
static int blk_read_lf(wf_file *f, wf_blockio *b, int64_t br, int64_t bc, double *dst,
                       wf_ctr *ctr, char *err, size_t el)
{
    int64_t r0, c0, h, w;
    wf_blk_dims(f, b, br, bc, &r0, &c0, &h, &w);
    off_t off = wf_block_off(&f->h, br, bc);
    for (int64_t i = 0; i < h; i++)
        if (wf_bread(f, b, dst + i, 8, off + (off_t)(i * w * 8), ctr, err, el))
            return -1;
    return 0;
}

static size_t blk_pack(const double *src, size_t ld, size_t ps, int64_t h, int64_t w, int64_t t,
                       int64_t planes, double *out)
{
    (void)t;
    size_t k = 0;
    for (int64_t p = 0; p < planes; p++)
        for (int64_t i = 0; i < h; i++, k += (size_t)w)
            memcpy(out + k, src + (size_t)p * ps + (size_t)i * ld, (size_t)w * 8);
    return k;
}

static void blk_unpack(const double *in, int64_t h, int64_t w, int64_t t, int64_t planes,
                       double *dst, size_t ld, size_t ps)
{
    (void)t;
    for (int64_t p = 0; p < planes; p++)
        for (int64_t i = 0; i < h; i++)
            memcpy(dst + (size_t)p * ps + (size_t)i * ld, in + (p * h + i) * w, (size_t)w * 8);
}

const wf_layout wf_layout_block = {
    .id = MPILAB_WF_BLOCK,
    .name = "block",
    .alias = NULL,
    .blocked = 1,
    .uses_t = 0,
    .coef_layout = MPILAB_WF_BLOCK,
    .exact_reads = 0,
    .extra = blk_extra,
    .check = blk_check,
    .read_block = blk_read_block,
    .read_block_east = wf_read_block_east_generic,
    .read_coef = blk_read_coef,
    .write_block = blk_write_block,
    .read_lf = blk_read_lf,
    .read_tf = wf_blocked_read_tf,
    .range = wf_blocked_range,
    .pack = blk_pack,
    .unpack = blk_unpack,
};
