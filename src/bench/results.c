/* Results-file pieces (include/mpilab/results.h). */
#include "mpilab/results.h"

#include <math.h>
#include <string.h>

#include "common/common.h"
#include "mpilab/quality.h"

json_t *mpilab_json_real(double x)
{
    return isfinite(x) ? json_real(x) : json_null();
}

json_t *mpilab_results_stats(const mpilab_stats_t *s)
{
    json_t *j = json_object();
    json_object_set_new(j, "mean", mpilab_json_real(s->mean));
    json_object_set_new(j, "ci_half", mpilab_json_real(s->ci_half));
    json_object_set_new(j, "rel_err", mpilab_json_real(s->rel_err));
    json_object_set_new(j, "median", mpilab_json_real(s->median));
    json_object_set_new(j, "med_lo", mpilab_json_real(s->med_lo));
    json_object_set_new(j, "med_hi", mpilab_json_real(s->med_hi));
    json_object_set_new(j, "med_rel_err", mpilab_json_real(s->med_rel_err));
    json_object_set_new(j, "med_os_lo", mpilab_json_real(s->os_lo));
    json_object_set_new(j, "med_os_hi", mpilab_json_real(s->os_hi));
    json_object_set_new(j, "med_block_half", mpilab_json_real(s->blk_half));
    json_object_set_new(j, "min", mpilab_json_real(s->min));
    json_object_set_new(j, "max", mpilab_json_real(s->max));
    json_object_set_new(j, "stdev", mpilab_json_real(s->stdev));
    json_object_set_new(j, "reps", json_integer((json_int_t)s->reps));
    json_object_set_new(j, "invalid", json_integer((json_int_t)s->invalid));
    json_object_set_new(j, "converged", json_boolean(s->converged));
    return j;
}

json_t *mpilab_results_sample_stats(const double *samples, const unsigned char *valid, size_t n,
                                    const mpilab_precision_t *p)
{
    mpilab_stats_t s;
    mpilab_stats_compute(samples, valid, n, p->cl, p->eps, &s);
    return mpilab_results_stats(&s);
}

json_t *mpilab_results_precision(const mpilab_precision_t *p)
{
    json_t *o = json_pack("{s:f,s:f,s:I,s:I,s:f,s:f}", "cl", p->cl, "eps", p->eps, "min_reps",
                          (json_int_t)p->min_reps, "max_reps", (json_int_t)p->max_reps, "min_time_s",
                          p->min_time, "max_time_s", p->max_time);
    if (o && p->budget_floor > 1) /* --budget-floor: only when it changes the rule */
        json_object_set_new(o, "budget_floor", json_integer((json_int_t)p->budget_floor));
    return o;
}

json_t *mpilab_results_samples(const double *s, const unsigned char *v, size_t n, json_t **valid)
{
    json_t *a = json_array();
    *valid = json_array();
    for (size_t k = 0; k < n; k++) {
        json_array_append_new(a, mpilab_json_real(s[k]));
        json_array_append_new(*valid, json_boolean(v ? v[k] : 1));
    }
    return a;
}

json_t *mpilab_results_derived(const mpilab_op_t *op, const mpilab_result_t *r)
{
    if (!op || !op->derived || !r->derived_ok)
        return NULL;
    /* the keys the entry declares, in its order; values it did not set are left out */
    json_t *o = json_object();
    for (const char *p = op->derived; *p;) {
        const char *comma = strchr(p, ',');
        size_t n = comma ? (size_t)(comma - p) : strlen(p);
        for (size_t k = 0; k < r->derived.n; k++) {
            const struct mpilab_derived_value *v = &r->derived.v[k];
            if (strlen(v->key) == n && strncmp(v->key, p, n) == 0)
                json_object_setn_new(o, p, n, v->count ? json_integer((json_int_t)v->value) : json_real(v->value));
        }
        p += n + (comma != NULL);
    }
    return o;
}

