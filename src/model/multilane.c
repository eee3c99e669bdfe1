/* Cost models of the multilane / single-lane grid scatter and gather
 * (include/mpilab/multilane_model.h). */
#include <math.h>
#include <stdlib.h>

#include "mpilab/multilane_model.h"

static int params_ok(const mpilab_multilane_params_t *m, double M)
{
    if (!m || !m->b || m->nb == 0)
        return 0;
    if (!(isfinite(m->L) && m->L >= 0 && isfinite(m->l) && m->l >= 0 && isfinite(m->alpha) &&
          m->alpha >= 0 && isfinite(m->b_lan) && m->b_lan > 0 && isfinite(M) && M >= 0))
        return 0;
    for (size_t j = 0; j < m->nb; j++)
        if (!(isfinite(m->b[j]) && m->b[j] > 0))
            return 0;
    return 1;
}

static size_t min2(size_t a, size_t b) { return a < b ? a : b; }

size_t mpilab_multilane_x(size_t n0, size_t n1, size_t P)
{
    if (P == 0 || P > min2(n0, n1))
        return 0;
    return (n1 + P - 1) / P;
}

size_t mpilab_multilane_y(size_t n0, size_t n1, size_t P)
{
    size_t x = mpilab_multilane_x(n0, n1, P);
    if (x == 0)
        return 0;
    return n0 >= n1 ? n0 + n1 - 1 - x : n1 + P - 2;
}

double mpilab_multilane_time(const mpilab_multilane_params_t *m, size_t n0, size_t n1, size_t P,
                             double M)
{
    if (!params_ok(m, M) || P == 0 || P > min2(n0, n1) || P > m->nb)
        return NAN;
    double x = (double)mpilab_multilane_x(n0, n1, P), y = (double)mpilab_multilane_y(n0, n1, P);
    return m->L + x * M / m->b[P - 1] + y * M / m->b_lan + m->alpha;
}

double mpilab_single_lane_time(const mpilab_multilane_params_t *m, size_t n0, size_t n1,
                               double M)
{
    if (!params_ok(m, M) || n0 == 0 || n1 == 0)
        return NAN;
    double nalt = (double)(n0 > n1 ? n0 : n1);
    return m->L + (double)n1 * M / m->b[0] + (nalt - 1) * (m->l + M / m->b_lan);
}

/* Per-lane WAN bandwidth while j lanes are in flight (beyond the curve: its last total
 * shared by j). */
static double bw(const mpilab_multilane_params_t *m, size_t j)
{
    if (j <= m->nb)
        return m->b[j - 1];
    return m->b[m->nb - 1] * (double)m->nb / (double)j;
}

/* Fluid WAN: lane k starts at start[k] with bytes[k]; fills end[k]. */
static void wan_fluid(const mpilab_multilane_params_t *m, size_t P, const double *start,
                      const double *bytes, double *end)
{
    double *left = malloc(P * sizeof *left);
    int *state = calloc(P, sizeof *state); /* 0 waiting, 1 active, 2 done */
    if (!left || !state) {
        for (size_t k = 0; k < P; k++)
            end[k] = NAN;
        free(left);
        free(state);
        return;
    }
    for (size_t k = 0; k < P; k++)
        left[k] = bytes[k];
    double t = 0;
    size_t done = 0;
    while (done < P) {
        size_t active = 0;
        for (size_t k = 0; k < P; k++) {
            if (state[k] == 0 && start[k] <= t)
                state[k] = 1;
            if (state[k] == 1 && left[k] <= 0) {
                state[k] = 2;
                end[k] = t;
                done++;
            }
            active += state[k] == 1;
        }
        if (done == P)
            break;
        double next = INFINITY;
        const double rate = active ? bw(m, active) : 0;
        for (size_t k = 0; k < P; k++) {
            if (state[k] == 0 && start[k] < next)
                next = start[k];
            if (state[k] == 1 && t + left[k] / rate < next)
                next = t + left[k] / rate;
        }
        for (size_t k = 0; k < P; k++)
            if (state[k] == 1) {
                left[k] -= rate * (next - t);
                if (left[k] < 1e-9 * bytes[k])
                    left[k] = 0;
            }
        t = next;
    }
    free(left);
    free(state);
}

