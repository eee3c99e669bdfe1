/* The LMO model's results object (models.lmo, docs/results-schema.md): per-node and per-link
 * parameters with their quality, the experiments (medians and samples, arrays: nothing per
 * pair or triplet is an object), the slowest node and link, and predictions of the run's
 * scatter/gather measurements. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <gsl/gsl_sort.h>
#include <gsl/gsl_statistics_double.h>

#include "mpilab/lmo.h"
#include "mpilab/models.h"
#include "mpilab/quality.h"
#include "mpilab/results.h"
#include "model/assemble.h"

static json_t *flags_json(unsigned f)
{
    json_t *a = json_array();
    if (f & MPILAB_PARAM_CLAMPED)
        json_array_append_new(a, json_string("clamped"));
    if (f & MPILAB_PARAM_NO_CI)
        json_array_append_new(a, json_string("no_ci"));
    if (f & MPILAB_PARAM_WIDE)
        json_array_append_new(a, json_string("ci_wide"));
    if (f & MPILAB_LMO_DISAGREE)
        json_array_append_new(a, json_string("triplets_disagree"));
    return a;
}

static json_t *param_json(const mpilab_param_t *p)
{
    return json_pack("{s:o,s:o,s:o,s:o,s:o}", "value", mpilab_json_real(p->value), "raw", mpilab_json_real(p->raw),
                     "lo", mpilab_json_real(p->lo), "hi", mpilab_json_real(p->hi), "flags", flags_json(p->flags));
}

static json_t *samples_json(const double *s, size_t n)
{
    json_t *a = json_array();
    for (size_t k = 0; k < n; k++)
        json_array_append_new(a, mpilab_json_real(s[k]));
    return a;
}

/* The median of v[0..n) (sorted in place; NaN for none). */
static double median_of(double *v, size_t n)
{
    if (n == 0)
        return NAN;
    gsl_sort(v, 1, n);
    return gsl_stats_median_from_sorted_data(v, 1, n);
}

/* The median of n samples (NaN for none), through a sorted copy. */
static double median_copy(const double *s, size_t n)
{
    double *c = n ? malloc(n * sizeof *c) : NULL;
    if (!c)
        return NAN;
    memcpy(c, s, n * sizeof *c);
    double m = median_of(c, n);
    free(c);
    return m;
}

/* Paired experiments: the round trips to x and to y timed beside each repetition, their
 * medians and samples ("rt_x_median", "rt_y_median", "rt_x", "rt_y"). */
static void paired_json(json_t *o, const mpilab_p2t_result_t *r, size_t ne)
{
    json_t *mx = json_array(), *my = json_array(), *sx = json_array(), *sy = json_array();
    for (size_t e = 0; e < ne; e++) {
        size_t n = r[e].rt_x && r[e].rt_y ? r[e].stats.reps : 0;
        json_array_append_new(mx, mpilab_json_real(median_copy(r[e].rt_x, n)));
        json_array_append_new(my, mpilab_json_real(median_copy(r[e].rt_y, n)));
        json_array_append_new(sx, samples_json(r[e].rt_x, n));
        json_array_append_new(sy, samples_json(r[e].rt_y, n));
    }
    json_object_set_new(o, "rt_x_median", mx);
    json_object_set_new(o, "rt_y_median", my);
    json_object_set_new(o, "rt_x", sx);
    json_object_set_new(o, "rt_y", sy);
}

/* One series of experiments (round trips: y = -1, written without "y") as arrays. */
static json_t *p2t_json(const mpilab_p2t_result_t *r, size_t ne)
{
    json_t *root = json_array(), *x = json_array(), *y = json_array(), *round = json_array();
    json_t *med = json_array(), *reps = json_array(), *smp = json_array(), *conv = json_array();
    for (size_t e = 0; e < ne; e++) {
        json_array_append_new(root, json_integer(r[e].root));
        json_array_append_new(x, json_integer(r[e].x));
        json_array_append_new(y, json_integer(r[e].y));
        json_array_append_new(round, json_integer((json_int_t)r[e].round));
        json_array_append_new(med, mpilab_json_real(r[e].stats.median));
        json_array_append_new(reps, json_integer((json_int_t)r[e].stats.reps));
        json_array_append_new(conv, json_boolean(r[e].stats.converged));
        json_array_append_new(smp, samples_json(r[e].samples, r[e].stats.reps));
    }
    json_t *o = json_pack("{s:I,s:o,s:o,s:o,s:o,s:o,s:o,s:o}", "bytes", (json_int_t)(ne ? r[0].bytes : 0), "root",
                          root, "x", x, "round", round, "median", med, "reps", reps, "converged", conv, "samples",
                          smp);
    if (ne && r[0].y >= 0)
        json_object_set_new(o, "y", y);
    else
        json_decref(y);
    if (ne && r[0].rt_x)
        paired_json(o, r, ne);
    return o;
}