json_t *mpilab_results_measurement(const mpilab_op_t *op, size_t bytes, mpilab_timing_t tm,
                                   const mpilab_bench_opts_t *bo, int ranks, const mpilab_result_t *r,
                                   int used_sync)
{
    json_t *valid;
    json_t *samples = mpilab_results_samples(r->samples, r->valid, r->stats.reps, &valid);
    int opspec = tm == MPILAB_TIMING_OPSPEC;
    json_t *m = json_pack("{s:s,s:s,s:s,s:s,s:I,s:i,s:i,s:o,s:o,s:o,s:o,s:f,s:b}", "op", op->name, "impl",
                          op->impl, "timing", mpilab_timing_name(tm), "isolation",
                          opspec ? "barrier" : mpilab_isolation_name(bo->isolation), "bytes", (json_int_t)bytes,
                          "root", bo->root, "ranks", ranks, "precision", mpilab_results_precision(&bo->prec),
                          "stats", mpilab_results_stats(&r->stats), "samples", samples, "valid", valid, "wall_s",
                          r->wall, "data_ok", r->data_ok);
    json_t *flags = mpilab_quality_measurement_flags(&r->stats, r->negative);
    if (tm == MPILAB_TIMING_GLOBAL &&
        mpilab_quality_clock_uncertain(r->sync_uncertainty, r->stats.median, bo->prec.eps))
        json_array_append_new(flags, json_string("clock_uncertain"));
    json_object_set_new(m, "flags", flags);
    json_object_set_new(m, "figure", json_string(mpilab_op_figure_name(op->figure)));
    if (tm == MPILAB_TIMING_ROOT) {
        json_object_set_new(m, "confirm_s", mpilab_json_real(r->confirm_time));
        json_object_set_new(m, "confirm", mpilab_results_stats(&r->confirm_stats));
        json_object_set_new(m, "negative_corrected", json_integer((json_int_t)r->negative));
    }
    if (used_sync) {
        json_object_set_new(m, "clock_sync_residual_s", json_real(r->sync_residual));
        json_object_set_new(m, "clock_sync_uncertainty_s", json_real(r->sync_uncertainty));
    }
    if (bo->isolation == MPILAB_ISO_NONE && !opspec)
        json_object_set_new(m, "pipeline_depth", json_integer((json_int_t)bo->pipeline_depth));
    /* derived quantities from the median: one preempted repetition on a shared machine must
     * not decide a latency or a bandwidth (mean and CI stay in "stats") */
    double moved = mpilab_op_volume(op, bytes, ranks);
    if (ranks >= 2 && moved >= 0.0) /* the entry's data volume (mpilab_op_t.volume) */
        json_object_set_new(m, "bytes_moved", json_integer((json_int_t)moved));
    json_t *dv = mpilab_results_derived(op, r);
    if (dv)
        json_object_set_new(m, "derived", dv);
    return m;
}

json_t *mpilab_results_p2p_measurement(const mpilab_op_t *op, const mpilab_p2p_result_t *q,
                                       mpilab_p2p_mode_t mode, int ranks, const mpilab_precision_t *prec,
                                       double all_pairs_wall)
{
    json_t *valid;
    json_t *samples = mpilab_results_samples(q->samples, q->valid, q->stats.reps, &valid);
    json_t *m = json_pack("{s:s,s:s,s:s,s:s,s:[i,i],s:I,s:I,s:i,s:o,s:o,s:o,s:o}", "op", op->name, "impl",
                          op->impl, "timing", "p2p", "schedule",
                          mode == MPILAB_P2P_PARALLEL ? "parallel" : "sequential", "pair", q->pair.i, q->pair.j,
                          "bytes", (json_int_t)q->bytes, "bytes_back", (json_int_t)q->bytes_back, "ranks", ranks,
                          "precision", mpilab_results_precision(prec), "stats", mpilab_results_stats(&q->stats),
                          "samples", samples, "valid", valid);
    json_object_set_new(m, "all_pairs_wall_s", json_real(all_pairs_wall));
    json_object_set_new(m, "flags", mpilab_quality_measurement_flags(&q->stats, 0));
    json_object_set_new(m, "figure", json_string(mpilab_op_figure_name(op->figure)));
    return m;
}

