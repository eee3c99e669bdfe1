/* LogGP model assembly from an all-pairs LogGP measurement and predictions of the entries
 * that declare a pattern (include/mpilab/models.h). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "mpilab/models.h"
#include "mpilab/quality.h"
#include "mpilab/robust.h"
#include "mpilab/results.h"
#include "model/assemble.h"

#define MAXR MPILAB_MODELS_MAX_RANGES
#define MAX_SIZES_LOGGP 2048 /* the piecewise split handles up to 2048 sizes */

static json_t *series_json(const mpilab_loggp_series_t *se)
{
    json_t *a = json_array();
    for (size_t k = 0; k < se->stats.reps; k++)
        json_array_append_new(a, mpilab_json_real(se->samples[k]));
    return a;
}

static json_t *params_json(const mpilab_loggp_t *f, json_t *obj)
{
    json_object_set_new(obj, "L", mpilab_json_real(f->L));
    json_object_set_new(obj, "L_raw", mpilab_json_real(f->L_raw));
    json_object_set_new(obj, "os", mpilab_json_real(f->os));
    json_object_set_new(obj, "os_per_byte", mpilab_json_real(f->os_per_byte));
    json_object_set_new(obj, "or", mpilab_json_real(f->orr));
    json_object_set_new(obj, "or_per_byte", mpilab_json_real(f->or_per_byte));
    json_object_set_new(obj, "g", mpilab_json_real(f->g));
    json_object_set_new(obj, "G", mpilab_json_real(f->G));
    json_t *fl = json_array();
    if (f->flags & MPILAB_LOGGP_L_CLAMPED)
        json_array_append_new(fl, json_string("L_clamped"));
    if (f->flags & MPILAB_LOGGP_G_CLAMPED)
        json_array_append_new(fl, json_string("G_clamped"));
    if (f->flags & MPILAB_LOGGP_GAP_CLAMPED)
        json_array_append_new(fl, json_string("g_clamped"));
    json_object_set_new(obj, "flags", fl);
    return obj;
}

/* Work arrays of the assembly: per-size series of one pair, and per-pair fits. */
typedef struct lg {
    size_t n, p, npairs;
    int full;             /* every pair of p ranks measured: predictions are made */
    int keep_samples;     /* per_size carries every sample (within the sample budget) */
    double *x, *rtt, *os, *orr, *g;
    mpilab_loggp_t *mat;  /* p*p (full only): the pair models used for one prediction */
    mpilab_loggp_t *prg;  /* npairs*MAXR: per-range fits */
    double *pfrom, *pto;  /* npairs*MAXR */
    size_t *pnr;          /* npairs: ranges per pair (0 = the summary fit alone) */
    mpilab_loggp_t *summ; /* npairs: summary fits */
    mpilab_loggp_pair_model_t *pmod; /* p*p (full only) */
    const mpilab_loggp_pair_result_t *res; /* npairs: which pair k is */
    double top_from;      /* mpilab_loggp_opts_t.top_from */
} lg_t;

static int lg_alloc(lg_t *w, size_t n, size_t p, size_t npairs, int full)
{
    memset(w, 0, sizeof *w);
    w->n = n;
    w->p = p;
    w->npairs = npairs;
    w->full = full;
    size_t np = w->npairs + 1, pp = full ? p * p : 1;
    w->x = calloc(n, sizeof *w->x);
    w->rtt = calloc(n, sizeof *w->rtt);
    w->os = calloc(n, sizeof *w->os);
    w->orr = calloc(n, sizeof *w->orr);
    w->g = calloc(n, sizeof *w->g);
    w->mat = calloc(pp, sizeof *w->mat);
    w->prg = calloc(np * MAXR, sizeof *w->prg);
    w->pfrom = calloc(np * MAXR, sizeof *w->pfrom);
    w->pto = calloc(np * MAXR, sizeof *w->pto);
    w->pnr = calloc(np, sizeof *w->pnr);
    w->summ = calloc(np, sizeof *w->summ);
    w->pmod = calloc(pp, sizeof *w->pmod);
    return w->x && w->rtt && w->os && w->orr && w->g && w->mat && w->prg && w->pfrom && w->pto && w->pnr &&
           w->summ && w->pmod;
}

