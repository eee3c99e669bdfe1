/* The layout table and the pieces the layouts share. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "wavefront/wf_internal.h"

static const wf_layout *const layouts[] = {&wf_layout_rowmajor, &wf_layout_block,
                                           &wf_layout_optimized};

const wf_layout *wf_layout_get(int id)
{
    for (size_t i = 0; i < sizeof layouts / sizeof layouts[0]; i++)
        if (layouts[i]->id == id)
            return layouts[i];
    return NULL;
}

int wf_layout_for_planes(int id, int64_t planes)
{
    const wf_layout *l = wf_layout_get(id);
    return l && planes > 1 ? l->coef_layout : id;
}

int mpilab_wf_layout_parse(const char *name)
{
    if (!name)
        return -1;
    for (size_t i = 0; i < sizeof layouts / sizeof layouts[0]; i++)
        if (!strcmp(name, layouts[i]->name) || (layouts[i]->alias && !strcmp(name, layouts[i]->alias)))
            return layouts[i]->id;
    return -1;
}

const char *mpilab_wf_layout_name(int layout)
{
    const wf_layout *l = wf_layout_get(layout);
    return l ? l->name : "?";
}

const char *wf_check_blocked(int64_t rows, int64_t cols, int64_t mb, int64_t nb)
{
    if (mb < 1 || nb < 1)
        return "block size must be at least 1x1";
    if (mb > rows || nb > cols)
        return "block larger than the matrix";
    return NULL;
}

int wf_read_block_east_generic(wf_file *f, wf_blockio *b, int64_t br, int64_t bc, double *dst,
                               size_t ld, double *lf, wf_ctr *ctr, char *err, size_t el)
{
    if (f->lay->read_block(f, b, br, bc, 0, dst, ld, ctr, err, el))
        return -1;
    int64_t nbc = (int64_t)((f->h.cols + (uint64_t)b->nb - 1) / (uint64_t)b->nb);
    if (bc + 1 < nbc && f->lay->read_lf(f, b, br, bc + 1, lf, ctr, err, el))
        return -1;
    return 0;
}

int wf_read_coef_generic(wf_file *f, wf_blockio *b, int64_t br, int64_t bc, double *dst,
                         wf_ctr *ctr, char *err, size_t el)
{
    int64_t r0, c0, h, w;
    wf_blk_dims(f, b, br, bc, &r0, &c0, &h, &w);
    for (int p = 0; p < (int)f->h.planes; p++)
        if (f->lay->read_block(f, b, br, bc, p, dst + (size_t)(p * h * w), (size_t)w, ctr, err,
                               el))
            return -1;
    return 0;
}

void wf_blk_dims(const wf_file *f, const wf_blockio *b, int64_t br, int64_t bc, int64_t *r0,
                 int64_t *c0, int64_t *h, int64_t *w)
{
    *r0 = br * b->mb;
    *c0 = bc * b->nb;
    int64_t rr = (int64_t)f->h.rows - *r0, cc = (int64_t)f->h.cols - *c0;
    *h = rr < b->mb ? rr : b->mb;
    *w = cc < b->nb ? cc : b->nb;
}

void wf_blocked_range(const wf_file *f, const wf_blockio *b, int64_t br, int64_t bc, off_t *off,
                      size_t *len)
{
    (void)b;
    *off = wf_block_off(&f->h, br, bc);
    *len = wf_block_bytes(&f->h, br, bc);
}

int wf_blocked_read_tf(wf_file *f, wf_blockio *b, int64_t br, int64_t bc, double *dst,
                       wf_ctr *ctr, char *err, size_t el)
{
    int64_t r0, c0, h, w;
    wf_blk_dims(f, b, br, bc, &r0, &c0, &h, &w);
    return wf_bread(f, b, dst, (size_t)w * 8, wf_block_off(&f->h, br, bc), ctr, err, el);
}

static int rec_add(wf_rec *r, wf_file *f, void *buf, size_t len, off_t off, int write)
{
    if (r->n == r->cap) {
        size_t cap = r->cap ? 2 * r->cap : 64;
        wf_xfer *v = realloc(r->v, cap * sizeof *v);
        if (!v)
            return -1;
        r->v = v;
        r->cap = cap;
    }
    r->v[r->n++] = (wf_xfer){buf, len, off, write, f};
    return 0;
}

/* wf_read / wf_write, or record / skip them (see wf_rec). */
int wf_bread(wf_file *f, const wf_blockio *b, void *dst, size_t len, off_t off, wf_ctr *ctr,
             char *err, size_t el)
{
    if (!b->rec)
        return wf_read(f, dst, len, off, ctr, err, el);
    if (b->rec->mode == WF_REC_REPLAY)
        return 0;
    if (ctr) {
        ctr->bytes += (int64_t)len;
        ctr->reqs++;
    }
    if (rec_add(b->rec, f, dst, len, off, 0)) {
        snprintf(err, el, "out of memory");
        return -1;
    }
    return 0;
}

int wf_bwrite(wf_file *f, const wf_blockio *b, const void *src, size_t len, off_t off,
              wf_ctr *ctr, char *err, size_t el)
{
    if (!b->rec)
        return wf_write(f, src, len, off, ctr, err, el);
    if (b->rec->mode == WF_REC_REPLAY)
        return 0;
    if (ctr) {
        ctr->bytes += (int64_t)len;
        ctr->reqs++;
    }
    if (rec_add(b->rec, f, (void *)src, len, off, 1)) {
        snprintf(err, el, "out of memory");
        return -1;
    }
    return 0;
}