static json_t *nodes_json(const mpilab_lmo_fit_t *f, FILE *table)
{
    json_t *a = json_array();
    if (table)
        fprintf(table, "\nLMO per node (C: fixed delay, t: per-byte delay of the node's CPU; median over the\n"
                       "triplets it was the root of; flags: clamped, ci_wide, no_ci, triplets_disagree)\n"
                       "%-5s %12s %12s %8s %s\n", "node", "C(us)", "t(ns/B)", "triplets", "flags");
    for (int i = 0; i < f->p; i++) {
        const mpilab_lmo_node_t *n = &f->node[i];
        json_array_append_new(a, json_pack("{s:i,s:o,s:o,s:o,s:o,s:I,s:I}", "rank", i, "C", param_json(&n->C), "t",
                                           param_json(&n->t), "C_spread", mpilab_json_real(n->C_spread), "t_spread",
                                           mpilab_json_real(n->t_spread), "triplets", (json_int_t)n->ntrip,
                                           "C_solved", (json_int_t)n->C_solved));
        if (table) {
            char a1[64], a2[64];
            mpilab_param_flags_str(n->C.flags & 7u, a1, sizeof a1);
            mpilab_param_flags_str(n->t.flags & 7u, a2, sizeof a2);
            fprintf(table, "%-5d %12.3f %12.4f %8zu %s%s%s%s%s%s\n", i, n->C.value * 1e6, n->t.value * 1e9, n->ntrip,
                    *a1 ? "C:" : "", a1, (n->C.flags & MPILAB_LMO_DISAGREE) ? " C:triplets_disagree" : "",
                    *a2 ? " t:" : "", a2, (n->t.flags & MPILAB_LMO_DISAGREE) ? " t:triplets_disagree" : "");
        }
    }
    return a;
}

/* The path's time per byte t_i + t_j + 1/beta_ij (raw): what the round trips fix whatever the
 * split between the nodes and the link. */
static double path_inv_beta(const mpilab_lmo_fit_t *f, size_t q)
{
    const mpilab_lmo_link_t *l = &f->link[q];
    return f->node[l->i].t.raw + f->node[l->j].t.raw + l->inv_beta.raw;
}

/* One message of M bytes i -> j with the raw parameters (the round trips' own sums). */
static double path_cost(const mpilab_lmo_fit_t *f, size_t q)
{
    const mpilab_lmo_link_t *l = &f->link[q];
    return f->node[l->i].C.raw + f->node[l->j].C.raw + l->L.raw + f->bytes * path_inv_beta(f, q);
}

static json_t *links_json(const mpilab_lmo_fit_t *f, size_t np)
{
    json_t *pairs = json_array(), *L = json_array(), *B = json_array(), *rate = json_array();
    json_t *path = json_array();
    for (size_t q = 0; q < np; q++) {
        const mpilab_lmo_link_t *l = &f->link[q];
        json_array_append_new(pairs, json_pack("[i,i]", l->i, l->j));
        json_array_append_new(L, param_json(&l->L));
        json_array_append_new(B, param_json(&l->inv_beta));
        json_array_append_new(rate, mpilab_json_real(l->inv_beta.value > 0 ? 1.0 / l->inv_beta.value : NAN));
        json_array_append_new(path, mpilab_json_real(path_inv_beta(f, q)));
    }
    return json_pack("{s:o,s:o,s:o,s:o,s:o}", "pairs", pairs, "L", L, "inv_beta", B, "rate_Bps", rate,
                     "path_inv_beta", path);
}

/* The fit's headlines (mpilab_lmo_headlines: node and link, each from the parameters that
 * identify it, the star's access link on a star) and the slowest path (one M-byte message
 * with the raw values), each with its ratio to the median. */
