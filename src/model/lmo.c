/* The LMO heterogeneous model: the triplet schedule, the fit from round trips and point-to-two
 * experiments, and its predictions (include/mpilab/lmo.h; equations in docs/models-lmo.md). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <gsl/gsl_sort.h>
#include <gsl/gsl_statistics_double.h>

#include "mpilab/lmo.h"
#include "mpilab/stats.h"

void mpilab_triplet_roles(const mpilab_triplet_t *t, int e, int *root, int *x, int *y)
{
    int m[3] = {t->a, t->b, t->c};
    *root = m[e];
    *x = m[e == 0 ? 1 : 0];
    *y = m[e == 2 ? 1 : 2];
}

size_t mpilab_lmo_ntriplets(int n)
{
    if (n < 3)
        return 0;
    size_t s = (size_t)n;
    return s * (s - 1) * (s - 2) / 6;
}

size_t mpilab_lmo_triplets(int n, mpilab_triplet_t *out)
{
    size_t k = 0;
    for (int a = 0; a < n; a++)
        for (int b = a + 1; b < n; b++)
            for (int c = b + 1; c < n; c++)
                out[k++] = (mpilab_triplet_t){a, b, c};
    return k;
}

size_t mpilab_lmo_triplet_rounds(int n, const mpilab_triplet_t *t, size_t nt, size_t *order, size_t *round_start)
{
    if (n < 3)
        return 0;
    for (size_t k = 0; k < nt; k++)
        if (t[k].a < 0 || t[k].c >= n || !(t[k].a < t[k].b && t[k].b < t[k].c))
            return 0;
    unsigned char *done = calloc(nt + 1, 1), *busy = calloc((size_t)n, 1);
    if (!done || !busy) {
        free(done);
        free(busy);
        return 0;
    }
    size_t rounds = 0, placed = 0, first = 0;
    while (placed < nt) {
        memset(busy, 0, (size_t)n);
        round_start[rounds] = placed;
        while (first < nt && done[first])
            first++;
        for (size_t k = first; k < nt; k++) {
            if (done[k] || busy[t[k].a] || busy[t[k].b] || busy[t[k].c])
                continue;
            busy[t[k].a] = busy[t[k].b] = busy[t[k].c] = 1;
            done[k] = 1;
            order[placed++] = k;
        }
        rounds++;
    }
    round_start[rounds] = placed;
    free(done);
    free(busy);
    return rounds;
}

/* Index of pair (i, j), i != j, in the order (0,1), (0,2) .. (1,2) ... */
static size_t pidx(int p, int i, int j)
{
    if (i > j) {
        int s = i;
        i = j;
        j = s;
    }
    return (size_t)i * (size_t)(2 * p - i - 1) / 2 + (size_t)(j - i - 1);
}

/* Median of v[0..n) (sorted in place) and the largest distance of one value from it. */
static double med_dev(double *v, size_t n, double *dev)
{
    gsl_sort(v, 1, n);
    double med = gsl_stats_median_from_sorted_data(v, 1, n);
    if (dev)
        *dev = fmax(med - v[0], v[n - 1] - med);
    return med;
}

/* One point-to-two experiment event by event, given the root's round trips to x and y (rx,
 * ry, same size): the root's CPU sends to x, then to y (s = C + M t each), the replies are
 * back at a_x = rx - c and a_y = ry + s - c (a round trip is s, the flight, then c to take
 * the reply), and the root takes them in the order they come, c = C each, once its sends
 * are done. */
double mpilab_lmo_p2t_events(double rx, double ry, double c, double s)
{
    double ax = rx - c, ay = ry + s - c;
    double c1 = fmax(fmin(ax, ay), 2 * s) + c;
    return fmax(fmax(ax, ay), c1) + c;
}

/* The value v in [lo, hi] where f(v) = q for f nondecreasing (bisection), NAN when q is not
 * strictly above f(lo) (then the experiment does not fix v: the replies' order hides it). */
