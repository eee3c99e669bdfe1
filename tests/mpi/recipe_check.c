/* The recipes' plugins (tests/mpi/recipe_*.c built as shared objects), loaded the way the
 * tools load them (mpilab_ops_load), checked by properties that hold for any entry:
 *   recipe_check PLUGIN.so... [--case NAME]
 * every entry it brings validates at several sizes and every root, the engine measures it
 * with correct data, its derived values are the keys it declares (each one given), its list
 * entry carries what it declared, and an entry declaring the linear scatter pattern gets the
 * pattern's exact prediction from mpilab_models_hockney. */
#include <math.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MPILAB_KIT_MPI
#include "kit.h"
#include "mpilab/mpilab.h"

/* Number of keys of a comma list and whether `key` is one of them. */
static size_t keys(const char *list, const char *key, int *found)
{
    size_t n = 0, kl = key ? strlen(key) : 0;
    *found = 0;
    for (const char *p = list; p && *p; n++) {
        const char *comma = strchr(p, ',');
        size_t len = comma ? (size_t)(comma - p) : strlen(p);
        *found |= key && len == kl && strncmp(p, key, kl) == 0;
        p += len + (comma != NULL);
    }
    return n;
}

/* The entry in --list --json, with the knowledge it declared. */
static void check_listed(const mpilab_op_t *op)
{
    json_t *list = mpilab_runner_list_json(), *e;
    size_t idx;
    int found = 0;
    json_array_foreach(json_object_get(list, "entries"), idx, e)
    {
        if (strcmp(json_string_value(json_object_get(e, "name")), op->name) != 0 ||
            strcmp(json_string_value(json_object_get(e, "impl")), op->impl) != 0)
            continue;
        found = 1;
        int dummy;
        const char *model = mpilab_op_model_name(op->model);
        json_t *jm = json_object_get(e, "model");
        if (strcmp(json_string_value(json_object_get(e, "family")), op->family) != 0 ||
            json_array_size(json_object_get(e, "derived")) != keys(op->derived, NULL, &dummy) ||
            (model ? !json_is_string(jm) || strcmp(json_string_value(jm), model) != 0 : !json_is_null(jm)) ||
            !json_is_string(json_object_get(e, "origin")))
            FAIL("%s:%s listed with other knowledge than it declared", op->name, op->impl);
        if ((op->flags & MPILAB_OP_PAIR) &&
            strcmp(json_string_value(json_array_get(json_object_get(e, "needs"), 0)), "pair") != 0)
            FAIL("%s:%s: needs a pair, not listed", op->name, op->impl);
    }
    if (!found)
        FAIL("%s:%s not in --list --json", op->name, op->impl);
    json_decref(list);
}

/* Synthetic p2p measurements with exact one-way times alpha + beta * bytes per pair (i, j),
 * plus one measurement of the entry from root 1. */
static json_t *synthetic(const mpilab_op_t *op, int p, double mean)
{
    json_t *meas = json_array();
    const double sizes[] = {0, 1024, 4096, 65536};
    for (int i = 0; i < p; i++)
        for (int j = i + 1; j < p; j++)
            for (size_t s = 0; s < 4; s++) {
                double alpha = 1e-6 * (1 + i + j), beta = 1e-9 * (1 + j);
                json_array_append_new(meas, json_pack("{s:s,s:s,s:[i,i],s:I,s:I,s:{s:f}}", "op", "p2p", "impl",
                                                      "roundtrip", "pair", i, j, "bytes", (json_int_t)sizes[s],
                                                      "bytes_back", (json_int_t)sizes[s], "stats", "mean",
                                                      2.0 * (alpha + beta * sizes[s])));
            }
    json_array_append_new(meas, json_pack("{s:s,s:s,s:s,s:I,s:i,s:{s:f}}", "op", op->name, "impl", op->impl,
                                          "timing", "max", "bytes", (json_int_t)2048, "root", 1, "stats", "mean",
                                          mean));
    return meas;
}

/* The linear scatter pattern from root 1: one block to every other rank in turn. */
static void check_predicted(const mpilab_op_t *op, int p)
{
    json_t *meas = synthetic(op, p, 1e-3);
    json_t *models = mpilab_models_hockney(meas, p);
    json_t *pred = json_object_get(models, "predictions");
    double want = 0;
    for (int j = 0; j < p; j++)
        if (j != 1) {
            int lo = j < 1 ? j : 1, hi = j < 1 ? 1 : j;
            want += 1e-6 * (1 + lo + hi) + 1e-9 * (1 + hi) * 2048;
        }
    json_t *e = json_array_get(pred, 0);
    const char *impl = json_string_value(json_object_get(e, "impl"));
    double got = json_real_value(json_object_get(e, "predicted_single"));
    if (json_array_size(pred) != 1 || !impl || strcmp(impl, op->impl) != 0 || !(fabs(got - want) <= 1e-9 * want))
        FAIL("%s:%s: prediction %.9g, expected %.9g", op->name, op->impl, got, want);
    json_decref(models);
    json_decref(meas);
}

