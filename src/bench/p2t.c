/* Point-to-two experiments i -> j,k and the LMO measurement (include/mpilab/lmo.h). Built
 * as a user of the library would build it: only public headers (the stopping rule of
 * mpilab/stats.h, the clock of mpilab/wtime.h, the all-pairs round trips of mpilab/p2p.h),
 * the way the MPIBlib authors built theirs on top of MPIBlib. */
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "mpilab/lmo.h"
#include "mpilab/wait.h"
#include "mpilab/wtime.h"

#define TAG_GO 7311
#define TAG_BACK 7312
#define TAG_STOP 7313
#define TAG_STATS 7314
#define TAG_SAMPLES 7315
#define TAG_RTX 7316
#define TAG_RTY 7317
#define CAP0 256

void mpilab_p2t_result_free(mpilab_p2t_result_t *r)
{
    free(r->samples);
    free(r->rt_x);
    free(r->rt_y);
    r->samples = r->rt_x = r->rt_y = NULL;
}

/* One timed (or untimed) repetition on the root: point-to-two (root -> x, y) or, with y < 0,
 * the round trip root -> x, with the same calls (non-blocking sends and receives, one wait),
 * so that the two experiments differ only in the number of messages. */
static int p2t_once(MPI_Comm comm, int x, int y, char *out, size_t bytes, int tag, const mpilab_wait_t *w)
{
    MPI_Request rq[4];
    MPI_Status st[4]; /* not MPI_STATUSES_IGNORE: MPICH's (MPI_Status *)1 trips gcc's
                       * -Wstringop-overflow on a constant-count call */
    int n = (int)bytes, two = y >= 0;
    int rc = MPI_Isend(out, n, MPI_BYTE, x, tag, comm, &rq[0]);
    if (rc == MPI_SUCCESS && two)
        rc = MPI_Isend(out, n, MPI_BYTE, y, tag, comm, &rq[2]);
    if (rc == MPI_SUCCESS)
        rc = MPI_Irecv(NULL, 0, MPI_BYTE, x, TAG_BACK, comm, &rq[1]);
    if (rc == MPI_SUCCESS && two)
        rc = MPI_Irecv(NULL, 0, MPI_BYTE, y, TAG_BACK, comm, &rq[3]);
    if (rc == MPI_SUCCESS)
        rc = mpilab_wait_all(two ? 4 : 2, rq, st, w, 0);
    return rc;
}

/* The root's arrays from cap to the next capacity (mpilab_stats_capacity); 1 when that failed
 * (what was there stays valid). */
static int grow(mpilab_p2t_result_t *res, unsigned char **valid, size_t *cap, size_t n, size_t max_reps, int paired)
{
    size_t c2 = mpilab_stats_capacity(*cap, n + 1, max_reps);
    double **arr[3] = {&res->samples, &res->rt_x, &res->rt_y};
    for (int k = 0; k < (paired ? 3 : 1); k++) {
        double *a = realloc(*arr[k], c2 * sizeof *a);
        if (!a)
            return 1;
        *arr[k] = a;
    }
    unsigned char *v2 = realloc(*valid, c2);
    if (!v2)
        return 1;
    *valid = v2;
    *cap = c2;
    return 0;
}

/* One repetition of experiment (x, y) on the root, timed into *q; paired (y >= 0): the round
 * trips to x and to y too, into *a and *b (unused, may be NULL, when not paired), the three in
 * an order that turns with k (so that none is always first after the idle gap between
 * repetitions). */
static int p2t_rep(MPI_Comm comm, int x, int y, char *buf, size_t bytes, const mpilab_wait_t *w, int paired,
                   size_t k, double *q, double *a, double *b)
{
    int rc = MPI_SUCCESS;
    for (size_t s = 0; s < (paired ? 3u : 1u) && rc == MPI_SUCCESS; s++) {
        size_t which = paired ? (s + k) % 3 : 0; /* 0 the experiment, 1 x alone, 2 y alone */
        double t0 = mpilab_wtime();
        rc = p2t_once(comm, which == 2 ? y : x, which == 0 ? y : -1, buf, bytes, TAG_GO, w);
        double dt = mpilab_wtime() - t0;
        *(which == 0 ? q : which == 1 ? a : b) = dt;
    }
    return rc;
}

