/* The star view of an LMO fit: per node its share of a route's fixed time and its access
 * link's time per byte (include/mpilab/lmo.h, docs/models-lmo.md "What the model identifies on a
 * star"). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <gsl/gsl_sort.h>
#include <gsl/gsl_statistics_double.h>

#include "mpilab/lmo.h"

static size_t pair_index(int p, int i, int j)
{
    return (size_t)i * (size_t)(2 * p - i - 1) / 2 + (size_t)(j - i - 1);
}

static double median_copy(const double *x, size_t n, double *tmp)
{
    memcpy(tmp, x, n * sizeof *tmp);
    gsl_sort(tmp, 1, n);
    return gsl_stats_median_from_sorted_data(tmp, 1, n);
}

/* The pair's fixed time and time per byte with the raw values (what the round trips fix). */
static void pair_sums(const mpilab_lmo_fit_t *f, size_t q, double *y, double *path)
{
    const mpilab_lmo_link_t *l = &f->link[q];
    *y = f->node[l->i].C.raw + f->node[l->j].C.raw + l->L.raw;
    *path = f->node[l->i].t.raw + f->node[l->j].t.raw + l->inv_beta.raw;
}

static double rel(double model, double meas)
{
    return meas != 0 ? fabs(model - meas) / fabs(meas) : (model == 0 ? 0 : INFINITY);
}

int mpilab_lmo_star(const mpilab_lmo_fit_t *f, mpilab_lmo_star_t *out)
{
    memset(out, 0, sizeof *out);
    int p = f ? f->p : 0;
    if (p < 3 || !f->node || !f->link)
        return -1;
    double *a = calloc((size_t)p, sizeof *a), *u = malloc((size_t)p * sizeof *u);
    double *row = calloc((size_t)p, sizeof *row), *tmp = malloc((size_t)p * sizeof *tmp);
    if (!a || !u || !row || !tmp) {
        free(a);
        free(u);
        free(row);
        free(tmp);
        return -1;
    }
    /* normal equations of min sum (y_ij - a_i - a_j)^2: (p - 2) a_i + S = R_i with R_i the sum
     * of node i's y and S = sum a = (sum of all y) / (p - 1) */
    double total = 0;
    for (int i = 0; i < p; i++)
        u[i] = INFINITY;
    for (int i = 0; i < p; i++)
        for (int j = i + 1; j < p; j++) {
            double y, path;
            pair_sums(f, pair_index(p, i, j), &y, &path);
            row[i] += y;
            row[j] += y;
            total += y;
            u[i] = fmin(u[i], path);
            u[j] = fmin(u[j], path);
        }
    double S = total / (p - 1);
    for (int i = 0; i < p; i++)
        a[i] = (row[i] - S) / (p - 2);
    for (int i = 0; i < p; i++)
        for (int j = i + 1; j < p; j++) {
            double y, path;
            pair_sums(f, pair_index(p, i, j), &y, &path);
            out->misfit_a = fmax(out->misfit_a, rel(a[i] + a[j], y));
            out->misfit_u = fmax(out->misfit_u, rel(fmax(u[i], u[j]), path));
        }
    for (int i = 0; i < p; i++) {
        row[i] = a[i] + f->bytes * u[i];
        if (row[i] > row[out->slowest])
            out->slowest = i;
    }
    out->slowest_cost = row[out->slowest];
    double med = median_copy(row, (size_t)p, tmp);
    out->slowest_vs_median = med > 0 ? out->slowest_cost / med : NAN;
    free(row);
    free(tmp);
    out->p = p;
    out->a = a;
    out->u = u;
    return 0;
}

int mpilab_lmo_slowest_cpu(const mpilab_lmo_fit_t *f, double *vs_median)
{
    *vs_median = NAN;
    size_t p = f->p > 0 ? (size_t)f->p : 0;
    double *c = malloc((p + 1) * sizeof *c), *tmp = malloc((p + 1) * sizeof *tmp);
    int slow = -1;
    for (size_t i = 0; c && tmp && i < p; i++) {
        c[i] = f->node[i].C.value;
        if (slow < 0 || c[i] > c[slow])
            slow = (int)i;
    }
    if (slow >= 0) {
        double med = median_copy(c, p, tmp);
        *vs_median = med > 0 ? c[slow] / med : NAN;
    }
    free(c);
    free(tmp);
    return slow;
}

void mpilab_lmo_star_free(mpilab_lmo_star_t *s)
{
    free(s->a);
    free(s->u);
    memset(s, 0, sizeof *s);
}

/* index of the largest of v[0..n), its value and its ratio to the median (tmp: n scratch) */
static size_t largest(const double *v, size_t n, double *tmp, double *cost, double *vs_median)
{
    size_t k = 0;
    for (size_t i = 1; i < n; i++)
        if (v[i] > v[k])
            k = i;
    double med = median_copy(v, n, tmp);
    *cost = v[k];
    *vs_median = med > 0 ? v[k] / med : NAN;
    return k;
}

