/* Hockney model assembly from a run's measurements and predictions of the entries that
 * declare a pattern (include/mpilab/models.h). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "mpilab/models.h"
#include "mpilab/quality.h"
#include "mpilab/robust.h"
#include "mpilab/results.h"
#include "model/assemble.h"

double mpilab_models_hockney_predict(mpilab_op_model_t m, const mpilab_pair_model_t *pm, size_t n, size_t root,
                                     double b)
{
    switch (m) {
    case MPILAB_MODEL_SCATTER_LINEAR: return mpilab_predict_scatter_linear_ranges(pm, n, root, b);
    case MPILAB_MODEL_SCATTER_BINOMIAL: return mpilab_predict_scatter_binomial_ranges(pm, n, root, b);
    case MPILAB_MODEL_GATHER_LINEAR: return mpilab_predict_gather_linear_ranges(pm, n, root, b);
    case MPILAB_MODEL_GATHER_BINOMIAL: return mpilab_predict_gather_binomial_ranges(pm, n, root, b);
    default: return NAN;
    }
}

double mpilab_models_hockney_predict_single(mpilab_op_model_t m, const mpilab_hockney_t *mat, size_t n, size_t root,
                                            double b)
{
    switch (m) {
    case MPILAB_MODEL_SCATTER_LINEAR: return mpilab_predict_scatter_linear(mat, n, root, b);
    case MPILAB_MODEL_SCATTER_BINOMIAL: return mpilab_predict_scatter_binomial(mat, n, root, b);
    case MPILAB_MODEL_GATHER_LINEAR: return mpilab_predict_gather_linear(mat, n, root, b);
    case MPILAB_MODEL_GATHER_BINOMIAL: return mpilab_predict_gather_binomial(mat, n, root, b);
    default: return NAN;
    }
}

const mpilab_op_t *models_entry_of(json_t *m)
{
    const char *op = json_string_value(json_object_get(m, "op"));
    const char *impl = json_string_value(json_object_get(m, "impl"));
    return op && impl ? mpilab_ops_find(op, impl) : NULL;
}

int models_target(json_t *m, models_target_t *t)
{
    const mpilab_op_t *e = models_entry_of(m);
    json_t *st = json_object_get(m, "stats");
    t->measured = json_object_get(st, "median");
    t->statistic = "median";
    if (!json_is_real(t->measured)) {
        t->measured = json_object_get(st, "mean");
        t->statistic = "mean";
    }
    if (!e || e->model == MPILAB_MODEL_NONE || e->model == MPILAB_MODEL_P2P_FIT || !json_is_real(t->measured))
        return 0;
    t->entry = e;
    t->bytes = (double)json_integer_value(json_object_get(m, "bytes"));
    t->root = (size_t)json_integer_value(json_object_get(m, "root"));
    return 1;
}

/* Per-size raw samples of pair (i, j) from the fit entries' measurements (round trips of
 * p2p with bytes == bytes_back, in size order): sets[] point into scratch storage owned by
 * the caller (samples[], valid[]; freed with pts_free). Returns the number of sizes. */
typedef struct pts {
    mpilab_sample_set_t *sets;
    double **samples;
    unsigned char **valid;
    size_t n, cap;
} pts_t;

static void pts_clear(pts_t *t)
{
    for (size_t k = 0; k < t->n; k++) {
        free(t->samples[k]);
        free(t->valid[k]);
    }
    t->n = 0;
}

/* Position of (i, j) in a pair matrix's i/j arrays (sorted by (i, j)), or -1. */
static long matrix_find(json_t *pm, size_t i, size_t j)
{
    json_t *ia = json_object_get(pm, "i"), *ja = json_object_get(pm, "j");
    size_t lo = 0, hi = json_array_size(ia);
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        size_t a = (size_t)json_integer_value(json_array_get(ia, mid)), b = (size_t)json_integer_value(json_array_get(ja, mid));
        if (a == i && b == j)
            return (long)mid;
        if (a < i || (a == i && b < j))
            lo = mid + 1;
        else
            hi = mid;
    }
    return -1;
}