/* Appends one pair's statistics to the matrix's arrays. */
static void pair_stats_append(json_t *pm, const mpilab_stats_t *s)
{
    static const char *const keys[] = {"mean", "ci_half", "rel_err", "median", "med_lo", "med_hi", "min", "max", "stdev"};
    const double v[] = {s->mean, s->ci_half, s->rel_err, s->median, s->med_lo, s->med_hi, s->min, s->max, s->stdev};
    for (size_t k = 0; k < sizeof keys / sizeof *keys; k++)
        json_array_append_new(json_object_get(pm, keys[k]), mpilab_json_real(v[k]));
    json_array_append_new(json_object_get(pm, "reps"), json_integer((json_int_t)s->reps));
    json_array_append_new(json_object_get(pm, "invalid"), json_integer((json_int_t)s->invalid));
    json_array_append_new(json_object_get(pm, "converged"), json_boolean(s->converged));
}

json_t *mpilab_results_pair_matrix(const mpilab_op_t *op, const mpilab_pair_matrix_t *m, mpilab_p2p_mode_t mode,
                                   int ranks, const mpilab_precision_t *prec, double all_pairs_wall)
{
    json_t *pm = json_pack("{s:s,s:I,s:I,s:I}", "design", m->design, "pairs_planned", (json_int_t)m->npairs,
                           "rounds", (json_int_t)m->rounds, "samples_cap", (json_int_t)m->samples_cap);
    static const char *const arrays[] = {"i", "j", "round", "mean", "ci_half", "rel_err", "median", "med_lo",
                                         "med_hi", "min", "max", "stdev", "reps", "invalid", "converged",
                                         "flags", "samples"};
    for (size_t k = 0; k < sizeof arrays / sizeof *arrays; k++)
        json_object_set_new(pm, arrays[k], json_array());
    size_t count = 0;
    for (size_t k = 0; k < m->npairs; k++) {
        if (!m->measured[k])
            continue;
        count++;
        json_array_append_new(json_object_get(pm, "i"), json_integer(m->pairs[k].i));
        json_array_append_new(json_object_get(pm, "j"), json_integer(m->pairs[k].j));
        json_array_append_new(json_object_get(pm, "round"), json_integer((json_int_t)m->round[k]));
        pair_stats_append(pm, &m->stats[k]);
        json_array_append_new(json_object_get(pm, "flags"), mpilab_quality_measurement_flags(&m->stats[k], 0));
        json_t *sa = json_null();
        if (m->samples[k]) {
            sa = json_array();
            for (size_t r = 0; r < m->stats[k].reps; r++)
                json_array_append_new(sa, mpilab_json_real(m->samples[k][r]));
        }
        json_array_append_new(json_object_get(pm, "samples"), sa);
    }
    json_object_set_new(pm, "count", json_integer((json_int_t)count));
    json_t *o = json_pack("{s:s,s:s,s:s,s:s,s:I,s:I,s:i,s:o,s:o,s:o}", "op", op->name, "impl", op->impl, "timing",
                          "p2p", "schedule",
                          mode == MPILAB_P2P_PARALLEL && !m->fell_back ? "parallel" : "sequential", "bytes",
                          (json_int_t)m->bytes, "bytes_back", (json_int_t)m->bytes_back, "ranks", ranks,
                          "precision", mpilab_results_precision(prec), "all_pairs_wall_s",
                          mpilab_json_real(all_pairs_wall), "pair_matrix", pm);
    json_object_set_new(o, "figure", json_string(mpilab_op_figure_name(op->figure)));
    if (mode == MPILAB_P2P_PARALLEL && m->check_pairs > 0) {
        /* the parallel schedule's check (docs/pairs.md, "Contention check") */
        json_object_set_new(o, "schedule_check",
                            json_pack("{s:s,s:I,s:I,s:o,s:b}", "asked", "parallel", "pairs_checked",
                                      (json_int_t)m->check_pairs, "disagreed", (json_int_t)m->check_disagree,
                                      "worst_ratio", mpilab_json_real(m->check_disagree ? m->check_worst_ratio : 1.0),
                                      "fell_back", m->fell_back));
        if (m->check_disagree)
            json_object_set_new(o, "flags", json_pack("[s]", "parallel_contention"));
    }
    return o;
}

