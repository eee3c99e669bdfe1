/* Row-major layout: plane by plane, row by row. The engine's blocking comes from the run
 * options; a block is h row pieces, its left frontier h single elements. */
#include "wavefront/wf_internal.h"

static off_t rm_off(const wf_hdr *h, int plane, int64_t r, int64_t c)
{
    return (off_t)WF_HDR_BYTES +
           (off_t)(((int64_t)plane * (int64_t)h->rows * (int64_t)h->cols +
                    r * (int64_t)h->cols + c) * 8);
}

off_t wf_rowmajor_off(const wf_hdr *h, int plane, int64_t r, int64_t c)
{
    return rm_off(h, plane, r, c);
}

static int64_t rm_extra(int64_t t)
{
    (void)t;
    return 0;
}

static const char *rm_check(int64_t rows, int64_t cols, int64_t mb, int64_t nb, int64_t t)
{
    (void)rows, (void)cols, (void)mb, (void)nb, (void)t;
    return NULL;
}

static int rm_read_block(wf_file *f, wf_blockio *b, int64_t br, int64_t bc, int plane,
                         double *dst, size_t ld, wf_ctr *ctr, char *err, size_t el)
{
    int64_t r0, c0, h, w;
    wf_blk_dims(f, b, br, bc, &r0, &c0, &h, &w);
    for (int64_t i = 0; i < h; i++)
        if (wf_bread(f, b, dst + (size_t)i * ld, (size_t)w * 8, rm_off(&f->h, plane, r0 + i, c0),
                     ctr, err, el))
            return -1;
    return 0;
}

static int rm_write_block(wf_file *f, wf_blockio *b, int64_t br, int64_t bc, const double *src,
                          size_t ld, wf_ctr *ctr, char *err, size_t el)
{
    int64_t r0, c0, h, w;
    wf_blk_dims(f, b, br, bc, &r0, &c0, &h, &w);
    for (int64_t i = 0; i < h; i++)
        if (wf_bwrite(f, b, src + (size_t)i * ld, (size_t)w * 8, rm_off(&f->h, 0, r0 + i, c0),
                      ctr, err, el))
            return -1;
    return 0;
}

/* one element per row: h small reads */
static int rm_read_lf(wf_file *f, wf_blockio *b, int64_t br, int64_t bc, double *dst,
                      wf_ctr *ctr, char *err, size_t el)
{
    int64_t r0, c0, h, w;
    wf_blk_dims(f, b, br, bc, &r0, &c0, &h, &w);
    for (int64_t i = 0; i < h; i++)
        if (wf_bread(f, b, dst + i, 8, rm_off(&f->h, 0, r0 + i, c0), ctr, err, el))
            return -1;
    return 0;
}

static int rm_read_tf(wf_file *f, wf_blockio *b, int64_t br, int64_t bc, double *dst,
                      wf_ctr *ctr, char *err, size_t el)
{
    int64_t r0, c0, h, w;
    wf_blk_dims(f, b, br, bc, &r0, &c0, &h, &w);
    return wf_bread(f, b, dst, (size_t)w * 8, rm_off(&f->h, 0, r0, c0), ctr, err, el);
}

/* the rows' span */
static void rm_range(const wf_file *f, const wf_blockio *b, int64_t br, int64_t bc, off_t *off,
                     size_t *len)
{
    int64_t r0, c0, h, w;
    wf_blk_dims(f, b, br, bc, &r0, &c0, &h, &w);
    *off = rm_off(&f->h, 0, r0, c0);
    *len = (size_t)((((h - 1) * (int64_t)f->h.cols) + w) * 8);
}

const wf_layout wf_layout_rowmajor = {
    .id = MPILAB_WF_ROWMAJOR,
    .name = "rowmajor",
    .alias = "row-major",
    .blocked = 0,
    .uses_t = 0,
    .coef_layout = MPILAB_WF_ROWMAJOR,
    .exact_reads = 0,
    .extra = rm_extra,
    .check = rm_check,
    .read_block = rm_read_block,
    .read_block_east = wf_read_block_east_generic,
    .read_coef = wf_read_coef_generic,
    .write_block = rm_write_block,
    .read_lf = rm_read_lf,
    .read_tf = rm_read_tf,
    .range = rm_range,
    .pack = NULL,
    .unpack = NULL,
};
