/* Cost models of the multilane / single-lane grid scatter and gather and the arithmetic of
 * the alpha calibration (include/mpilab/multilane_model.h). */
#include <gsl/gsl_cdf.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

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

/* Fluid WAN over F flows (lane k of remote site s): flow f belongs to node pair side
 * owner[f] (its sender in a scatter, its home-site end in a gather), starts at start[f] with
 * bytes[f]; fills end[f].  All flows cross the root's site uplink, so j flows in flight share
 * it as the measured curve says (b(j) each); a node with several flows in flight splits its
 * single-pair rate b(1) among them.  With one remote site every node has one flow and the
 * rate is b(j), as measured. */
static int wan_fluid(const mpilab_multilane_params_t *m, size_t F, const size_t *owner,
                     size_t nowner, const double *start, const double *bytes, double *end)
{
    double *left = malloc(F * sizeof *left), *rate = malloc(F * sizeof *rate);
    int *state = calloc(F, sizeof *state); /* 0 waiting, 1 active, 2 done */
    size_t *per = calloc(nowner, sizeof *per);
    int ok = left && rate && state && per;
    for (size_t k = 0; ok && k < F; k++)
        left[k] = bytes[k];
    double t = 0;
    size_t done = 0;
    while (ok && done < F) {
        size_t active = 0;
        memset(per, 0, nowner * sizeof *per);
        for (size_t k = 0; k < F; k++) {
            if (state[k] == 0 && start[k] <= t)
                state[k] = 1;
            if (state[k] == 1 && left[k] <= 0) {
                state[k] = 2;
                end[k] = t;
                done++;
            }
            if (state[k] == 1) {
                active++;
                per[owner[k]]++;
            }
        }
        if (done == F)
            break;
        double next = INFINITY;
        for (size_t k = 0; k < F; k++) {
            if (state[k] == 0 && start[k] < next)
                next = start[k];
            if (state[k] != 1)
                continue;
            rate[k] = bw(m, active);
            if (per[owner[k]] > 1 && m->b[0] / (double)per[owner[k]] < rate[k])
                rate[k] = m->b[0] / (double)per[owner[k]];
            if (t + left[k] / rate[k] < next)
                next = t + left[k] / rate[k];
        }
        for (size_t k = 0; k < F; k++)
            if (state[k] == 1) {
                left[k] -= rate[k] * (next - t);
                if (left[k] < 1e-9 * bytes[k])
                    left[k] = 0;
            }
        t = next;
    }
    free(left);
    free(rate);
    free(state);
    free(per);
    return ok ? 0 : -1;
}

/* min / max of v[f] over the flows with lane[f] >= from; NAN, NAN if none. */
static void span(const double *v, const size_t *lane, size_t F, size_t from, double *lo,
                 double *hi)
{
    *lo = *hi = NAN;
    for (size_t f = 0; f < F; f++)
        if (lane[f] >= from) {
            if (!(v[f] >= *lo))
                *lo = v[f];
            if (!(v[f] <= *hi))
                *hi = v[f];
        }
}

