/* Block chaining (--chain block). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "wavefront/wf_worker.h"

/* ---- block chaining ------------------------------------------------------------------
 * Iterations run in sweeps of W = waves (the last sweep may be shorter). Within a sweep a
 * worker processes the items (k, r, c) of its band, iteration k of block (r, c), in order
 * of the key r + c + 2k (ties: by r, then k). Item (k, r, c) needs (k, r-1, c) and
 * (k, r, c-1) done (north and west halos at iteration k) and (k, r+1, c), (k, r, c+1) not
 * yet done (south and east halos still at iteration k-1): their keys are t-1 and t+1, so
 * the order is legal and the halos can be copied from the neighbours' resident buffers.
 * A block is read once per sweep, at its first item (with the east and south halos of
 * iteration k0-1 from disk, as in the band schedule), written back after its last item,
 * and its buffer is kept one key longer (the neighbours below and to the right read its
 * edges then). Resident blocks per block row of the band: at most 2W (keys t-2W+1..t),
 * plus two slots for the reads the I/O helper does ahead (WF_CHAIN_AHEAD; each read also
 * hints the block after it to the kernel). Sweeps are not
 * chained inside a worker (sweep s+1's first read waits until sweep s released all its
 * blocks), but workers chain freely: a worker may start sweep s+1 while its lower
 * neighbour still works on sweep s. Frontier segments between workers carry their
 * (iteration, block column) tag: the bottom frontiers arrive in the order they are used
 * (both sides order a block row's items by (c + 2k, k)), the top frontiers do not at
 * sweep boundaries and are stored per column until used (at most one pending per column:
 * the next one needs this worker's bottom frontier of the iteration after). */

typedef struct {
    int has;
    int64_t s, d, lr; /* sweep, diagonal lr + c, local block row */
} lcursor;


int64_t wf_chain_pool(int64_t R, int64_t nbc, int waves, int prefetch)
{
    int64_t per_row = 2 * (int64_t)waves < nbc ? 2 * (int64_t)waves : nbc;
    int64_t n = R * per_row + (prefetch ? WF_CHAIN_AHEAD : 0);
    return n < R * nbc ? n : R * nbc;
}

static void lcursor_fix(const worker *w, lcursor *lc);

int wf_chain_read(worker *w, const wf_ioop *op, char *err, size_t errlen)
{
    const int64_t ld = w->nb + 2, br = op->br, bc = op->bc;
    const int64_t h = wf_blk_h(w, br), wd = wf_blk_w(w, bc);
    double *H = w->ch.xhb[op->slot], *lf = w->ch.xlf[op->slot];
    const wf_layout *dl = w->data->lay, *cl = w->coef->lay;
    if (dl->read_block_east(w->data, &w->dio, br, bc, H + ld + 1, (size_t)ld, lf, &w->rd,
                            err, errlen))
        return -1;
    if (bc + 1 < w->nbc)
        for (int64_t i = 0; i < h; i++)
            H[(i + 1) * ld + wd + 1] = lf[i];
    if (cl->read_coef(w->coef, &w->cio, br, bc, w->ch.xcf[op->slot], &w->rd, err, errlen))
        return -1;
    if (br + 1 < w->b1 &&
        dl->read_tf(w->data, &w->dio, br + 1, bc, H + (size_t)((h + 1) * ld) + 1, &w->rd,
                    err, errlen))
        return -1;
    /* the block is now in its buffer for the whole sweep and its pages will not be read
     * again before the write-back: with drop-behind, drop them from the page cache at once
     * (under a memory limit they would only push other pages out) */
    if (w->drop && dl->blocked) {
        off_t off;
        size_t len;
        dl->range(w->data, &w->dio, br, bc, &off, &len);
        wf_done(w->data, off, len, 0);
        if (cl->blocked) {
            cl->range(w->coef, &w->cio, br, bc, &off, &len);
            wf_done(w->coef, off, len, 0);
        }
    }
    /* read-ahead hint for the block read after this one (the kernel fetches it while the
     * next read is served) */
    lcursor nx = {1, op->it, br - w->b0 + bc, br - w->b0 + 1};
    lcursor_fix(w, &nx);
    if (nx.has)
        wf_hint_block(w, w->b0 + nx.lr, nx.d - nx.lr, 0, 1);
    return 0;
}

