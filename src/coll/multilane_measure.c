/* Measuring the multilane model's inputs: l, L, b_LAN, b(P) for P = 1..P_sup and alpha
 * (include/mpilab/multilane.h, mpilab_multilane_measure). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "coll/multilane_internal.h"
#include "mpilab/coll.h"

#define TAG MPILAB_COLL_TAG

/* The smallest of n values: on a shared machine interference only adds time. */
static double minimum(const double *v, int n)
{
    double m = v[0];
    for (int i = 1; i < n; i++)
        m = v[i] < m ? v[i] : m;
    return m;
}

/* npairs pairs (src[k] -> dst[k]) each send `bytes` at once (after a barrier), the
 * receiver acknowledges with one byte; per repetition the slowest pair's time (measured at
 * its sender); the minimum over reps, on every rank.  bytes == 0: 1-byte ping-pong,
 * returning half the round trip. */
static int time_pairs(MPI_Comm comm, const int *src, const int *dst, int npairs, size_t bytes,
                      int reps, char *buf, double *out)
{
    int rank;
    MPI_Comm_rank(comm, &rank);
    int role = -1, peer = -1;
    for (int k = 0; k < npairs; k++) {
        if (src[k] == rank) {
            role = 0;
            peer = dst[k];
        } else if (dst[k] == rank) {
            role = 1;
            peer = src[k];
        }
    }
    double *t = calloc((size_t)reps, sizeof *t);
    if (!t)
        return -1;
    const int n = bytes ? (int)bytes : 1;
    char ack = 0;
    int rc = MPI_SUCCESS;
    for (int r = -1; r < reps && rc == MPI_SUCCESS; r++) { /* r = -1: warm-up */
        mpilab_ml_barrier(comm);
        double mine = 0;
        if (role == 0) {
            double t0 = MPI_Wtime();
            rc = mpilab_ml_send(buf, n, MPI_BYTE, peer, TAG, comm);
            if (rc == MPI_SUCCESS)
                rc = mpilab_ml_recv(&ack, 1, MPI_BYTE, peer, TAG, comm, MPI_STATUS_IGNORE);
            mine = MPI_Wtime() - t0;
            if (!bytes)
                mine /= 2;
        } else if (role == 1) {
            rc = mpilab_ml_recv(buf, n, MPI_BYTE, peer, TAG, comm, MPI_STATUS_IGNORE);
            if (rc == MPI_SUCCESS)
                rc = mpilab_ml_send(&ack, 1, MPI_BYTE, peer, TAG, comm);
        }
        double worst = 0;
        int rc2 = mpilab_ml_allreduce(&mine, &worst, 1, MPI_DOUBLE, MPI_MAX, comm);
        if (rc == MPI_SUCCESS)
            rc = rc2;
        if (r >= 0)
            t[r] = worst;
    }
    if (rc == MPI_SUCCESS)
        *out = minimum(t, reps);
    free(t);
    return rc == MPI_SUCCESS ? 0 : -1;
}

void mpilab_multilane_measured_free(mpilab_multilane_measured_t *m)
{
    if (!m)
        return;
    free(m->b);
    m->b = NULL;
    m->params.b = NULL;
    m->params.nb = 0;
}