double mpilab_multilane_sim_time(const mpilab_multilane_params_t *m, int op, size_t n0,
                                 size_t n1, size_t P, double M)
{
    if (!params_ok(m, M) || P == 0 || P > min2(n0, n1) || P > m->nb ||
        (op != MPILAB_ML_SCATTER && op != MPILAB_ML_GATHER))
        return NAN;
    double *c = malloc(P * sizeof *c), *start = malloc(P * sizeof *start);
    double *bytes = malloc(P * sizeof *bytes), *end = malloc(P * sizeof *end);
    double T = NAN;
    if (!c || !start || !bytes || !end)
        goto out;
    for (size_t k = 0; k < P; k++) { /* the implementation's runs: floor((k+1) n1/P) - ... */
        c[k] = (double)((k + 1) * n1 / P - k * n1 / P);
        bytes[k] = c[k] * M;
    }
    const double blk = m->l + M / m->b_lan; /* one block over the LAN */
    if (op == MPILAB_ML_SCATTER) {
        /* (1) prepare, sender by sender; the root's lane starts after the last one */
        double t = 0;
        for (size_t k = 1; k < P; k++) {
            t += m->l + c[k] * M / m->b_lan;
            start[k] = t;
        }
        start[0] = t;
        wan_fluid(m, P, start, bytes, end);
        /* (3) the root's own site after the prepare; receivers forward after arrival */
        double fin = t + (double)(n0 - 1) * blk;
        for (size_t k = 0; k < P; k++) {
            double d = end[k] + m->L + (c[k] - 1) * blk;
            if (d > fin)
                fin = d;
        }
        T = fin + m->alpha;
    } else {
        /* (3 reversed) each receiver collects its run: one incast into its LAN link */
        for (size_t k = 0; k < P; k++)
            start[k] = c[k] > 1 ? m->l + (c[k] - 1) * M / m->b_lan : 0;
        wan_fluid(m, P, start, bytes, end);
        /* (1 reversed) the root's LAN link: its own site's blocks first, then the senders'
         * relays in order of arrival; the root's own lane lands directly */
        double busy = n0 > 1 ? m->l + (double)(n0 - 1) * M / m->b_lan : 0;
        double fin = end[0] + m->L;
        size_t *order = malloc(P * sizeof *order);
        if (!order)
            goto out;
        for (size_t k = 0; k < P; k++)
            order[k] = k;
        for (size_t i = 1; i < P; i++) /* insertion sort by arrival, P is small */
            for (size_t j = i; j > 1 && end[order[j]] < end[order[j - 1]]; j--) {
                size_t tmp = order[j];
                order[j] = order[j - 1];
                order[j - 1] = tmp;
            }
        for (size_t i = 1; i < P; i++) {
            size_t k = order[i];
            double arrive = end[k] + m->L;
            busy = (busy > arrive ? busy : arrive) + m->l + c[k] * M / m->b_lan;
        }
        free(order);
        if (busy > fin)
            fin = busy;
        T = fin + m->alpha;
    }
out:
    free(c);
    free(start);
    free(bytes);
    free(end);
    return T;
}

size_t mpilab_multilane_popt(const mpilab_multilane_params_t *m, int op, size_t n0, size_t n1,
                             double M, double *t)
{
    if (!params_ok(m, M))
        return 0;
    size_t pmax = min2(min2(n0, n1), m->nb), best = 0;
    double best_t = INFINITY;
    for (size_t P = 1; P <= pmax; P++) {
        double x = op < 0 ? mpilab_multilane_time(m, n0, n1, P, M)
                          : mpilab_multilane_sim_time(m, op, n0, n1, P, M);
        if (isfinite(x) && x < best_t) {
            best_t = x;
            best = P;
        }
    }
    if (t && best)
        *t = best_t;
    return best;
}
