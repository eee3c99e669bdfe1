/* Wavefront layout conversion (pre/post-processing): a matrix stored as band files in one
 * layout rewritten as band files in another (or the same layout cut into other bands). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "wavefront/wf_bandio.h"

#define ERR(...) snprintf(err, errlen, __VA_ARGS__)

/* ---- convert ------------------------------------------------------------------------ */

typedef struct {
    wf_outfile *o;
    int nout;
    int64_t *band0; /* nout + 1 row boundaries */
    int64_t cols, planes, mb;
    int64_t chunk;  /* strip height for row-major -> row-major */
    double *tmp;
} conv_ctx;

static int64_t conv_bound(void *vc, int64_t r)
{
    conv_ctx *c = vc;
    int64_t e = r + c->chunk;
    for (int i = 1; i <= c->nout; i++)
        if (c->band0[i] > r) {
            if (c->band0[i] < e)
                e = c->band0[i];
            break;
        }
    return e;
}

static int conv_strip(void *vc, int64_t r, int64_t h, const double *buf, char *err, size_t errlen)
{
    conv_ctx *c = vc;
    if (wf_sig_pending()) {
        ERR("interrupted: no output written");
        return -1;
    }
    int k = 0;
    while (k + 1 < c->nout && c->band0[k + 1] <= r)
        k++;
    wf_outfile *o = &c->o[k];
    int64_t lr = r - (int64_t)o->h.row0, n = c->cols;
    if (lr + h > (int64_t)o->h.rows) {
        ERR("%s: internal error: strip crosses a band boundary", o->tmp);
        return -1;
    }
    const wf_layout *lay = wf_layout_get((int)o->h.layout);
    if (!lay->blocked) {
        for (int64_t p = 0; p < c->planes; p++)
            if (wf_pwrite_full(o->fd, buf + (size_t)(p * h * n), (size_t)(h * n) * 8,
                            wf_rowmajor_off(&o->h, (int)p, lr, 0), o->tmp, err, errlen))
                return -1;
        return 0;
    }
    int64_t br = lr / (int64_t)o->h.mb;
    if (lr % (int64_t)o->h.mb || h != wf_block_h(&o->h, br)) {
        ERR("%s: internal error: strip is not a block row", o->tmp);
        return -1;
    }
    off_t off0 = wf_block_off(&o->h, br, 0);
    off_t end = br + 1 < wf_nblockrows(&o->h) ? wf_block_off(&o->h, br + 1, 0)
                                               : (off_t)(WF_HDR_BYTES + o->h.payload);
    memset(c->tmp, 0, (size_t)(end - off0)); /* the records' padding, if any */
    for (int64_t bc = 0; bc < wf_nblockcols(&o->h); bc++) {
        int64_t w = wf_block_w(&o->h, bc);
        lay->pack(buf + bc * (int64_t)o->h.nb, (size_t)n, (size_t)(h * n), h, w,
                  (int64_t)o->h.t, c->planes, c->tmp + (wf_block_off(&o->h, br, bc) - off0) / 8);
    }
    return wf_pwrite_full(o->fd, c->tmp, (size_t)(end - off0), off0, o->tmp, err, errlen);
}

