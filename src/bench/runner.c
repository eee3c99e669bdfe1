/* One run of mpilab-bench as a library call (include/mpilab/runner.h): every selected entry
 * at every size (engine entries with every timing method, all-pairs entries per pair), the
 * LogGP measurement, the models and the results document. */
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/common.h"
#include "coll/multilane_entry.h"
#include "mpilab/adaptive.h"
#include "mpilab/model_extend.h"
#include "mpilab/cpuidle.h"
#include "mpilab/models.h"
#include "mpilab/multilane.h"
#include "mpilab/parse.h"
#include "mpilab/quality.h"
#include "mpilab/results.h"
#include "mpilab/runner.h"
#include "mpilab/suite.h"
#include "suite/suite_json.h"
#include "runner_pairs.h"

#include "runner_run.h"


static void set_row(row_t *r, const mpilab_op_t *op, const char *impl, const char *timing, size_t bytes,
                    const mpilab_stats_t *s)
{
    r->entry = op;
    snprintf(r->op, sizeof r->op, "%s", op->name);
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
    /* no checkpoint to "-", a FIFO or a device: they carry exactly one document, the last;
     * none after one failed (a full disk: one line, not one per measurement) */
    if (w->rank != 0 || !w->c->out || !w->prov || w->ckpt_failed || !mpilab_output_is_file(w->c->out))
        return;
    double now = MPI_Wtime();
    /* at most once a second, and at most a tenth of the time spent writing (a large file);
     * the first one a second after the start (last_save starts there): each write with its
     * fsync cost a sub-second run 5-20 ms, and such a run, killed, loses under a second */
    double gap = 10.0 * w->save_cost > 1.0 ? 10.0 * w->save_cost : 1.0;
    if (!force && now - w->last_save < gap)
        return;
    char part[4096], err[256];
    if (mpilab_partial_path(w->c->out, part, sizeof part) != 0)
        return;
    json_t *doc = mpilab_results_new(json_incref(w->prov), json_incref(w->meas));
    json_object_set_new(doc, "partial", json_true());
    json_object_set_new(doc, "partial_reason", json_string("the run stopped before the end (killed, timed out or "
                                                           "failed): the measurements completed until then"));
    if (mpilab_results_write(part, doc, err, sizeof err) != 0) {
        fprintf(stderr, "mpilab-bench: checkpoint: %s (no further checkpoints)\n", err);
        w->ckpt_failed = 1;
    }
    json_decref(doc);
    w->last_save = MPI_Wtime();
    w->save_cost = w->last_save - now;
}

static void progress(const run_t *w, const row_t *r)
{
    if (w->c->quiet || w->rank != 0)
        return;
    int tty = isatty(STDERR_FILENO);
    fprintf(stderr, "%s[%zu/%zu] %s:%s %s %zu B: %.3g s%s (%zu reps%s)%s", tty ? "\r\033[K" : "", w->done,
            w->total, r->op, r->impl, r->timing, r->bytes, r->median * runner_row_scale(r),
            runner_row_scale(r) != 1.0 ? " one-way" : "", r->reps,
            r->reps && !r->converged ? ", not converged" : "", tty ? "" : "\n");
    if (tty && w->done == w->total)
        fputc('\n', stderr);
    fflush(stderr);
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
        set_row(r, op, "", "p2p", mx->bytes, &mx->stats[k]);
        snprintf(r->impl, sizeof r->impl, "%s%d<->%d", nm <= ROWS_PAIRS ? "" : q ? "max " : "mid ", mx->pairs[k].i,
                 mx->pairs[k].j);
        r->contention = mx->check_disagree > 0;
        if (q == 0 || r->median > worst->median)
            *worst = *r;
    }
    free(med);
    free(idx);
}

/* An MPILAB_OP_ALLPAIRS entry at one size: the design's pairs, one pair matrix; on rank 0 *pt
 * gets the median over the pairs of their medians and interval ends. `record` 0: the adaptive
 * sweep's repeat, kept out of the results. 0, or -1 to stop. */