double mpilab_multilane_sim_sites(const mpilab_multilane_params_t *m, int op, size_t n0,
                                  const size_t *nrem, size_t nsr, size_t P, double M,
                                  double phases[MPILAB_ML_NPHASES])
{
    if (phases)
        for (int i = 0; i < MPILAB_ML_NPHASES; i++)
            phases[i] = NAN;
    if (!params_ok(m, M) || !nrem || nsr == 0 || P == 0 || P > n0 || P > m->nb ||
        (op != MPILAB_ML_SCATTER && op != MPILAB_ML_GATHER))
        return NAN;
    for (size_t s = 0; s < nsr; s++)
        if (P > nrem[s])
            return NAN;
    /* flow f = k * nsr + s: lane k of remote site s, c[f] blocks (the implementation's runs:
     * floor((k+1) n_s / P) - floor(k n_s / P)) */
    const size_t F = P * nsr;
    double *c = malloc(F * sizeof *c), *start = calloc(F, sizeof *start);
    double *bytes = malloc(F * sizeof *bytes), *end = malloc(F * sizeof *end);
    size_t *owner = malloc(F * sizeof *owner), *lane = malloc(F * sizeof *lane);
    size_t *order = malloc(F * sizeof *order);
    double T = NAN;
    if (!c || !start || !bytes || !end || !owner || !lane || !order)
        goto out;
    for (size_t k = 0; k < P; k++)
        for (size_t s = 0; s < nsr; s++) {
            const size_t f = k * nsr + s;
            c[f] = (double)((k + 1) * nrem[s] / P - k * nrem[s] / P);
            bytes[f] = c[f] * M;
            owner[f] = k;
            lane[f] = k;
        }
    const double blk = m->l + M / m->b_lan; /* one block over the LAN */
    double fin = 0;
    if (op == MPILAB_ML_SCATTER) {
        /* (1) prepare, sender by sender and site by site; the root's lanes start after it */
        double t = 0;
        for (size_t f = nsr; f < F; f++) {
            t += m->l + c[f] * M / m->b_lan;
            start[f] = t;
        }
        for (size_t s = 0; s < nsr; s++)
            start[s] = t;
        if (wan_fluid(m, F, owner, P, start, bytes, end))
            goto out;
        for (size_t f = 0; f < F; f++)
            end[f] += m->L; /* arrival at the receiver */
        /* (3) the root's own site after the prepare; receivers forward after arrival */
        fin = t + (double)(n0 - 1) * blk;
        for (size_t f = 0; f < F; f++)
            fin = fmax(fin, end[f] + (c[f] - 1) * blk);
        if (phases) {
            span(start, lane, F, 0, &phases[0], &phases[1]);
            span(end, lane, F, 0, &phases[2], &phases[3]);
        }
    } else {
        /* (3 reversed) each receiver collects its run: one incast into its LAN link */
        for (size_t f = 0; f < F; f++)
            start[f] = c[f] > 1 ? m->l + (c[f] - 1) * M / m->b_lan : 0;
        if (wan_fluid(m, F, owner, P, start, bytes, end))
            goto out;
        for (size_t f = 0; f < F; f++)
            end[f] += m->L; /* arrival at the sender (the root for lane 0) */
        /* (1 reversed) the root's LAN link: its own site's blocks first, then the senders'
         * relays in order of arrival; the root's own lanes land directly */
        double busy = n0 > 1 ? m->l + (double)(n0 - 1) * M / m->b_lan : 0;
        size_t no = 0;
        for (size_t f = 0; f < F; f++) {
            if (lane[f] == 0) {
                fin = fmax(fin, end[f]);
                continue;
            }
            size_t j = no++; /* insertion by arrival, F is small */
            for (; j > 0 && end[order[j - 1]] > end[f]; j--)
                order[j] = order[j - 1];
            order[j] = f;
        }
        for (size_t i = 0; i < no; i++) {
            const size_t f = order[i];
            busy = fmax(busy, end[f]) + m->l + c[f] * M / m->b_lan;
        }
        fin = fmax(fin, busy);
        if (phases) { /* the root's own lanes' arrival is not observable: lanes k >= 1 */
            span(start, lane, F, 0, &phases[0], &phases[1]);
            span(end, lane, F, 1, &phases[2], &phases[3]);
        }
    }
    T = fin + m->alpha;
out:
    free(c);
    free(start);
    free(bytes);
    free(end);
    free(owner);
    free(lane);
    free(order);
    return T;
}

double mpilab_multilane_sim_time(const mpilab_multilane_params_t *m, int op, size_t n0,
                                 size_t n1, size_t P, double M)
{
    return mpilab_multilane_sim_sites(m, op, n0, &n1, 1, P, M, NULL);
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

void mpilab_multilane_alpha_estimate(const double *t, int n, double base, mpilab_param_t *out)
{
    double sum = 0, ss = 0;
    for (int r = 0; r < n; r++)
        sum += t[r];
    const double mean = n > 0 ? sum / n : NAN;
    for (int r = 0; r < n; r++)
        ss += (t[r] - mean) * (t[r] - mean);
    out->raw = mean - base;
    out->flags = 0;
    out->lo = out->hi = NAN;
    if (n >= 2) {
        const double half = gsl_cdf_tdist_Pinv(0.975, n - 1) * sqrt(ss / (n - 1) / n);
        out->lo = out->raw - half;
        out->hi = out->raw + half;
    } else {
        out->flags |= MPILAB_PARAM_NO_CI;
    }
    if (isfinite(out->raw) && out->raw > 0) {
        out->value = out->raw;
    } else {
        out->value = 0;
        out->flags |= MPILAB_PARAM_CLAMPED;
    }
}