json_t *mpilab_results_clock_sync(const mpilab_clocksync_t *cs, double max_residual, size_t nsyncs)
{
    json_t *rk = json_array();
    for (int r = 1; r < cs->nranks; r++)
        json_array_append_new(rk, json_pack("{s:i,s:o,s:o,s:o,s:o}", "rank", r, "offset_s",
                                            mpilab_json_real(cs->ranks[r].offset), "drift",
                                            mpilab_json_real(cs->ranks[r].drift), "residual_s",
                                            mpilab_json_real(cs->ranks[r].residual), "uncertainty_s",
                                            mpilab_json_real(cs->ranks[r].uncertainty)));
    for (int r = 1; r < cs->nranks; r++)
        json_object_set_new(json_array_get(rk, (size_t)r - 1), "drift_uncertainty",
                            mpilab_json_real(cs->ranks[r].drift_uncertainty));
    json_t *o = json_pack("{s:s,s:o,s:I,s:o,s:i,s:o,s:b,s:o}", "method", mpilab_sync_method_name(cs->method),
                          "max_residual_s", mpilab_json_real(max_residual), "syncs", (json_int_t)nsyncs,
                          "last_duration_s", mpilab_json_real(cs->duration), "last_attempts", cs->attempts,
                          "last_max_uncertainty_s", mpilab_json_real(cs->max_uncertainty), "last_precise",
                          cs->precise, "ranks", rk);
    if (o)
        json_object_set_new(o, "last_stopped", json_string(mpilab_sync_stop_name(cs->stopped)));
    if (o && cs->requested == MPILAB_SYNC_AUTO) {
        /* why auto chose the method (mpilab_sync_auto_choice) */
        char why[160];
        if (cs->method == MPILAB_SYNC_LEADERS && cs->nodes < cs->nranks)
            snprintf(why, sizeof why, "%d ranks on %d nodes: rank 0 synchronises every node's leader, "
                     "node-local trees below", cs->nranks, cs->nodes);
        else if (cs->method == MPILAB_SYNC_LEADERS)
            snprintf(why, sizeof why, "%d ranks, one per node: rank 0 synchronises every rank (the "
                     "flat precision needs it)", cs->nranks);
        else
            snprintf(why, sizeof why, "fewer than %d ranks: every rank probed from rank 0",
                     MPILAB_SYNC_AUTO_MIN_RANKS);
        json_object_set_new(o, "requested", json_string("auto"));
        json_object_set_new(o, "nodes", cs->nodes > 0 ? json_integer(cs->nodes) : json_null());
        json_object_set_new(o, "chosen_because", json_string(why));
    }
    return o;
}

json_t *mpilab_results_new(json_t *provenance, json_t *measurements)
{
    json_t *root = json_object();
    json_object_set_new(root, "schema", json_string(MPILAB_RESULTS_SCHEMA));
    json_object_set_new(root, "provenance", provenance);
    json_object_set_new(root, "measurements", measurements);
    return root;
}

int mpilab_results_write(const char *path, const json_t *doc, char *err, size_t errlen)
{
    return mpilab_json_write_atomic(path, doc, err, errlen);
}