static json_t *slowest_json(const mpilab_lmo_fit_t *f, size_t np, FILE *table)
{
    mpilab_lmo_headlines_t h;
    double *v = calloc(np + 1, sizeof *v);
    if (!v || mpilab_lmo_headlines(f, &h) != 0) {
        free(v);
        return json_null();
    }
    double M = f->bytes;
    size_t sp = 0;
    for (size_t q = 0; q < np; q++) {
        v[q] = path_cost(f, q);
        if (v[q] > v[sp])
            sp = q;
    }
    double path_c = v[sp], path_med = median_of(v, np);
    path_med = path_med > 0 ? path_med : NAN;
    free(v);
    if (table && h.star && h.node >= 0)
        fprintf(table, "slowest node %d: C - h u = %.3f us (%.2fx the median node; a star: t is the access link's, "
                       "and so is C's part for h = %.1f header bytes)\n",
                h.node, h.node_cost * 1e6, h.node_vs_median, h.header_bytes);
    else if (table && h.star)
        fprintf(table, "slowest node: none stands out (C - h u, h = %.1f header bytes on the access link: none "
                       "above the median node's by more than %.0f%% of the median pair's fixed time)\n",
                h.header_bytes, 100 * MPILAB_LMO_NODE_STANDS_OUT);
    if (table && h.star)
        fprintf(table, "slowest link: node %d's access link, a + M u = %.3f us (%.2fx the median), M = %.0f bytes\n",
                h.link_of, h.link_cost * 1e6, h.link_vs_median, M);
    else if (table && h.node >= 0)
        fprintf(table, "slowest node %d: C + M t = %.3f us (%.2fx the median node); slowest link %d-%d: "
                       "L + M/beta = %.3f us (%.2fx the median link), M = %.0f bytes\n",
                h.node, h.node_cost * 1e6, h.node_vs_median, h.link_i, h.link_j, h.link_cost * 1e6,
                h.link_vs_median, M);
    else if (table)
        fprintf(table, "slowest node: none stands out (C + M t: none above the median node's by more than "
                       "%.0f%% of the median pair's time at M); slowest link %d-%d: L + M/beta = %.3f us "
                       "(%.2fx the median link), M = %.0f bytes\n",
                100 * MPILAB_LMO_NODE_STANDS_OUT, h.link_i, h.link_j, h.link_cost * 1e6, h.link_vs_median, M);
    if (table)
        fprintf(table, "slowest path %d-%d: one message of M bytes (nodes and link, raw) = %.3f us (%.2fx the "
                       "median path)\n", f->link[sp].i, f->link[sp].j, path_c * 1e6, path_c / path_med);
    json_t *o = json_pack("{s:o,s:o,s:s,s:o,s:o,s:s}", "node_cost_s", mpilab_json_real(h.node_cost),
                          "node_vs_median", mpilab_json_real(h.node_vs_median), "node_by", h.star ? "C" : "C+Mt",
                          "link_cost_s", mpilab_json_real(h.link_cost), "link_vs_median",
                          mpilab_json_real(h.link_vs_median), "link_by", h.star ? "star" : "pair");
    if (h.node >= 0)
        json_object_set_new(o, "node", json_integer(h.node));
    if (h.star)
        json_object_set_new(o, "header_bytes", mpilab_json_real(h.header_bytes));
    json_object_set_new(o, "link", h.star ? json_null() : json_pack("[i,i]", h.link_i, h.link_j));
    if (h.star)
        json_object_set_new(o, "link_of", json_integer(h.link_of));
    json_object_set_new(o, "path", json_pack("[i,i]", f->link[sp].i, f->link[sp].j));
    json_object_set_new(o, "path_cost_s", mpilab_json_real(path_c));
    json_object_set_new(o, "path_vs_median", mpilab_json_real(path_c / path_med));
    /* on a star the processing part of C (the headline's node) is the CPU's: C's header part
     * is the access link's */
    double cpu_ratio = h.node_vs_median, cpu_c = h.node_cost;
    int cpu = h.star ? h.node : mpilab_lmo_slowest_cpu(f, &cpu_ratio);
    if (!h.star && cpu >= 0)
        cpu_c = f->node[cpu].C.value;
    if (!h.star && cpu >= 0 && !(cpu_c > 0)) /* every C 0: no node is slow at messaging */
        cpu = -1;
    if (cpu >= 0) {
        json_object_set_new(o, "cpu", json_integer(cpu));
        json_object_set_new(o, "cpu_C_s", mpilab_json_real(cpu_c));
        json_object_set_new(o, "cpu_vs_median", mpilab_json_real(cpu_ratio));
        if (table && isfinite(cpu_ratio))
            fprintf(table, "slowest at messaging: node %d: C%s = %.3f us (%.2fx the median node's)\n", cpu,
                    h.star ? " - h u" : "", cpu_c * 1e6, cpu_ratio);
        else if (table) /* no ratio to a median of 0 */
            fprintf(table, "slowest at messaging: node %d: C%s = %.3f us (the median node's C is 0)\n", cpu,
                    h.star ? " - h u" : "", cpu_c * 1e6);
    }
    return o;
}