/* Experiment (root, x, y) on the member `me`; the root keeps the samples in res (paired:
 * with the round trips beside each repetition, res->rt_x and res->rt_y). */
static int p2t_loop(MPI_Comm comm, int me, int root, int x, int y, char *buf, size_t bytes,
                    const mpilab_precision_t *prec, size_t warmup, const mpilab_wait_t *w, int paired,
                    mpilab_p2t_result_t *res)
{
    int rc = MPI_SUCCESS;
    if (me != root) { /* a receiver: answer every message with an empty one until told to stop */
        for (;;) {
            MPI_Status st;
            rc = mpilab_wait_recv(buf, (int)bytes, MPI_BYTE, root, MPI_ANY_TAG, comm, &st, w, 0);
            if (rc != MPI_SUCCESS || st.MPI_TAG == TAG_STOP)
                return rc;
            rc = mpilab_wait_send(NULL, 0, MPI_BYTE, root, TAG_BACK, comm, w, 0);
            if (rc != MPI_SUCCESS)
                return rc;
        }
    }
    for (size_t u = 0; u < warmup && rc == MPI_SUCCESS; u++)
        rc = p2t_once(comm, x, y, buf, bytes, TAG_GO, w);
    paired = paired && y >= 0;
    size_t n = 0, cap = prec->max_reps < CAP0 ? prec->max_reps : CAP0;
    unsigned char *valid = malloc(cap);
    res->samples = malloc(cap * sizeof *res->samples);
    if (paired) {
        res->rt_x = malloc(cap * sizeof *res->rt_x);
        res->rt_y = malloc(cap * sizeof *res->rt_y);
    }
    int stop = rc != MPI_SUCCESS || !valid || !res->samples || (paired && (!res->rt_x || !res->rt_y));
    if (stop && rc == MPI_SUCCESS)
        rc = MPI_ERR_NO_MEM;
    while (!stop) {
        rc = p2t_rep(comm, x, y, buf, bytes, w, paired, n, &res->samples[n], paired ? &res->rt_x[n] : NULL,
                     paired ? &res->rt_y[n] : NULL);
        valid[n++] = 1;
        /* paired: until the round trips beside it have their precision too */
        stop = rc != MPI_SUCCESS || (mpilab_stats_should_stop(res->samples, valid, n, prec) &&
                                     (!paired || (mpilab_stats_should_stop(res->rt_x, valid, n, prec) &&
                                                  mpilab_stats_should_stop(res->rt_y, valid, n, prec))));
        if (!stop && n == cap) /* grow by doubling, up to max_reps */
            stop = grow(res, &valid, &cap, n, prec->max_reps, paired);
    }
    int r1 = mpilab_wait_send(NULL, 0, MPI_BYTE, x, TAG_STOP, comm, w, 0);
    int r2 = y >= 0 ? mpilab_wait_send(NULL, 0, MPI_BYTE, y, TAG_STOP, comm, w, 0) : MPI_SUCCESS;
    rc = rc != MPI_SUCCESS ? rc : r1 != MPI_SUCCESS ? r1 : r2;
    mpilab_stats_compute(res->samples, valid, n, prec->cl, prec->eps, &res->stats);
    free(valid);
    return rc;
}

/* Rank 0 receives n samples of tag from root into a new *out (NULL: none); without room it
 * still receives (into a scratch slot) so that the root is released. */
static int collect_array(MPI_Comm comm, int root, size_t n, int tag, double **out, const mpilab_wait_t *w)
{
    MPI_Status st;
    *out = n <= INT_MAX ? malloc(n * sizeof **out) : NULL;
    double scratch;
    int rc = mpilab_wait_recv(*out ? *out : &scratch, *out ? (int)n : 1, MPI_DOUBLE, root, tag, comm, &st, w, 1);
    return !*out && rc == MPI_SUCCESS ? MPI_ERR_NO_MEM : rc;
}

/* Rank 0 receives the result of experiment res (root != 0) and keeps its samples (paired: the
 * round trips beside them too). */