static size_t pair_points(json_t *meas, size_t i, size_t j, pts_t *t)
{
    size_t idx;
    json_t *m;
    pts_clear(t);
    json_array_foreach(meas, idx, m)
    {
        const mpilab_op_t *e = models_entry_of(m);
        json_t *pr = json_object_get(m, "pair"), *pm = json_object_get(m, "pair_matrix");
        long at = pm ? matrix_find(pm, i, j) : -1;
        if (!e || e->model != MPILAB_MODEL_P2P_FIT || (!pr && at < 0) ||
            (pr && ((size_t)json_integer_value(json_array_get(pr, 0)) != i ||
                    (size_t)json_integer_value(json_array_get(pr, 1)) != j)) ||
            json_integer_value(json_object_get(m, "bytes")) != json_integer_value(json_object_get(m, "bytes_back")))
            continue;
        json_t *sa = json_object_get(m, "samples"), *va = json_object_get(m, "valid");
        /* without raw samples (a document assembled elsewhere, a pair matrix's pair above its
         * samples_cap), the median (else the mean) stands for the size */
        json_t *st = json_object_get(m, "stats"), *one = json_object_get(st, "median");
        if (at >= 0) {
            sa = json_array_get(json_object_get(pm, "samples"), (size_t)at);
            va = NULL;
            one = json_array_get(json_object_get(pm, "median"), (size_t)at);
        }
        if (!json_is_number(one))
            one = json_object_get(st, "mean");
        size_t ns = json_array_size(sa);
        if ((ns == 0 && !json_is_number(one)) || t->n >= t->cap)
            continue;
        if (ns == 0) {
            sa = NULL;
            ns = 1;
        }
        double *sv = calloc(ns, sizeof *sv);
        unsigned char *vv = calloc(ns, 1);
        if (!sv || !vv) {
            free(sv);
            free(vv);
            continue;
        }
        for (size_t k = 0; k < ns; k++) {
            json_t *x = sa ? json_array_get(sa, k) : one;
            sv[k] = json_is_number(x) ? json_number_value(x) : NAN;
            vv[k] = isfinite(sv[k]) && !(sa && json_is_false(json_array_get(va, k)));
        }
        t->samples[t->n] = sv;
        t->valid[t->n] = vv;
        t->sets[t->n] = (mpilab_sample_set_t){(double)json_integer_value(json_object_get(m, "bytes")), sv, vv, ns};
        t->n++;
    }
    return t->n;
}

typedef struct hfit {
    size_t p;
    mpilab_hockney_t *mat;      /* p*p single fits */
    mpilab_pair_model_t *pm;    /* p*p range models */
    mpilab_hockney_range_t *rg; /* npairs * MAX_RANGES */
    int complete;
    json_t *wire; /* what the simulated transport and clock add (wire.c), or NULL */
    double top_from;       /* > 0: the last range starts there (mpilab_robust_segments_top) */
    int top_not_reached;   /* the extension ended before the top regime: beta flagged */
} hfit_t;

/* Robust per pair (mpilab_hockney_fit_samples on half the round trip: per-size minimum,
 * breakpoints from the data, Theil-Sen per range, bootstrap intervals, clamp flags). The
 * pair's alpha (first range) and beta (last range) are the single model of predicted_single;
 * the ranges those of predicted. */
static json_t *fit_pairs(json_t *meas, hfit_t *f)
{
    size_t p = f->p, cap = json_array_size(meas) + 1;
    pts_t t = {calloc(cap, sizeof *t.sets), calloc(cap, sizeof *t.samples), calloc(cap, sizeof *t.valid), 0, cap};
    double *resid = calloc(cap, sizeof *resid);
    json_t *pairs = json_array();
    int ok = t.sets && t.samples && t.valid && resid;
    f->complete = ok && p >= 2;
    mpilab_robust_opts_t ro;
    mpilab_robust_opts_default(&ro);
    ro.max_ranges = MPILAB_MODELS_MAX_RANGES;
    models_wire_opts(&ro);
    ro.top_from = f->top_from;
    f->wire = models_wire_json(&ro);
    for (size_t pk = 0, i = 0; ok && i < p; i++)
        for (size_t j = i + 1; j < p; j++, pk++) {
            size_t n = pair_points(meas, i, j, &t);
            mpilab_hockney_robust_t hr;
            char err[256];
            if (n < 2 || mpilab_hockney_fit_samples(t.sets, n, 0.5, &ro, &hr, resid, err, sizeof err) != 0) {
                f->complete = 0; /* no parameters for this pair (and no predictions) */
                continue;
            }
            mpilab_hockney_t h = {hr.alpha.value, hr.beta.value};
            /* predictions in payload bytes: the envelope's time goes into the intercept */
            mpilab_hockney_t hp = {h.alpha + ro.envelope * h.beta, h.beta};
            f->mat[i * p + j] = f->mat[j * p + i] = hp;
            mpilab_hockney_range_t *rg = &f->rg[pk * MPILAB_MODELS_MAX_RANGES];
            size_t nr = hr.nranges;
            json_t *ranges = json_array(), *rs = json_array();
            for (size_t r = 0; r < nr; r++) {
                rg[r] = hr.ranges[r];
                json_t *rf = json_array();
                /* a range's line is for predictions inside it: its intercept may be below 0 (a
                 * line through large sizes), its slope is never reported below 0 */
                if (rg[r].h.alpha < 0)
                    json_array_append_new(rf, json_string("negative_intercept"));
                if (rg[r].h.beta < 0) {
                    rg[r].h.beta = 0;
                    json_array_append_new(rf, json_string("beta_clamped"));
                }
                json_array_append_new(ranges, json_pack("{s:I,s:I,s:o,s:o,s:o}", "from", (json_int_t)rg[r].from,
                                                        "to", (json_int_t)rg[r].to, "alpha",
                                                        mpilab_json_real(rg[r].h.alpha), "beta",
                                                        mpilab_json_real(rg[r].h.beta), "flags", rf));
            }
            json_t *bq = mpilab_quality_param(&hr.beta);
            if (f->top_not_reached)
                json_array_append_new(json_object_get(bq, "flags"), json_string("regime_not_reached"));
            for (size_t k = 0; k < n; k++)
                json_array_append_new(rs, json_pack("{s:I,s:o}", "bytes", (json_int_t)t.sets[k].bytes, "oneway_s",
                                                    mpilab_json_real(resid[k])));
            mpilab_pair_model_t pmod = {hp, rg, nr};
            f->pm[i * p + j] = f->pm[j * p + i] = pmod;
            json_array_append_new(pairs, json_pack("{s:I,s:I,s:o,s:o,s:I,s:o,s:{s:o,s:o},s:o}", "i", (json_int_t)i,
                                                   "j", (json_int_t)j, "alpha", mpilab_json_real(h.alpha), "beta",
                                                   mpilab_json_real(h.beta), "points", (json_int_t)n, "ranges", ranges,
                                                   "quality", "alpha", mpilab_quality_param(&hr.alpha), "beta", bq,
                                                   "residuals", rs));
        }
    pts_clear(&t);
    free(t.sets);
    free(t.samples);
    free(t.valid);
    free(resid);
    return pairs;
}

