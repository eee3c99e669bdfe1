/* alpha per operation, calibrated on runs of its own (include/mpilab/multilane.h,
 * mpilab_multilane_calibrate_alpha): shared by the experiment driver (mpilab-multilane)
 * and mpilab-bench's models.multilane. */
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "coll/multilane_internal.h"
#include "mpilab/quality.h"

static const char *const op_names[] = {"scatter", "gather"};

static json_t *num(double x) { return isfinite(x) ? json_real(x) : json_null(); }

int mpilab_multilane_calibrate_alpha(MPI_Comm comm, const mpilab_grid_t *g, int root,
                                     const mpilab_multilane_measured_t *m, size_t bytes, int reps,
                                     const mpilab_clocksync_t *cs, double alpha[2], json_t **cal)
{
    if (cal)
        *cal = NULL;
    if (!g || !m || !alpha || bytes < 1 || reps < 1 || root < 0 || root >= g->nranks)
        return mpilab_ml_fail(-1, "alpha calibration: need a grid, a measured model, bytes >= 1 "
                                  "and reps >= 1");
    size_t nrem[64], nsr = 0;
    for (int s = 0; s < g->nsites; s++)
        if (s != g->site[root]) {
            if (nsr == 64)
                return mpilab_ml_fail(-1, "alpha calibration: more than 64 remote sites");
            nrem[nsr++] = (size_t)mpilab_grid_site_size(g, s);
        }
    const int P = mpilab_grid_lanes_max(g, root);
    double *t = malloc((size_t)reps * sizeof *t);
    json_t *c = json_object();
    if (!t || !c) {
        free(t);
        json_decref(c);
        return mpilab_ml_fail(-1, "alpha calibration: out of memory");
    }
    json_object_set_new(c, "bytes", json_integer((json_int_t)bytes));
    json_object_set_new(c, "lanes", json_integer(P));
    json_object_set_new(c, "reps", json_integer(reps));
    for (int op = 0; op < 2; op++) {
        double wall[2];
        if (mpilab_multilane_run_timed(comm, g, op, P, root, bytes, reps, cs, t, wall, NULL)) {
            char why[300];
            snprintf(why, sizeof why, "%s", mpilab_multilane_last_error());
            free(t);
            json_decref(c);
            return mpilab_ml_fail(-1, "alpha calibration: %s %zu bytes: %s", op_names[op], bytes,
                                  why);
        }
        mpilab_multilane_params_t p = m->params;
        p.alpha = 0;
        const double base = mpilab_multilane_sim_sites(&p, op, m->n0, nrem, nsr, (size_t)P,
                                                       (double)bytes, NULL);
        double sum = 0;
        for (int r = 0; r < reps; r++)
            sum += t[r];
        mpilab_param_t a;
        mpilab_multilane_alpha_estimate(t, reps, base, &a);
        alpha[op] = a.value;
        json_t *o = json_object(), *ts = json_array();
        for (int r = 0; r < reps; r++)
            json_array_append_new(ts, json_real(t[r]));
        json_object_set_new(o, "times", ts);
        json_object_set_new(o, "measured_mean", num(sum / reps));
        json_object_set_new(o, "model_without_alpha", num(base));
        json_object_set_new(o, "alpha", num(a.raw));
        json_object_set_new(o, "ci95", json_pack("[o,o]", num(a.lo), num(a.hi)));
        json_object_set_new(o, "alpha_used", num(a.value));
        json_t *q = mpilab_quality_param(&a);
        json_object_set(o, "flags", json_object_get(q, "flags"));
        json_decref(q);
        json_object_set_new(c, op_names[op], o);
    }
    free(t);
    if (cal)
        *cal = c;
    else
        json_decref(c);
    return 0;
}
