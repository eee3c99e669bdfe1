/* Wavefront band sources (one matrix stored as consecutive band files, read strip by
 * strip in any layout), loading a matrix into memory and the in-memory reference. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "wavefront/wf_bandio.h"

#define ERR(...) snprintf(err, errlen, __VA_ARGS__)

/* ---- sources: one matrix stored as band files --------------------------------------- */

void wf_src_close(wf_source *s)
{
    for (int i = 0; i < s->n; i++)
        wf_close(&s->f[i]);
    free(s->f);
    s->f = NULL;
}

int wf_src_open(wf_source *s, const char *const *in, int nin, char *err, size_t errlen)
{
    memset(s, 0, sizeof *s);
    if (nin < 1) {
        ERR("no input file");
        return -1;
    }
    s->f = calloc((size_t)nin, sizeof *s->f);
    if (!s->f) {
        ERR("out of memory");
        return -1;
    }
    for (int i = 0; i < nin; i++) {
        if (wf_open(&s->f[i], in[i], 0, MPILAB_WF_IO_PREAD, err, errlen)) {
            wf_src_close(s);
            return -1;
        }
        s->n = i + 1;
        const wf_hdr *a = &s->f[0].h, *b = &s->f[i].h;
        uint64_t expect0 = i ? s->f[i - 1].h.row0 + s->f[i - 1].h.rows : 0;
        if (b->row0 != expect0 || b->layout != a->layout || b->planes != a->planes ||
            b->cols != a->cols || b->total_rows != a->total_rows || b->mb != a->mb ||
            b->nb != a->nb || b->t != a->t || b->iters_done != a->iters_done) {
            ERR("%s: band does not continue %s (rows %llu.., layout, blocking or iterations "
                "differ)", in[i], i ? in[i - 1] : "the matrix", (unsigned long long)b->row0);
            wf_src_close(s);
            return -1;
        }
        if (b->state == WF_STATE_RUNNING) {
            ERR("%s: an in-place run of iterations %llu.. was interrupted: the file holds a mix "
                "of iterations (make it again from the initial matrix)",
                in[i], (unsigned long long)b->iters_done);
            wf_src_close(s);
            return -1;
        }
    }
    const wf_hdr *last = &s->f[nin - 1].h;
    if (last->row0 + last->rows != last->total_rows) {
        ERR("%s: bands end at row %llu of %llu (missing band files?)", in[nin - 1],
            (unsigned long long)(last->row0 + last->rows), (unsigned long long)last->total_rows);
        wf_src_close(s);
        return -1;
    }
    s->rows = (int64_t)last->total_rows;
    s->cols = (int64_t)last->cols;
    s->planes = (int64_t)last->planes;
    s->layout = (int)last->layout;
    s->iters_done = last->iters_done;
    return 0;
}

/* Read a row-major source rows [r, r+h) into buf (plane-major). */
static int src_read_rows(wf_source *s, int64_t r, int64_t h, double *buf, char *err, size_t errlen)
{
    for (int64_t p = 0; p < s->planes; p++) {
        int64_t done = 0;
        for (int i = 0; i < s->n && done < h; i++) {
            const wf_hdr *fh = &s->f[i].h;
            int64_t a = (int64_t)fh->row0, b = a + (int64_t)fh->rows;
            int64_t lo = r + done;
            if (lo < a || lo >= b)
                continue;
            int64_t cnt = (r + h < b ? r + h : b) - lo;
            if (wf_read(&s->f[i], buf + (size_t)(p * h + done) * (size_t)s->cols,
                        (size_t)(cnt * s->cols) * 8, wf_rowmajor_off(fh, (int)p, lo - a, 0), NULL, err,
                        errlen))
                return -1;
            done += cnt;
        }
    }
    return 0;
}

