/* Hockney model assembly from a run's measurements and predictions of the entries that
 * declare a pattern (include/mpilab/models.h). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "mpilab/models.h"
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
    t->mean = json_object_get(json_object_get(m, "stats"), "mean");
    if (!e || e->model == MPILAB_MODEL_NONE || e->model == MPILAB_MODEL_P2P_FIT || !json_is_real(t->mean))
        return 0;
    t->entry = e;
    t->bytes = (double)json_integer_value(json_object_get(m, "bytes"));
    t->root = (size_t)json_integer_value(json_object_get(m, "root"));
    return 1;
}

/* Per-size points of pair (i, j) from the fit entries' measurements: x bytes, y one-way. */
static size_t pair_points(json_t *meas, size_t i, size_t j, double *x, double *y, size_t cap)
{
    size_t n = 0, idx;
    json_t *m;
    json_array_foreach(meas, idx, m)
    {
        const mpilab_op_t *e = models_entry_of(m);
        json_t *pr = json_object_get(m, "pair");
        if (!e || e->model != MPILAB_MODEL_P2P_FIT || !pr ||
            (size_t)json_integer_value(json_array_get(pr, 0)) != i ||
            (size_t)json_integer_value(json_array_get(pr, 1)) != j ||
            json_integer_value(json_object_get(m, "bytes")) != json_integer_value(json_object_get(m, "bytes_back")))
            continue;
        json_t *mean = json_object_get(json_object_get(m, "stats"), "mean");
        if (!json_is_real(mean) || n >= cap)
            continue;
        x[n] = (double)json_integer_value(json_object_get(m, "bytes"));
        y[n] = 0.5 * json_real_value(mean);
        n++;
    }
    return n;
}

typedef struct hfit {
    size_t p;
    mpilab_hockney_t *mat;      /* p*p single fits */
    mpilab_pair_model_t *pm;    /* p*p range models */
    mpilab_hockney_range_t *rg; /* npairs * MAX_RANGES */
    int complete;
} hfit_t;

static json_t *fit_pairs(json_t *meas, hfit_t *f)
{
    size_t p = f->p, cap = json_array_size(meas) + 1;
    double *x = calloc(cap, sizeof *x), *y = calloc(cap, sizeof *y);
    json_t *pairs = json_array();
    f->complete = x && y && p >= 2;
    for (size_t pk = 0, i = 0; x && y && i < p; i++)
        for (size_t j = i + 1; j < p; j++, pk++) {
            size_t n = pair_points(meas, i, j, x, y, cap);
            mpilab_hockney_t h;
            if (mpilab_hockney_fit(x, y, n, &h) != 0) {
                f->complete = 0;
                continue;
            }
            f->mat[i * p + j] = f->mat[j * p + i] = h;
            mpilab_hockney_range_t *rg = &f->rg[pk * MPILAB_MODELS_MAX_RANGES];
            size_t nr = mpilab_hockney_fit_ranges(x, y, n, rg, MPILAB_MODELS_MAX_RANGES);
            mpilab_pair_model_t pmod = {h, rg, nr};
            f->pm[i * p + j] = f->pm[j * p + i] = pmod;
            json_t *ranges = json_array();
            for (size_t r = 0; r < nr; r++)
                json_array_append_new(ranges, json_pack("{s:I,s:I,s:o,s:o}", "from", (json_int_t)rg[r].from, "to",
                                                        (json_int_t)rg[r].to, "alpha", mpilab_json_real(rg[r].h.alpha),
                                                        "beta", mpilab_json_real(rg[r].h.beta)));
            json_array_append_new(pairs, json_pack("{s:I,s:I,s:o,s:o,s:I,s:o}", "i", (json_int_t)i, "j", (json_int_t)j,
                                                   "alpha", mpilab_json_real(h.alpha), "beta",
                                                   mpilab_json_real(h.beta), "points", (json_int_t)n, "ranges",
                                                   ranges));
        }
    free(x);
    free(y);
    return pairs;
}

json_t *mpilab_models_hockney(json_t *meas, int nranks)
{
    size_t p = nranks > 0 ? (size_t)nranks : 0, npairs = p * (p ? p - 1 : 0) / 2;
    hfit_t f = {p, calloc(p * p + 1, sizeof *f.mat), calloc(p * p + 1, sizeof *f.pm),
                calloc(npairs * MPILAB_MODELS_MAX_RANGES + 1, sizeof *f.rg), 0};
    json_t *pairs = f.mat && f.pm && f.rg ? fit_pairs(meas, &f) : json_array();
    json_t *models = json_object();
    json_object_set_new(models, "hockney", json_pack("{s:o,s:s}", "pairs", pairs, "fit_on",
                                                     "half round trip of p2p with bytes == bytes_back"));
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
        json_array_append_new(pred, json_pack("{s:s,s:s,s:O,s:I,s:o,s:o,s:o}", "op", t.entry->name, "impl",
                                              t.entry->impl, "timing", json_object_get(m, "timing"), "bytes",
                                              (json_int_t)t.bytes, "predicted", mpilab_json_real(pv),
                                              "predicted_single", mpilab_json_real(p1), "measured",
                                              mpilab_json_real(json_real_value(t.mean))));
    }
    json_object_set_new(models, "predictions", pred);
    free(f.mat);
    free(f.pm);
    free(f.rg);
    return models;
}