static int measure_allpairs_at(run_t *w, const mpilab_op_t *op, size_t bytes, mpilab_adaptive_point_t *pt,
                               int record)
{
    mpilab_runner_config_t cc = *w->c; /* this size's precision (--eps-for) */
    const mpilab_runner_config_t *c = &cc;
    cc.bo.prec.eps = mpilab_eps_rules_lookup(&cc.eps_for, op->name, op->impl, bytes, cc.bo.prec.eps);
    size_t back = c->p2p_back >= 0 ? (size_t)c->p2p_back : bytes;
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
    w->fit_sizes += record && back == bytes && prc == MPI_SUCCESS;
    if (w->rank == 0 && record) {
        json_array_append_new(w->meas, mpilab_results_pair_matrix(op, &mx, c->p2p_mode, w->size, &c->bo.prec, wall));
        row_t worst = {0};
        allpairs_rows(w, op, &mx, &worst);
        snprintf(worst.impl, sizeof worst.impl, "%s", w->rp.design == MPILAB_PAIRS_FULL ? "all-pairs" : "sampled");
        worst.bytes = bytes;
        w->done++;
        progress(w, &worst);
        checkpoint(w, 0);
    }
    if (w->rank == 0) {
        double *v = malloc(3 * (mx.npairs + 1) * sizeof *v);
        size_t m = 0;
        for (size_t k = 0; v && k < mx.npairs; k++)
            if (mx.measured[k]) {
                v[m] = mx.stats[k].median;
                v[mx.npairs + 1 + m] = mx.stats[k].med_lo;
                v[2 * (mx.npairs + 1) + m++] = mx.stats[k].med_hi;
            }
        double mid[3] = {NAN, NAN, NAN};
        for (int q = 0; v && m > 0 && q < 3; q++) {
            double *a = v + (size_t)q * (mx.npairs + 1);
            qsort(a, m, sizeof *a, cmp_double);
            mid[q] = a[m / 2];
        }
        *pt = (mpilab_adaptive_point_t){bytes, mid[0], mid[1], mid[2]};
        free(v);
    }
    runner_pairs_matrix_free(&mx);
    return prc == MPI_SUCCESS ? 0 : -1;
}

/* One engine measurement of op at `bytes` (the entry's first size: `first`) with timing tm
 * under isolation iso; its median and interval into *pt (rank 0) when pt is not NULL; 0, or
 * -1 to stop. */