static int collect(MPI_Comm comm, mpilab_p2t_result_t *res, int paired, const mpilab_wait_t *w)
{
    MPI_Status st;
    int rc = mpilab_wait_recv(&res->stats, (int)sizeof res->stats, MPI_BYTE, res->root, TAG_STATS, comm, &st, w, 1);
    size_t n = rc == MPI_SUCCESS ? res->stats.reps : 0;
    if (n > 0)
        rc = collect_array(comm, res->root, n, TAG_SAMPLES, &res->samples, w);
    if (n > 0 && paired && res->y >= 0) {
        int r1 = collect_array(comm, res->root, n, TAG_RTX, &res->rt_x, w);
        int r2 = collect_array(comm, res->root, n, TAG_RTY, &res->rt_y, w);
        rc = rc != MPI_SUCCESS ? rc : r1 != MPI_SUCCESS ? r1 : r2;
    }
    return rc;
}

/* Roles of experiment e of group g: a triplet (3 experiments, mpilab_triplet_roles) or, with
 * g->c < 0, a pair (one round trip, g->a -> g->b). */
static void roles(const mpilab_triplet_t *g, int e, int *root, int *x, int *y)
{
    if (g->c < 0) {
        *root = g->a;
        *x = g->b;
        *y = -1;
    } else {
        mpilab_triplet_roles(g, e, root, x, y);
    }
}

/* The experiments of group k on rank me (a member), results sent to rank 0. The sends are
 * non-blocking and completed after the group's last experiment: rank 0 receives only after
 * its own part in the group, in which this rank may still serve (a blocking send of more
 * samples than the eager limit deadlocked three ranks at 0 bytes). */
static int run_group(MPI_Comm comm, int me, const mpilab_triplet_t *g, size_t k, int per, size_t round,
                     char *buf, size_t bytes, const mpilab_precision_t *prec, size_t warmup, const mpilab_wait_t *w,
                     int paired, mpilab_p2t_result_t *res)
{
    enum { MAX_PER = 3 };
    mpilab_p2t_result_t sent[MAX_PER];
    MPI_Request rq[4 * MAX_PER];
    MPI_Status st[4 * MAX_PER];
    int rc = per <= MAX_PER ? MPI_SUCCESS : MPI_ERR_ARG, nsent = 0, nrq = 0;
    for (int e = 0; e < per && rc == MPI_SUCCESS; e++) {
        int root, x, y;
        roles(g, e, &root, &x, &y);
        mpilab_p2t_result_t mine = {.root = root, .x = x, .y = y, .bytes = bytes, .round = round};
        rc = p2t_loop(comm, me, root, x, y, buf, bytes, prec, warmup, w, paired, &mine);
        if (me == root && me == 0) {
            res[(size_t)per * k + (size_t)e] = mine;
            continue;
        }
        if (me != root) {
            mpilab_p2t_result_free(&mine);
            continue;
        }
        mpilab_p2t_result_t *m = &sent[nsent++];
        *m = mine;
        int r1 = MPI_Isend(&m->stats, (int)sizeof m->stats, MPI_BYTE, 0, TAG_STATS, comm, &rq[nrq]);
        nrq += r1 == MPI_SUCCESS;
        double *arr[3] = {m->samples, m->rt_x, m->rt_y};
        const int tags[3] = {TAG_SAMPLES, TAG_RTX, TAG_RTY};
        for (int a = 0; a < (m->rt_x ? 3 : 1) && r1 == MPI_SUCCESS && m->stats.reps > 0; a++) {
            r1 = MPI_Isend(arr[a], (int)m->stats.reps, MPI_DOUBLE, 0, tags[a], comm, &rq[nrq]);
            nrq += r1 == MPI_SUCCESS;
        }
        rc = rc == MPI_SUCCESS ? r1 : rc;
    }
    int rw = nrq > 0 ? mpilab_wait_all(nrq, rq, st, w, 1) : MPI_SUCCESS;
    for (int i = 0; i < nsent; i++)
        mpilab_p2t_result_free(&sent[i]);
    return rc == MPI_SUCCESS ? rw : rc;
}

static int member(const mpilab_triplet_t *g, int me)
{
    return me == g->a || me == g->b || (g->c >= 0 && me == g->c);
}

/* Every group's experiments in rounds of disjoint groups (order/starts), or one group at a
 * time (seq); a barrier after each round; rank 0 collects each round's results. */