json_t *mpilab_models_hockney(json_t *meas, int nranks)
{
    return mpilab_models_hockney_top(meas, nranks, 0, NULL);
}

json_t *mpilab_models_hockney_top(json_t *meas, int nranks, double top_from, const char *top_state)
{
    size_t p = nranks > 0 ? (size_t)nranks : 0, npairs = p * (p ? p - 1 : 0) / 2;
    hfit_t f = {p, calloc(p * p + 1, sizeof *f.mat), calloc(p * p + 1, sizeof *f.pm),
                calloc(npairs * MPILAB_MODELS_MAX_RANGES + 1, sizeof *f.rg), 0, NULL, top_from,
                top_state && strcmp(top_state, "linear") != 0};
    json_t *pairs = f.mat && f.pm && f.rg ? fit_pairs(meas, &f) : json_array();
    json_t *models = json_object();
    json_object_set_new(models, "hockney",
                        json_pack("{s:o,s:s}", "pairs", pairs, "fit_on",
                                  "half round trip of p2p with bytes == bytes_back; robust: per-size minimum of "
                                  "the samples, protocol ranges from the data, Theil-Sen per range; alpha of the "
                                  "smallest sizes' range, beta of the largest (sustained rate); quality: bootstrap "
                                  "intervals and flags"));
    if (f.wire)
        json_object_set_new(json_object_get(models, "hockney"), "simulated_wire", f.wire);
    if (top_state)
        json_object_set_new(json_object_get(models, "hockney"), "top_regime",
                            json_pack("{s:s,s:I}", "state", top_state, "from_bytes", (json_int_t)top_from));
    json_t *pred = json_array();
    size_t idx;
    json_t *m;
    json_array_foreach(meas, idx, m)
    {
        models_target_t t;
        if (!f.complete || !models_target(m, &t))
            continue;
        /* predicted: per-protocol ranges; predicted_single: the whole-range fit */
        double pv = mpilab_models_hockney_predict(t.entry->model, f.pm, p, t.root, t.bytes);
        double p1 = mpilab_models_hockney_predict_single(t.entry->model, f.mat, p, t.root, t.bytes);
        json_array_append_new(pred, json_pack("{s:s,s:s,s:O,s:I,s:o,s:o,s:o,s:s}", "op", t.entry->name, "impl",
                                              t.entry->impl, "timing", json_object_get(m, "timing"), "bytes",
                                              (json_int_t)t.bytes, "predicted", mpilab_json_real(pv),
                                              "predicted_single", mpilab_json_real(p1), "measured",
                                              mpilab_json_real(json_real_value(t.measured)),
                                              "measured_statistic", t.statistic));
    }
    json_object_set_new(models, "predictions", pred);
    free(f.mat);
    free(f.pm);
    free(f.rg);
    return models;
}