static int measure_one(run_t *w, const mpilab_op_t *op, size_t bytes, int first, mpilab_timing_t tm,
                       mpilab_isolation_t iso, mpilab_adaptive_point_t *pt)
{
    const mpilab_runner_config_t *c = w->c;
    mpilab_result_t r;
    char err[256];
    mpilab_bench_opts_t bo = c->bo;
    bo.isolation = iso;
    bo.prec.eps = mpilab_eps_rules_lookup(&c->eps_for, op->name, op->impl, bytes, c->bo.prec.eps);
    mpilab_bench_set_isolation(w->b, iso);
    mpilab_bench_set_eps(w->b, bo.prec.eps);
    int mrc = mpilab_bench_measure(w->b, op, bytes, tm, &r, err, sizeof err);
    mpilab_bench_set_eps(w->b, c->bo.prec.eps); /* the run's eps for whatever measures next */
    if (mrc != 0) {
        if (w->rank == 0)
            fprintf(stderr, "mpilab-bench: %s\n", err);
        w->exit_code = 1;
        return -1;
    }
    w->done++;
    if (!r.applied) {
        if (w->rank == 0 && first)
            json_array_append_new(w->skipped, json_pack("{s:s,s:s,s:s}", "op", op->name, "impl", op->impl,
                                                         "timing", mpilab_timing_name(tm)));
        row_t sk;
        set_row(&sk, op, op->impl, mpilab_timing_name(tm), bytes, NULL);
        progress(w, &sk);
        mpilab_result_free(&r);
        return 0;
    }
    int used_sync = r.sync_residual > 0.0 || tm == MPILAB_TIMING_GLOBAL ||
                    (iso == MPILAB_ISO_SYNC && tm != MPILAB_TIMING_OPSPEC);
    if (used_sync && w->size > 1) {
        const mpilab_clocksync_t *cs = mpilab_bench_clocksync(w->b);
        if (cs && (w->sync_count == 0 || cs->t_end != w->sync_last_end)) { /* a new synchronisation */
            w->sync_total += cs->duration;
            w->sync_last_end = cs->t_end;
            w->sync_count++;
        }
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
        set_row(row, op, op->impl, mpilab_timing_name(tm), bytes, &r.stats);
        row->meas = json_array_size(w->meas) - 1;
        snprintf(row->iso, sizeof row->iso, "%s",
                 tm == MPILAB_TIMING_OPSPEC ? "barrier" : mpilab_isolation_name(iso));
        row->negative = r.negative;
        if (pt)
            *pt = (mpilab_adaptive_point_t){bytes, r.stats.median, r.stats.med_lo, r.stats.med_hi};
        row->clock_uncertain = tm == MPILAB_TIMING_GLOBAL &&
                               mpilab_quality_clock_uncertain(r.sync_uncertainty, r.stats.median, bo.prec.eps);
        progress(w, row);
        checkpoint(w, 0);
    }
    mpilab_result_free(&r);
    return w->exit_code == 0 ? 0 : -1;
}

/* Entry op at one size (every isolation and timing); the first series' point into *pt. */
static void measure_size(run_t *w, const mpilab_op_t *op, size_t bytes, int first, mpilab_adaptive_point_t *pt)
{
    const mpilab_runner_config_t *c = w->c;
    *pt = (mpilab_adaptive_point_t){bytes, NAN, NAN, NAN};
    if (op->flags & MPILAB_OP_ALLPAIRS) {
        measure_allpairs_at(w, op, bytes, pt, 1);
        return;
    }
    for (size_t i = 0; i < c->nisolation && w->exit_code == 0; i++)
        for (size_t t = 0; t < c->ntiming; t++) {
            /* opspec timing has its own isolation: measured once */
            if (i > 0 && c->timing[t] == MPILAB_TIMING_OPSPEC)
                continue;
            if (measure_one(w, op, bytes, first, c->timing[t], c->isolation[i], i == 0 && t == 0 ? pt : NULL) != 0)
                break;
        }
}

/* A second measurement of entry op at one size for the adaptive sweep's repeat (the first
 * timing and isolation), not recorded in the results; *pt's value NAN when it did not apply. */
static void repeat_point(run_t *w, const mpilab_op_t *op, size_t bytes, mpilab_adaptive_point_t *pt)
{
    const mpilab_runner_config_t *c = w->c;
    mpilab_result_t r;
    char err[256];
    *pt = (mpilab_adaptive_point_t){bytes, NAN, NAN, NAN};
    if (op->flags & MPILAB_OP_ALLPAIRS) { /* a whole pair matrix again */
        measure_allpairs_at(w, op, bytes, pt, 0);
        return;
    }
    mpilab_bench_set_isolation(w->b, c->isolation[0]);
    mpilab_bench_set_eps(w->b, mpilab_eps_rules_lookup(&c->eps_for, op->name, op->impl, bytes, c->bo.prec.eps));
    int mrc = mpilab_bench_measure(w->b, op, bytes, c->timing[0], &r, err, sizeof err);
    mpilab_bench_set_eps(w->b, c->bo.prec.eps);
    if (mrc != 0) {
        if (w->rank == 0)
            fprintf(stderr, "mpilab-bench: %s\n", err);
        w->exit_code = 1;
        return;
    }
    if (r.applied && r.data_ok)
        *pt = (mpilab_adaptive_point_t){bytes, r.stats.median, r.stats.med_lo, r.stats.med_hi};
    mpilab_result_free(&r);
}