static void lg_free(lg_t *w)
{
    free(w->x);
    free(w->rtt);
    free(w->os);
    free(w->orr);
    free(w->g);
    free(w->mat);
    free(w->prg);
    free(w->pfrom);
    free(w->pto);
    free(w->pnr);
    free(w->summ);
    free(w->pmod);
}

/* The per-size medians of pair result r into w's series; returns the per_size array. */
static json_t *per_size(lg_t *w, const mpilab_loggp_pair_result_t *r)
{
    json_t *ps = json_array();
    for (size_t s = 0; s < w->n; s++) {
        const mpilab_loggp_point_t *pt = &r->points[s];
        w->x[s] = (double)pt->bytes;
        w->rtt[s] = pt->rtt.stats.median;
        w->os[s] = pt->os.stats.median;
        w->orr[s] = pt->orr.stats.median;
        w->g[s] = pt->g.stats.median;
        json_t *one = json_pack("{s:I,s:o,s:o,s:o,s:o,s:{s:o,s:o,s:o,s:o}}", "bytes", (json_int_t)pt->bytes, "rtt",
                                mpilab_json_real(w->rtt[s]), "os", mpilab_json_real(w->os[s]), "or",
                                mpilab_json_real(w->orr[s]), "g", mpilab_json_real(w->g[s]), "stats", "rtt",
                                mpilab_results_stats(&pt->rtt.stats), "os", mpilab_results_stats(&pt->os.stats), "or",
                                mpilab_results_stats(&pt->orr.stats), "g", mpilab_results_stats(&pt->g.stats));
        if (w->keep_samples)
            json_object_set_new(one, "samples",
                                json_pack("{s:o,s:o,s:o,s:o}", "rtt", series_json(&pt->rtt), "os", series_json(&pt->os),
                                          "or", series_json(&pt->orr), "g", series_json(&pt->g)));
        json_array_append_new(ps, one);
    }
    return ps;
}

/* Fit pair k = (i, j) from its raw samples (robust: per-size minimum of rtt, o_s, o_r and
 * median of g, breakpoints from the data, Theil-Sen per range, bootstrap intervals, clamp
 * flags: mpilab_loggp_fit_samples) into pj; 0, or -1 if the fit failed. */
static int fit_pair(lg_t *w, size_t k, size_t i, size_t j, const mpilab_loggp_pair_result_t *r, json_t *pj,
                    FILE *table)
{
    const size_t n = w->n, p = w->p;
    char err[256];
    mpilab_robust_opts_t ro;
    mpilab_robust_opts_default(&ro);
    ro.max_ranges = MAXR;
    ro.top_from = w->top_from;
    models_wire_opts(&ro);
    mpilab_loggp_robust_t rb;
    double *resid = calloc(n ? n : 1, sizeof *resid);
    if (!resid || mpilab_loggp_fit_samples(r->points, n, &ro, &rb, resid, err, sizeof err) != 0) {
        json_object_set_new(pj, "flags", json_pack("[s]", "fit_failed"));
        json_object_set_new(pj, "error", json_string(resid ? err : "out of memory"));
        if (table)
            fprintf(table, "%zu->%zu   fit failed: %s\n", i, j, resid ? err : "out of memory");
        free(resid);
        return -1;
    }
    const mpilab_loggp_t f = rb.fit;
    params_json(&f, pj);
    json_object_set_new(pj, "quality",
                        json_pack("{s:o,s:o,s:o,s:o,s:o}", "L", mpilab_quality_param(&rb.L), "os",
                                  mpilab_quality_param(&rb.os), "or", mpilab_quality_param(&rb.orr), "g",
                                  mpilab_quality_param(&rb.g), "G", mpilab_quality_param(&rb.G)));
    json_t *rs = json_array();
    for (size_t s = 0; s < n; s++)
        json_array_append_new(rs, json_pack("{s:I,s:o}", "bytes", (json_int_t)r->points[s].bytes, "oneway_s",
                                            mpilab_json_real(resid[s])));
    json_object_set_new(pj, "residuals", rs);
    free(resid);
    size_t nr = rb.nranges;
    /* predictions in payload bytes: the envelope's share in the intercepts (wire.c) */
    mpilab_loggp_t fp = f;
    fp.L += ro.envelope * f.G;
    fp.g += ro.envelope * f.G;
    fp.os += ro.envelope * f.os_per_byte;
    fp.orr += ro.envelope * f.or_per_byte;
    if (w->full)
        w->mat[i * p + j] = w->mat[j * p + i] = fp;
    w->summ[k] = fp;
    w->pnr[k] = nr;
    json_t *ra = json_array();
    for (size_t q = 0; q < nr; q++) {
        w->prg[k * MAXR + q] = rb.ranges[q];
        w->pfrom[k * MAXR + q] = rb.from[q];
        w->pto[k * MAXR + q] = rb.to[q];
        json_t *rj = json_pack("{s:I,s:I}", "from", (json_int_t)rb.from[q], "to", (json_int_t)rb.to[q]);
        json_array_append_new(ra, params_json(&rb.ranges[q], rj));
    }
    json_object_set_new(pj, "ranges", ra);
    if (table) {
        char fl[5][48];
        fprintf(table, "%zu->%-4zu %10.3f %10.3f %10.3f %10.3f %12.4f %s%s%s%s%s%s%s%s%s%s\n", i, j, f.L * 1e6,
                f.os * 1e6, f.orr * 1e6, f.g * 1e6, f.G * 1e9, rb.L.flags ? "L:" : "",
                mpilab_param_flags_str(rb.L.flags, fl[0], sizeof fl[0]), rb.L.flags ? " " : "",
                rb.G.flags ? "G:" : "", mpilab_param_flags_str(rb.G.flags, fl[1], sizeof fl[1]), rb.G.flags ? " " : "",
                rb.os.flags ? "os:" : "", mpilab_param_flags_str(rb.os.flags, fl[2], sizeof fl[2]),
                rb.orr.flags ? " or:" : "", mpilab_param_flags_str(rb.orr.flags, fl[3], sizeof fl[3]));
    }
    return 0;
}