static int run_rounds(MPI_Comm comm, const mpilab_triplet_t *g, size_t ng, int per, const size_t *order,
                      const size_t *starts, size_t rounds, int seq, char *buf, size_t bytes,
                      const mpilab_precision_t *prec, size_t warmup, const mpilab_wait_t *w, int paired,
                      mpilab_p2t_result_t *res)
{
    int me, rc = MPI_SUCCESS;
    MPI_Comm_rank(comm, &me);
    size_t nr = seq ? ng : rounds;
    for (size_t r = 0; r < nr && rc == MPI_SUCCESS; r++) {
        size_t a = seq ? r : starts[r], b = seq ? r + 1 : starts[r + 1];
        for (size_t q = a; q < b && rc == MPI_SUCCESS; q++) {
            size_t k = seq ? q : order[q];
            if (member(&g[k], me))
                rc = run_group(comm, me, &g[k], k, per, r, buf, bytes, prec, warmup, w, paired, res);
        }
        for (size_t q = a; me == 0 && q < b && rc == MPI_SUCCESS; q++) {
            size_t k = seq ? q : order[q];
            for (int e = 0; e < per && rc == MPI_SUCCESS; e++) {
                mpilab_p2t_result_t *x = &res[(size_t)per * k + (size_t)e];
                int root, rx, ry;
                roles(&g[k], e, &root, &rx, &ry);
                if (root == 0)
                    continue;
                *x = (mpilab_p2t_result_t){.root = root, .x = rx, .y = ry, .bytes = bytes, .round = r};
                rc = collect(comm, x, paired, w);
            }
        }
        int r2 = mpilab_wait_barrier(comm, w);
        rc = rc == MPI_SUCCESS ? r2 : rc;
    }
    int bad = rc != MPI_SUCCESS, anybad = 0;
    MPI_Allreduce(&bad, &anybad, 1, MPI_INT, MPI_LOR, comm);
    return anybad && rc == MPI_SUCCESS ? MPI_ERR_OTHER : rc;
}

/* Collective: groups g[0..ng) (triplets, or pairs with c = -1) with their rounds. */
static int measure_groups(MPI_Comm comm_in, size_t bytes, mpilab_p2p_mode_t mode, const mpilab_precision_t *prec,
                          size_t warmup, const mpilab_wait_t *w, const mpilab_triplet_t *g, size_t ng, int per,
                          size_t *order, size_t *starts, size_t rounds, int paired, mpilab_p2t_result_t *res)
{
    int ok = rounds > 0 || ng == 0, all = 0;
    char *buf = malloc(bytes ? bytes : 1);
    ok = ok && buf;
    MPI_Allreduce(&ok, &all, 1, MPI_INT, MPI_LAND, comm_in);
    if (!all) {
        free(buf);
        return buf ? MPI_ERR_ARG : MPI_ERR_NO_MEM;
    }
    memset(buf, 0x5A, bytes ? bytes : 1);
    mpilab_wait_prepare(w);
    MPI_Comm comm;
    int rc = MPI_Comm_dup(comm_in, &comm);
    if (rc == MPI_SUCCESS) {
        rc = run_rounds(comm, g, ng, per, order, starts, rounds, mode == MPILAB_P2P_SEQUENTIAL, buf, bytes, prec,
                        warmup, w, paired, res);
        MPI_Comm_free(&comm);
    }
    free(buf);
    return rc;
}

/* mpilab_p2t_measure, paired or not (mpilab_p2t_result_t). */
static int p2t_measure(MPI_Comm comm, size_t bytes, mpilab_p2p_mode_t mode, const mpilab_precision_t *prec,
                       size_t warmup, const mpilab_wait_t *wait, const mpilab_triplet_t *trip, size_t ntrip,
                       int paired, mpilab_p2t_result_t *res)
{
    int n;
    MPI_Comm_size(comm, &n);
    if (n < 3 || bytes > INT_MAX || !prec || prec->max_reps < 1 || !trip)
        return MPI_ERR_ARG;
    size_t *order = malloc((ntrip + 1) * sizeof *order), *starts = malloc((ntrip + 2) * sizeof *starts);
    size_t rounds = order && starts ? mpilab_lmo_triplet_rounds(n, trip, ntrip, order, starts) : 0;
    int rc = measure_groups(comm, bytes, mode, prec, warmup, wait, trip, ntrip, 3, order, starts, rounds, paired,
                            res);
    free(order);
    free(starts);
    return rc;
}