/* Before a bend earns sizes it must persist across a repeat: every bending point and its
 * two neighbours not yet repeated are measured again (decided on rank 0, measured by all),
 * into rep[] (parallel to pts[]). Returns the number of sizes repeated. */
static size_t repeat_bends(run_t *w, const mpilab_op_t *op, const mpilab_adaptive_point_t *pts,
                           mpilab_adaptive_point_t *rep, size_t n)
{
    unsigned long long cnt = 0, b[64];
    if (w->rank == 0)
        for (size_t k = 1; k + 1 < n; k++) {
            if (mpilab_adaptive_bend(&pts[k - 1]) == 0.0)
                continue;
            for (size_t j = k - 1; j <= k + 1 && cnt < 64; j++) {
                int listed = 0;
                for (size_t q = 0; q < cnt; q++)
                    listed |= b[q] == pts[j].bytes;
                if (!listed && isnan(rep[j].value))
                    b[cnt++] = pts[j].bytes;
            }
        }
    MPI_Bcast(&cnt, 1, MPI_UNSIGNED_LONG_LONG, 0, MPI_COMM_WORLD);
    MPI_Bcast(b, (int)cnt, MPI_UNSIGNED_LONG_LONG, 0, MPI_COMM_WORLD);
    for (size_t q = 0; q < cnt && w->exit_code == 0; q++) {
        mpilab_adaptive_point_t pt;
        repeat_point(w, op, (size_t)b[q], &pt);
        for (size_t j = 0; w->rank == 0 && j < n; j++)
            if (pts[j].bytes == pt.bytes)
                rep[j] = pt;
    }
    return (size_t)cnt;
}

/* The next sizes of an adaptive sweep, decided on rank 0 (with their reasons in `added`),
 * received by every rank in batch[]; returns their number. */
static size_t next_sizes(run_t *w, const mpilab_adaptive_point_t *pts, const mpilab_adaptive_point_t *rep, size_t n,
                         size_t *batch, json_t *added)
{
    unsigned long long cnt = 0, b[64];
    if (w->rank == 0) {
        mpilab_adaptive_why_t why[64];
        cnt = mpilab_adaptive_next_repeated(pts, rep, n, w->c->auto_budget, batch, why, 64);
        for (size_t q = 0; q < cnt; q++) {
            b[q] = batch[q];
            json_array_append_new(added, json_pack("{s:I,s:I,s:o,s:o,s:o}", "bytes", (json_int_t)why[q].bytes,
                                                   "bent_at", (json_int_t)why[q].bent_at, "departure_s",
                                                   mpilab_json_real(why[q].departure), "allowed_s",
                                                   mpilab_json_real(why[q].allowed), "bend_size",
                                                   mpilab_json_real(why[q].size)));
        }
    }
    MPI_Bcast(&cnt, 1, MPI_UNSIGNED_LONG_LONG, 0, MPI_COMM_WORLD);
    MPI_Bcast(b, (int)cnt, MPI_UNSIGNED_LONG_LONG, 0, MPI_COMM_WORLD);
    for (size_t q = 0; q < cnt; q++)
        batch[q] = (size_t)b[q];
    return (size_t)cnt;
}

/* Model sizes (--model-sizes extend): the next larger size of an entry a model is fitted
 * from, decided on rank 0 (the step into w->extended), received by every rank in *next;
 * returns 1 when there is one to measure. */
