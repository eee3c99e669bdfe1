/* Band chaining: a worker runs its band block by block, iteration after iteration; the
 * transport (w->xp) keeps the reads of the next steps in flight. */
#include <stdio.h>
#include <string.h>

#include "wavefront/wf_worker.h"

/* The step after (it, br, bc) in a worker's order; 0 if there is none. */
int wf_next_step(const worker *w, int64_t *it, int64_t *br, int64_t *bc)
{
    if (++*bc < w->nbc)
        return 1;
    *bc = 0;
    if (++*br < w->b1)
        return 1;
    *br = w->b0;
    return ++*it < w->iters;
}

/* Reads of one step, into slot `slot`: the block (into the halo'd buffer), the old left
 * frontier of the next block (east halo: one contiguous read in the optimized layout, a
 * strided gather of MB elements in the block and row-major layouts), the 5 coefficient
 * blocks, and the old top frontier of the block below (south halo) when it is in this
 * worker's band. Then a read-ahead hint for the step after (synchronous back ends).
 * With io_uring this runs twice per step: once recording the transfers, once replaying
 * the copies after they completed (wf_rec); all buffers it uses belong to the slot. */
int wf_step_read(worker *w, const wf_ioop *op, char *err, size_t errlen)
{
    const int64_t ld = w->nb + 2, br = op->br, bc = op->bc;
    const int64_t h = wf_blk_h(w, br), wd = wf_blk_w(w, bc);
    const int sl = op->slot;
    double *H = w->hb[sl], *lf = w->lfs[sl];
    const wf_layout *dl = w->data->lay, *cl = w->coef->lay;
    if (dl->read_block_east(w->data, &w->dios[sl], br, bc, H + ld + 1, (size_t)ld, lf,
                            &w->rd, err, errlen))
        return -1;
    if (bc + 1 < w->nbc)
        for (int64_t i = 0; i < h; i++)
            H[(i + 1) * ld + wd + 1] = lf[i];
    if (cl->read_coef(w->coef, &w->cios[sl], br, bc, w->cfb[sl], &w->rd, err, errlen))
        return -1;
    if (br + 1 < w->b1 &&
        dl->read_tf(w->data, &w->dios[sl], br + 1, bc, H + (size_t)((h + 1) * ld) + 1,
                    &w->rd, err, errlen))
        return -1;
    int64_t it = op->it, nbr = br, nbc = bc;
    if (w->xp != &wf_xport_uring && wf_next_step(w, &it, &nbr, &nbc))
        wf_hint_block(w, nbr, nbc, 0, 1);
    return 0;
}

int wf_step_write(worker *w, const wf_ioop *op, char *err, size_t errlen)
{
    const int64_t ld = w->nb + 2;
    if (w->data->lay->write_block(w->data, &w->wios[op->slot], op->br, op->bc,
                                  w->hb[op->slot] + ld + 1, (size_t)ld, &w->wr, err, errlen))
        return -1;
    if (w->xp != &wf_xport_uring)
        wf_hint_block(w, op->br, op->bc, 1, 0);
    return 0;
}


/* Largest step index before (it, br, bc) whose write-back touches a block this step
 * reads (the block itself, the next block's left frontier, the top frontier of the
 * block below): those are the previous iteration's steps; -1 if none. */
int64_t wf_conflict_max(const worker *w, int64_t it, int64_t br, int64_t bc)
{
    if (it == 0)
        return -1;
    const int64_t spi = (w->b1 - w->b0) * w->nbc, k = (br - w->b0) * w->nbc + bc;
    int64_t km = k;
    if (bc + 1 < w->nbc)
        km = k + 1;
    if (br + 1 < w->b1)
        km = k + w->nbc;
    return (it - 1) * spi + km;
}

/* The read cursor: the next step whose reads have not been submitted. */
typedef struct {
    int has;
    int64_t t, it, br, bc;
} rcursor;

/* Submit the reads of the steps up to `bound`, in order, while every write-back they
 * depend on was submitted (steps <= written). */
static int pump(worker *w, rcursor *rc, int64_t bound, int64_t written)
{
    while (rc->has && rc->t <= bound && wf_conflict_max(w, rc->it, rc->br, rc->bc) <= written) {
        if (w->xp->read_submit(w, rc->t, rc->it, rc->br, rc->bc))
            return -1;
        rc->t++;
        rc->has = wf_next_step(w, &rc->it, &rc->br, &rc->bc);
    }
    return 0;
}