/* Walk a source strip by strip (see wf_bandio.h). */
int wf_src_walk(wf_source *s, int64_t (*bound)(void *, int64_t), void *bctx, wf_strip_fn fn,
                void *ctx, char *err, size_t errlen)
{
    int64_t n = s->cols, pl = s->planes;
    const wf_layout *lay = wf_layout_get(s->layout);
    if (!lay->blocked) {
        int64_t cap = (8 << 20) / (n * 8 * pl);
        if (cap < 1)
            cap = 1;
        int64_t maxh = cap;
        for (int64_t r = 0; r < s->rows;) {
            int64_t e = bound ? bound(bctx, r) : r + cap;
            if (e > s->rows)
                e = s->rows;
            if (e - r > maxh)
                maxh = e - r;
            r = e;
        }
        double *buf = malloc((size_t)(maxh * n * pl) * 8);
        if (!buf) {
            ERR("out of memory");
            return -1;
        }
        int rc = 0;
        for (int64_t r = 0; r < s->rows && !rc;) {
            int64_t e = bound ? bound(bctx, r) : r + cap;
            if (e > s->rows)
                e = s->rows;
            rc = src_read_rows(s, r, e - r, buf, err, errlen);
            if (!rc)
                rc = fn(ctx, r, e - r, buf, err, errlen);
            r = e;
        }
        free(buf);
        return rc;
    }
    const wf_hdr *h0 = &s->f[0].h;
    int64_t mb = (int64_t)h0->mb, bcs = wf_nblockcols(h0);
    size_t rowbytes = 0;
    for (int i = 0; i < s->n; i++) {
        size_t rb = (size_t)(wf_block_off(&s->f[i].h, 1, 0) - WF_HDR_BYTES);
        if (wf_nblockrows(&s->f[i].h) == 1)
            rb = (size_t)s->f[i].h.payload;
        if (rb > rowbytes)
            rowbytes = rb;
    }
    double *strip = malloc((size_t)(mb * n * pl) * 8);
    double *raw = malloc(rowbytes);
    if (!strip || !raw) {
        free(strip);
        free(raw);
        ERR("out of memory");
        return -1;
    }
    int rc = 0;
    for (int i = 0; i < s->n && !rc; i++) {
        wf_file *f = &s->f[i];
        for (int64_t br = 0; br < wf_nblockrows(&f->h) && !rc; br++) {
            int64_t h = wf_block_h(&f->h, br);
            off_t off0 = wf_block_off(&f->h, br, 0);
            off_t end = br + 1 < wf_nblockrows(&f->h) ? wf_block_off(&f->h, br + 1, 0)
                                                       : (off_t)(WF_HDR_BYTES + f->h.payload);
            rc = wf_read(f, raw, (size_t)(end - off0), off0, NULL, err, errlen);
            for (int64_t bc = 0; bc < bcs && !rc; bc++) {
                int64_t w = wf_block_w(&f->h, bc);
                const double *src = raw + (wf_block_off(&f->h, br, bc) - off0) / 8;
                lay->unpack(src, h, w, (int64_t)f->h.t, pl, strip + bc * (int64_t)f->h.nb,
                            (size_t)n, (size_t)(h * n));
            }
            if (!rc)
                rc = fn(ctx, (int64_t)f->h.row0 + br * mb, h, strip, err, errlen);
        }
    }
    free(strip);
    free(raw);
    return rc;
}


/* ---- load --------------------------------------------------------------------------- */

typedef struct {
    double *dst;
    int64_t rows, cols, planes;
} load_ctx;

static int load_strip(void *vc, int64_t r, int64_t h, const double *buf, char *err, size_t el)
{
    (void)err;
    (void)el;
    load_ctx *c = vc;
    for (int64_t p = 0; p < c->planes; p++)
        memcpy(c->dst + (size_t)((p * c->rows + r) * c->cols), buf + (size_t)(p * h * c->cols),
               (size_t)(h * c->cols) * 8);
    return 0;
}

int mpilab_wf_load(const char *const *in, int nin, double **out, int64_t *rows, int64_t *cols,
                   int64_t *planes, char *err, size_t errlen)
{
    wf_source s;
    if (wf_src_open(&s, in, nin, err, errlen))
        return -1;
    load_ctx c = {NULL, s.rows, s.cols, s.planes};
    c.dst = malloc((size_t)(s.rows * s.cols * s.planes) * 8);
    if (!c.dst) {
        ERR("%s: matrix does not fit in memory", in[0]);
        wf_src_close(&s);
        return -1;
    }
    int rc = wf_src_walk(&s, NULL, NULL, load_strip, &c, err, errlen);
    wf_src_close(&s);
    if (rc) {
        free(c.dst);
        return -1;
    }
    *out = c.dst;
    *rows = s.rows;
    *cols = s.cols;
    *planes = s.planes;
    return 0;
}

void mpilab_wf_reference(double *d, const double *coef, int64_t rows, int64_t cols,
                         int64_t iterations)
{
    size_t pl = (size_t)(rows * cols);
    const double *zb = coef, *zu = coef + pl, *zv = coef + 2 * pl, *zr = coef + 3 * pl,
                 *zz = coef + 4 * pl;
    for (int64_t it = 0; it < iterations; it++)
        for (int64_t i = 1; i < rows - 1; i++)
            for (int64_t j = 1; j < cols - 1; j++) {
                size_t k = (size_t)(i * cols + j);
                d[k] = wf_kernel(d[k], d[k - (size_t)cols], d[k + (size_t)cols], d[k - 1],
                                 d[k + 1], zb[k], zu[k], zv[k], zr[k], zz[k]);
            }
}