static int extend_size(run_t *w, const mpilab_op_t *op, const mpilab_adaptive_point_t *pts, size_t n,
                       size_t added, size_t *next)
{
    unsigned long long b = 0;
    if (w->rank == 0) {
        mpilab_extend_step_t st;
        if (mpilab_extend_next(pts, n, added, &w->c->ext, &st) == MPILAB_EXTEND_MORE)
            b = st.next;
        else if (st.state != MPILAB_EXTEND_NO_DATA && !w->top_state) {
            /* the top regime: the three sizes that agree, else the last segment */
            w->top_from = pts[n - (st.state == MPILAB_EXTEND_LINEAR ? 3 : 2)].bytes;
            w->top_state = mpilab_extend_state_name(st.state);
        }
        if (!b)
            json_array_append_new(w->extended, json_pack("{s:s,s:s,s:s,s:I,s:o,s:o,s:o,s:o}", "op", op->name, "impl",
                                                         op->impl, "state", mpilab_extend_state_name(st.state),
                                                         "added", (json_int_t)added, "slope_prev_s_per_byte",
                                                         mpilab_json_real(st.slope_prev), "slope_top_s_per_byte",
                                                         mpilab_json_real(st.slope_top), "slope_half_s_per_byte",
                                                         mpilab_json_real(st.slope_half), "n_half_bytes",
                                                         mpilab_json_real(st.n_half)));
    }
    MPI_Bcast(&b, 1, MPI_UNSIGNED_LONG_LONG, 0, MPI_COMM_WORLD);
    *next = (size_t)b;
    if (b && w->rank == 0 && !w->c->quiet)
        fprintf(stderr, "[model sizes] %s %s: the curve still bends at its largest size; adding %llu bytes\n",
                op->name, op->impl, b);
    return b != 0;
}

/* Entry op over the run's sizes, or adaptively (--sizes auto:...): the start list, then where
 * its curve bends, until none or the budget; rank 0 keeps the sizes and why in w->adaptive.
 * An entry a model is fitted from then gets larger sizes while its top regime is not reached
 * (--model-sizes extend); they are kept in w->ext_sizes for LogGP. */
static void measure_entry(run_t *w, const mpilab_op_t *op)
{
    const mpilab_runner_config_t *c = w->c;
    int extend = c->model_extend && op->model == MPILAB_MODEL_P2P_FIT;
    size_t budget = (c->adaptive ? c->auto_budget : c->nsizes) + c->ext.max_added, nb = c->nsizes, n = 0, nadd = 0;
    size_t *batch = malloc((budget + 64) * sizeof *batch), repeated = 0;
    mpilab_adaptive_point_t *pts = malloc((budget + 64) * sizeof *pts);
    mpilab_adaptive_point_t *rep = malloc((budget + 64) * sizeof *rep);
    json_t *added = json_array();
    if (!batch || !pts || !rep)
        w->exit_code = 1;
    for (size_t k = 0; batch && k < nb; k++)
        batch[k] = c->sizes[k];
    while (nb > 0 && w->exit_code == 0) {
        for (size_t k = 0; k < nb && w->exit_code == 0; k++) {
            mpilab_adaptive_point_t pt;
            measure_size(w, op, batch[k], n == 0, &pt);
            size_t at = n++; /* sorted by size */
            while (at > 0 && pts[at - 1].bytes > pt.bytes) {
                pts[at] = pts[at - 1];
                rep[at] = rep[at - 1];
                at--;
            }
            pts[at] = pt;
            rep[at] = (mpilab_adaptive_point_t){pt.bytes, NAN, NAN, NAN};
        }
        /* every entry's bends are repeated (an all-pairs entry's point: a whole pair matrix) */
        if (c->adaptive && w->exit_code == 0)
            repeated += repeat_bends(w, op, pts, rep, n);
        nb = c->adaptive && w->exit_code == 0 ? next_sizes(w, pts, rep, n, batch, added) : 0;
        if (nb == 0 && extend && w->exit_code == 0 && extend_size(w, op, pts, n, nadd, batch)) {
            if (nadd < sizeof w->ext_sizes / sizeof w->ext_sizes[0] && !w->ext_done)
                w->ext_sizes[w->n_ext++] = batch[0];
            nadd++;
            nb = 1;
        }
    }
    if (extend && !w->ext_done) {
        /* LogGP takes the first such entry's added sizes while a gap stream of one stays
         * within max_stream_s (the entry's value is a round trip) */
        unsigned long long keep = 0;
        for (size_t q = 0, k = 0; w->rank == 0 && q < w->n_ext && keep == q; q++) {
            while (k < n && pts[k].bytes != w->ext_sizes[q])
                k++;
            keep += k < n && (double)c->lg.burst * pts[k].value / 2 <= c->ext.max_stream_s;
        }
        MPI_Bcast(&keep, 1, MPI_UNSIGNED_LONG_LONG, 0, MPI_COMM_WORLD);
        w->n_ext_lg = (size_t)keep;
        w->ext_done = 1;
    }
    if (w->rank == 0 && c->adaptive) {
        json_t *sz = json_array();
        for (size_t k = 0; k < n; k++)
            json_array_append_new(sz, json_integer((json_int_t)pts[k].bytes));
        json_array_append_new(w->adaptive, json_pack("{s:s,s:s,s:o,s:O,s:I}", "op", op->name, "impl", op->impl,
                                                     "sizes", sz, "added", added, "repeated",
                                                     (json_int_t)repeated));
    }
    json_decref(added);
    free(batch);
    free(pts);
    free(rep);
}