/* LogGP prediction of pattern m at bytes b and root with every pair's fits in w. */
static double predict(lg_t *w, mpilab_op_model_t m, size_t root, double b)
{
    const size_t p = w->p;
    int lin = m == MPILAB_MODEL_SCATTER_LINEAR || m == MPILAB_MODEL_GATHER_LINEAR;
    int sc = m == MPILAB_MODEL_SCATTER_LINEAR || m == MPILAB_MODEL_SCATTER_BINOMIAL;
    if (lin) {
        /* every pair charged with the parameters of the protocol range of b */
        for (size_t k = 0; k < w->npairs; k++)
            if (w->pnr[k] > 0) {
                size_t i = (size_t)w->res[k].pair.i, j = (size_t)w->res[k].pair.j;
                size_t q = mpilab_loggp_pick_range(&w->pfrom[k * MAXR], &w->pto[k * MAXR], w->pnr[k], b);
                w->mat[i * p + j] = w->mat[j * p + i] = w->prg[k * MAXR + q];
            }
        return sc ? mpilab_loggp_predict_scatter_linear(w->mat, p, root, b)
                  : mpilab_loggp_predict_gather_linear(w->mat, p, root, b);
    }
    /* binomial: messages carry whole subtrees, each charged with the range of its own size
     * (pair models hold the per-range fits) */
    for (size_t k = 0; k < w->npairs; k++) {
        size_t i = (size_t)w->res[k].pair.i, j = (size_t)w->res[k].pair.j;
        mpilab_loggp_pair_model_t pmk = {.whole = w->summ[k], .ranges = &w->prg[k * MAXR],
                                         .from = &w->pfrom[k * MAXR], .to = &w->pto[k * MAXR],
                                         .nranges = w->pnr[k]};
        w->pmod[i * p + j] = w->pmod[j * p + i] = pmk;
    }
    return sc ? mpilab_loggp_predict_scatter_binomial_ranges(w->pmod, p, root, b)
              : mpilab_loggp_predict_gather_binomial_ranges(w->pmod, p, root, b);
}

static int predicts(mpilab_op_model_t m)
{
    return m == MPILAB_MODEL_SCATTER_LINEAR || m == MPILAB_MODEL_SCATTER_BINOMIAL ||
           m == MPILAB_MODEL_GATHER_LINEAR || m == MPILAB_MODEL_GATHER_BINOMIAL;
}

/* Whether the pairs are every pair of p ranks, each once (predictions need them all). */
static int every_pair(const mpilab_loggp_pair_result_t *res, size_t npairs, size_t p)
{
    if (p < 2 || npairs != p * (p - 1) / 2)
        return 0;
    unsigned char *seen = calloc(npairs, 1);
    int ok = seen != NULL;
    for (size_t k = 0; ok && k < npairs; k++) {
        size_t i = (size_t)res[k].pair.i, j = (size_t)res[k].pair.j;
        size_t idx = i * (2 * p - i - 1) / 2 + (j - i - 1);
        ok = res[k].pair.i >= 0 && i < j && j < p && !seen[idx];
        if (ok)
            seen[idx] = 1;
    }
    free(seen);
    return ok;
}