int mpilab_p2t_measure(MPI_Comm comm, size_t bytes, mpilab_p2p_mode_t mode, const mpilab_precision_t *prec,
                       size_t warmup, const mpilab_wait_t *wait, const mpilab_triplet_t *trip, size_t ntrip,
                       mpilab_p2t_result_t *res)
{
    return p2t_measure(comm, bytes, mode, prec, warmup, wait, trip, ntrip, 0, res);
}

int mpilab_lmo_rt_measure(MPI_Comm comm, size_t bytes, mpilab_p2p_mode_t mode, const mpilab_precision_t *prec,
                          size_t warmup, const mpilab_wait_t *wait, mpilab_p2t_result_t *res)
{
    int n;
    MPI_Comm_size(comm, &n);
    if (n < 2 || bytes > INT_MAX || !prec || prec->max_reps < 1)
        return MPI_ERR_ARG;
    size_t np = (size_t)n * (size_t)(n - 1) / 2;
    mpilab_triplet_t *g = malloc(np * sizeof *g);
    mpilab_pair_t *sched = malloc(np * sizeof *sched);
    size_t *order = malloc(np * sizeof *order), *starts = malloc(((size_t)n + 2) * sizeof *starts), rounds = 0;
    if (g && sched && order && starts) {
        for (int i = 0, k = 0; i < n; i++)
            for (int j = i + 1; j < n; j++, k++)
                g[k] = (mpilab_triplet_t){i, j, -1};
        rounds = mpilab_p2p_schedule(n, sched, starts); /* the circle method's rounds */
        for (size_t k = 0; k < np; k++)
            order[k] = (size_t)sched[k].i * (size_t)(2 * n - sched[k].i - 1) / 2 + (size_t)(sched[k].j - sched[k].i - 1);
    }
    int rc = measure_groups(comm, bytes, mode, prec, warmup, wait, g, np, 1, order, starts, rounds, 0, res);
    free(g);
    free(sched);
    free(order);
    free(starts);
    return rc;
}

void mpilab_lmo_measured_free(mpilab_lmo_measured_t *m)
{
    size_t np = m->p > 1 ? (size_t)m->p * (size_t)(m->p - 1) / 2 : 0;
    for (size_t q = 0; q < np; q++) {
        if (m->rt_0)
            mpilab_p2t_result_free(&m->rt_0[q]);
        if (m->rt_m)
            mpilab_p2t_result_free(&m->rt_m[q]);
    }
    for (size_t e = 0; e < 3 * m->ntrip; e++) {
        if (m->p2t_0)
            mpilab_p2t_result_free(&m->p2t_0[e]);
        if (m->p2t_m)
            mpilab_p2t_result_free(&m->p2t_m[e]);
    }
    free(m->rt_0);
    free(m->rt_m);
    free(m->p2t_0);
    free(m->p2t_m);
    free(m->trip);
    memset(m, 0, sizeof *m);
}

