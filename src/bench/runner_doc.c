/* Rank 0's report of one mpilab-bench run (src/bench/runner_run.h): the human table or the
 * CSV, the notes on isolations that disagree, and the results document (provenance options,
 * placement, clock synchronisation, the models). Moved out of runner.c, which measures. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/common.h"
#include "mpilab/models.h"
#include "mpilab/quality.h"
#include "mpilab/results.h"
#include "mpilab/suite.h"
#include "suite/suite_json.h"
#include "runner_run.h"
/* --format csv: one row per table row, times in seconds, shown as the table shows them (round
 * trips one-way, the round trip in its own column); "figure" names what each row's time is. */
static void print_csv(const row_t *rows, size_t n)
{
    printf("op,impl,timing,isolation,bytes,median_s,med_lo_s,med_hi_s,roundtrip_median_s,reps,converged,flags,"
           "figure\n");
    for (size_t k = 0; k < n; k++) {
        const row_t *r = &rows[k];
        double s = runner_row_scale(r);
        printf("%s,%s,%s,%s,%zu,%.10g,%.10g,%.10g,", r->op, r->impl, r->timing, r->iso[0] ? r->iso : "", r->bytes,
               r->median * s, r->med_lo * s, r->med_hi * s);
        if (s != 1.0)
            printf("%.10g", r->median);
        printf(",%zu,%d,%s%s%s%s%s%s%s%s,%s\n", r->reps, r->converged != 0, r->converged ? "" : "not_converged ",
               r->invalid ? "invalid_samples " : "", r->negative ? "negative_time " : "",
               r->clock_uncertain ? "clock_uncertain " : "",
               r->reps && mpilab_quality_undetermined(r->med_lo, r->med_hi) ? "ci_undetermined " : "",
               r->global_differs ? "global_differs " : "", r->contention ? "parallel_contention " : "",
               r->differs ? "isolation_differs" : "", r->entry ? mpilab_op_figure_name(r->entry->figure) : "");
    }
}

/* Under the table: what each entry's figure is, one line per entry (name and declared figure)
 * in the order the table first shows it, from the entry's own declaration (mpilab_op_t.figure)
 * and what its bytes mean. */
static void print_figures(const row_t *rows, size_t n)
{
    int any = 0;
    for (size_t k = 0; k < n; k++) {
        const mpilab_op_t *e = rows[k].entry;
        int seen = !e;
        for (size_t q = 0; q < k && !seen; q++)
            seen = rows[q].entry && strcmp(rows[q].entry->name, e->name) == 0 && rows[q].entry->figure == e->figure;
        if (seen)
            continue;
        if (!any)
            printf("what median(us) is, per entry (bytes: what the size means):\n");
        any = 1;
        printf("  %s: %s [bytes: %s]\n", e->name, mpilab_op_figure_text(e->figure),
               e->bytes_desc ? e->bytes_desc : "-");
    }
}

/* The table: the reported figure (median) with its interval (the stopping rule's), the
 * repetitions and the flags; then how many converged, and the verdict when too few did. An
 * interval that determines nothing (mpilab_quality_undetermined: reaching 0, or wider than a
 * decade) reads "undetermined" with the flag ci_undetermined; a median below 0 is never
 * shown as a time. */