/* The star view (mpilab_lmo_star): per node a_i and u_i, the misfits and the node whose
 * access link is slowest at M. */
static json_t *star_json(const mpilab_lmo_fit_t *f, FILE *table)
{
    mpilab_lmo_star_t st;
    if (mpilab_lmo_star(f, &st) != 0)
        return json_null();
    json_t *a = json_array(), *u = json_array();
    for (int i = 0; i < st.p; i++) {
        json_array_append_new(a, mpilab_json_real(st.a[i]));
        json_array_append_new(u, mpilab_json_real(st.u[i]));
    }
    json_t *o = json_pack("{s:o,s:o,s:o,s:o,s:i,s:o,s:o}", "latency_s", a, "inv_rate", u, "misfit_latency",
                          mpilab_json_real(st.misfit_a), "misfit_inv_rate", mpilab_json_real(st.misfit_u),
                          "slowest_link_of", st.slowest, "slowest_cost_s", mpilab_json_real(st.slowest_cost),
                          "slowest_vs_median", mpilab_json_real(st.slowest_vs_median));
    if (table)
        fprintf(table, "as a star (one access link per node): slowest access link that of node %d: a + M u = %.3f us "
                       "(%.2fx the median node's); misfit of a_i + a_j %.1f%%, of max(u_i, u_j) %.1f%% (near 0 on a "
                       "star)\n",
                st.slowest, st.slowest_cost * 1e6, st.slowest_vs_median, 100 * st.misfit_a, 100 * st.misfit_u);
    mpilab_lmo_star_free(&st);
    return o;
}

static json_t *predictions_json(const mpilab_lmo_fit_t *f, json_t *meas, double rdv)
{
    size_t P = (size_t)f->p;
    double *C = malloc(P * sizeof *C), *t = malloc(P * sizeof *t);
    double *L = calloc(P * P, sizeof *L), *B = calloc(P * P, sizeof *B);
    json_t *pred = json_array();
    for (size_t i = 0; C && t && L && B && i < P; i++) {
        C[i] = f->node[i].C.raw; /* raw: the sums the experiments fix (lmo.h) */
        t[i] = f->node[i].t.raw;
    }
    size_t np = P * (P - 1) / 2;
    for (size_t q = 0; C && t && L && B && q < np; q++) {
        size_t i = (size_t)f->link[q].i, j = (size_t)f->link[q].j;
        L[i * P + j] = L[j * P + i] = f->link[q].L.raw;
        B[i * P + j] = B[j * P + i] = f->link[q].inv_beta.raw;
    }
    mpilab_lmo_params_t prm = {f->p, C, t, L, B, rdv};
    size_t idx;
    json_t *m;
    json_array_foreach(meas, idx, m)
    {
        models_target_t tg;
        if (!C || !t || !L || !B || !models_target(m, &tg))
            continue;
        mpilab_op_model_t pat = tg.entry->model;
        if (pat != MPILAB_MODEL_SCATTER_LINEAR && pat != MPILAB_MODEL_SCATTER_BINOMIAL &&
            pat != MPILAB_MODEL_GATHER_LINEAR && pat != MPILAB_MODEL_GATHER_BINOMIAL)
            continue;
        double pv = mpilab_lmo_predict(pat, &prm, (int)tg.root, tg.bytes);
        if (!isfinite(pv))
            continue;
        json_t *po = json_pack("{s:s,s:s,s:O,s:I,s:o,s:o,s:s}", "op", tg.entry->name, "impl", tg.entry->impl,
                               "timing", json_object_get(m, "timing"), "bytes", (json_int_t)tg.bytes, "predicted",
                               mpilab_json_real(pv), "measured", mpilab_json_real(json_real_value(tg.measured)),
                               "measured_statistic", tg.statistic);
        /* the raw parameters are unconstrained (their sums are what the experiments fix), so
         * noisy experiments can sum to a time <= 0: impossible, flagged, never a plain number */
        if (po && !(pv > 0))
            json_object_set_new(po, "flags", json_pack("[s]", "nonpositive"));
        json_array_append_new(pred, po);
    }
    free(C);
    free(t);
    free(L);
    free(B);
    return pred;
}