static double solve_up(double q, double lo, double hi, double rx, double ry, double c_fixed, int vary_c)
{
    double flo = vary_c ? mpilab_lmo_p2t_events(rx, ry, lo, lo) : mpilab_lmo_p2t_events(rx, ry, c_fixed, lo);
    if (!(q > flo))
        return NAN;
    for (int k = 0; k < 200 && hi - lo > 1e-13 * fabs(hi); k++) {
        double mid = (lo + hi) / 2;
        double f = vary_c ? mpilab_lmo_p2t_events(rx, ry, mid, mid) : mpilab_lmo_p2t_events(rx, ry, c_fixed, mid);
        if (f < q)
            lo = mid;
        else
            hi = mid;
    }
    return (lo + hi) / 2;
}

/* C and t of the root of one point-to-two experiment: the values for which the experiment
 * event by event (mpilab_lmo_p2t_events) takes the measured times q0, qm. Returns 1 when
 * the experiment fixes them; 0 when it does not (p2t_0 not above the slower round trip:
 * the first reply's flight hides the root's work; or, !may_fix, not above it by more than
 * the medians' noise), *c and *t then being the plain difference (p2t_0 - max rt_0) / 2
 * and its slope (<= 0: clamped if they are used). */
static int root_share(double r0x, double r0y, double rmx, double rmy, double q0, double qm, double M, int may_fix,
                      double *c, double *t)
{
    double own0 = q0 - fmax(r0x, r0y), ownm = qm - fmax(rmx, rmy);
    double cv = may_fix ? solve_up(q0, 0, q0, r0x, r0y, 0, 1) : NAN;
    if (isnan(cv)) {
        *c = own0 / 2;
        *t = (ownm - own0) / M;
        return 0;
    }
    /* no s fits qm: the two sizes contradict each other (a disturbed experiment); kept, with
     * the plain slope, so that the triplets' disagreement shows */
    double sv = solve_up(qm, -qm, qm, rmx, rmy, cv, 0);
    *c = cv;
    *t = isnan(sv) ? (ownm - own0) / M : (sv - cv) / M;
    return 1;
}

/* mpilab_lmo_fit_values, where mask (if not NULL) says which experiments may fix their
 * root's values (fixing_mask), nsolved (if not NULL) gets per node how many did, and lx0, ly0
 * (if not NULL, [3 ntrip]) are the empty round trips to x and y timed beside each experiment,
 * used for its root's values instead of rt_0. */
static int fit_values(int p, const mpilab_triplet_t *trip, size_t ntrip, double bytes, const double *rt_0,
                      const double *rt_m, const double *p2t_0, const double *p2t_m, const double *lx0,
                      const double *ly0, const unsigned char *mask, double *C, double *t, double *L,
                      double *inv_beta, double *C_spread, double *t_spread, size_t *nsolved)
{
    if (p < 3 || !(bytes > 0) || ntrip == 0)
        return -1;
    double *vc = malloc(ntrip * sizeof *vc), *vt = malloc(ntrip * sizeof *vt);
    int rc = vc && vt ? 0 : -1;
    for (int i = 0; rc == 0 && i < p; i++) {
        size_t n = 0, nf = 0;
        for (size_t k = 0; k < ntrip; k++)
            for (int e = 0; e < 3; e++) {
                int r, x, y;
                mpilab_triplet_roles(&trip[k], e, &r, &x, &y);
                if (r != i)
                    continue;
                double c, tv;
                size_t ex = 3 * k + (size_t)e;
                double r0x = lx0 ? lx0[ex] : rt_0[pidx(p, r, x)], r0y = ly0 ? ly0[ex] : rt_0[pidx(p, r, y)];
                int fixed = root_share(r0x, r0y, rt_m[pidx(p, r, x)], rt_m[pidx(p, r, y)], p2t_0[ex], p2t_m[ex],
                                       bytes, !mask || mask[ex], &c, &tv);
                /* the experiments that fix the node's values first (vc[0..nf)), the others
                 * after them (used only when none does) */
                if (fixed) {
                    vc[n] = vc[nf];
                    vt[n] = vt[nf];
                    vc[nf] = c;
                    vt[nf++] = tv;
                } else {
                    vc[n] = c;
                    vt[n] = tv;
                }
                if (!isfinite(vc[n]) || !isfinite(vt[n]))
                    rc = -1;
                n++;
            }
        if (n == 0 || rc != 0) {
            rc = -1;
            break;
        }
        size_t use = nf > 0 ? nf : n;
        if (nsolved)
            nsolved[i] = nf;
        C[i] = med_dev(vc, use, C_spread ? &C_spread[i] : NULL);
        t[i] = med_dev(vt, use, t_spread ? &t_spread[i] : NULL);
    }
    for (int i = 0; rc == 0 && i < p; i++)
        for (int j = i + 1; j < p; j++) {
            size_t q = pidx(p, i, j);
            L[q] = rt_0[q] / 2 - C[i] - C[j];
            inv_beta[q] = (rt_m[q] - rt_0[q]) / bytes - t[i] - t[j];
            if (!isfinite(L[q]) || !isfinite(inv_beta[q]))
                rc = -1;
        }
    free(vc);
    free(vt);
    return rc;
}