int mpilab_lmo_measure(MPI_Comm comm, size_t bytes, mpilab_p2p_mode_t mode, const mpilab_precision_t *prec,
                       const mpilab_wait_t *wait, mpilab_lmo_measured_t *m)
{
    memset(m, 0, sizeof *m);
    int n;
    MPI_Comm_size(comm, &n);
    if (n < 3 || bytes == 0 || bytes > INT_MAX)
        return MPI_ERR_ARG;
    m->p = n;
    m->bytes = bytes;
    m->mode = mode;
    if (wait)
        m->wait = *wait;
    else
        mpilab_wait_default(&m->wait);
    size_t np = (size_t)n * (size_t)(n - 1) / 2;
    m->ntrip = mpilab_lmo_ntriplets(n);
    m->trip = malloc(m->ntrip * sizeof *m->trip);
    m->rt_0 = calloc(np, sizeof *m->rt_0);
    m->rt_m = calloc(np, sizeof *m->rt_m);
    m->p2t_0 = calloc(3 * m->ntrip, sizeof *m->p2t_0);
    m->p2t_m = calloc(3 * m->ntrip, sizeof *m->p2t_m);
    int ok = m->trip && m->rt_0 && m->rt_m && m->p2t_0 && m->p2t_m, all = 0;
    MPI_Allreduce(&ok, &all, 1, MPI_INT, MPI_LAND, comm);
    if (!all)
        return MPI_ERR_NO_MEM;
    mpilab_lmo_triplets(n, m->trip);
    size_t *order = malloc(m->ntrip * sizeof *order), *st = malloc((m->ntrip + 1) * sizeof *st);
    m->rounds = order && st ? mpilab_lmo_triplet_rounds(n, m->trip, m->ntrip, order, st) : 0;
    free(order);
    free(st);
    /* Each size's round trips right before its point-to-two experiments: C_i is the
     * difference of a p2t_0 and an rt_0 median, so a level that moves during the run (the
     * testbed's delay lines, the machine) is less of it when the two are measured together;
     * the M-byte round trips, the longest part, no longer come between them. */
    double t0 = MPI_Wtime();
    int rc = mpilab_lmo_rt_measure(comm, 0, mode, prec, MPILAB_P2P_WARMUP, wait, m->rt_0);
    if (rc == MPI_SUCCESS)
        rc = p2t_measure(comm, 0, mode, prec, MPILAB_P2P_WARMUP, wait, m->trip, m->ntrip, 1, m->p2t_0);
    if (rc == MPI_SUCCESS)
        rc = mpilab_lmo_rt_measure(comm, bytes, mode, prec, MPILAB_P2P_WARMUP, wait, m->rt_m);
    if (rc == MPI_SUCCESS)
        rc = mpilab_p2t_measure(comm, bytes, mode, prec, MPILAB_P2P_WARMUP, wait, m->trip, m->ntrip, m->p2t_m);
    m->wall_s = MPI_Wtime() - t0;
    return rc;
}

int mpilab_lmo_input_from(const mpilab_lmo_measured_t *m, mpilab_lmo_input_t *in)
{
    memset(in, 0, sizeof *in);
    size_t np = (size_t)m->p * (size_t)(m->p - 1) / 2, ne = 3 * m->ntrip;
    mpilab_lmo_series_t *s = calloc(2 * np + 4 * ne + 1, sizeof *s);
    if (!s)
        return -1;
    int paired = ne > 0;
    for (size_t q = 0; q < np; q++) {
        s[q] = (mpilab_lmo_series_t){m->rt_0[q].samples, m->rt_0[q].stats.reps};
        s[np + q] = (mpilab_lmo_series_t){m->rt_m[q].samples, m->rt_m[q].stats.reps};
    }
    for (size_t e = 0; e < ne; e++) {
        s[2 * np + e] = (mpilab_lmo_series_t){m->p2t_0[e].samples, m->p2t_0[e].stats.reps};
        s[2 * np + ne + e] = (mpilab_lmo_series_t){m->p2t_m[e].samples, m->p2t_m[e].stats.reps};
        s[2 * np + 2 * ne + e] = (mpilab_lmo_series_t){m->p2t_0[e].rt_x, m->p2t_0[e].stats.reps};
        s[2 * np + 3 * ne + e] = (mpilab_lmo_series_t){m->p2t_0[e].rt_y, m->p2t_0[e].stats.reps};
        paired = paired && m->p2t_0[e].rt_x && m->p2t_0[e].rt_y;
    }
    *in = (mpilab_lmo_input_t){.p = m->p, .trip = m->trip, .ntrip = m->ntrip, .bytes = (double)m->bytes,
                               .rt_0 = s, .rt_m = s + np, .p2t_0 = s + 2 * np, .p2t_m = s + 2 * np + ne,
                               .p2t_rtx_0 = paired ? s + 2 * np + 2 * ne : NULL,
                               .p2t_rty_0 = paired ? s + 2 * np + 3 * ne : NULL};
    return 0;
}

void mpilab_lmo_input_free(mpilab_lmo_input_t *in)
{
    free((void *)in->rt_0);
    memset(in, 0, sizeof *in);
}