int wf_chain_write(worker *w, const wf_ioop *op, char *err, size_t errlen)
{
    const int64_t ld = w->nb + 2;
    if (w->data->lay->write_block(w->data, &w->dio, op->br, op->bc, w->ch.xhb[op->slot] + ld + 1,
                                  (size_t)ld, &w->wr, err, errlen))
        return -1;
    wf_hint_block(w, op->br, op->bc, 1, 0);
    return 0;
}

/* Move the cursor to the next existing block: blocks of a sweep in order of (lr + c, lr),
 * then the next sweep. */
static void lcursor_fix(const worker *w, lcursor *lc)
{
    const int64_t R = w->b1 - w->b0, nbc = w->nbc;
    for (;;) {
        while (lc->d <= R - 1 + nbc - 1) {
            const int64_t lo = lc->d - (nbc - 1) > 0 ? lc->d - (nbc - 1) : 0;
            if (lc->lr < lo)
                lc->lr = lo;
            if (lc->lr < R && lc->lr <= lc->d)
                return;
            lc->d++;
            lc->lr = 0;
        }
        lc->s++;
        lc->d = lc->lr = 0;
        if (lc->s * (int64_t)w->waves >= w->iters) {
            lc->has = 0;
            return;
        }
    }
}

/* Submit the read of the next block of sweep `sweep` if a slot is free (1), or not (0);
 * -1 on failure. */
static int chain_submit(worker *w, lcursor *lc, int64_t sweep)
{
    if (!lc->has || lc->s != sweep || w->ch.nfree == 0)
        return 0;
    const int64_t c = lc->d - lc->lr, idx = lc->lr * w->nbc + c;
    const int slot = w->ch.xfree[--w->ch.nfree];
    w->ch.slot_of[idx] = slot;
    w->ch.xseq[slot] = wf_io_submit(w, WF_OP_CREAD, slot, lc->s, w->b0 + lc->lr, c);
    if (w->ch.xseq[slot] < 0)
        return -1;
    lc->lr++;
    lcursor_fix(w, lc);
    return 1;
}

/* Receive the bottom frontier of iteration k, column c from the upper neighbour. */
static int chain_get_bf(worker *w, int64_t k, int64_t c, double *dst, int64_t wd)
{
    const size_t sg = (size_t)w->nb + 2;
    if (wf_link_recv(w, &w->l_up_bf_recv, w->up_bf, w->ch.segx, sg))
        return -1;
    if (w->ch.segx[0] != (double)k || w->ch.segx[1] != (double)c) {
        snprintf(w->err, sizeof w->err,
                 "internal: bottom frontier (%g, %g) received where (%lld, %lld) was expected",
                 w->ch.segx[0], w->ch.segx[1], (long long)k, (long long)c);
        return -1;
    }
    memcpy(dst, w->ch.segx + 2, (size_t)wd * 8);
    return 0;
}

/* The top frontier of iteration k, column c from the lower neighbour (stored per column
 * until used: they arrive in the neighbour's order). */
static int chain_get_tf(worker *w, int64_t k, int64_t c, double *dst, int64_t wd)
{
    const size_t sg = (size_t)w->nb + 2;
    while (w->ch.tfk[c] != k) {
        if (wf_link_recv(w, &w->l_down_tf_recv, w->down_tf, w->ch.segx, sg))
            return -1;
        double kk = w->ch.segx[0], cc = w->ch.segx[1];
        if (!(cc >= 0 && cc < (double)w->nbc) || w->ch.tfk[(int64_t)cc] != WF_TF_EMPTY) {
            snprintf(w->err, sizeof w->err,
                     "internal: top frontier (%g, %g) received with no room for it", kk, cc);
            return -1;
        }
        const int64_t ci = (int64_t)cc;
        memcpy(w->ch.tfst + ci * w->nb, w->ch.segx + 2, (size_t)wf_blk_w(w, ci) * 8);
        w->ch.tfk[ci] = (int64_t)kk;
    }
    memcpy(dst, w->ch.tfst + c * w->nb, (size_t)wd * 8);
    w->ch.tfk[c] = WF_TF_EMPTY;
    return 0;
}