static void print_table(const row_t *rows, size_t n, const mpilab_quality_context_t *qc, int show_iso)
{
    printf("%-10s %-10s %-7s %s%10s %12s %23s %5s %s\n", "op", "impl", "timing", show_iso ? "iso     " : "",
           "bytes", "median(us)", "median CI(us)", "reps", "flags");
    size_t conv = 0, measured = 0, unclocked = 0;
    for (size_t k = 0; k < n; k++) {
        const row_t *r = &rows[k];
        unclocked += r->reps && r->clock_uncertain;
        char ci[48], fl[192] = "", med[32];
        int undetermined = r->reps && mpilab_quality_undetermined(r->med_lo, r->med_hi);
        if (undetermined)
            snprintf(ci, sizeof ci, "undetermined");
        else if (isfinite(r->med_lo) && isfinite(r->med_hi))
            snprintf(ci, sizeof ci, "%.3f..%.3f", r->med_lo * 1e6 * runner_row_scale(r), r->med_hi * 1e6 * runner_row_scale(r));
        else
            snprintf(ci, sizeof ci, "-");
        if (r->reps) {
            measured++;
            conv += r->converged != 0;
            snprintf(fl, sizeof fl, "%s%s%s%s%s%s%s%s%s", r->converged ? "" : "not_converged ",
                     r->invalid ? "invalid_samples " : "", r->negative ? "negative_time " : "",
                     r->median < 0 ? "negative " : "", r->clock_uncertain ? "clock_uncertain " : "",
                     undetermined ? "ci_undetermined " : "", r->global_differs ? "global_differs " : "",
                     r->contention ? "parallel_contention " : "", r->differs ? "isolation_differs" : "");
        }
        char iso[16] = "";
        if (show_iso)
            snprintf(iso, sizeof iso, "%-7s ", r->iso[0] ? r->iso : "-");
        if (r->median < 0)
            snprintf(med, sizeof med, "impossible");
        else
            snprintf(med, sizeof med, "%.3f", r->median * 1e6 * runner_row_scale(r));
        printf("%-10s %-10s %-7s %s%10zu %12s %23s %5zu %s\n", r->op, r->impl, r->timing, iso, r->bytes, med, ci,
               r->reps, fl[0] ? fl : "-");
    }
    if (measured) {
        char verdict[512];
        printf("%zu of %zu measurements converged to the asked precision (the median's interval)\n", conv, measured);
        if (mpilab_quality_noisy_verdict(conv, measured, qc, verdict, sizeof verdict))
            printf("%s\n", verdict);
        if (unclocked)
            printf("%zu global-timing measurement%s flagged clock_uncertain: the clock synchronisation stated a "
                   "larger uncertainty than the asked precision (a busy machine); do not trust %s\n",
                   unclocked, unclocked == 1 ? "" : "s", unclocked == 1 ? "it" : "them");
    }
    print_figures(rows, n);
}

/* Rank 0, after measuring: where the same entry, timing and size was measured under two
 * isolations (--isolation barrier,none) and the two medians' intervals do not overlap, both
 * rows and both measurement objects say so (flag isolation_differs, the other figure in
 * "isolation_other"), and the table prints a note under itself. */
static void note_isolation(run_t *w)
{
    if (w->c->nisolation < 2)
        return;
    /* the rows of one entry at one size are contiguous (measure_all: sizes, then isolations,
     * then timings), so each row is compared within its block only, not with every row (an
     * all-pairs run has a row per pair) */
    for (size_t a = 0; a < w->nrows; a++)
        for (size_t b = a + 1; b < w->nrows; b++) {
            row_t *x = &w->rows[a], *y = &w->rows[b];
            if (strcmp(x->op, y->op) || strcmp(x->impl, y->impl) || x->bytes != y->bytes)
                break;
            if (strcmp(x->timing, y->timing) || !x->iso[0] || !strcmp(x->iso, y->iso) || !x->reps || !y->reps)
                continue;
            if (!(x->med_hi < y->med_lo || y->med_hi < x->med_lo))
                continue; /* the intervals overlap: no disagreement shown */
            row_t *pair[2] = {x, y};
            size_t idx[2] = {a, b};
            for (int k = 0; k < 2; k++) {
                const row_t *o = pair[1 - k];
                pair[k]->differs = (int)idx[1 - k] + 1;
                json_t *m = json_array_get(w->meas, pair[k]->meas);
                json_array_append_new(json_object_get(m, "flags"), json_string("isolation_differs"));
                json_object_set_new(m, "isolation_other",
                                    json_pack("{s:s,s:f,s:f,s:f}", "isolation", o->iso, "median", o->median,
                                              "med_lo", o->med_lo, "med_hi", o->med_hi));
            }
        }
}