int mpilab_lmo_fit_values(int p, const mpilab_triplet_t *trip, size_t ntrip, double bytes, const double *rt_0,
                          const double *rt_m, const double *p2t_0, const double *p2t_m, double *C, double *t,
                          double *L, double *inv_beta, double *C_spread, double *t_spread)
{
    return fit_values(p, trip, ntrip, bytes, rt_0, rt_m, p2t_0, p2t_m, NULL, NULL, NULL, C, t, L, inv_beta, C_spread,
                      t_spread, NULL);
}

void mpilab_lmo_opts_default(mpilab_lmo_opts_t *o)
{
    o->cl = 0.95;
    o->eps = 0.05;
    o->boot = 200;
    o->seed = 1;
}

/* splitmix64: the bootstrap's generator (deterministic from the seed). */
static unsigned long long mix(unsigned long long *s)
{
    unsigned long long z = (*s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

/* Median of series s (a resample of it when rng is not NULL), work holding s->n values. */
static double series_median(const mpilab_lmo_series_t *s, double *work, unsigned long long *rng)
{
    for (size_t k = 0; k < s->n; k++)
        work[k] = rng ? s->x[mix(rng) % s->n] : s->x[k];
    gsl_sort(work, 1, s->n);
    return gsl_stats_median_from_sorted_data(work, 1, s->n);
}

typedef struct fitw {
    int p;
    size_t np, ne, nb;
    double *rt0, *rtm, *q0, *qm;  /* experiment values */
    double *lx0, *ly0;            /* [ne] the round trips beside the empty experiments, or NULL */
    double *C, *t, *L, *ib;       /* one fit */
    double *bC, *bt, *bL, *bib;   /* replicates: [nb][p] / [nb][np] */
    double *work;
} fitw_t;

static void fitw_free(fitw_t *w)
{
    free(w->rt0);
    free(w->rtm);
    free(w->lx0);
    free(w->ly0);
    free(w->q0);
    free(w->qm);
    free(w->C);
    free(w->t);
    free(w->L);
    free(w->ib);
    free(w->bC);
    free(w->bt);
    free(w->bL);
    free(w->bib);
    free(w->work);
}

static int fitw_alloc(fitw_t *w, const mpilab_lmo_input_t *in, size_t nb, size_t maxn)
{
    memset(w, 0, sizeof *w);
    w->p = in->p;
    w->np = (size_t)in->p * (size_t)(in->p - 1) / 2;
    w->ne = 3 * in->ntrip;
    w->nb = nb;
    size_t P = (size_t)in->p;
    w->rt0 = malloc(w->np * sizeof(double));
    w->rtm = malloc(w->np * sizeof(double));
    int local = in->p2t_rtx_0 && in->p2t_rty_0;
    w->lx0 = local ? malloc(w->ne * sizeof(double)) : NULL;
    w->ly0 = local ? malloc(w->ne * sizeof(double)) : NULL;
    w->q0 = malloc(w->ne * sizeof(double));
    w->qm = malloc(w->ne * sizeof(double));
    w->C = malloc(P * sizeof(double));
    w->t = malloc(P * sizeof(double));
    w->L = malloc(w->np * sizeof(double));
    w->ib = malloc(w->np * sizeof(double));
    w->bC = malloc(nb * P * sizeof(double));
    w->bt = malloc(nb * P * sizeof(double));
    w->bL = malloc(nb * w->np * sizeof(double));
    w->bib = malloc(nb * w->np * sizeof(double));
    w->work = malloc((maxn ? maxn : 1) * sizeof(double));
    return w->rt0 && w->rtm && w->q0 && w->qm && w->C && w->t && w->L && w->ib && w->bC && w->bt && w->bL &&
                   w->bib && w->work && (!local || (w->lx0 && w->ly0))
               ? 0
               : -1;
}

/* The experiment values (medians, or a replicate's medians with rng) into w. */
static void values(fitw_t *w, const mpilab_lmo_input_t *in, unsigned long long *rng)
{
    for (size_t q = 0; q < w->np; q++) {
        w->rt0[q] = series_median(&in->rt_0[q], w->work, rng);
        w->rtm[q] = series_median(&in->rt_m[q], w->work, rng);
    }
    for (size_t e = 0; e < w->ne; e++) {
        w->q0[e] = series_median(&in->p2t_0[e], w->work, rng);
        w->qm[e] = series_median(&in->p2t_m[e], w->work, rng);
        if (w->lx0) {
            w->lx0[e] = series_median(&in->p2t_rtx_0[e], w->work, rng);
            w->ly0[e] = series_median(&in->p2t_rty_0[e], w->work, rng);
        }
    }
}

/* Half the width of the distribution-free interval of a series' median at level cl
 * (mpilab_median_ci); the whole range when the series is too short for one. work holds
 * s->n values. */
static double median_halfwidth(const mpilab_lmo_series_t *s, double *work, double cl)
{
    double lo, hi;
    memcpy(work, s->x, s->n * sizeof *work);
    gsl_sort(work, 1, s->n);
    if (mpilab_median_ci(work, s->n, cl, &lo, &hi) != 0) {
        lo = work[0];
        hi = work[s->n - 1];
    }
    return (hi - lo) / 2;
}

/* Which point-to-two experiments may fix their root's C (mask[3 t + e]): those whose excess
 * over the slower round trip (the medians' p2t_0 - max rt_0) is above the two medians' noise
 * (their intervals' half widths at cl, in quadrature). A noise-size excess does not tell C:
 * the event curve is flat in C up to about (rt_x - rt_y) / 2 (the first reply's flight hides
 * the root's work), and solving it returns where the flat part ends. The bootstrap's
 * replicates keep the same experiments. */
static void fixing_mask(const mpilab_lmo_input_t *in, const fitw_t *w, double cl, unsigned char *mask)
{
    for (size_t k = 0; k < in->ntrip; k++)
        for (int e = 0; e < 3; e++) {
            int r, x, y;
            mpilab_triplet_roles(&in->trip[k], e, &r, &x, &y);
            size_t qx = pidx(in->p, r, x), qy = pidx(in->p, r, y), ex = 3 * k + (size_t)e;
            const mpilab_lmo_series_t *slow;
            double rt;
            if (w->lx0) { /* the round trips beside the experiment */
                int xs = w->lx0[ex] >= w->ly0[ex];
                slow = xs ? &in->p2t_rtx_0[ex] : &in->p2t_rty_0[ex];
                rt = xs ? w->lx0[ex] : w->ly0[ex];
            } else {
                size_t q = w->rt0[qx] >= w->rt0[qy] ? qx : qy;
                slow = &in->rt_0[q];
                rt = w->rt0[q];
            }
            double noise = hypot(median_halfwidth(&in->p2t_0[ex], w->work, cl), median_halfwidth(slow, w->work, cl));
            mask[ex] = w->q0[ex] - rt > noise;
        }
}

static int check_series(const mpilab_lmo_series_t *s, size_t n, const char *what, size_t *maxn, char *err,
                        size_t errlen)
{
    for (size_t k = 0; k < n; k++) {
        if (!s || !s[k].x || s[k].n == 0) {
            snprintf(err, errlen, "lmo: %s experiment %zu has no sample", what, k);
            return -1;
        }
        for (size_t q = 0; q < s[k].n; q++)
            if (!isfinite(s[k].x[q])) {
                snprintf(err, errlen, "lmo: %s experiment %zu: sample %zu is not finite", what, k, q);
                return -1;
            }
        if (s[k].n > *maxn)
            *maxn = s[k].n;
    }
    return 0;
}

/* A parameter from its point value and replicates rep[0..nb) (stride): percentile interval,
 * clamp and width flags. */
static void make_param(mpilab_param_t *pp, double v, double *rep, size_t nb, const mpilab_lmo_opts_t *o)
{
    pp->raw = v;
    pp->value = v < 0 ? 0 : v;
    pp->flags = v < 0 ? MPILAB_PARAM_CLAMPED : 0;
    gsl_sort(rep, 1, nb);
    double a = (1 - o->cl) / 2;
    pp->lo = gsl_stats_quantile_from_sorted_data(rep, 1, nb, a);
    pp->hi = gsl_stats_quantile_from_sorted_data(rep, 1, nb, 1 - a);
    if (!isfinite(pp->lo) || !isfinite(pp->hi)) {
        pp->lo = pp->hi = NAN;
        pp->flags |= MPILAB_PARAM_NO_CI;
        return;
    }
    if (pp->lo < 0)
        pp->lo = 0;
    if (pp->hi < 0)
        pp->hi = 0;
    if ((pp->hi - pp->lo) / 2 > o->eps * fabs(pp->value))
        pp->flags |= MPILAB_PARAM_WIDE;
}

static int check_input(const mpilab_lmo_input_t *in, const mpilab_lmo_opts_t *o, char *err, size_t errlen)
{
    if (!in || in->p < 3) {
        snprintf(err, errlen, "lmo: needs at least 3 ranks (a triplet), got %d", in ? in->p : 0);
        return -1;
    }
    if (!(in->bytes > 0) || !isfinite(in->bytes)) {
        snprintf(err, errlen, "lmo: the message size M must be > 0 bytes");
        return -1;
    }
    if (!in->trip || in->ntrip == 0) {
        snprintf(err, errlen, "lmo: no triplet measured");
        return -1;
    }
    if (!(o->cl > 0 && o->cl < 1) || !(o->eps > 0 && o->eps < 1) || o->boot < 50) {
        snprintf(err, errlen, "lmo: bad options (cl in (0,1), eps in (0,1), boot >= 50)");
        return -1;
    }
    for (size_t k = 0; k < in->ntrip; k++) {
        const mpilab_triplet_t *t = &in->trip[k];
        if (t->a < 0 || t->c >= in->p || !(t->a < t->b && t->b < t->c)) {
            snprintf(err, errlen, "lmo: triplet %zu (%d,%d,%d) is not three distinct ranks of %d in order", k, t->a,
                     t->b, t->c, in->p);
            return -1;
        }
    }
    return 0;
}

int mpilab_lmo_fit(const mpilab_lmo_input_t *in, const mpilab_lmo_opts_t *o, mpilab_lmo_fit_t *out, char *err,
                   size_t errlen)
{
    memset(out, 0, sizeof *out);
    mpilab_lmo_opts_t od;
    if (!o) {
        mpilab_lmo_opts_default(&od);
        o = &od;
    }
    if (check_input(in, o, err, errlen) != 0)
        return -1;
    size_t np = (size_t)in->p * (size_t)(in->p - 1) / 2, ne = 3 * in->ntrip, maxn = 0;
    if (check_series(in->rt_0, np, "empty round trip", &maxn, err, errlen) ||
        check_series(in->rt_m, np, "M-byte round trip", &maxn, err, errlen) ||
        check_series(in->p2t_0, ne, "empty point-to-two", &maxn, err, errlen) ||
        check_series(in->p2t_m, ne, "M-byte point-to-two", &maxn, err, errlen) ||
        (in->p2t_rtx_0 && check_series(in->p2t_rtx_0, ne, "round trip beside an empty point-to-two", &maxn, err,
                                       errlen)) ||
        (in->p2t_rty_0 && check_series(in->p2t_rty_0, ne, "round trip beside an empty point-to-two", &maxn, err,
                                       errlen)))
        return -1;
    fitw_t w;
    size_t P = (size_t)in->p;
    if (fitw_alloc(&w, in, o->boot, maxn) != 0) {
        fitw_free(&w);
        snprintf(err, errlen, "lmo: out of memory");
        return -1;
    }
    double *Cs = calloc(P, sizeof *Cs), *ts = calloc(P, sizeof *ts);
    size_t *solved = calloc(P, sizeof *solved);
    unsigned char *mask = malloc(ne);
    values(&w, in, NULL);
    if (mask)
        fixing_mask(in, &w, o->cl, mask);
    int rc = Cs && ts && solved && mask ? fit_values(in->p, in->trip, in->ntrip, in->bytes, w.rt0, w.rtm, w.q0, w.qm,
                                                     w.lx0, w.ly0, mask, w.C, w.t, w.L, w.ib, Cs, ts, solved)
                                        : -1;
    if (rc != 0)
        snprintf(err, errlen, "lmo: a rank is the root of no measured triplet, or a value is not finite");
    unsigned long long rng = o->seed;
    for (size_t b = 0; rc == 0 && b < o->boot; b++) {
        values(&w, in, &rng);
        if (fit_values(in->p, in->trip, in->ntrip, in->bytes, w.rt0, w.rtm, w.q0, w.qm, w.lx0, w.ly0, mask,
                       &w.bC[b * P], &w.bt[b * P], &w.bL[b * np], &w.bib[b * np], NULL, NULL, NULL) != 0) {
            for (size_t i = 0; i < P; i++)
                w.bC[b * P + i] = w.bt[b * P + i] = NAN;
            for (size_t q = 0; q < np; q++)
                w.bL[b * np + q] = w.bib[b * np + q] = NAN;
        }
    }
    out->node = rc == 0 ? calloc(P, sizeof *out->node) : NULL;
    out->link = rc == 0 ? calloc(np, sizeof *out->link) : NULL;
    if (rc == 0 && (!out->node || !out->link)) {
        snprintf(err, errlen, "lmo: out of memory");
        rc = -1;
    }
    double *rep = rc == 0 ? malloc(o->boot * sizeof *rep) : NULL;
    if (rc == 0 && !rep) {
        snprintf(err, errlen, "lmo: out of memory");
        rc = -1;
    }
    for (size_t i = 0; rc == 0 && i < P; i++) {
        mpilab_lmo_node_t *nd = &out->node[i];
        for (size_t b = 0; b < o->boot; b++)
            rep[b] = w.bC[b * P + i];
        make_param(&nd->C, w.C[i], rep, o->boot, o);
        for (size_t b = 0; b < o->boot; b++)
            rep[b] = w.bt[b * P + i];
        make_param(&nd->t, w.t[i], rep, o->boot, o);
        nd->C_spread = Cs[i];
        nd->t_spread = ts[i];
        nd->C_solved = solved[i];
        if (Cs[i] > fmax(2 * (nd->C.hi - nd->C.lo), o->eps * fabs(nd->C.value)))
            nd->C.flags |= MPILAB_LMO_DISAGREE;
        if (ts[i] > fmax(2 * (nd->t.hi - nd->t.lo), o->eps * fabs(nd->t.value)))
            nd->t.flags |= MPILAB_LMO_DISAGREE;
        for (size_t k = 0; k < in->ntrip; k++)
            nd->ntrip += in->trip[k].a == (int)i || in->trip[k].b == (int)i || in->trip[k].c == (int)i;
    }
    for (int i = 0, q = 0; rc == 0 && i < in->p; i++)
        for (int j = i + 1; j < in->p; j++, q++) {
            mpilab_lmo_link_t *lk = &out->link[q];
            lk->i = i;
            lk->j = j;
            for (size_t b = 0; b < o->boot; b++)
                rep[b] = w.bL[b * np + (size_t)q];
            make_param(&lk->L, w.L[q], rep, o->boot, o);
            for (size_t b = 0; b < o->boot; b++)
                rep[b] = w.bib[b * np + (size_t)q];
            make_param(&lk->inv_beta, w.ib[q], rep, o->boot, o);
        }
    out->p = in->p;
    out->bytes = in->bytes;
    free(rep);
    free(Cs);
    free(ts);
    free(solved);
    free(mask);
    fitw_free(&w);
    if (rc != 0)
        mpilab_lmo_fit_free(out);
    return rc;
}

void mpilab_lmo_fit_free(mpilab_lmo_fit_t *f)
{
    free(f->node);
    free(f->link);
    f->node = NULL;
    f->link = NULL;
}

double mpilab_lmo_oneway(const mpilab_lmo_params_t *q, int i, int j, double m)
{
    size_t a = (size_t)i * (size_t)q->p + (size_t)j;
    return q->C[i] + m * q->t[i] + q->L[a] + m * q->inv_beta[a] + q->C[j] + m * q->t[j];
}

/* The network's and the receiver's share of a message i -> j (what follows i's CPU). */
static double after_sender(const mpilab_lmo_params_t *q, int i, int j, double m)
{
    return mpilab_lmo_oneway(q, i, j, m) - q->C[i] - m * q->t[i];
}

static double lmo_linear(const mpilab_lmo_params_t *q, int r, double m, int gather)
{
    int p = q->p;
    double own = q->C[r] + m * q->t[r], T = 0, c = 0;
    int sync = q->rendezvous_bytes > 0 && m >= q->rendezvous_bytes;
    for (int k = 1; k < p; k++) {
        int j = (r + k) % p;
        if (sync) {
            T += gather ? mpilab_lmo_oneway(q, j, r, m) : mpilab_lmo_oneway(q, r, j, m);
            c = T;
        } else if (!gather) {
            double x = (double)k * own + after_sender(q, r, j, m);
            T = x > T ? x : T;
        } else {
            double arrive = mpilab_lmo_oneway(q, j, r, m) - own;
            c = (arrive > c ? arrive : c) + own;
        }
    }
    return gather ? c : T;
}

static size_t low_bit(size_t v) { return v & (~v + 1); }

/* Blocks of the subtree of relative rank vr > 0 (mpilab's tree, coll.h). */
static size_t sub_blocks(size_t vr, size_t p)
{
    size_t lb = low_bit(vr);
    return lb < p - vr ? lb : p - vr;
}

/* Messages through mpilab's binomial tree event by event. An eager message (fewer than
 * rendezvous_bytes bytes, or rendezvous_bytes = 0) costs its sender's CPU C + k m t, then
 * the link and the receiver's CPU follow while the sender goes on; a synchronous one (its
 * k blocks at or above rendezvous_bytes, e.g. a subtree's message near the root) holds the
 * sender until it is through (its one-way time, from when both sides are there). Scatter:
 * a node is ready when its message is in (the root at 0) and sends to its children from the
 * largest subtree down; the time is the last node's end. Gather: leaves start at 0; a node
 * takes its children's messages in order from the smallest subtree up, then sends its blocks
 * to its parent; the time is the root's end. w[p] is scratch. */
static int msg_sync(const mpilab_lmo_params_t *q, double bytes)
{
    return q->rendezvous_bytes > 0 && bytes >= q->rendezvous_bytes;
}

static double lmo_binomial_events(const mpilab_lmo_params_t *q, int r, double m, int gather, double *w)
{
    size_t p = (size_t)q->p, top = 1, R = (size_t)r;
    while (top < p)
        top <<= 1;
    double T = 0;
    if (!gather) {
        w[0] = 0;
        for (size_t vr = 0; vr < p; vr++) {
            int a = (int)((vr + R) % p);
            double s = w[vr];
            for (size_t mk = (vr ? low_bit(vr) : top) >> 1; mk > 0; mk >>= 1) {
                if (vr + mk >= p)
                    continue;
                double km = (double)sub_blocks(vr + mk, p) * m;
                int b = (int)((vr + mk + R) % p);
                if (msg_sync(q, km)) {
                    s += mpilab_lmo_oneway(q, a, b, km);
                    w[vr + mk] = s;
                } else {
                    s += q->C[a] + km * q->t[a];
                    w[vr + mk] = s + after_sender(q, a, b, km);
                }
            }
            T = fmax(T, fmax(s, w[vr]));
        }
        return T;
    }
    /* w[vr]: when node vr is ready to send to its parent (its children's messages taken) */
    for (size_t vr = p; vr-- > 0;) {
        int a = (int)((vr + R) % p);
        double c = 0;
        for (size_t mk = 1; mk < (vr ? low_bit(vr) : top) && vr + mk < p; mk <<= 1) {
            double km = (double)sub_blocks(vr + mk, p) * m;
            int ch = (int)((vr + mk + R) % p);
            if (msg_sync(q, km))
                c = fmax(c, w[vr + mk]) + mpilab_lmo_oneway(q, ch, a, km);
            else /* there at the child's readiness + its CPU + the link; then this CPU */
                c = fmax(c, w[vr + mk] + mpilab_lmo_oneway(q, ch, a, km) - q->C[a] - km * q->t[a]) + q->C[a] +
                    km * q->t[a];
        }
        if (vr == 0)
            return c;
        w[vr] = c;
    }
    return T;
}

static double lmo_binomial(const mpilab_lmo_params_t *q, int r, double m, int gather)
{
    size_t p = (size_t)q->p, top = 1;
    if (!msg_sync(q, m)) {
        double *w = malloc(p * sizeof *w);
        double T = w ? lmo_binomial_events(q, r, m, gather, w) : NAN;
        free(w);
        return T;
    }
    while (top < p)
        top <<= 1;
    double T = 0;
    for (size_t mk = top >> 1; mk > 0; mk >>= 1) {
        double stage = 0;
        for (size_t vr = 0; vr + mk < p; vr += 2 * mk) {
            size_t blocks = mk < p - vr - mk ? mk : p - vr - mk;
            int a = (int)((vr + (size_t)r) % p), b = (int)((vr + mk + (size_t)r) % p);
            double x = gather ? mpilab_lmo_oneway(q, b, a, (double)blocks * m)
                              : mpilab_lmo_oneway(q, a, b, (double)blocks * m);
            stage = x > stage ? x : stage;
        }
        T += stage;
    }
    return T;
}

double mpilab_lmo_predict(mpilab_op_model_t pattern, const mpilab_lmo_params_t *q, int root, double m)
{
    if (!q || q->p < 1 || !q->C || !q->t || !q->L || !q->inv_beta || root < 0 || root >= q->p || !(m >= 0) ||
        isinf(m) || !(q->rendezvous_bytes >= 0))
        return NAN;
    switch (pattern) {
    case MPILAB_MODEL_SCATTER_LINEAR:
        return lmo_linear(q, root, m, 0);
    case MPILAB_MODEL_GATHER_LINEAR:
        return lmo_linear(q, root, m, 1);
    case MPILAB_MODEL_SCATTER_BINOMIAL:
        return lmo_binomial(q, root, m, 0);
    case MPILAB_MODEL_GATHER_BINOMIAL:
        return lmo_binomial(q, root, m, 1);
    default:
        return NAN;
    }
}