int mpilab_multilane_measure(MPI_Comm comm, const mpilab_grid_t *g, int root, size_t bytes,
                             int reps, mpilab_multilane_measured_t *out)
{
    int p;
    MPI_Comm_size(comm, &p);
    if (!g || !out || g->nranks != p || root < 0 || root >= p)
        return mpilab_ml_fail(-1, "measure: need a grid of the communicator's size and a root");
    if (bytes < 2 || bytes > (size_t)1 << 30 || reps < 1)
        return mpilab_ml_fail(-1, "measure: need 2 <= bytes <= 1 GiB and reps >= 1");
    memset(out, 0, sizeof *out);
    const int s0 = g->site[root];
    int s1 = -1;
    for (int s = 0; s < g->nsites && s1 < 0; s++)
        if (s != s0)
            s1 = s;
    const int n0 = mpilab_grid_site_size(g, s0), n1 = mpilab_grid_site_size(g, s1);
    const int pmax = n0 < n1 ? n0 : n1;
    /* senders: root, then its site's lowest other ranks; receivers: site 1 in order */
    int *src = malloc((size_t)pmax * sizeof *src), *dst = malloc((size_t)pmax * sizeof *dst);
    double *b = calloc((size_t)pmax, sizeof *b);
    char *buf = malloc(bytes);
    int ret = -1;
    if (!src || !dst || !b || !buf) {
        mpilab_ml_fail(-1, "measure: out of memory");
        goto out;
    }
    memset(buf, 0x3c, bytes);
    src[0] = root;
    for (int i = 0, k = 1; i < n0 && k < pmax; i++) {
        int r = mpilab_grid_site_rank(g, s0, i);
        if (r != root)
            src[k++] = r;
    }
    for (int k = 0; k < pmax; k++)
        dst[k] = mpilab_grid_site_rank(g, s1, k);
    /* a LAN pair: the root and a site-mate, else two ranks of site 1 */
    int lan[2] = {-1, -1};
    if (n0 >= 2) {
        lan[0] = root;
        lan[1] = mpilab_grid_site_rank(g, s0, mpilab_grid_site_rank(g, s0, 0) == root ? 1 : 0);
    } else if (n1 >= 2) {
        lan[0] = mpilab_grid_site_rank(g, s1, 0);
        lan[1] = mpilab_grid_site_rank(g, s1, 1);
    } else {
        mpilab_ml_fail(-1, "measure: no two ranks share a site: b_LAN cannot be measured");
        goto out;
    }
    const size_t m2 = bytes, m1 = bytes / 2;
    double l = 0, L = 0, t1 = 0, t2 = 0;
    if (time_pairs(comm, &lan[0], &lan[1], 1, 0, reps, buf, &l) ||
        time_pairs(comm, &src[0], &dst[0], 1, 0, reps, buf, &L) ||
        time_pairs(comm, &lan[0], &lan[1], 1, m1, reps, buf, &t1) ||
        time_pairs(comm, &lan[0], &lan[1], 1, m2, reps, buf, &t2)) {
        mpilab_ml_fail(-1, "measure: MPI error while timing");
        goto out;
    }
    if (!(t2 > t1)) {
        mpilab_ml_fail(-1, "measure: b_LAN: %zu bytes took no longer than %zu (%.3g s vs %.3g s): "
                           "too noisy; use larger messages", m2, m1, t2, t1);
        goto out;
    }
    const double b_lan = (double)(m2 - m1) / (t2 - t1);
    double wan_t1 = 0;
    for (int j = 1; j <= pmax; j++) {
        if (time_pairs(comm, src, dst, j, m1, reps, buf, &t1) ||
            time_pairs(comm, src, dst, j, m2, reps, buf, &t2)) {
            mpilab_ml_fail(-1, "measure: MPI error while timing");
            goto out;
        }
        if (!(t2 > t1)) {
            mpilab_ml_fail(-1, "measure: b(%d): %zu bytes took no longer than %zu (%.3g s vs "
                               "%.3g s): too noisy; use larger messages", j, m2, m1, t2, t1);
            goto out;
        }
        b[j - 1] = (double)(m2 - m1) / (t2 - t1);
        if (j == 1)
            wan_t1 = t1;
    }
    /* one minimum, no interval; an estimate <= 0 is reported as 0 and flagged */
    out->alpha_q.raw = wan_t1 - (double)m1 / b[0] - 2 * L;
    out->alpha_q.lo = out->alpha_q.hi = NAN;
    out->alpha_q.flags = MPILAB_PARAM_NO_CI;
    out->alpha_q.value = out->alpha_q.raw > 0 ? out->alpha_q.raw : 0;
    if (!(out->alpha_q.raw > 0))
        out->alpha_q.flags |= MPILAB_PARAM_CLAMPED;
    out->params.L = L;
    out->params.l = l;
    out->params.alpha = out->alpha_q.value;
    out->params.b_lan = b_lan;
    out->params.b = b;
    out->params.nb = (size_t)pmax;
    out->b = b;
    b = NULL;
    out->n0 = (size_t)n0;
    out->n1 = (size_t)n1;
    out->bytes = bytes;
    out->reps = reps;
    ret = 0;
out:
    free(src);
    free(dst);
    free(b);
    free(buf);
    return ret;
}