json_t *mpilab_models_lmo(const mpilab_lmo_measured_t *mm, json_t *meas, double rendezvous_bytes, FILE *table)
{
    size_t np = (size_t)mm->p * (size_t)(mm->p - 1) / 2, ne = 3 * mm->ntrip;
    json_t *out = json_pack("{s:I,s:s,s:I,s:I,s:o}", "bytes", (json_int_t)mm->bytes, "mode",
                            mm->mode == MPILAB_P2P_SEQUENTIAL ? "sequential" : "parallel", "triplets",
                            (json_int_t)mm->ntrip, "rounds", (json_int_t)mm->rounds, "wall_s",
                            mpilab_json_real(mm->wall_s));
    json_object_set_new(out, "wait", json_string(mpilab_wait_name(&mm->wait)));
    json_object_set_new(out, "experiments",
                        json_pack("{s:o,s:o,s:o,s:o}", "rt_0", p2t_json(mm->rt_0, np), "rt_m", p2t_json(mm->rt_m, np),
                                  "p2t_0", p2t_json(mm->p2t_0, ne), "p2t_m", p2t_json(mm->p2t_m, ne)));
    json_object_set_new(out, "fit_on",
                        json_string("per experiment the median of its samples; per node the median over the "
                                    "experiments it was the root of (those whose p2t_0 is above the slower round "
                                    "trip by more than the medians' noise, else all) of the C and t for which the "
                                    "point-to-two time event by event is p2t_0 and p2t_m, from the round trips "
                                    "timed beside each empty experiment (p2t_0.rt_x, rt_y) when there are, else "
                                    "rt_0, and rt_m; per link L = rt_0/2 - C_i - C_j "
                                    "and 1/beta = (rt_m - rt_0)/M - t_i - t_j; bootstrap intervals (200 "
                                    "replicates); flags clamped, no_ci, ci_wide, triplets_disagree; predictions from the raw "
                                    "(unclamped) values, messages of >= rendezvous_bytes synchronous (the linear patterns' "
                                    "messages one after another, the binomial tree's stage by stage), smaller ones "
                                    "eager (a node's CPU handles its messages one after another, the links carry "
                                    "them at once); path_inv_beta = t_i + t_j + 1/beta_ij (raw)"));
    json_object_set_new(out, "rendezvous_bytes", json_integer((json_int_t)rendezvous_bytes));
    mpilab_lmo_input_t in;
    mpilab_lmo_fit_t f;
    char err[256] = "out of memory";
    mpilab_lmo_opts_t o;
    mpilab_lmo_opts_default(&o);
    if (mpilab_lmo_input_from(mm, &in) != 0 || mpilab_lmo_fit(&in, &o, &f, err, sizeof err) != 0) {
        json_object_set_new(out, "error", json_string(err));
        if (table)
            fprintf(table, "\nLMO fit failed: %s\n", err);
        mpilab_lmo_input_free(&in);
        return out;
    }
    json_object_set_new(out, "nodes", nodes_json(&f, table));
    json_object_set_new(out, "links", links_json(&f, np));
    json_object_set_new(out, "slowest", slowest_json(&f, np, table));
    json_object_set_new(out, "star", star_json(&f, table));
    json_object_set_new(out, "predictions", predictions_json(&f, meas, rendezvous_bytes));
    mpilab_lmo_fit_free(&f);
    mpilab_lmo_input_free(&in);
    return out;
}
