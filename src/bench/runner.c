/* One run of mpilab-bench as a library call (include/mpilab/runner.h): every selected entry
 * at every size (engine entries with every timing method, all-pairs entries per pair), the
 * LogGP measurement, the models and the results document. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/common.h"
#include "coll/multilane_entry.h"
#include "mpilab/models.h"
#include "mpilab/multilane.h"
#include "mpilab/parse.h"
#include "mpilab/quality.h"
#include "mpilab/results.h"
#include "mpilab/runner.h"
#include "mpilab/suite.h"
#include "suite/suite_json.h"
#include "runner_pairs.h"

/* A row of the human table (rank 0). */
typedef struct row {
    char op[48], impl[48], timing[12], iso[12];
    size_t bytes;
    double mean, ci, median, med_lo, med_hi;
    size_t reps, invalid, negative;
    int converged, clock_uncertain;
    int differs;         /* index+1 of the row of another isolation it disagrees with */
    size_t meas;         /* its measurement object (engine rows) */
} row_t;

/* What one run accumulates. */
typedef struct run {
    const mpilab_runner_config_t *c;
    mpilab_bench_t *b;
    int rank, size;
    row_t *rows;
    size_t nrows, done, total;
    json_t *meas, *skipped;
    json_t *prov;       /* rank 0: provenance, taken before measuring (checkpoints use it) */
    double last_save;   /* rank 0: MPI_Wtime of the last checkpoint (at first: the start) */
    int exit_code, sync_used, suite_used;
    size_t nsyncs, fit_sizes;
    double worst_residual;
    runner_pairs_t rp;  /* the pair design of all-pairs entries */
    double save_cost;   /* rank 0: seconds the last checkpoint took */
} run_t;

static void set_row(row_t *r, const char *op, const char *impl, const char *timing, size_t bytes,
                    const mpilab_stats_t *s)
{
    snprintf(r->op, sizeof r->op, "%s", op);
    snprintf(r->impl, sizeof r->impl, "%s", impl);
    snprintf(r->timing, sizeof r->timing, "%s", timing);
    r->bytes = bytes;
    r->mean = s ? s->mean : NAN;
    r->ci = s ? s->ci_half : NAN;
    r->median = s ? s->median : NAN;
    r->med_lo = s ? s->med_lo : NAN;
    r->med_hi = s ? s->med_hi : NAN;
    r->reps = s ? s->reps : 0;
    r->invalid = s ? s->invalid : 0;
    r->negative = 0;
    r->clock_uncertain = 0;
    r->differs = 0;
    r->iso[0] = '\0';
    r->converged = s ? s->converged : 0;
}

/* Rank 0: the measurements so far, as a results file marked partial (written atomically
 * after the first measurement and then at most once a second), so that a killed or
 * timed-out run keeps what it measured. The complete document replaces it at the end. */
static void checkpoint(run_t *w, int force)
{
    /* no checkpoint to "-": standard output carries exactly one document, the last */
    if (w->rank != 0 || !w->c->out || !w->prov || strcmp(w->c->out, "-") == 0)
        return;
    double now = MPI_Wtime();
    /* at most once a second, and at most a tenth of the time spent writing (a large file);
     * the first one a second after the start (last_save starts there): each write with its
     * fsync cost a sub-second run 5-20 ms, and such a run, killed, loses under a second */
    double gap = 10.0 * w->save_cost > 1.0 ? 10.0 * w->save_cost : 1.0;
    if (!force && now - w->last_save < gap)
        return;
    json_t *doc = mpilab_results_new(json_incref(w->prov), json_incref(w->meas));
    json_object_set_new(doc, "partial", json_true());
    json_object_set_new(doc, "partial_reason", json_string("the run stopped before the end (killed, timed out or "
                                                           "failed): the measurements completed until then"));
    char err[256];
    if (mpilab_results_write(w->c->out, doc, err, sizeof err) != 0)
        fprintf(stderr, "mpilab-bench: checkpoint: %s\n", err);
    json_decref(doc);
    w->last_save = MPI_Wtime();
    w->save_cost = w->last_save - now;
}

/* What a row's figures are multiplied by in the table: point-to-point rows (timing "p2p")
 * hold round trips, shown one-way. */