static void measure_all(run_t *w)
{
    const mpilab_runner_config_t *c = w->c;
    for (size_t e = 0; e < c->nsel && w->exit_code == 0; e++)
        measure_entry(w, c->sel[e]);
    mpilab_bench_set_isolation(w->b, c->isolation[0]);
}

/* The LogGP measurement (collective) over the run's pair design (every pair up to
 * MPILAB_PAIRS_FULL_LIMIT ranks), or, with a sampled design (--loggp-pairs auto) or
 * --loggp-pairs matching, over one random perfect matching of the ranks: one round of
 * disjoint pairs, every rank in one pair (a 1024-rank survey spent about 25 of its 57 minutes
 * measuring LogGP over its 6106 sampled pairs in 19 rounds; the per-link picture stays with the
 * p2p matrix and Hockney). Results on rank 0 only: w->loggp_npairs entries there, NULL
 * elsewhere and if not asked or failed (w->exit_code set). */
static mpilab_loggp_pair_result_t *measure_loggp(run_t *w)
{
    const mpilab_runner_config_t *c = w->c;
    if (!c->loggp || w->exit_code != 0)
        return NULL;
    int matching = c->loggp_pairs == 2 || (c->loggp_pairs == 0 && w->rp.design == MPILAB_PAIRS_SAMPLED);
    const mpilab_pair_t *pairs = w->rp.pairs;
    const size_t *order = w->rp.order, *round_start = w->rp.round_start;
    size_t npairs = w->rp.npairs, rounds = w->rp.rounds;
    mpilab_pair_t *mp = NULL;
    size_t *morder = NULL, *mstart = NULL;
    if (matching) {
        size_t cap = (size_t)w->size / 2 + 1;
        mp = calloc(cap, sizeof *mp);
        morder = calloc(cap, sizeof *morder);
        mstart = calloc(cap + 1, sizeof *mstart);
        npairs = mp && morder && mstart ? mpilab_pairs_matching(w->size, (uint64_t)w->rp.seed, mp) : 0;
        rounds = npairs ? mpilab_pairs_rounds(w->size, mp, npairs, morder, mstart) : 0;
        pairs = mp;
        order = morder;
        round_start = mstart;
    }
    mpilab_loggp_pair_result_t *lres = w->rank == 0 ? calloc(npairs + 1, sizeof *lres) : NULL;
    /* the run's sizes and those the model-size extension added past them */
    w->lg_sizes = malloc((c->nsizes + w->n_ext + 1) * sizeof *w->lg_sizes);
    w->lg_nsizes = 0;
    for (size_t k = 0; w->lg_sizes && k < c->nsizes; k++)
        w->lg_sizes[w->lg_nsizes++] = c->sizes[k];
    for (size_t k = 0; w->lg_sizes && k < w->n_ext_lg; k++)
        if (w->ext_sizes[k] > c->sizes[c->nsizes - 1])
            w->lg_sizes[w->lg_nsizes++] = w->ext_sizes[k];
    int ok = (w->rank != 0 || lres != NULL) && rounds > 0 && w->lg_sizes, all = 0;
    MPI_Allreduce(&ok, &all, 1, MPI_INT, MPI_LAND, MPI_COMM_WORLD);
    double t0 = MPI_Wtime();
    int lrc = all ? mpilab_loggp_measure_pairs(MPI_COMM_WORLD, pairs, npairs, order, round_start, rounds, w->lg_sizes,
                                               w->lg_nsizes, &c->lg, lres)
                  : MPI_ERR_NO_MEM;
    if (lrc == MPI_SUCCESS) /* contention in the parallel rounds: flagged, measured again alone */
        lrc = runner_loggp_check(w, pairs, npairs, order, round_start, rounds, w->rp.groups, lres);
    free(mp);
    free(morder);
    free(mstart);
    if (lrc != MPI_SUCCESS) {
        if (w->rank == 0)
            fprintf(stderr, "mpilab-bench: LogGP measurement failed (MPI error %d)\n", lrc);
        w->exit_code = 1;
        free(lres);
        return NULL;
    }
    w->loggp_wall = MPI_Wtime() - t0;
    w->loggp_npairs = npairs;
    w->loggp_design = matching ? "matching" : mpilab_pairs_design_name(w->rp.design);
    if (w->rank == 0 && !c->quiet)
        fprintf(stderr, "[loggp] %zu pairs (%s) x %zu sizes measured\n", npairs, w->loggp_design, w->lg_nsizes);
    return lres;
}