/* Rank 0, after measuring: a max- or root-timing row whose median's interval misses the
 * interval of the global-timing row of the same entry, size and isolation, by more than the
 * asked precision (eps x the global median: a simulated run's intervals are points, and a
 * 0.04% difference is no undercount), gets the flag
 * global_differs, in the table and in its measurement object (with the global figure in
 * "global_other"). Max timing is each rank's own elapsed time, root timing the root's: both
 * miss what the operation costs between ranks whenever the last rank finishes later than
 * its own start plus its own part (a latency MPIBlib's max and root timing do not see:
 * docs/bench.md, "Which timing to trust"). */
static void note_timing(run_t *w)
{
    for (size_t a = 0; a < w->nrows; a++) {
        const row_t *g = &w->rows[a];
        if (strcmp(g->timing, "global") != 0 || !g->reps || !isfinite(g->med_lo) || !isfinite(g->med_hi))
            continue;
        /* the rows of one entry at one size are contiguous (measure_all) */
        size_t lo = a, hi = a;
        while (lo > 0 && !strcmp(w->rows[lo - 1].op, g->op) && !strcmp(w->rows[lo - 1].impl, g->impl) &&
               w->rows[lo - 1].bytes == g->bytes)
            lo--;
        while (hi + 1 < w->nrows && !strcmp(w->rows[hi + 1].op, g->op) && !strcmp(w->rows[hi + 1].impl, g->impl) &&
               w->rows[hi + 1].bytes == g->bytes)
            hi++;
        const double slack = w->c->bo.prec.eps * fabs(g->median);
        for (size_t k = lo; k <= hi; k++) {
            row_t *x = &w->rows[k];
            if ((strcmp(x->timing, "max") && strcmp(x->timing, "root")) || strcmp(x->iso, g->iso) || !x->reps ||
                !(x->med_hi + slack < g->med_lo || g->med_hi + slack < x->med_lo))
                continue;
            x->global_differs = (int)a + 1;
            json_t *m = json_array_get(w->meas, x->meas);
            json_array_append_new(json_object_get(m, "flags"), json_string("global_differs"));
            json_object_set_new(m, "global_other", json_pack("{s:f,s:f,s:f}", "median", g->median, "med_lo",
                                                             g->med_lo, "med_hi", g->med_hi));
        }
    }
}

/* Under the table: each max/root figure that global timing contradicts. */
static void print_timing_notes(const row_t *rows, size_t n)
{
    size_t shown = 0;
    for (size_t k = 0; k < n; k++) {
        const row_t *r = &rows[k], *g = r->global_differs ? &rows[r->global_differs - 1] : NULL;
        if (!g)
            continue;
        printf("note: %s:%s %zu B: %s timing %.3f us against global %.3f us (x%.2f), their intervals apart\n", r->op,
               r->impl, r->bytes, r->timing, r->median * 1e6, g->median * 1e6,
               r->median > 0 ? g->median / r->median : NAN);
        shown++;
    }
    if (shown)
        printf("note: max and root timing see each rank's (the root's) own elapsed time; global timing sees the "
               "operation from its common start to the last rank's end: where they disagree, max and root miss "
               "a latency (docs/bench.md, \"Which timing to trust\")\n");
}

/* Under the table: each disagreement between isolations, and what it means. */
static void print_isolation_notes(const row_t *rows, size_t n)
{
    size_t shown = 0;
    for (size_t k = 0; k < n; k++) {
        const row_t *r = &rows[k];
        if (!r->differs || (size_t)r->differs - 1 < k)
            continue; /* each pair once */
        const row_t *o = &rows[r->differs - 1];
        printf("note: %s:%s %s %zu B: %s %.3f us against %s %.3f us (x%.2f), their intervals apart\n", r->op,
               r->impl, r->timing, r->bytes, r->iso, r->median * 1e6, o->iso, o->median * 1e6,
               r->median > 0 ? o->median / r->median : NAN);
        shown++;
    }
    if (shown)
        printf("note: isolated repetitions (barrier) each pay the whole operation from a common start; "
               "back-to-back repetitions (none, as IMB and OSU time them) overlap one operation's tail with "
               "the next one's start; neither is wrong: they answer different questions (docs/bench.md, "
               "\"Isolation\")\n");
}

