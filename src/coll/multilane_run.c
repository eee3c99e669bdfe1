/* The multilane experiment (include/mpilab/multilane.h, mpilab_multilane_experiment_run):
 * the model measurement, the clock synchronisation and the timed runs per operation, size
 * and implementation, assembled into one mpilab.multilane/1 document (docs/multilane.md). */
#include <jansson.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mpilab/multilane.h"
#include "mpilab/robust.h"
#include "mpilab/version.h"

#define MAX_IMPLS 1024

static const char *const op_names[] = {"scatter", "gather"};

/* A number, or null where the model has no value. */
static json_t *num(double x) { return isfinite(x) ? json_real(x) : json_null(); }

static void fail(char *err, size_t errlen, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void fail(char *err, size_t errlen, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
}

/* The measured model as the runs use it: the inputs, the remote sites' sizes (all sites
 * but the root's, in site order) and alpha per operation. */
typedef struct {
    const mpilab_multilane_measured_t *mm;
    size_t nrem, nrem_sizes[64];
    double alpha[2];
} model_t;

static json_t *phase_array(const double *ph)
{
    json_t *a = json_array();
    for (int i = 0; i < MPILAB_ML_NPHASES; i++)
        json_array_append_new(a, num(ph[i]));
    return a;
}

/* The document's head: schema, version, grid and root. */
static json_t *doc_head(const mpilab_grid_t *g, const mpilab_multilane_experiment_t *x)
{
    const int p = mpilab_grid_nranks(g);
    json_t *doc = json_object();
    json_object_set_new(doc, "schema", json_string("mpilab.multilane/1"));
    json_object_set_new(doc, "version", json_string(MPILAB_VERSION_STRING));
    json_t *grid = json_object(), *site_of = json_array();
    for (int r = 0; r < p; r++)
        json_array_append_new(site_of, json_integer(mpilab_grid_site_of(g, r)));
    json_object_set_new(grid, "source", json_string(x->sites));
    json_object_set_new(grid, "nranks", json_integer(p));
    json_object_set_new(grid, "nsites", json_integer(mpilab_grid_nsites(g)));
    json_object_set_new(grid, "site_of_rank", site_of);
    json_object_set_new(grid, "P_sup", json_integer(mpilab_grid_lanes_max(g, x->root)));
    json_object_set_new(doc, "grid", grid);
    json_object_set_new(doc, "root", json_integer(x->root));
    return doc;
}

/* Measure the model into mm and record it as doc.model.  0, or -1 with the reason. */
static int add_model(MPI_Comm comm, const mpilab_grid_t *g,
                     const mpilab_multilane_experiment_t *x, mpilab_multilane_measured_t *mm,
                     json_t *doc, char *err, size_t errlen)
{
    if (mpilab_multilane_measure(comm, g, x->root, x->model_bytes, x->model_reps, mm)) {
        fail(err, errlen, "model: %s", mpilab_multilane_last_error());
        return -1;
    }
    char *mj = mpilab_multilane_model_json(mm, x->sizes, x->nsizes);
    json_t *mo = mj ? json_loads(mj, 0, NULL) : NULL;
    free(mj);
    if (!mo) {
        fail(err, errlen, "model: out of memory");
        return -1;
    }
    json_object_set_new(mo, "two_sites", json_boolean(mpilab_grid_nsites(g) == 2));
    json_object_set_new(doc, "model", mo);
    return 0;
}

/* The implementations timed at one operation and size: 0 native, 1 single-lane, -P
 * multilane with P lanes.  Returns their number. */
static int impl_list(const mpilab_grid_t *g, const mpilab_multilane_experiment_t *x,
                     const mpilab_multilane_measured_t *mm, int op, double M, int *list)
{
    int nl = 0;
    if (x->native)
        list[nl++] = 0;
    if (x->single)
        list[nl++] = 1;
    if (x->multilane) {
        const int pmax = mpilab_grid_lanes_max(g, x->root);
        if (x->lanes == MPILAB_ML_LANES_ALL)
            for (int P = 1; P <= pmax && nl < MAX_IMPLS; P++)
                list[nl++] = -P;
        else if (x->lanes != MPILAB_ML_LANES_OPT)
            list[nl++] = -x->lanes;
        else
            list[nl++] = -(int)mpilab_multilane_popt(&mm->params, op, mm->n0, mm->n1, M, NULL);
    }
    return nl;
}

/* One run's record: the times, their mean and minimum, the wall clock and, with the model
 * on two sites, the predictions.  *median gets the median (the report's figure). */
static json_t *run_json(const mpilab_multilane_experiment_t *x, const model_t *md, int op,
                        int code, size_t bytes, const double *times, const double wall[2],
                        const double phases[MPILAB_ML_NPHASES], double *median)
{
    const mpilab_multilane_measured_t *mm = md->mm;
    const int two_sites = md->nrem == 1;
    const int lanes = code < 0 ? -code : code;
    const double M = (double)bytes;
    json_t *run = json_object(), *ts = json_array();
    double lo_t = INFINITY, sum = 0;
    for (int r = 0; r < x->reps; r++) {
        json_array_append_new(ts, json_real(times[r]));
        lo_t = fmin(lo_t, times[r]);
        sum += times[r];
    }
    const double mean = sum / (double)x->reps;
    *median = mpilab_quantile(times, NULL, (size_t)x->reps, 0.5);
    json_object_set_new(run, "op", json_string(op_names[op]));
    json_object_set_new(run, "impl", json_string(mpilab_multilane_impl_name(code)));
    json_object_set_new(run, "lanes", lanes ? json_integer(lanes) : json_null());
    json_object_set_new(run, "bytes", json_integer((json_int_t)bytes));
    json_object_set_new(run, "times", ts);
    json_object_set_new(run, "mean", json_real(mean));
    json_object_set_new(run, "min", json_real(lo_t));
    json_object_set_new(run, "wall_start", json_real(wall[0]));
    json_object_set_new(run, "wall_end", json_real(wall[1]));
    json_object_set_new(run, "phases", phase_array(phases));
    if (x->model && lanes) {
        mpilab_multilane_params_t p = mm->params;
        p.alpha = md->alpha[op];
        if (two_sites) {
            double paper = lanes == 1 && code > 0
                               ? mpilab_single_lane_time(&p, mm->n0, mm->n1, M)
                               : mpilab_multilane_time(&p, mm->n0, mm->n1, (size_t)lanes, M);
            json_object_set_new(run, "predicted_paper", num(paper));
        } else {
            json_object_set_new(run, "predicted_paper", json_null());
        }
        double ph[MPILAB_ML_NPHASES];
        json_object_set_new(run, "predicted_sim",
                            num(mpilab_multilane_sim_sites(&p, op, mm->n0, md->nrem_sizes,
                                                           md->nrem, (size_t)lanes, M, ph)));
        json_object_set_new(run, "phases_sim", phase_array(ph));
    }
    return run;
}

/* Time every implementation of one operation at one size, appending to runs. */
static int run_size(MPI_Comm comm, const mpilab_grid_t *g,
                    const mpilab_multilane_experiment_t *x, const model_t *md,
                    const mpilab_clocksync_t *cs, int op, size_t bytes, double *times,
                    json_t *doc, char *err, size_t errlen)
{
    json_t *runs = json_object_get(doc, "runs");
    int list[MAX_IMPLS];
    const int nl = impl_list(g, x, md->mm, op, (double)bytes, list);
    for (int i = 0; i < nl; i++) {
        const int lanes = list[i] < 0 ? -list[i] : list[i];
        const char *impl = mpilab_multilane_impl_name(list[i]);
        double wall[2] = {0, 0}, ph[MPILAB_ML_NPHASES];
        int rc = mpilab_multilane_run_timed(comm, g, op, lanes, x->root, bytes, x->reps, cs,
                                            times, wall, ph);
        if (rc < 0)
            fail(err, errlen, "%s %s P=%d %zu bytes: %s", op_names[op], impl, lanes, bytes,
                 mpilab_multilane_last_error());
        if (rc > 0)
            fail(err, errlen, "%s %s P=%d %zu bytes: WRONG DATA received", op_names[op], impl,
                 lanes, bytes);
        if (rc)
            return -1;
        double median = 0;
        json_array_append_new(runs, run_json(x, md, op, list[i], bytes, times, wall, ph,
                                             &median));
        if (x->checkpoint)
            x->checkpoint(x->checkpoint_arg, doc);
        if (x->progress)
            x->progress(x->progress_arg, op_names[op], impl, lanes, bytes, median);
    }
    return 0;
}

/* alpha per operation, calibrated on runs of its own at x->alpha_bytes (the collective at
 * P_sup lanes, at least 5 repetitions; mpilab_multilane_calibrate_alpha), recorded as
 * model.alpha_calibration; a raw estimate <= 0 is used as 0 and flagged "clamped". */
static int calibrate_alpha(MPI_Comm comm, const mpilab_grid_t *g,
                           const mpilab_multilane_experiment_t *x, const mpilab_clocksync_t *cs,
                           model_t *md, json_t *doc, char *err, size_t errlen)
{
    json_t *cal = NULL;
    if (mpilab_multilane_calibrate_alpha(comm, g, x->root, md->mm, x->alpha_bytes,
                                         x->reps > 5 ? x->reps : 5, cs, md->alpha, &cal)) {
        fail(err, errlen, "%s", mpilab_multilane_last_error());
        return -1;
    }
    json_object_set_new(json_object_get(doc, "model"), "alpha_calibration", cal);
    return 0;
}

const char *mpilab_multilane_impl_name(int code)
{
    return code == 0 ? "native" : code > 0 ? "single" : "multilane";
}

json_t *mpilab_multilane_experiment_run(MPI_Comm comm, const mpilab_grid_t *g,
                                        const mpilab_multilane_experiment_t *x, char *err,
                                        size_t errlen)
{
    mpilab_multilane_measured_t mm;
    memset(&mm, 0, sizeof mm);
    mpilab_clocksync_t cs;
    memset(&cs, 0, sizeof cs);
    int ok = 0;
    json_t *doc = doc_head(g, x);
    json_object_set_new(doc, "runs", json_array()); /* filled in place: checkpoints see it */
    double *times = malloc((size_t)x->reps * sizeof *times);
    if (!times) {
        fail(err, errlen, "out of memory");
        goto out;
    }
    if (x->model && add_model(comm, g, x, &mm, doc, err, errlen))
        goto out;
    if (mpilab_grid_nsites(g) > 65) {
        fail(err, errlen, "more than 65 sites: the model supports at most 64 remote sites");
        goto out;
    }
    model_t md = {.mm = &mm, .nrem = 0};
    md.alpha[0] = md.alpha[1] = mm.params.alpha;
    for (int s = 0; s < mpilab_grid_nsites(g) && md.nrem < 64; s++)
        if (s != mpilab_grid_site_of(g, x->root))
            md.nrem_sizes[md.nrem++] = (size_t)mpilab_grid_site_size(g, s);
    /* synchronised clocks: a collective's time is the latest end minus the root's start */
    if (mpilab_clocksync_run(comm, MPILAB_SYNC_SKAMPI, &cs) != 0) {
        fail(err, errlen, "clock synchronisation failed");
        goto out;
    }
    json_t *sync = json_object();
    json_object_set_new(sync, "method", json_string("skampi"));
    json_object_set_new(sync, "max_residual", num(cs.max_residual));
    json_object_set_new(doc, "clocksync", sync);
    if (x->model && x->alpha_bytes &&
        calibrate_alpha(comm, g, x, &cs, &md, doc, err, errlen))
        goto out;
    json_object_set_new(doc, "timing", json_string("latest end minus the root's start, "
                                                   "synchronised clocks, barrier before each"));
    for (int op = 0; op < 2; op++) {
        if (!(x->ops & (1u << op)))
            continue;
        for (size_t k = 0; k < x->nsizes; k++)
            if (run_size(comm, g, x, &md, &cs, op, x->sizes[k], times, doc, err, errlen))
                goto out;
    }
    ok = 1;
out:
    free(times);
    mpilab_multilane_measured_free(&mm);
    mpilab_clocksync_free(&cs);
    if (!ok) {
        json_decref(doc);
        return NULL;
    }
    return doc;
}