static int chain_send(worker *w, wf_mlink *l, wf_chan *ch, int64_t k, int64_t c, const double *v,
                      int64_t wd)
{
    w->ch.segx[0] = (double)k;
    w->ch.segx[1] = (double)c;
    memcpy(w->ch.segx + 2, v, (size_t)wd * 8);
    return wf_link_send(w, l, ch, w->ch.segx, (size_t)wd + 2);
}

/* The read of block idx (block row br, column c) at its first item in sweep s: submitted,
 * with the blocks before it in read order, if it is not yet, and waited for; then the next
 * blocks' reads are queued (up to WF_CHAIN_AHEAD) to overlap this computation. ahead counts
 * the reads submitted whose block's first item has not started; -1 on failure (w->err). */
static int chain_acquire(worker *w, lcursor *lc, int64_t s, int64_t idx, int64_t br, int64_t c,
                         int64_t *ahead)
{
    while (w->ch.slot_of[idx] < 0) {
        int r = chain_submit(w, lc, s);
        if (r < 0)
            return -1;
        if (r == 0) {
            snprintf(w->err, sizeof w->err, "internal: no buffer slot for block (%lld, %lld)",
                     (long long)br, (long long)c);
            return -1;
        }
        (*ahead)++;
    }
    (*ahead)--;
    if (wf_io_wait(w, w->ch.xseq[w->ch.slot_of[idx]]))
        return -1;
    while (w->prefetch && *ahead < WF_CHAIN_AHEAD) {
        int r = chain_submit(w, lc, s);
        if (r < 0)
            return -1;
        if (r == 0)
            break;
        (*ahead)++;
    }
    return 0;
}

/* The in-memory halos of block idx (column c, h x wd, in H): west, iteration k of the block
 * to the left; east, iteration k-1 of the block to the right, once the sweep is past its
 * first iteration (then_east; before, the east halo came from disk with the block). */
static void chain_west_east(worker *w, double *H, int64_t idx, int64_t c, int then_east,
                            int64_t h, int64_t wd)
{
    const int64_t ld = w->nb + 2;
    if (c > 0) {
        const double *Wb = w->ch.xhb[w->ch.slot_of[idx - 1]];
        const int64_t ww = wf_blk_w(w, c - 1);
        for (int64_t i = 0; i < h; i++)
            H[(i + 1) * ld] = Wb[(i + 1) * ld + ww];
    }
    if (then_east && c + 1 < w->nbc) {
        const double *E = w->ch.xhb[w->ch.slot_of[idx + 1]];
        for (int64_t i = 0; i < h; i++)
            H[(i + 1) * ld + wd + 1] = E[(i + 1) * ld + 1];
    }
}