/* provenance.options: the run's configuration. */
static json_t *options_json(const run_t *w)
{
    const mpilab_runner_config_t *c = w->c;
    json_t *opt = json_object(), *tl = json_array(), *sz = json_array(), *ol = json_array(), *ml = json_array();
    for (size_t t = 0; t < c->ntiming; t++)
        json_array_append_new(tl, json_string(mpilab_timing_name(c->timing[t])));
    for (size_t k = 0; k < c->nsizes; k++)
        json_array_append_new(sz, json_integer((json_int_t)c->sizes[k]));
    for (size_t e = 0; e < c->nsel; e++)
        json_array_append_new(ol, json_sprintf("%s:%s", c->sel[e]->name, c->sel[e]->impl));
    json_object_set_new(opt, "ops", ol);
    json_object_set_new(opt, "sizes", sz);
    if (c->model_extend) {
        const mpilab_extend_opts_t *x = &c->ext;
        json_object_set_new(opt, "model_sizes",
                            json_pack("{s:s,s:f,s:I,s:I,s:f,s:I,s:O}", "mode", "extend", "tol", x->tol, "factor",
                                      (json_int_t)x->factor, "max_bytes", (json_int_t)x->max_bytes, "max_time_s",
                                      x->max_time_s, "max_added", (json_int_t)x->max_added, "entries", w->extended));
    }
    if (c->adaptive)
        json_object_set_new(opt, "sizes_auto",
                            json_pack("{s:I,s:I,s:O}", "budget", (json_int_t)c->auto_budget, "start_factor", 8,
                                      "entries", w->adaptive));
    json_object_set_new(opt, "timing", tl);
    json_object_set_new(opt, "timing_skipped", json_incref(w->skipped));
    json_object_set_new(opt, "precision", mpilab_results_precision(&c->bo.prec));
    if (c->eps_for.n) {
        json_t *ef = json_array();
        for (size_t k = 0; k < c->eps_for.n; k++) {
            const mpilab_eps_rule_t *x = &c->eps_for.rule[k];
            json_array_append_new(ef, json_pack("{s:s,s:s,s:I,s:f}", "op", x->op, "impl", x->impl, "bytes",
                                                (json_int_t)x->bytes, "eps", x->eps));
        }
        json_object_set_new(opt, "eps_for", ef);
    }
    json_object_set_new(opt, "isolation", json_string(mpilab_isolation_name(c->bo.isolation)));
    int any_none = 0;
    if (c->nisolation > 1) {
        json_t *il = json_array();
        for (size_t k = 0; k < c->nisolation; k++)
            json_array_append_new(il, json_string(mpilab_isolation_name(c->isolation[k])));
        json_object_set_new(opt, "isolations", il);
    }
    for (size_t k = 0; k < c->nisolation; k++)
        any_none |= c->isolation[k] == MPILAB_ISO_NONE;
    json_object_set_new(opt, "warmup", json_integer((json_int_t)c->bo.warmup));
    if (any_none)
        json_object_set_new(opt, "pipeline_depth", json_integer((json_int_t)c->bo.pipeline_depth));
    json_object_set_new(opt, "p2p_schedule",
                        json_string(c->p2p_mode == MPILAB_P2P_PARALLEL ? "parallel" : "sequential"));
    int allpairs = 0;
    for (size_t e = 0; e < c->nsel; e++)
        allpairs |= (c->sel[e]->flags & MPILAB_OP_ALLPAIRS) != 0;
    if (allpairs)
        json_object_set_new(opt, "pairs", runner_pairs_json(&w->rp));
    json_object_set_new(opt, "p2p_back", c->p2p_back >= 0 ? json_integer(c->p2p_back) : json_string("same"));
    json_object_set_new(opt, "root", json_integer(c->bo.root));
    json_object_set_new(opt, "sync", json_string(mpilab_sync_method_name(c->bo.sync_method)));
    json_object_set_new(opt, "resync", json_string(c->bo.sync_method == MPILAB_SYNC_EXACT
                                                       ? "once: every rank reads one global clock (simulated), "
                                                         "nothing to resynchronise"
                                                       : "before every measurement that uses synchronised clocks"));
    json_object_set_new(opt, "fit", json_boolean(!c->no_fit));
    if (c->hockney)
        json_array_append_new(ml, json_string("hockney"));
    if (c->loggp)
        json_array_append_new(ml, json_string("loggp"));
    if (c->lmo) {
        json_array_append_new(ml, json_string("lmo"));
        json_object_set_new(opt, "lmo_bytes", json_integer((json_int_t)c->lmo_bytes));
        json_object_set_new(opt, "lmo_rendezvous", json_integer((json_int_t)c->lmo_rendezvous));
        json_object_set_new(opt, "lmo_eps", json_real(c->lmo_eps > 0.0 ? c->lmo_eps : c->bo.prec.eps));
        json_t *lw = json_object();
        json_object_set_new(lw, "mode", json_string(mpilab_wait_name(&c->lmo_wait)));
        if (c->lmo_wait.mode == MPILAB_WAIT_SLEEP) {
            json_object_set_new(lw, "interval_s", json_real(c->lmo_wait.interval_s));
            json_object_set_new(lw, "idle_s", json_real(c->lmo_wait.idle_s));
        }
        json_object_set_new(opt, "lmo_wait", lw);
    }
    json_object_set_new(opt, "models", ml);
    json_object_set_new(opt, "placement", json_string(mpilab_placement_name(c->placement_mode)));
    if (c->inject) {
        /* the plan and every rank's injected error (the plan is the same on every rank) */
        json_t *ranks = json_array();
        for (int r = 0; r < w->size; r++) {
            mpilab_clock_inject_t e;
            mpilab_inject_plan_rank(&c->inject_plan, r, &e);
            json_array_append_new(ranks, json_pack("{s:i,s:f,s:f}", "rank", r, "offset_s", e.offset, "drift", e.drift));
        }
        json_object_set_new(opt, "inject_clock",
                            json_pack("{s:s,s:f,s:f,s:I,s:o}", "spec", c->inject_spec, "max_offset_s",
                                      c->inject_plan.max_offset, "max_drift", c->inject_plan.max_drift, "seed",
                                      (json_int_t)c->inject_plan.seed, "ranks", ranks));
    }
    return opt;
}

