/* The measured multilane model and its predictions as JSON (mpilab_multilane_model_json). */
#include <jansson.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "coll/multilane_internal.h"
#include "mpilab/quality.h"

/* A number, or null where the model has no value (NAN). */
static json_t *num(double x) { return isfinite(x) ? json_real(x) : json_null(); }

static json_t *curve(const mpilab_multilane_params_t *p, int op, size_t n0, size_t n1, double M)
{
    json_t *a = json_array();
    for (size_t P = 1; P <= p->nb; P++)
        json_array_append_new(a, num(op < 0 ? mpilab_multilane_time(p, n0, n1, P, M)
                                            : mpilab_multilane_sim_time(p, op, n0, n1, P, M)));
    return a;
}

char *mpilab_multilane_model_json(const mpilab_multilane_measured_t *m, const size_t *sizes,
                                  size_t nsizes)
{
    if (!m)
        return NULL;
    const mpilab_multilane_params_t *p = &m->params;
    json_t *o = json_object(), *b = json_array(), *sz = json_array();
    for (size_t j = 0; j < p->nb; j++)
        json_array_append_new(b, num(p->b[j]));
    json_object_set_new(o, "n0", json_integer((json_int_t)m->n0));
    json_object_set_new(o, "n1", json_integer((json_int_t)m->n1));
    json_object_set_new(o, "L", num(p->L));
    json_object_set_new(o, "l", num(p->l));
    json_object_set_new(o, "alpha", num(p->alpha));
    json_object_set_new(o, "quality", json_pack("{s:o}", "alpha", mpilab_quality_param(&m->alpha_q)));
    json_object_set_new(o, "b_lan", num(p->b_lan));
    json_object_set_new(o, "b", b);
    json_object_set_new(o, "measure_bytes", json_integer((json_int_t)m->bytes));
    json_object_set_new(o, "measure_reps", json_integer(m->reps));
    for (size_t k = 0; k < nsizes; k++) {
        const double M = (double)sizes[k];
        json_t *s = json_object();
        json_object_set_new(s, "bytes", json_integer((json_int_t)sizes[k]));
        json_object_set_new(s, "T", curve(p, -1, m->n0, m->n1, M));
        json_object_set_new(s, "P_opt",
                            json_integer((json_int_t)mpilab_multilane_popt(p, -1, m->n0, m->n1,
                                                                            M, NULL)));
        json_object_set_new(s, "single_lane", num(mpilab_single_lane_time(p, m->n0, m->n1, M)));
        json_object_set_new(s, "sim_scatter", curve(p, MPILAB_ML_SCATTER, m->n0, m->n1, M));
        json_object_set_new(s, "P_opt_sim_scatter",
                            json_integer((json_int_t)mpilab_multilane_popt(
                                p, MPILAB_ML_SCATTER, m->n0, m->n1, M, NULL)));
        json_object_set_new(s, "sim_gather", curve(p, MPILAB_ML_GATHER, m->n0, m->n1, M));
        json_object_set_new(s, "P_opt_sim_gather",
                            json_integer((json_int_t)mpilab_multilane_popt(
                                p, MPILAB_ML_GATHER, m->n0, m->n1, M, NULL)));
        json_array_append_new(sz, s);
    }
    json_object_set_new(o, "sizes", sz);
    char *text = json_dumps(o, JSON_COMPACT | JSON_REAL_PRECISION(9));
    json_decref(o);
    return text;
}

json_t *mpilab_models_multilane(const mpilab_multilane_measured_t *m, int nsites, int lanes,
                                const size_t *sizes, size_t nsizes, json_t *measurements,
                                json_t *cal)
{
    char *text = mpilab_multilane_model_json(m, sizes, nsizes);
    json_t *o = text ? json_loads(text, 0, NULL) : NULL;
    free(text);
    if (!o)
        return NULL;
    /* the calibrated alpha per operation, when there is one */
    mpilab_multilane_params_t pop[2] = {m->params, m->params};
    if (cal) {
        for (int op = 0; op < 2; op++) {
            json_t *u = json_object_get(json_object_get(cal, op ? "gather" : "scatter"),
                                        "alpha_used");
            if (json_is_number(u))
                pop[op].alpha = json_number_value(u);
        }
        json_object_set(o, "alpha_calibration", cal);
    }
    const int two = nsites == 2;
    json_object_set_new(o, "nsites", json_integer(nsites));
    json_object_set_new(o, "lanes", json_integer(lanes));
    json_t *pred = json_array();
    size_t k;
    json_t *meas;
    json_array_foreach(measurements, k, meas) {
        const char *op = json_string_value(json_object_get(meas, "op"));
        const char *impl = json_string_value(json_object_get(meas, "impl"));
        if (!op || !impl || (strcmp(op, "scatter") != 0 && strcmp(op, "gather") != 0))
            continue;
        const int single = strcmp(impl, "single-lane") == 0;
        if (!single && strcmp(impl, "multilane") != 0)
            continue;
        const double M = json_number_value(json_object_get(meas, "bytes"));
        const size_t P = single ? 1 : (size_t)lanes;
        const int opc = strcmp(op, "scatter") == 0 ? MPILAB_ML_SCATTER : MPILAB_ML_GATHER;
        const mpilab_multilane_params_t *p = &pop[opc];
        double paper = NAN, sim = NAN;
        if (two) {
            paper = single ? mpilab_single_lane_time(p, m->n0, m->n1, M)
                           : mpilab_multilane_time(p, m->n0, m->n1, P, M);
            sim = mpilab_multilane_sim_time(p, opc, m->n0, m->n1, P, M);
        }
        json_t *mean = json_object_get(json_object_get(meas, "stats"), "mean");
        json_array_append_new(
            pred, json_pack("{s:s, s:s, s:O, s:O, s:I, s:o, s:o, s:o}", "op", op, "impl", impl,
                            "timing", json_object_get(meas, "timing") ? json_object_get(meas, "timing") : json_null(),
                            "bytes", json_object_get(meas, "bytes"), "lanes", (json_int_t)P,
                            "predicted_paper", num(paper), "predicted_sim", num(sim), "measured",
                            mean && json_is_number(mean) ? json_real(json_number_value(mean))
                                                         : json_null()));
    }
    json_object_set_new(o, "predictions", pred);
    return o;
}