/* A worker's steps. Step s uses slot s % D (D = nslots). The reads of steps up to s+D-1
 * are in flight while s is computed (fewer when a read depends on a write-back not yet
 * submitted); after step s's write-back and frontier sends (which read its buffer), the
 * slot is free for step s+D. D = 1 (no prefetch) is the synchronous engine, D = 2 the
 * double-buffered helper. */
int wf_band_steps(worker *w)
{
    const int64_t ld = w->nb + 2;
    const int D = w->nslots;
    /* initial top frontiers (iteration "-1") for the upper neighbour */
    if (w->has_up) {
        for (int64_t bc = 0; bc < w->nbc; bc++) {
            if (w->data->lay->read_tf(w->data, &w->dio, w->b0, bc, w->seg, &w->rd, w->err,
                           sizeof w->err))
                return -1;
            double t0 = wf_now();
            if (wf_link_send(w, &w->l_up_tf_send, w->up_tf, w->seg, (size_t)wf_blk_w(w, bc)))
                return -1;
            w->t_depwait += wf_now() - t0;
        }
    }
    if (w->iters <= 0)
        return 0;
    rcursor rc = {1, 0, 0, w->b0, 0};
    if (pump(w, &rc, D - 1, -1))
        return -1;
    int64_t s = 0;
    for (int64_t it = 0; it < w->iters; it++) {
        double t0 = wf_now();
        if (wf_gate_wait(w, it))
            return -1;
        w->t_depwait += wf_now() - t0;
        for (int64_t br = w->b0; br < w->b1; br++) {
            const int64_t h = wf_blk_h(w, br);
            const int64_t rg0 = w->row0 + br * w->mb;
            /* rows of the block that are interior rows of the whole matrix */
            const int64_t ilo = rg0 == 0 ? 1 : 0;
            const int64_t ihi = rg0 + h == w->total ? h - 1 : h;
            for (int64_t bc = 0; bc < w->nbc; bc++, s++) {
                const int slot = (int)(s % D);
                double *H = w->hb[slot];
                const int64_t c0 = bc * w->nb, wd = wf_blk_w(w, bc);
                const int64_t jlo = c0 == 0 ? 1 : 0;
                const int64_t jhi = c0 + wd == w->cols ? wd - 1 : wd;
                if (w->xp->read_wait(w, s, it, br, bc))
                    return -1;
                /* north halo: updated bottom row of the block above */
                t0 = wf_now();
                if (br == w->b0) {
                    if (w->has_up &&
                        wf_link_recv(w, &w->l_up_bf_recv, w->up_bf, H + 1, (size_t)wd))
                        return -1;
                } else {
                    memcpy(H + 1, w->north + c0, (size_t)wd * 8);
                }
                /* south halo from the lower neighbour (else read from disk with the block) */
                if (br + 1 == w->b1 && w->has_down &&
                    wf_link_recv(w, &w->l_down_tf_recv, w->down_tf, H + (size_t)((h + 1) * ld) + 1,
                              (size_t)wd))
                    return -1;
                double t1 = wf_now();
                w->t_depwait += t1 - t0;
                /* west halo: right frontier of the previous block (kept in memory) */
                if (bc > 0)
                    for (int64_t i = 0; i < h; i++)
                        H[(i + 1) * ld] = w->west[i];
                wf_block_kernel(H, ld, h, wd, ilo, ihi, jlo, jhi, w->cfb[slot]);
                wf_sim_compute(w, (ihi - ilo) * (jhi - jlo));
                for (int64_t i = 0; i < h; i++)
                    w->west[i] = H[(i + 1) * ld + wd];
                memcpy(w->north + c0, H + h * ld + 1, (size_t)wd * 8);
                w->t_compute += wf_now() - t1;
                if (w->xp->write_submit(w, s, it, br, bc))
                    return -1;
                t0 = wf_now();
                if (br + 1 == w->b1 && w->has_down &&
                    wf_link_send(w, &w->l_down_bf_send, w->down_bf, H + h * ld + 1, (size_t)wd))
                    return -1;
                if (br == w->b0 && w->has_up && it + 1 < w->iters &&
                    wf_link_send(w, &w->l_up_tf_send, w->up_tf, H + ld + 1, (size_t)wd))
                    return -1;
                w->t_depwait += wf_now() - t0;
                /* the sends read this slot's buffer: only now may step s+D reuse it */
                if (pump(w, &rc, s + D, s))
                    return -1;
            }
        }
        w->t_done[it] = w->mpi ? MPI_Wtime() : wf_now();
        wf_iter_done(w, it);
    }
    return w->xp->drain(w); /* the last write-backs */
}