/* The LMO experiments (collective); NULL if not asked or failed. */
static mpilab_lmo_measured_t *measure_lmo(run_t *w)
{
    const mpilab_runner_config_t *c = w->c;
    if (!c->lmo || w->exit_code != 0)
        return NULL;
    mpilab_lmo_measured_t *m = calloc(1, sizeof *m);
    int ok = m != NULL, all = 0;
    MPI_Allreduce(&ok, &all, 1, MPI_INT, MPI_LAND, MPI_COMM_WORLD);
    mpilab_precision_t prec = c->bo.prec;
    if (c->lmo_eps > 0.0)
        prec.eps = c->lmo_eps;
    int rc = all ? mpilab_lmo_measure(MPI_COMM_WORLD, c->lmo_bytes, c->p2p_mode, &prec, &c->lmo_wait, m) : MPI_ERR_NO_MEM;
    if (rc != MPI_SUCCESS) {
        if (w->rank == 0)
            fprintf(stderr, "mpilab-bench: LMO measurement failed (MPI error %d)\n", rc);
        w->exit_code = 1;
        if (m)
            mpilab_lmo_measured_free(m);
        free(m);
        return NULL;
    }
    if (w->rank == 0 && !c->quiet)
        fprintf(stderr, "[lmo] %zu triplets in %zu rounds, M = %zu bytes, %.2f s\n", m->ntrip, m->rounds, m->bytes,
                m->wall_s);
    return m;
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

/* --idle-poll: every rank holds the CPU latency limit at 0 (*fd, close it when done);
 * refused on any rank, the run does not start: 0, or -1 with one line in err. */
static int idle_poll_hold(const mpilab_runner_config_t *c, int rank, int *fd, char *err, size_t errlen)
{
    *fd = -1;
    if (!c->idle_poll)
        return 0;
    *fd = mpilab_cpuidle_hold(0);
    int e = *fd < 0 ? errno : 0, first = *fd < 0 ? rank : INT32_MAX, bad = INT32_MAX;
    MPI_Allreduce(&first, &bad, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    if (bad == INT32_MAX)
        return 0;
    MPI_Bcast(&e, 1, MPI_INT, bad, MPI_COMM_WORLD);
    if (*fd >= 0)
        close(*fd);
    *fd = -1;
    snprintf(err, errlen, "--idle-poll: /dev/cpu_dma_latency on rank %d: %s%s", bad, strerror(e),
             e == EACCES || e == EPERM ? " (holding the CPU latency limit needs root)" : "");
    return -1;
}

int mpilab_runner_run(const mpilab_runner_config_t *c, int argc, char **argv, json_t **doc, char *err,
                      size_t errlen)
{
    run_t w = {.c = c, .last_save = MPI_Wtime()};
    *doc = NULL;
    if (c->probe)
        return mpilab_runner_probe(c, err, errlen);
    MPI_Comm_rank(MPI_COMM_WORLD, &w.rank);
    MPI_Comm_size(MPI_COMM_WORLD, &w.size);
    int qos = -1;
    if (idle_poll_hold(c, w.rank, &qos, err, errlen) != 0)
        return 2;
    if (mpilab_bench_init(MPI_COMM_WORLD, &c->bo, &w.b, err, errlen) != 0) {
        if (qos >= 0)
            close(qos);
        return 2;
    }
    if (runner_pairs_init(c, MPI_COMM_WORLD, &w.rp, err, errlen) != 0) {
        runner_pairs_free(&w.rp);
        mpilab_bench_finalize(w.b);
        if (qos >= 0)
            close(qos);
        return 2;
    }
    /* table rows: per engine measurement one, per all-pairs size at most ROWS_PAIRS */
    size_t pair_rows = w.rp.npairs <= ROWS_PAIRS ? w.rp.npairs : 2;
    for (size_t e = 0; e < c->nsel; e++)
        w.total += ((c->adaptive ? c->auto_budget : c->nsizes) + (c->model_extend ? c->ext.max_added : 0)) *
                   ((c->sel[e]->flags & MPILAB_OP_ALLPAIRS) ? 1 : c->ntiming * c->nisolation);
    w.rows = w.rank == 0 ? calloc(w.total * (pair_rows > 1 ? pair_rows : 1) + 1, sizeof *w.rows) : NULL;
    w.meas = json_array();
    w.skipped = json_array();
    w.adaptive = json_array();
    w.extended = json_array();
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
        json_object_set_new(prov, "placement", runner_placement_json(c->placement, all_pinned));
        json_t *ci = json_object_get(prov, "cpu_idle");
        if (ci)
            json_object_set_new(ci, "held_by_run", json_boolean(qos >= 0));
        if (c->inject && !c->quiet)
            fprintf(stderr, "mpilab-bench: clock injection %s: every rank's clock is off by a known error "
                    "(recorded in provenance.options.inject_clock)\n", c->inject_spec);
    }
    inject_clocks(c, w.rank);
    if (w.exit_code == 0)
        measure_all(&w);
    mpilab_loggp_pair_result_t *lres = measure_loggp(&w);
    mpilab_lmo_measured_t *lmo = measure_lmo(&w);
    json_t *multilane = measure_multilane(&w);
    if (w.rank == 0) {
        *doc = runner_document(&w, prov, lres, lmo, multilane);
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
    json_decref(w.adaptive);
    json_decref(w.extended);
    free(w.lg_sizes);
    free(w.rows);
    for (size_t k = 0; lres && k < w.loggp_npairs; k++)
        mpilab_loggp_pair_result_free(&lres[k]);
    free(lres);
    runner_pairs_free(&w.rp);
    if (lmo)
        mpilab_lmo_measured_free(lmo);
    free(lmo);
    mpilab_bench_finalize(w.b);
    mpilab_clock_inject_set(NULL);
    if (qos >= 0)
        close(qos);
    return w.exit_code;
}