/* provenance.placement: what mpilab_placement_apply did (rank 0's view; every rank decides
 * alike) and, per rank, the CPU it was pinned to (-1: not pinned). */
json_t *runner_placement_json(const mpilab_placement_t *p, int pinned_all)
{
    if (!p)
        return json_null();
    long online = sysconf(_SC_NPROCESSORS_ONLN);
    return json_pack("{s:s,s:i,s:i,s:i,s:i,s:i,s:b,s:b,s:b,s:s}", "mode", mpilab_placement_name(p->mode),
                     "local_ranks", p->local_size, "kernel_ranks", p->kernel_ranks, "cpus", p->cpus,
                     "node_cpus", (int)(online > 0 ? online : 0),
                     "pinned_cpu_rank0", p->pinned_cpu, "pinned", pinned_all, "yield_when_idle_off", p->yield_off,
                     "oversubscribed_without_yield", p->yield_oversubscribed, "reason", p->reason);
}

/* What the verdict on an unconverged run needs to know (mpilab/quality.h), from the
 * provenance: ranks bound (the launcher's mapping or mpilab's own pinning), ranks and CPUs of
 * the busiest node, and whether the repetitions were fixed. */
static mpilab_quality_context_t quality_context(const run_t *w, json_t *prov)
{
    const mpilab_runner_config_t *c = w->c;
    mpilab_quality_context_t q = {0, 0, 0, 0, c->time_budget};
    json_t *map = json_object_get(prov, "mapping"), *pl = json_object_get(prov, "placement");
    size_t k;
    json_t *m;
    int bound = json_array_size(map) > 0;
    json_array_foreach(map, k, m) bound = bound && json_is_true(json_object_get(m, "bound"));
    q.pinned = bound || json_is_true(json_object_get(pl, "pinned"));
    q.local_ranks = (int)json_integer_value(json_object_get(pl, "local_ranks"));
    q.node_cpus = (int)json_integer_value(json_object_get(pl, "node_cpus"));
    /* the median's 95% interval needs 6 samples: fewer at most is a fixed-count run */
    q.fixed_count = c->bo.prec.min_reps >= c->bo.prec.max_reps || c->bo.prec.max_reps < 6;
    return q;
}