static double row_scale(const row_t *r)
{
    return strcmp(r->timing, "p2p") == 0 ? 0.5 : 1.0;
}

static void progress(const run_t *w, const row_t *r)
{
    if (w->c->quiet || w->rank != 0)
        return;
    int tty = isatty(STDERR_FILENO);
    fprintf(stderr, "%s[%zu/%zu] %s:%s %s %zu B: %.3g s%s (%zu reps%s)%s", tty ? "\r\033[K" : "", w->done,
            w->total, r->op, r->impl, r->timing, r->bytes, r->median * row_scale(r),
            row_scale(r) != 1.0 ? " one-way" : "", r->reps,
            r->reps && !r->converged ? ", not converged" : "", tty ? "" : "\n");
    if (tty && w->done == w->total)
        fputc('\n', stderr);
    fflush(stderr);
}

/* The table: the reported figure (median) with its interval (the stopping rule's), the
 * repetitions and the flags; then how many converged, and the verdict when too few did. */
static void print_table(const row_t *rows, size_t n, const mpilab_quality_context_t *qc, int show_iso)
{
    printf("%-10s %-10s %-7s %s%10s %12s %23s %5s %s\n", "op", "impl", "timing", show_iso ? "iso     " : "",
           "bytes", "median(us)", "median CI(us)", "reps", "flags");
    size_t conv = 0, measured = 0, unclocked = 0, oneway = 0;
    for (size_t k = 0; k < n; k++) {
        const row_t *r = &rows[k];
        unclocked += r->reps && r->clock_uncertain;
        char ci[48], fl[128] = "";
        if (isfinite(r->med_lo) && isfinite(r->med_hi))
            snprintf(ci, sizeof ci, "%.3f..%.3f", r->med_lo * 1e6 * row_scale(r), r->med_hi * 1e6 * row_scale(r));
        else
            snprintf(ci, sizeof ci, "-");
        if (r->reps) {
            measured++;
            conv += r->converged != 0;
            snprintf(fl, sizeof fl, "%s%s%s%s%s", r->converged ? "" : "not_converged ",
                     r->invalid ? "invalid_samples " : "", r->negative ? "negative_time " : "",
                     r->clock_uncertain ? "clock_uncertain " : "", r->differs ? "isolation_differs" : "");
        }
        char iso[16] = "";
        if (show_iso)
            snprintf(iso, sizeof iso, "%-7s ", r->iso[0] ? r->iso : "-");
        printf("%-10s %-10s %-7s %s%10zu %12.3f %23s %5zu %s\n", r->op, r->impl, r->timing, iso, r->bytes,
               r->median * 1e6 * row_scale(r), ci, r->reps, fl[0] ? fl : "-");
        oneway += row_scale(r) != 1.0;
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
    if (oneway)
        printf("p2p rows: one-way time, the round trip / 2 (as OSU and IMB print it); the results file "
               "keeps the round trip\n");
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

/* Table rows of one all-pairs size: every pair when there are at most ROWS_PAIRS, else the
 * pair of the median median and the slowest pair. */
#define ROWS_PAIRS 64

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static void allpairs_rows(run_t *w, const mpilab_op_t *op, const mpilab_pair_matrix_t *mx, row_t *worst)
{
    size_t nm = 0, *idx = malloc((mx->npairs + 1) * sizeof *idx);
    for (size_t k = 0; idx && k < mx->npairs; k++)
        if (mx->measured[k])
            idx[nm++] = k;
    size_t show[2] = {0, 0}; /* summarised: the pair of the median median and the slowest */
    double *med = nm > ROWS_PAIRS ? malloc(nm * sizeof *med) : NULL;
    if (med) {
        for (size_t a = 0; a < nm; a++)
            med[a] = mx->stats[idx[a]].median;
        qsort(med, nm, sizeof *med, cmp_double);
        for (size_t a = 0; a < nm; a++) {
            if (mx->stats[idx[a]].median == med[nm / 2])
                show[0] = a;
            if (mx->stats[idx[a]].median > mx->stats[idx[show[1]]].median)
                show[1] = a;
        }
    }
    size_t rows = nm <= ROWS_PAIRS ? nm : med ? 2 : 0;
    for (size_t q = 0; q < rows; q++) {
        size_t k = idx[nm <= ROWS_PAIRS ? q : show[q]];
        row_t *r = &w->rows[w->nrows++];
        set_row(r, op->name, "", "p2p", mx->bytes, &mx->stats[k]);
        snprintf(r->impl, sizeof r->impl, "%s%d<->%d", nm <= ROWS_PAIRS ? "" : q ? "max " : "mid ", mx->pairs[k].i,
                 mx->pairs[k].j);
        if (q == 0 || r->median > worst->median)
            *worst = *r;
    }
    free(med);
    free(idx);
}

/* An MPILAB_OP_ALLPAIRS entry at every size: the pairs of the run's design, one compact
 * measurement object (pair matrix) per size. */
static void measure_allpairs(run_t *w, const mpilab_op_t *op)
{
    const mpilab_runner_config_t *c = w->c;
    for (size_t s = 0; s < c->nsizes; s++) {
        size_t bytes = c->sizes[s], back = c->p2p_back >= 0 ? (size_t)c->p2p_back : bytes;
        MPI_Barrier(MPI_COMM_WORLD);
        double wall0 = MPI_Wtime();
        mpilab_pair_matrix_t mx;
        int prc = runner_pairs_measure(&w->rp, c, MPI_COMM_WORLD, bytes, back, &mx);
        double wall = MPI_Wtime() - wall0;
        if (prc != MPI_SUCCESS) {
            if (w->rank == 0)
                fprintf(stderr, "mpilab-bench: %s at %zu bytes failed\n", op->name, bytes);
            w->exit_code = 1;
        }
        w->fit_sizes += back == bytes && prc == MPI_SUCCESS;
        if (w->rank == 0) {
            json_array_append_new(w->meas, mpilab_results_pair_matrix(op, &mx, c->p2p_mode, w->size, &c->bo.prec, wall));
            row_t worst = {0};
            allpairs_rows(w, op, &mx, &worst);
            snprintf(worst.impl, sizeof worst.impl, "%s", w->rp.design == MPILAB_PAIRS_FULL ? "all-pairs" : "sampled");
            worst.bytes = bytes;
            w->done++;
            progress(w, &worst);
            checkpoint(w, 0);
        }
        runner_pairs_matrix_free(&mx);
        if (prc != MPI_SUCCESS)
            break;
    }
}

/* One engine measurement of op at size index s with timing tm under isolation iso; 0, or
 * -1 to stop. */
static int measure_one(run_t *w, const mpilab_op_t *op, size_t s, mpilab_timing_t tm, mpilab_isolation_t iso)
{
    const mpilab_runner_config_t *c = w->c;
    size_t bytes = c->sizes[s];
    mpilab_result_t r;
    char err[256];
    mpilab_bench_opts_t bo = c->bo;
    bo.isolation = iso;
    mpilab_bench_set_isolation(w->b, iso);
    if (mpilab_bench_measure(w->b, op, bytes, tm, &r, err, sizeof err) != 0) {
        if (w->rank == 0)
            fprintf(stderr, "mpilab-bench: %s\n", err);
        w->exit_code = 1;
        return -1;
    }
    w->done++;
    if (!r.applied) {
        if (w->rank == 0 && s == 0)
            json_array_append_new(w->skipped, json_pack("{s:s,s:s,s:s}", "op", op->name, "impl", op->impl,
                                                         "timing", mpilab_timing_name(tm)));
        row_t sk;
        set_row(&sk, op->name, op->impl, mpilab_timing_name(tm), bytes, NULL);
        progress(w, &sk);
        mpilab_result_free(&r);
        return 0;
    }
    int used_sync = r.sync_residual > 0.0 || tm == MPILAB_TIMING_GLOBAL ||
                    (iso == MPILAB_ISO_SYNC && tm != MPILAB_TIMING_OPSPEC);
    if (used_sync && w->size > 1) {
        w->sync_used = 1;
        w->nsyncs++;
        if (r.sync_residual > w->worst_residual)
            w->worst_residual = r.sync_residual;
    }
    if (!r.data_ok) {
        if (w->rank == 0)
            fprintf(stderr, "mpilab-bench: %s:%s delivered wrong data at %zu bytes\n", op->name, op->impl, bytes);
        w->exit_code = 1;
    }
    if (w->rank == 0) {
        json_array_append_new(w->meas, mpilab_results_measurement(op, bytes, tm, &bo, w->size, &r, used_sync));
        w->suite_used |= mpilab_suite_is_entry(op);
        row_t *row = &w->rows[w->nrows++];
        set_row(row, op->name, op->impl, mpilab_timing_name(tm), bytes, &r.stats);
        row->meas = json_array_size(w->meas) - 1;
        snprintf(row->iso, sizeof row->iso, "%s",
                 tm == MPILAB_TIMING_OPSPEC ? "barrier" : mpilab_isolation_name(iso));
        row->negative = r.negative;
        row->clock_uncertain = tm == MPILAB_TIMING_GLOBAL &&
                               mpilab_quality_clock_uncertain(r.sync_uncertainty, r.stats.median, c->bo.prec.eps);
        progress(w, row);
        checkpoint(w, 0);
    }
    mpilab_result_free(&r);
    return w->exit_code == 0 ? 0 : -1;
}

static void measure_all(run_t *w)
{
    const mpilab_runner_config_t *c = w->c;
    for (size_t e = 0; e < c->nsel && w->exit_code == 0; e++) {
        const mpilab_op_t *op = c->sel[e];
        if (op->flags & MPILAB_OP_ALLPAIRS) {
            measure_allpairs(w, op);
            continue;
        }
        for (size_t s = 0; s < c->nsizes && w->exit_code == 0; s++)
            for (size_t i = 0; i < c->nisolation && w->exit_code == 0; i++)
                for (size_t t = 0; t < c->ntiming; t++) {
                    /* opspec timing has its own isolation: measured once */
                    if (i > 0 && c->timing[t] == MPILAB_TIMING_OPSPEC)
                        continue;
                    if (measure_one(w, op, s, c->timing[t], c->isolation[i]) != 0)
                        break;
                }
    }
    mpilab_bench_set_isolation(w->b, c->isolation[0]);
}

/* The all-pairs LogGP measurement (collective); NULL if not asked or failed. */
static mpilab_loggp_pair_result_t *measure_loggp(run_t *w)
{
    const mpilab_runner_config_t *c = w->c;
    if (!c->loggp || w->exit_code != 0)
        return NULL;
    size_t npairs = (size_t)w->size * (size_t)(w->size - 1) / 2;
    mpilab_loggp_pair_result_t *lres = calloc(npairs, sizeof *lres);
    int ok = lres != NULL, all = 0;
    MPI_Allreduce(&ok, &all, 1, MPI_INT, MPI_LAND, MPI_COMM_WORLD);
    int lrc = all ? mpilab_loggp_measure(MPI_COMM_WORLD, c->sizes, c->nsizes, &c->lg, lres) : MPI_ERR_NO_MEM;
    if (lrc != MPI_SUCCESS) {
        if (w->rank == 0)
            fprintf(stderr, "mpilab-bench: LogGP measurement failed (MPI error %d)\n", lrc);
        w->exit_code = 1;
        free(lres);
        return NULL;
    }
    if (w->rank == 0 && !c->quiet)
        fprintf(stderr, "[loggp] %zu pairs x %zu sizes measured\n", npairs, c->nsizes);
    return lres;
}

/* The multilane model's inputs (collective) when a grid entry was selected: the grid and P
 * the entries use ($MPILAB_MULTILANE_SITES / _LANES), measured with
 * $MPILAB_MULTILANE_MODEL_BYTES (default 4M) x 3.  On rank 0 the models.multilane object
 * (or {"error": reason}); NULL on other ranks and when no grid entry ran. */
static json_t *measure_multilane(run_t *w)
{
    const mpilab_runner_config_t *c = w->c;
    int any = 0;
    for (size_t e = 0; e < c->nsel; e++)
        any |= (c->sel[e]->flags & MPILAB_OP_GRID) != 0;
    if (!any || w->exit_code != 0)
        return NULL;
    size_t bytes = (size_t)4 << 20;
    const char *env = getenv("MPILAB_MULTILANE_MODEL_BYTES");
    if (env && *env && (mpilab_parse_size(env, &bytes) != 0 || bytes < 2))
        bytes = 0; /* every rank sees the same environment: all fail below */
    mpilab_grid_t *g = bytes ? mpilab_grid_build(MPI_COMM_WORLD, mpilab_multilane_entry_sites()) : NULL;
    mpilab_multilane_measured_t m;
    int rc = -1;
    if (g)
        rc = mpilab_multilane_measure(MPI_COMM_WORLD, g, c->bo.root, bytes, 3, &m);
    /* alpha per operation as mpilab-multilane calibrates it: the collective at P_sup lanes
     * and 1 KiB per rank, 5 repetitions on synchronised clocks (docs/multilane.md) */
    json_t *cal = NULL;
    int sync_failed = 0;
    if (rc == 0) {
        mpilab_clocksync_t cs;
        memset(&cs, 0, sizeof cs);
        double alpha[2];
        sync_failed = mpilab_clocksync_run(MPI_COMM_WORLD, MPILAB_SYNC_SKAMPI, &cs) != 0;
        rc = sync_failed ? -1
                         : mpilab_multilane_calibrate_alpha(MPI_COMM_WORLD, g, c->bo.root, &m, 1024, 5,
                                                    &cs, alpha, &cal);
        mpilab_clocksync_free(&cs);
        if (rc)
            mpilab_multilane_measured_free(&m);
    }
    json_t *out = NULL;
    if (w->rank == 0) {
        if (rc == 0) {
            int lanes = mpilab_multilane_entry_lanes();
            if (lanes <= 0)
                lanes = mpilab_grid_lanes_max(g, c->bo.root);
            out = mpilab_models_multilane(&m, mpilab_grid_nsites(g), lanes, c->sizes, c->nsizes,
                                          w->meas, cal);
        } else {
            char why[400];
            snprintf(why, sizeof why, "%s",
                     !bytes        ? "MPILAB_MULTILANE_MODEL_BYTES: not a size >= 2"
                     : sync_failed ? "alpha calibration: clock synchronisation failed"
                                   : mpilab_multilane_last_error());
            fprintf(stderr, "mpilab-bench: models.multilane not measured: %s\n", why);
            out = json_pack("{s:s}", "error", why);
        }
    }
    if (rc == 0)
        mpilab_multilane_measured_free(&m);
    json_decref(cal);
    mpilab_grid_free(g);
    return out;
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
    json_object_set_new(opt, "timing", tl);
    json_object_set_new(opt, "timing_skipped", json_incref(w->skipped));
    json_object_set_new(opt, "precision", mpilab_results_precision(&c->bo.prec));
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
    json_object_set_new(opt, "resync", json_string("before every measurement that uses synchronised clocks"));
    json_object_set_new(opt, "fit", json_boolean(!c->no_fit));
    if (c->hockney)
        json_array_append_new(ml, json_string("hockney"));
    if (c->loggp)
        json_array_append_new(ml, json_string("loggp"));
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
static json_t *placement_json(const mpilab_placement_t *p, int pinned_all)
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

/* Every rank gets its share of the clock injection (--inject-clock), from a common base. */
static void inject_clocks(const mpilab_runner_config_t *c, int rank)
{
    if (!c->inject)
        return;
    double base = MPI_Wtime();
    MPI_Bcast(&base, 1, MPI_DOUBLE, 0, MPI_COMM_WORLD);
    mpilab_clock_inject_t e;
    mpilab_inject_plan_rank(&c->inject_plan, rank, &e);
    e.base = base;
    mpilab_clock_inject_set(&e);
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
static json_t *document(run_t *w, json_t *prov, const mpilab_loggp_pair_result_t *lres,
                        json_t *multilane)
{
    const mpilab_runner_config_t *c = w->c;
    json_object_set_new(prov, "options", options_json(w));
    const mpilab_clocksync_t *cs = mpilab_bench_clocksync(w->b);
    json_object_set_new(prov, "clock_sync", w->sync_used && cs
                                                ? mpilab_results_clock_sync(cs, w->worst_residual, w->nsyncs)
                                                : json_null());
    json_t *doc = mpilab_results_new(prov, json_incref(w->meas));
    if (w->suite_used)
        json_object_set_new(doc, "suite", mpilab_suite_config_json());
    json_t *models = NULL;
    int have_fit_entry = 0;
    for (size_t e = 0; e < c->nsel; e++)
        have_fit_entry |= c->sel[e]->model == MPILAB_MODEL_P2P_FIT;
    if (!c->no_fit && c->hockney && have_fit_entry && w->fit_sizes >= 2)
        models = mpilab_models_hockney(w->meas, w->size);
    mpilab_quality_context_t qc = quality_context(w, prov);
    note_isolation(w);
    print_table(w->rows, w->nrows, &qc, c->nisolation > 1);
    print_isolation_notes(w->rows, w->nrows);
    if (lres) {
        if (!models)
            models = json_object();
        json_object_set_new(models, "loggp",
                            mpilab_models_loggp(lres, c->sizes, c->nsizes, w->size, &c->lg, w->meas, stdout));
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

int mpilab_runner_run(const mpilab_runner_config_t *c, int argc, char **argv, json_t **doc, char *err,
                      size_t errlen)
{
    run_t w = {.c = c, .last_save = MPI_Wtime()};
    *doc = NULL;
    MPI_Comm_rank(MPI_COMM_WORLD, &w.rank);
    MPI_Comm_size(MPI_COMM_WORLD, &w.size);
    if (mpilab_bench_init(MPI_COMM_WORLD, &c->bo, &w.b, err, errlen) != 0)
        return 2;
    size_t npairs = w.size > 1 ? (size_t)w.size * (size_t)(w.size - 1) / 2 : 1;
    if (runner_pairs_init(c, MPI_COMM_WORLD, &w.rp, err, errlen) != 0) {
        runner_pairs_free(&w.rp);
        mpilab_bench_finalize(w.b);
        return 2;
    }
    /* table rows: per engine measurement one, per all-pairs size at most ROWS_PAIRS */
    size_t pair_rows = w.rp.npairs <= ROWS_PAIRS ? w.rp.npairs : 2;
    for (size_t e = 0; e < c->nsel; e++)
        w.total += c->nsizes * ((c->sel[e]->flags & MPILAB_OP_ALLPAIRS) ? 1 : c->ntiming * c->nisolation);
    w.rows = w.rank == 0 ? calloc(w.total * (pair_rows > 1 ? pair_rows : 1) + 1, sizeof *w.rows) : NULL;
    w.meas = json_array();
    w.skipped = json_array();
    if (w.rank == 0 && !w.rows)
        w.exit_code = 1;
    MPI_Bcast(&w.exit_code, 1, MPI_INT, 0, MPI_COMM_WORLD);
    /* Provenance is collective (host names and mapping of every rank); taken before
     * measuring so that the partial checkpoints carry it. */
    json_t *prov = mpilab_provenance(MPI_COMM_WORLD, "mpilab-bench", argc, argv);
    int pinned = c->placement && c->placement->pinned_cpu >= 0, all_pinned = 0;
    MPI_Allreduce(&pinned, &all_pinned, 1, MPI_INT, MPI_LAND, MPI_COMM_WORLD);
    if (w.rank == 0) {
        w.prov = prov;
        json_object_set_new(prov, "placement", placement_json(c->placement, all_pinned));
        if (c->inject && !c->quiet)
            fprintf(stderr, "mpilab-bench: clock injection %s: every rank's clock is off by a known error "
                    "(recorded in provenance.options.inject_clock)\n", c->inject_spec);
    }
    inject_clocks(c, w.rank);
    if (w.exit_code == 0)
        measure_all(&w);
    mpilab_loggp_pair_result_t *lres = measure_loggp(&w);
    json_t *multilane = measure_multilane(&w);
    if (w.rank == 0) {
        *doc = document(&w, prov, lres, multilane);
        if (w.exit_code != 0) { /* stopped early: what was measured, said to be partial */
            json_object_set_new(*doc, "partial", json_true());
            json_object_set_new(*doc, "partial_reason",
                                json_string("a measurement failed; the run stopped there (see the error output)"));
        }
    } else {
        json_decref(prov);
    }
    fflush(stdout);
    MPI_Bcast(&w.exit_code, 1, MPI_INT, 0, MPI_COMM_WORLD);
    json_decref(w.meas);
    json_decref(w.skipped);
    free(w.rows);
    runner_pairs_free(&w.rp);
    for (size_t k = 0; lres && k < npairs; k++)
        mpilab_loggp_pair_result_free(&lres[k]);
    free(lres);
    mpilab_bench_finalize(w.b);
    mpilab_clock_inject_set(NULL);
    return w.exit_code;
}