int wf_chain_steps(worker *w)
{
    const int64_t ld = w->nb + 2, R = w->b1 - w->b0, nbc = w->nbc, K = w->iters;
    const int64_t W = w->waves;
    for (int64_t c = 0; c < nbc; c++)
        w->ch.tfk[c] = WF_TF_EMPTY;
    if (K <= 0)
        return 0;
    /* initial top frontiers (iteration -1) for the upper neighbour */
    if (w->has_up)
        for (int64_t bc = 0; bc < nbc; bc++) {
            if (w->data->lay->read_tf(w->data, &w->dio, w->b0, bc, w->seg, &w->rd, w->err,
                                      sizeof w->err))
                return -1;
            double t0 = wf_now();
            if (chain_send(w, &w->l_up_tf_send, w->up_tf, -1, bc, w->seg, wf_blk_w(w, bc)))
                return -1;
            w->t_depwait += wf_now() - t0;
        }
    lcursor lc = {1, 0, 0, 0};
    int64_t *live = malloc((size_t)(R * nbc) * sizeof *live); /* blocks in release order */
    if (!live) {
        snprintf(w->err, sizeof w->err, "out of memory");
        return -1;
    }
    int rc = -1;
    int64_t ahead = 0; /* reads submitted whose block's first item has not started */
    for (int64_t s = 0; s * W < K; s++) {
        const int64_t k0 = s * W, Wk = K - k0 < W ? K - k0 : W;
        const int64_t dmax = (R - 1) + (nbc - 1) + 2 * (Wk - 1);
        int64_t lhead = 0, ltail = 0;
        for (int64_t d2 = 0; d2 <= dmax; d2++) {
            /* release the blocks whose neighbours no longer need them (key < d2) */
            while (lhead < ltail) {
                const int64_t idx = live[lhead], lr = idx / nbc, c = idx % nbc;
                if (lr + c + 2 * Wk - 1 >= d2)
                    break;
                w->ch.xfree[w->ch.nfree++] = w->ch.slot_of[idx];
                w->ch.slot_of[idx] = -1;
                lhead++;
            }
            for (int64_t lr = 0; lr < R; lr++) {
                const int64_t br = w->b0 + lr, h = wf_blk_h(w, br);
                const int64_t rg0 = w->row0 + br * w->mb;
                const int64_t ilo = rg0 == 0 ? 1 : 0;
                const int64_t ihi = rg0 + h == w->total ? h - 1 : h;
                for (int64_t kk = 0; kk < Wk; kk++) {
                    const int64_t c = d2 - lr - 2 * kk, k = k0 + kk;
                    if (c < 0 || c >= nbc)
                        continue;
                    const int64_t idx = lr * nbc + c;
                    const int64_t c0 = c * w->nb, wd = wf_blk_w(w, c);
                    const int64_t jlo = c0 == 0 ? 1 : 0;
                    const int64_t jhi = c0 + wd == w->cols ? wd - 1 : wd;
                    if (kk == 0) {
                        /* first item of the block in this sweep: its read */
                        live[ltail++] = idx;
                        if (chain_acquire(w, &lc, s, idx, br, c, &ahead))
                            goto out;
                    }
                    const int slot = w->ch.slot_of[idx];
                    double *H = w->ch.xhb[slot];
                    double t0 = wf_now();
                    /* north halo: iteration k of the block above */
                    if (lr > 0) {
                        const double *N = w->ch.xhb[w->ch.slot_of[idx - nbc]];
                        memcpy(H + 1, N + wf_blk_h(w, br - 1) * ld + 1, (size_t)wd * 8);
                    } else if (w->has_up && chain_get_bf(w, k, c, H + 1, wd)) {
                        goto out;
                    }
                    /* south halo: iteration k-1 of the block below (read with the block
                     * for the sweep's first iteration inside the band) */
                    double *S = H + (size_t)((h + 1) * ld) + 1;
                    if (lr + 1 < R) {
                        if (kk > 0) {
                            const double *B = w->ch.xhb[w->ch.slot_of[idx + nbc]];
                            memcpy(S, B + ld + 1, (size_t)wd * 8);
                        }
                    } else if (w->has_down && chain_get_tf(w, k - 1, c, S, wd)) {
                        goto out;
                    }
                    double t1 = wf_now();
                    w->t_depwait += t1 - t0;
                    chain_west_east(w, H, idx, c, kk > 0, h, wd);
                    wf_block_kernel(H, ld, h, wd, ilo, ihi, jlo, jhi, w->ch.xcf[slot]);
                    wf_sim_compute(w, (ihi - ilo) * (jhi - jlo));
                    w->t_compute += wf_now() - t1;
                    if (kk == Wk - 1 && wf_io_submit(w, WF_OP_CWRITE, slot, s, br, c) < 0)
                        goto out;
                    t0 = wf_now();
                    if (lr == R - 1 && w->has_down &&
                        chain_send(w, &w->l_down_bf_send, w->down_bf, k, c, H + h * ld + 1, wd))
                        goto out;
                    if (lr == 0 && w->has_up && k + 1 < K &&
                        chain_send(w, &w->l_up_tf_send, w->up_tf, k, c, H + ld + 1, wd))
                        goto out;
                    w->t_depwait += wf_now() - t0;
                    if (lr == R - 1 && c == nbc - 1)
                        w->t_done[k] = w->mpi ? MPI_Wtime() : wf_now();
                }
            }
        }
        /* end of the sweep: every block was written back; free all slots */
        for (; lhead < ltail; lhead++) {
            w->ch.xfree[w->ch.nfree++] = w->ch.slot_of[live[lhead]];
            w->ch.slot_of[live[lhead]] = -1;
        }
    }
    rc = wf_io_wait(w, w->submitted); /* the last write-backs */
out:
    free(live);
    return rc;
}