static int wf_convert(const char *const *in, int nin, const char *out,
                      const mpilab_wf_convert_opts *opt, char *err, size_t errlen)
{
    wf_source s;
    if (wf_src_open(&s, in, nin, err, errlen))
        return -1;
    int layout = wf_layout_for_planes(opt->layout, s.planes);
    const wf_layout *inl = wf_layout_get(s.layout), *outl = wf_layout_get(layout);
    int rc = -1;
    conv_ctx c;
    memset(&c, 0, sizeof c);
    int nout = opt->nout < 1 ? 1 : opt->nout;
    int64_t mb = opt->mb, nb = opt->nb, t = opt->t < 1 ? 1 : opt->t;
    const char *why;
    if (!outl) {
        ERR("unknown layout");
        goto done;
    }
    if (inl->blocked && outl->blocked) {
        ERR("%s: is in %s layout; convert it to rowmajor first", in[0],
            mpilab_wf_layout_name(s.layout));
        goto done;
    }
    if (inl->blocked) /* post-processing: bands follow the input blocking */
        mb = (int64_t)s.f[0].h.mb, nb = (int64_t)s.f[0].h.nb;
    if (outl->blocked || nout > 1) {
        if (mb < 1 || (outl->blocked && nb < 1)) {
            ERR("block size missing (--mb/--nb)");
            goto done;
        }
        if (mb > s.rows || (outl->blocked && nb > s.cols)) {
            ERR("block %lldx%lld larger than the %lldx%lld matrix", (long long)mb, (long long)nb,
                (long long)s.rows, (long long)s.cols);
            goto done;
        }
        if ((why = wf_check_blocking(layout, s.rows, s.cols, mb, nb, t))) {
            ERR("block %lldx%lld: %s", (long long)mb, (long long)nb, why);
            goto done;
        }
    }
    int64_t nbr = mb > 0 ? (s.rows + mb - 1) / mb : s.rows;
    if (nout > nbr) {
        ERR("%d bands but only %lld block rows", nout, (long long)nbr);
        goto done;
    }
    c.nout = nout;
    c.cols = s.cols;
    c.planes = s.planes;
    c.mb = mb;
    c.o = calloc((size_t)nout, sizeof *c.o);
    c.band0 = calloc((size_t)nout + 1, sizeof *c.band0);
    if (!c.o || !c.band0) {
        ERR("out of memory");
        goto done;
    }
    for (int k = 0; k <= nout; k++) {
        int64_t b = nbr * k / nout;
        c.band0[k] = nout == 1 ? (k ? s.rows : 0) : (b * mb > s.rows ? s.rows : b * mb);
    }
    for (int k = 0; k < nout; k++)
        c.o[k].fd = -1;
    for (int k = 0; k < nout; k++) {
        char path[4096];
        if (nout == 1)
            snprintf(path, sizeof path, "%s", out);
        else
            snprintf(path, sizeof path, "%s.%d", out, k);
        for (int i = 0; i < nin; i++)
            if (!strcmp(path, in[i])) {
                ERR("%s: output would overwrite an input", path);
                wf_out_abort(c.o, nout);
                goto done;
            }
        wf_hdr h;
        wf_fill_hdr(&h, layout, s.planes, c.band0[k + 1] - c.band0[k], s.cols, c.band0[k], s.rows,
                 mb, nb, t);
        h.iters_done = s.iters_done; /* post-processing keeps what a run recorded */
        if (wf_out_create(&c.o[k], path, &h, err, errlen)) {
            wf_out_abort(c.o, k + 1);
            goto done;
        }
    }
    if (outl->blocked) {
        c.chunk = mb;
        c.tmp = malloc((size_t)(mb * s.cols * s.planes +
                                (s.cols / nb + 1) * outl->extra(t) * s.planes) * 8 +
                       (size_t)((s.cols / nb + 1) * outl->rec_align));
    } else {
        c.chunk = (8 << 20) / (s.cols * 8 * s.planes);
        if (c.chunk < 1)
            c.chunk = 1;
    }
    if (outl->blocked && !c.tmp) {
        ERR("out of memory");
        wf_out_abort(c.o, nout);
        goto done;
    }
    /* blocked output: strips are the output block rows (band boundaries are block rows) */
    if (!inl->blocked)
        rc = wf_src_walk(&s, conv_bound, &c, conv_strip, &c, err, errlen);
    else
        rc = wf_src_walk(&s, NULL, NULL, conv_strip, &c, err, errlen);
    if (rc) {
        wf_out_abort(c.o, nout);
        goto done;
    }
    rc = wf_out_commit(c.o, nout, err, errlen);
done:
    free(c.tmp);
    free(c.o);
    free(c.band0);
    wf_src_close(&s);
    return rc;
}

int mpilab_wf_convert(const char *const *in, int nin, const char *out,
                      const mpilab_wf_convert_opts *opt, char *err, size_t errlen)
{
    wf_sighold g;
    wf_sig_hold(&g);
    int rc = wf_convert(in, nin, out, opt, err, errlen);
    wf_sig_release(&g); /* a signal held meanwhile acts now, the temporaries gone */
    return rc;
}