json_t *mpilab_models_loggp(const mpilab_loggp_pair_result_t *res, size_t npairs, const size_t *sizes, size_t nsizes,
                            int nranks, const mpilab_loggp_opts_t *lg, json_t *meas, FILE *table)
{
    (void)sizes;
    lg_t w;
    size_t p = nranks > 1 ? (size_t)nranks : 1;
    json_t *pairs = json_array(), *pred = json_array();
    int full = every_pair(res, npairs, p);
    int complete = lg_alloc(&w, nsizes ? nsizes : 1, p, npairs, full) && nsizes > 0 && npairs > 0;
    w.n = nsizes;
    w.res = res;
    w.top_from = lg ? lg->top_from : 0;
    size_t nsamples = 0;
    for (size_t k = 0; k < npairs; k++)
        for (size_t s = 0; res[k].points && s < res[k].nsizes; s++)
            nsamples += res[k].points[s].rtt.stats.reps + res[k].points[s].os.stats.reps +
                        res[k].points[s].orr.stats.reps + res[k].points[s].g.stats.reps;
    w.keep_samples = nsamples <= MPILAB_PAIR_SAMPLE_BUDGET;
    if (complete && table)
        fprintf(table, "\nLogGP per pair (sender i -> receiver j; robust fit on the samples: per-size minimum,\n"
                       "Theil-Sen per protocol range; flags: clamped = impossible value reported as 0,\n"
                       "ci_wide = interval wider than 5%%, no_ci = no interval)\n"
                       "%-7s %10s %10s %10s %10s %12s %s\n", "pair", "L(us)", "os(us)", "or(us)", "g(us)",
                "G(ns/B)", "flags");
    for (size_t k = 0; complete && k < npairs; k++) {
        size_t i = (size_t)res[k].pair.i, j = (size_t)res[k].pair.j;
        json_t *ps = per_size(&w, &res[k]);
        json_t *pj = json_pack("{s:I,s:I,s:I}", "i", (json_int_t)i, "j", (json_int_t)j, "round",
                               (json_int_t)res[k].round);
        if (fit_pair(&w, k, i, j, &res[k], pj, table) != 0)
            complete = 0;
        json_object_set_new(pj, "per_size", ps);
        json_array_append_new(pairs, pj);
    }
    size_t idx;
    json_t *m;
    json_array_foreach(meas, idx, m)
    {
        models_target_t t;
        if (!complete || !full || !models_target(m, &t) || !predicts(t.entry->model))
            continue;
        double pv = predict(&w, t.entry->model, t.root, t.bytes);
        json_array_append_new(pred, json_pack("{s:s,s:s,s:O,s:I,s:o,s:o,s:s}", "op", t.entry->name, "impl",
                                              t.entry->impl, "timing", json_object_get(m, "timing"), "bytes",
                                              (json_int_t)t.bytes, "predicted", mpilab_json_real(pv), "measured",
                                              mpilab_json_real(json_real_value(t.measured)), "measured_statistic",
                                              t.statistic));
    }
    lg_free(&w);
    mpilab_robust_opts_t ro;
    mpilab_robust_opts_default(&ro);
    models_wire_opts(&ro);
    json_t *wire = models_wire_json(&ro);
    json_t *out = json_pack("{s:o,s:o,s:s,s:I,s:f}", "pairs", pairs, "predictions", pred, "fit_on",
                     "robust, on the samples: per-size minimum of rtt, o_s, o_r and median of g; protocol "
                     "ranges from the data (breakpoints of half the round trip); Theil-Sen lines per range; "
                     "pair: slopes of the smallest size's range, os/or/g at the smallest size carried to 0 "
                     "bytes, L from its minimum round trip, G of the largest range; quality: bootstrap "
                     "intervals and flags (clamped, no_ci, ci_wide)",
                     "burst", (json_int_t)lg->burst, "or_wait_factor", lg->or_wait_factor);
    if (out && wire)
        json_object_set_new(out, "simulated_wire", wire);
    else
        json_decref(wire);
    return out;
}