/* Rank 0: the results document from what the run measured; prints the tables. */
json_t *runner_document(run_t *w, json_t *prov, const mpilab_loggp_pair_result_t *lres,
                        const mpilab_lmo_measured_t *lmo, json_t *multilane)
{
    const mpilab_runner_config_t *c = w->c;
    json_object_set_new(prov, "options", options_json(w));
    const mpilab_clocksync_t *cs = mpilab_bench_clocksync(w->b);
    json_t *sync = w->sync_used && cs ? mpilab_results_clock_sync(cs, w->worst_residual, w->nsyncs) : NULL;
    if (sync) { /* what synchronising cost the run: every synchronisation, their time on rank 0 */
        json_object_set_new(sync, "performed", json_integer((json_int_t)w->sync_count));
        json_object_set_new(sync, "total_duration_s", mpilab_json_real(w->sync_total));
    }
    json_object_set_new(prov, "clock_sync", sync ? sync : json_null());
    json_t *doc = mpilab_results_new(prov, json_incref(w->meas));
    if (w->suite_used)
        json_object_set_new(doc, "suite", mpilab_suite_config_json());
    json_t *models = NULL;
    int have_fit_entry = 0;
    for (size_t e = 0; e < c->nsel; e++)
        have_fit_entry |= c->sel[e]->model == MPILAB_MODEL_P2P_FIT;
    if (!c->no_fit && c->hockney && have_fit_entry && w->fit_sizes >= 2)
        models = mpilab_models_hockney_top(w->meas, w->size, (double)w->top_from, w->top_state);
    mpilab_quality_context_t qc = quality_context(w, prov);
    note_isolation(w);
    note_timing(w);
    if (c->csv) {
        print_csv(w->rows, w->nrows);
    } else {
        print_table(w->rows, w->nrows, &qc, c->nisolation > 1);
        print_isolation_notes(w->rows, w->nrows);
        print_timing_notes(w->rows, w->nrows);
    }
    if (lres) {
        if (!models)
            models = json_object();
        mpilab_loggp_opts_t lo = c->lg;
        lo.top_from = w->top_state ? (double)w->top_from : 0; /* the regime the extension found */
        json_t *lg = mpilab_models_loggp(lres, w->loggp_npairs, w->lg_sizes, w->lg_nsizes, w->size, &lo, w->meas, stdout);
        if (lg) { /* the measurement's own cost, as wall_s is a measurement's; which pairs */
            json_object_set_new(lg, "wall_s", mpilab_json_real(w->loggp_wall));
            json_object_set_new(lg, "pairs_design", json_string(w->loggp_design));
            json_t *chk = runner_loggp_check_json(w);
            json_object_set_new(lg, "schedule",
                                json_string(c->lg.mode == MPILAB_P2P_PARALLEL && !w->lg_fell_back ? "parallel"
                                                                                                 : "sequential"));
            if (chk)
                json_object_set_new(lg, "schedule_check", chk);
            if (w->lg_check_disagree) {
                json_object_set_new(lg, "flags", json_pack("[s]", "parallel_contention"));
                if (!c->csv)
                    printf("LogGP flag parallel_contention: %zu of %zu pairs measured again alone were slower in "
                           "parallel (up to %.2fx); the figures above are every pair's measured one at a time\n",
                           w->lg_check_disagree, w->lg_check_pairs, w->lg_check_worst);
            }
        }
        json_object_set_new(models, "loggp", lg);
    }
    if (lmo) {
        if (!models)
            models = json_object();
        json_object_set_new(models, "lmo", mpilab_models_lmo(lmo, w->meas, (double)c->lmo_rendezvous, stdout));
    }
    if (multilane) {
        if (!models)
            models = json_object();
        json_object_set_new(models, "multilane", multilane);
    }
    if (models)
        json_object_set_new(doc, "models", models);
    return doc;
}