/* The MPI's header bytes h in every node's C on a star: a message's header crosses the
 * sender's access link before anything else, so C_i = c_i + h u_i (c_i: the processor's work).
 * h is the median slope (C_i - C_j) / (u_i - u_j) over the pairs whose links differ by at least
 * 25% (0 when none does), held in [0, min over i of C_i / u_i] (no processing part below 0). */
static double header_bytes(const mpilab_lmo_fit_t *f, const double *u, double *tmp)
{
    size_t p = (size_t)f->p, n = 0;
    double cap = INFINITY;
    for (size_t i = 0; i < p; i++) {
        if (u[i] > 0)
            cap = fmin(cap, f->node[i].C.value / u[i]);
        for (size_t j = i + 1; j < p; j++) {
            double lo = fmin(u[i], u[j]), hi = fmax(u[i], u[j]);
            if (lo > 0 && hi >= 1.25 * lo)
                tmp[n++] = (f->node[i].C.value - f->node[j].C.value) / (u[i] - u[j]);
        }
    }
    if (n == 0 || !isfinite(cap))
        return 0;
    gsl_sort(tmp, 1, n);
    double h = gsl_stats_median_from_sorted_data(tmp, 1, n);
    return h > 0 ? fmin(h, cap) : 0;
}

/* On a star: per node its processing part c_i = C_i - h u_i in v, h in out->header_bytes, the
 * node with the largest, or -1 when it is not above the median node's by more than
 * MPILAB_LMO_NODE_STANDS_OUT of the median pair's fixed time (every C_i its link's). */
static void star_node(const mpilab_lmo_fit_t *f, const mpilab_lmo_star_t *st, double *v, double *tmp,
                      mpilab_lmo_headlines_t *out)
{
    size_t p = (size_t)f->p, np = p * (p - 1) / 2;
    out->header_bytes = header_bytes(f, st->u, tmp);
    for (size_t i = 0; i < p; i++)
        v[i] = fmax(f->node[i].C.value - out->header_bytes * st->u[i], 0.0);
    out->node = (int)largest(v, p, tmp, &out->node_cost, &out->node_vs_median);
    double med_c = median_copy(v, p, tmp);
    for (size_t q = 0; q < np; q++) {
        double path;
        pair_sums(f, q, &v[q], &path);
    }
    double med_y = median_copy(v, np, tmp);
    if (!(out->node_cost - med_c > MPILAB_LMO_NODE_STANDS_OUT * med_y))
        out->node = -1;
}

int mpilab_lmo_headlines(const mpilab_lmo_fit_t *f, mpilab_lmo_headlines_t *out)
{
    memset(out, 0, sizeof *out);
    out->link_of = out->link_i = out->link_j = -1;
    mpilab_lmo_star_t st;
    if (f->p < 3 || mpilab_lmo_star(f, &st) != 0)
        return -1;
    size_t p = (size_t)f->p, np = p * (p - 1) / 2, big = np > p ? np : p;
    double *v = malloc(big * sizeof *v), *tmp = malloc(big * sizeof *tmp);
    if (!v || !tmp) {
        free(v);
        free(tmp);
        mpilab_lmo_star_free(&st);
        return -1;
    }
    double M = f->bytes;
    out->star = st.misfit_a <= MPILAB_LMO_STAR_FITS && st.misfit_u <= MPILAB_LMO_STAR_FITS;
    if (out->star) { /* t_i is the access link's, and so is C_i's header part */
        star_node(f, &st, v, tmp, out);
        out->link_of = st.slowest;
        out->link_cost = st.slowest_cost;
        out->link_vs_median = st.slowest_vs_median;
    } else {
        for (size_t i = 0; i < p; i++)
            v[i] = f->node[i].C.value + M * f->node[i].t.value;
        out->node = (int)largest(v, p, tmp, &out->node_cost, &out->node_vs_median);
        double med_node = median_copy(v, p, tmp);
        for (size_t q = 0; q < np; q++) { /* a pair's whole time at M */
            double path;
            pair_sums(f, q, &v[q], &path);
            v[q] += M * path;
        }
        if (!(out->node_cost - med_node > MPILAB_LMO_NODE_STANDS_OUT * median_copy(v, np, tmp)))
            out->node = -1; /* equal nodes (all C + M t 0 on a simulated mesh): none is slowest */
        for (size_t q = 0; q < np; q++)
            v[q] = f->link[q].L.value + M * f->link[q].inv_beta.value;
        size_t q = largest(v, np, tmp, &out->link_cost, &out->link_vs_median);
        out->link_i = f->link[q].i;
        out->link_j = f->link[q].j;
    }
    free(v);
    free(tmp);
    mpilab_lmo_star_free(&st);
    return 0;
}