static void check_measured(mpilab_bench_t *b, const mpilab_bench_opts_t *bo, const mpilab_op_t *op, size_t bytes,
                           int size)
{
    char err[256];
    mpilab_result_t r;
    if (mpilab_bench_measure(b, op, bytes, MPILAB_TIMING_MAX, &r, err, sizeof err) != 0) {
        FAIL("%s:%s %zu bytes: %s", op->name, op->impl, bytes, err);
        return;
    }
    if (!r.data_ok || r.stats.reps != 3)
        FAIL("%s:%s %zu bytes: data_ok %d reps %zu", op->name, op->impl, bytes, r.data_ok, r.stats.reps);
    json_t *m = mpilab_results_measurement(op, bytes, MPILAB_TIMING_MAX, bo, size, &r, 0);
    json_t *d = json_object_get(m, "derived");
    int found;
    size_t want = keys(op->derived, NULL, &found);
    if (json_object_size(d) != want)
        FAIL("%s:%s %zu bytes: %zu derived values, it declares %zu", op->name, op->impl, bytes,
             json_object_size(d), want);
    const char *key;
    json_t *v;
    json_object_foreach(d, key, v)
    {
        keys(op->derived, key, &found);
        if (!found || !json_is_number(v))
            FAIL("%s:%s: derived '%s' not declared or not a number", op->name, op->impl, key);
    }
    double moved = mpilab_op_volume(op, bytes, size);
    json_t *jm = json_object_get(m, "bytes_moved");
    if (moved >= 0.0 && (!jm || json_number_value(jm) != moved))
        FAIL("%s:%s: bytes_moved missing or not the declared volume", op->name, op->impl);
    json_decref(m);
    mpilab_result_free(&r);
}

static size_t first; /* the plugins' first entry, shared by the cases */
static int done;

/* Load the plugins named on the command line (once): the index of their first entry. */
static size_t loaded(void)
{
    if (!done) {
        done = 1;
        first = mpilab_ops_count();
        char err[512];
        for (int a = 0; a < kit_nargs; a++)
            if (mpilab_ops_load(kit_args[a], err, sizeof err) != 0) {
                FAIL("%s", err);
                MPI_Abort(MPI_COMM_WORLD, 1);
            }
        if (mpilab_ops_count() == first)
            FAIL("the plugins brought no entry (recipe_check PLUGIN.so...)");
    }
    return first;
}

static mpilab_bench_t *bench(mpilab_bench_opts_t *bo)
{
    char err[256];
    mpilab_bench_opts_default(bo);
    bo->prec.min_reps = bo->prec.max_reps = 3;
    bo->prec.max_time = 0.0; /* exactly 3: no time budget on a loaded machine */
    mpilab_bench_t *b = NULL;
    if (mpilab_bench_init(MPI_COMM_WORLD, bo, &b, err, sizeof err) != 0)
        MPI_Abort(MPI_COMM_WORLD, 1);
    return b;
}

MPILAB_TEST(validates_at_every_size_and_root)
{
    const size_t sizes[] = {0, 1, 4093, 65537};
    for (size_t k = loaded(); k < mpilab_ops_count(); k++) {
        const mpilab_op_t *op = mpilab_ops_get(k);
        int nroots = (op->flags & MPILAB_OP_ROOTED) ? kit_size : 1;
        for (size_t s = 0; s < 4; s++)
            for (int root = 0; root < nroots; root++)
                if (mpilab_ops_check(op, sizes[s], root, MPI_COMM_WORLD) != 0)
                    FAIL("%s:%s %zu bytes root %d: wrong data", op->name, op->impl, sizes[s], root);
    }
}

MPILAB_TEST(measured_with_its_declared_derived_keys_and_volume)
{
    size_t first = loaded();
    mpilab_bench_opts_t bo;
    mpilab_bench_t *b = bench(&bo);
    for (size_t k = first; k < mpilab_ops_count(); k++) {
        check_measured(b, &bo, mpilab_ops_get(k), 1, kit_size);
        check_measured(b, &bo, mpilab_ops_get(k), 65536, kit_size);
    }
    mpilab_bench_finalize(b);
}

MPILAB_TEST(listed_with_what_it_declared)
{
    for (size_t k = loaded(); kit_rank == 0 && k < mpilab_ops_count(); k++)
        check_listed(mpilab_ops_get(k));
}

MPILAB_TEST(a_declared_pattern_predicts_it)
{
    for (size_t k = loaded(); kit_rank == 0 && k < mpilab_ops_count(); k++)
        if (mpilab_ops_get(k)->model == MPILAB_MODEL_SCATTER_LINEAR)
            check_predicted(mpilab_ops_get(k), kit_size);
}

MPILAB_TEST(clear_forgets_them)
{
    size_t first = loaded();
    mpilab_ops_clear_registered();
    CHECK(mpilab_ops_count() == first);
}

MPILAB_TEST_MAIN()
