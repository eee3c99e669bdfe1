/* LogGP measurement per pair (see include/mpilab/loggp.h; method in docs/models-loggp.md).
 * Sender i, receiver j. Per size, four repetition-controlled phases, each repetition
 * closed by a message back to the side that times it (isolation between repetitions):
 *   rtt: i sends m, j replies m;                          timed on i
 *   os:  i times MPI_Send(m), j acknowledges with 0 bytes; timed on i
 *   or:  j waits or_wait_factor round trips, then times MPI_Recv(m) of the message that
 *        has arrived meanwhile; j acknowledges with a continue flag; timed on j
 *   g:   in each repetition i sends one message, then `burst` back to back, and j
 *        replies m after the last of each; sample = (T_burst - T_1) / (burst - 1); on i
 * The side that times a phase decides when it stops (Student-t rule of mpilab_stats):
 * i ends its phases with an empty TAG_STOP message, j with a zero flag in its ack. */
#include "mpilab/loggp.h"
#include "payload.h"

#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <gsl/gsl_sort.h>
#include <gsl/gsl_statistics_double.h>

#define TAG_DATA 7301
#define TAG_REPLY 7302
#define TAG_STOP 7303
#define TAG_INFO 7304
#define TAG_ACK 7305
#define TAG_SINGLE 7306
#define TAG_RESULT 7307

/* the receiver's wait before the timed receive is at least this long (scheduling noise) */
#define OR_MIN_WAIT_S 20e-6
#define BURST_MAX 100000

void mpilab_loggp_opts_default(mpilab_loggp_opts_t *o)
{
    mpilab_precision_t p = MPILAB_PRECISION_DEFAULT;
    memset(o, 0, sizeof *o);
    p.max_reps = MPILAB_LOGGP_MAX_REPS;
    o->prec = p;
    o->mode = MPILAB_P2P_PARALLEL;
    o->burst = 16;
    o->or_wait_factor = 2.0;
}

int mpilab_loggp_check(const size_t *sizes, size_t nsizes, const mpilab_loggp_opts_t *o, char *err,
                       size_t errlen)
{
    if (!o || !sizes) {
        snprintf(err, errlen, "LogGP: missing options or sizes");
        return -1;
    }
    if (mpilab_precision_check(&o->prec, err, errlen) != 0)
        return -1;
    if (o->prec.min_reps < 2) {
        snprintf(err, errlen, "LogGP: min_reps %zu is below 2", o->prec.min_reps);
        return -1;
    }
    if (o->mode != MPILAB_P2P_PARALLEL && o->mode != MPILAB_P2P_SEQUENTIAL) {
        snprintf(err, errlen, "LogGP: unknown schedule mode %d", (int)o->mode);
        return -1;
    }
    if (o->burst < 2 || o->burst > BURST_MAX) {
        snprintf(err, errlen, "LogGP: burst %zu outside 2..%d", o->burst, BURST_MAX);
        return -1;
    }
    if (!(o->or_wait_factor > 1.0 && o->or_wait_factor <= 1000.0)) {
        snprintf(err, errlen, "LogGP: or_wait_factor %g outside (1,1000]", o->or_wait_factor);
        return -1;
    }
    if (nsizes < 1) {
        snprintf(err, errlen, "LogGP: no message sizes");
        return -1;
    }
    for (size_t k = 0; k < nsizes; k++) {
        if (sizes[k] > INT_MAX) {
            snprintf(err, errlen, "LogGP: size %zu exceeds the MPI count limit", sizes[k]);
            return -1;
        }
        if (k > 0 && sizes[k] <= sizes[k - 1]) {
            snprintf(err, errlen, "LogGP: sizes not strictly increasing (%zu after %zu)", sizes[k],
                     sizes[k - 1]);
            return -1;
        }
    }
    return 0;
}

static size_t pair_index(int n, int i, int j)
{
    return (size_t)i * (size_t)(2 * n - i - 1) / 2 + (size_t)(j - i - 1);
}

static double median_of(const double *s, size_t n)
{
    if (n == 0)
        return 0.0;
    double *c = malloc(n * sizeof *c);
    if (!c)
        return s[0];
    memcpy(c, s, n * sizeof *c);
    gsl_sort(c, 1, n);
    double m = gsl_stats_median_from_sorted_data(c, 1, n);
    free(c);
    return m;
}

/* Waits until MPI_Wtime() >= until: sleeps for the bulk of a long wait (all but the last
 * SPIN_KEEP_S of a wait longer than SPIN_FROM_S), spins the rest. Simulated (SMPI),
 * nanosleep advances the simulated clock by exactly what it is asked and every MPI_Wtime is
 * a simulation step of 10 ns (spinning 40 us would be 4000 steps per sample): the whole
 * wait is slept. */
#ifdef MPILAB_MPI_IS_SMPI
#define SPIN_FROM_S 0.0
#define SPIN_KEEP_S 0.0
#else
#define SPIN_FROM_S 200e-6
#define SPIN_KEEP_S 100e-6
#endif
static void wait_until(double until)
{
    for (;;) {
        double left = until - MPI_Wtime();
        if (left <= 0)
            return;
        if (left > SPIN_FROM_S) {
            double s = left - SPIN_KEEP_S;
            struct timespec ts = {(time_t)s, (long)((s - (double)(time_t)s) * 1e9)};
            nanosleep(&ts, NULL);
        }
    }
}

typedef struct ctx {
    MPI_Comm comm;
    int i, j, me;
    char *buf, *buf2;
    const mpilab_loggp_opts_t *o;
} ctx_t;

/* Finishes a series timed on this rank. */
static void finish(ctx_t *c, mpilab_loggp_series_t *s, size_t n)
{
    mpilab_stats_compute(s->samples, NULL, n, c->o->prec.cl, c->o->prec.eps, &s->stats);
}

static int should_stop(ctx_t *c, const mpilab_loggp_series_t *s, size_t n)
{
    return mpilab_stats_should_stop(s->samples, NULL, n, &c->o->prec);
}

/* i side of a phase that i times; kind: 0 rtt, 1 os, 3 g. */
static int sender_phase(ctx_t *c, int kind, int m, mpilab_loggp_series_t *s)
{
    int rc = MPI_SUCCESS;
    size_t n = 0;
    int stop = 0;
    const size_t burst = c->o->burst;
    while (!stop && rc == MPI_SUCCESS) {
        double t0 = MPI_Wtime(), t = 0;
        if (kind == 0) {
            rc = MPI_Send(c->buf, m, MPI_BYTE, c->j, TAG_DATA, c->comm);
            if (rc == MPI_SUCCESS)
                rc = MPI_Recv(c->buf2, m, MPI_BYTE, c->j, TAG_REPLY, c->comm, MPI_STATUS_IGNORE);
            t = MPI_Wtime() - t0;
        } else if (kind == 1) {
            rc = MPI_Send(c->buf, m, MPI_BYTE, c->j, TAG_DATA, c->comm);
            t = MPI_Wtime() - t0;
            if (rc == MPI_SUCCESS)
                rc = MPI_Recv(NULL, 0, MPI_BYTE, c->j, TAG_ACK, c->comm, MPI_STATUS_IGNORE);
        } else {
            /* a single message and a stream of `burst`, each closed by the reply, side by
             * side in one repetition: their difference is (burst - 1) gaps */
            double t1 = 0;
            for (int pass = 0; pass < 2 && rc == MPI_SUCCESS; pass++) {
                size_t count = pass == 0 ? 1 : burst;
                double ts = MPI_Wtime();
                rc = MPI_Send(c->buf, m, MPI_BYTE, c->j, pass == 0 ? TAG_SINGLE : TAG_DATA, c->comm);
                for (size_t b = 1; b < count && rc == MPI_SUCCESS; b++)
                    rc = MPI_Send(c->buf, m, MPI_BYTE, c->j, TAG_DATA, c->comm);
                if (rc == MPI_SUCCESS)
                    rc = MPI_Recv(c->buf2, m, MPI_BYTE, c->j, TAG_REPLY, c->comm, MPI_STATUS_IGNORE);
                if (pass == 0)
                    t1 = MPI_Wtime() - ts;
                else
                    t = (MPI_Wtime() - ts - t1) / (double)(burst - 1);
            }
            (void)t0;
        }
        s->samples[n++] = t;
        stop = rc != MPI_SUCCESS || should_stop(c, s, n);
    }
    int rc2 = MPI_Send(NULL, 0, MPI_BYTE, c->j, TAG_STOP, c->comm);
    finish(c, s, n);
    return rc != MPI_SUCCESS ? rc : rc2;
}

/* j side of a phase timed by i. */
static int receiver_serve(ctx_t *c, int kind, int m)
{
    int rc = MPI_SUCCESS;
    const size_t burst = c->o->burst;
    for (;;) {
        MPI_Status st;
        rc = MPI_Recv(c->buf, m, MPI_BYTE, c->i, MPI_ANY_TAG, c->comm, &st);
        if (rc != MPI_SUCCESS || st.MPI_TAG == TAG_STOP)
            return rc;
        if (kind == 0) {
            rc = MPI_Send(c->buf2, m, MPI_BYTE, c->i, TAG_REPLY, c->comm);
        } else if (kind == 1) {
            rc = MPI_Send(NULL, 0, MPI_BYTE, c->i, TAG_ACK, c->comm);
        } else {
            for (size_t b = 1; st.MPI_TAG != TAG_SINGLE && b < burst && rc == MPI_SUCCESS; b++)
                rc = MPI_Recv(c->buf, m, MPI_BYTE, c->i, TAG_DATA, c->comm, MPI_STATUS_IGNORE);
            if (rc == MPI_SUCCESS)
                rc = MPI_Send(c->buf2, m, MPI_BYTE, c->i, TAG_REPLY, c->comm);
        }
        if (rc != MPI_SUCCESS)
            return rc;
    }
}

/* The receive-overhead phase: j times, i feeds. */
static int or_phase(ctx_t *c, int m, double rtt_med, mpilab_loggp_series_t *s)
{
    int rc = MPI_SUCCESS;
    if (c->me == c->j) {
        double wait = c->o->or_wait_factor * rtt_med;
        if (wait < OR_MIN_WAIT_S)
            wait = OR_MIN_WAIT_S;
        size_t n = 0;
        int go = 1;
        while (go) {
            /* the message is sent after our previous ack (or the previous phase's STOP)
             * reached i: it arrives about one round trip after this point */
            wait_until(MPI_Wtime() + wait);
            double t0 = MPI_Wtime();
            rc = MPI_Recv(c->buf, m, MPI_BYTE, c->i, TAG_DATA, c->comm, MPI_STATUS_IGNORE);
            s->samples[n++] = MPI_Wtime() - t0;
            go = rc == MPI_SUCCESS && !should_stop(c, s, n);
            int flag = go;
            int rc2 = MPI_Send(&flag, 1, MPI_INT, c->i, TAG_ACK, c->comm);
            if (rc == MPI_SUCCESS)
                rc = rc2;
            if (rc != MPI_SUCCESS)
                go = 0;
        }
        finish(c, s, n);
    } else {
        int flag = 1;
        while (flag && rc == MPI_SUCCESS) {
            rc = MPI_Send(c->buf, m, MPI_BYTE, c->j, TAG_DATA, c->comm);
            if (rc == MPI_SUCCESS)
                rc = MPI_Recv(&flag, 1, MPI_INT, c->j, TAG_ACK, c->comm, MPI_STATUS_IGNORE);
        }
    }
    return rc;
}

/* All sizes for pair (i, j); called on i and j only. */
static int pair_run(ctx_t *c, const size_t *sizes, size_t nsizes, mpilab_loggp_pair_result_t *r)
{
    int rc = MPI_SUCCESS;
    for (size_t k = 0; k < nsizes && rc == MPI_SUCCESS; k++) {
        mpilab_loggp_point_t *pt = &r->points[k];
        int m = (int)sizes[k];
        double rtt_med = 0;
        /* one untimed round trip first (connection set-up, first-touch of buffers) */
        if (c->me == c->i) {
            rc = MPI_Send(c->buf, m, MPI_BYTE, c->j, TAG_DATA, c->comm);
            if (rc == MPI_SUCCESS)
                rc = MPI_Recv(c->buf2, m, MPI_BYTE, c->j, TAG_REPLY, c->comm, MPI_STATUS_IGNORE);
            if (rc == MPI_SUCCESS)
                rc = sender_phase(c, 0, m, &pt->rtt);
            rtt_med = median_of(pt->rtt.samples, pt->rtt.stats.reps);
            if (rc == MPI_SUCCESS)
                rc = MPI_Send(&rtt_med, 1, MPI_DOUBLE, c->j, TAG_INFO, c->comm);
            if (rc == MPI_SUCCESS)
                rc = sender_phase(c, 1, m, &pt->os);
            if (rc == MPI_SUCCESS)
                rc = or_phase(c, m, rtt_med, &pt->orr);
            if (rc == MPI_SUCCESS)
                rc = sender_phase(c, 3, m, &pt->g);
        } else {
            /* the warm-up round trip is served by the rtt loop: it ends only at TAG_STOP */
            rc = receiver_serve(c, 0, m);
            if (rc == MPI_SUCCESS)
                rc = MPI_Recv(&rtt_med, 1, MPI_DOUBLE, c->i, TAG_INFO, c->comm, MPI_STATUS_IGNORE);
            if (rc == MPI_SUCCESS)
                rc = receiver_serve(c, 1, m);
            if (rc == MPI_SUCCESS)
                rc = or_phase(c, m, rtt_med, &pt->orr);
            if (rc == MPI_SUCCESS)
                rc = receiver_serve(c, 3, m);
        }
    }
    if (c->me == c->i)
        r->measured++;
    return rc;
}

/* Broadcast one series from its owner; everyone recomputes the statistics. */
static int share(MPI_Comm comm, int owner, const mpilab_precision_t *p, mpilab_loggp_series_t *s)
{
    unsigned long long reps = s->stats.reps;
    int rc = MPI_Bcast(&reps, 1, MPI_UNSIGNED_LONG_LONG, owner, comm);
    if (rc != MPI_SUCCESS)
        return rc;
    if (reps < 1 || reps > p->max_reps)
        return MPI_ERR_INTERN;
    rc = MPI_Bcast(s->samples, (int)reps, MPI_DOUBLE, owner, comm);
    mpilab_stats_compute(s->samples, NULL, (size_t)reps, p->cl, p->eps, &s->stats);
    return rc;
}

static int alloc_result(mpilab_loggp_pair_result_t *r, int i, int j, const size_t *sizes, size_t nsizes,
                        size_t max_reps)
{
    memset(r, 0, sizeof *r);
    r->pair.i = i;
    r->pair.j = j;
    r->nsizes = nsizes;
    r->points = calloc(nsizes, sizeof *r->points);
    if (!r->points)
        return -1;
    for (size_t k = 0; k < nsizes; k++) {
        mpilab_loggp_point_t *pt = &r->points[k];
        pt->bytes = sizes[k];
        mpilab_loggp_series_t *ser[4] = {&pt->rtt, &pt->os, &pt->orr, &pt->g};
        for (int q = 0; q < 4; q++) {
            ser[q]->samples = calloc(max_reps, sizeof(double));
            if (!ser[q]->samples)
                return -1;
        }
    }
    return 0;
}

int mpilab_loggp_measure(MPI_Comm comm_in, const size_t *sizes, size_t nsizes,
                         const mpilab_loggp_opts_t *o, mpilab_loggp_pair_result_t *results)
{
    char err[256];
    int n;
    if (comm_in == MPI_COMM_NULL || !results || MPI_Comm_size(comm_in, &n) != MPI_SUCCESS || n < 2 ||
        mpilab_loggp_check(sizes, nsizes, o, err, sizeof err) != 0)
        return MPI_ERR_ARG;
    MPI_Comm comm;
    int rc = MPI_Comm_dup(comm_in, &comm);
    if (rc != MPI_SUCCESS)
        return rc;
    int me;
    MPI_Comm_rank(comm, &me);
    size_t npairs = (size_t)n * (size_t)(n - 1) / 2;
    size_t maxb = sizes[nsizes - 1];
    ctx_t c = {.comm = comm, .me = me, .o = o};
    c.buf = mpilab_payload_alloc(maxb);
    c.buf2 = mpilab_payload_alloc(maxb);
    mpilab_pair_t *pairs = calloc(npairs, sizeof *pairs);
    size_t *starts = calloc((size_t)n + 2, sizeof *starts);
    int ok = c.buf && c.buf2 && pairs && starts;
    for (int i = 0; i < n; i++)
        for (int j = i + 1; j < n; j++)
            if (alloc_result(&results[pair_index(n, i, j)], i, j, sizes, nsizes, o->prec.max_reps) != 0)
                ok = 0;
    int all = 0;
    MPI_Allreduce(&ok, &all, 1, MPI_INT, MPI_LAND, comm);
    if (!all) {
        rc = MPI_ERR_NO_MEM;
        goto done;
    }
    size_t rounds;
    if (o->mode == MPILAB_P2P_SEQUENTIAL) {
        rounds = npairs;
        size_t k = 0;
        for (int i = 0; i < n; i++)
            for (int j = i + 1; j < n; j++, k++) {
                pairs[k].i = i;
                pairs[k].j = j;
                starts[k] = k;
            }
        starts[npairs] = npairs;
    } else {
        rounds = mpilab_p2p_schedule(n, pairs, starts);
    }
    for (size_t r = 0; r < rounds && rc == MPI_SUCCESS; r++) {
        for (size_t k = starts[r]; k < starts[r + 1]; k++) {
            c.i = pairs[k].i;
            c.j = pairs[k].j;
            mpilab_loggp_pair_result_t *res = &results[pair_index(n, c.i, c.j)];
            res->round = r;
            if (me == c.i || me == c.j)
                rc = pair_run(&c, sizes, nsizes, res);
        }
        int rc2 = MPI_Barrier(comm);
        if (rc == MPI_SUCCESS)
            rc = rc2;
    }
    int good = rc == MPI_SUCCESS, allgood = 0;
    MPI_Allreduce(&good, &allgood, 1, MPI_INT, MPI_LAND, comm);
    if (!allgood && rc == MPI_SUCCESS)
        rc = MPI_ERR_OTHER;
    for (int i = 0; i < n && rc == MPI_SUCCESS; i++)
        for (int j = i + 1; j < n && rc == MPI_SUCCESS; j++) {
            mpilab_loggp_pair_result_t *res = &results[pair_index(n, i, j)];
            unsigned long long cnt = res->measured;
            rc = MPI_Bcast(&cnt, 1, MPI_UNSIGNED_LONG_LONG, i, comm);
            res->measured = (size_t)cnt;
            for (size_t k = 0; k < nsizes && rc == MPI_SUCCESS; k++) {
                mpilab_loggp_point_t *pt = &res->points[k];
                rc = share(comm, i, &o->prec, &pt->rtt);
                if (rc == MPI_SUCCESS)
                    rc = share(comm, i, &o->prec, &pt->os);
                if (rc == MPI_SUCCESS)
                    rc = share(comm, j, &o->prec, &pt->orr);
                if (rc == MPI_SUCCESS)
                    rc = share(comm, i, &o->prec, &pt->g);
            }
        }
done:
    mpilab_payload_free(c.buf);
    mpilab_payload_free(c.buf2);
    free(pairs);
    free(starts);
    MPI_Comm_free(&comm);
    if (rc != MPI_SUCCESS)
        for (size_t k = 0; k < npairs; k++)
            mpilab_loggp_pair_result_free(&results[k]);
    return rc;
}

/* The series a pair member timed, packed for rank 0: i (part 0) rtt, os, g per size; j
 * (part 1) orr per size. Layout: one count per series, then the samples; n doubles. */
static double *pack_part(const mpilab_loggp_pair_result_t *r, int part, size_t *n)
{
    size_t per = part == 0 ? 3 : 1, total = per * r->nsizes;
    for (size_t k = 0; k < r->nsizes; k++) {
        const mpilab_loggp_point_t *pt = &r->points[k];
        total += part == 0 ? pt->rtt.stats.reps + pt->os.stats.reps + pt->g.stats.reps : pt->orr.stats.reps;
    }
    double *buf = malloc((total ? total : 1) * sizeof *buf);
    if (!buf)
        return NULL;
    size_t at = per * r->nsizes;
    for (size_t k = 0; k < r->nsizes; k++) {
        const mpilab_loggp_point_t *pt = &r->points[k];
        const mpilab_loggp_series_t *ser[3] = {&pt->rtt, &pt->os, &pt->g};
        if (part == 1)
            ser[0] = &pt->orr;
        for (size_t q = 0; q < per; q++) {
            buf[k * per + q] = (double)ser[q]->stats.reps;
            memcpy(buf + at, ser[q]->samples, ser[q]->stats.reps * sizeof *buf);
            at += ser[q]->stats.reps;
        }
    }
    *n = total;
    return buf;
}

/* Rank 0: one packed part into r (its points allocated here); -1 if malformed. */
static int unpack_part(mpilab_loggp_pair_result_t *r, int part, const double *buf, size_t n,
                       const mpilab_precision_t *prec)
{
    size_t per = part == 0 ? 3 : 1, at = per * r->nsizes;
    if (n < at)
        return -1;
    for (size_t k = 0; k < r->nsizes; k++) {
        mpilab_loggp_point_t *pt = &r->points[k];
        mpilab_loggp_series_t *ser[3] = {&pt->rtt, &pt->os, &pt->g};
        if (part == 1)
            ser[0] = &pt->orr;
        for (size_t q = 0; q < per; q++) {
            double c = buf[k * per + q];
            if (!(c >= 1.0 && c <= (double)prec->max_reps) || at + (size_t)c > n)
                return -1;
            size_t reps = (size_t)c;
            ser[q]->samples = malloc(reps * sizeof(double));
            if (!ser[q]->samples)
                return -1;
            memcpy(ser[q]->samples, buf + at, reps * sizeof(double));
            at += reps;
            mpilab_stats_compute(ser[q]->samples, NULL, reps, prec->cl, prec->eps, &ser[q]->stats);
        }
    }
    return at == n ? 0 : -1;
}

/* One pair member's part to rank 0 (rank 0 itself copies); the receiving side on rank 0
 * (dst NULL: received and dropped, *bad set). A member whose pair failed sends an empty
 * part. */
static int deliver(MPI_Comm comm, int me, int from, int part, const mpilab_loggp_pair_result_t *mine, int mine_ok,
                   mpilab_loggp_pair_result_t *dst, const mpilab_precision_t *prec, int *bad)
{
    int rc = MPI_SUCCESS;
    if (me == from && me != 0) {
        size_t n = 0;
        double *buf = mine_ok ? pack_part(mine, part, &n) : NULL;
        rc = MPI_Send(buf ? buf : &(double){0}, buf ? (int)n : 0, MPI_DOUBLE, 0, TAG_RESULT, comm);
        free(buf);
    } else if (me == 0) {
        size_t n = 0;
        double *buf = NULL;
        if (from == 0) {
            buf = mine_ok ? pack_part(mine, part, &n) : NULL;
        } else {
            MPI_Status st;
            int cnt = 0;
            rc = MPI_Probe(from, TAG_RESULT, comm, &st);
            if (rc == MPI_SUCCESS)
                MPI_Get_count(&st, MPI_DOUBLE, &cnt);
            buf = malloc((cnt > 0 ? (size_t)cnt : 1) * sizeof *buf);
            if (rc == MPI_SUCCESS)
                rc = MPI_Recv(buf ? buf : &(double){0}, buf ? cnt : 0, MPI_DOUBLE, from, TAG_RESULT, comm,
                              MPI_STATUS_IGNORE);
            n = buf && cnt > 0 ? (size_t)cnt : 0;
        }
        if (!dst || !buf || n == 0 || unpack_part(dst, part, buf, n, prec) != 0)
            *bad = 1;
        free(buf);
    }
    return rc;
}

static int design_ok(int n, const mpilab_pair_t *pairs, size_t npairs, const size_t *order,
                     const size_t *round_start, size_t rounds)
{
    if (!pairs || npairs == 0 || !order || !round_start || rounds == 0 || round_start[0] != 0 ||
        round_start[rounds] != npairs)
        return 0;
    for (size_t k = 0; k < npairs; k++)
        if (pairs[k].i < 0 || pairs[k].j >= n || pairs[k].i >= pairs[k].j || order[k] >= npairs)
            return 0;
    for (size_t r = 0; r < rounds; r++)
        if (round_start[r + 1] < round_start[r])
            return 0;
    return 1;
}

int mpilab_loggp_measure_pairs(MPI_Comm comm_in, const mpilab_pair_t *pairs, size_t npairs, const size_t *order,
                               const size_t *round_start, size_t rounds, const size_t *sizes, size_t nsizes,
                               const mpilab_loggp_opts_t *o, mpilab_loggp_pair_result_t *results)
{
    char err[256];
    int n, me;
    if (comm_in == MPI_COMM_NULL || MPI_Comm_size(comm_in, &n) != MPI_SUCCESS || n < 2 ||
        mpilab_loggp_check(sizes, nsizes, o, err, sizeof err) != 0 ||
        !design_ok(n, pairs, npairs, order, round_start, rounds))
        return MPI_ERR_ARG;
    MPI_Comm_rank(comm_in, &me);
    if (me == 0 && !results)
        return MPI_ERR_ARG;
    MPI_Comm comm;
    int rc = MPI_Comm_dup(comm_in, &comm);
    if (rc != MPI_SUCCESS)
        return rc;
    size_t maxb = sizes[nsizes - 1];
    ctx_t c = {.comm = comm, .me = me, .o = o};
    c.buf = mpilab_payload_alloc(maxb);
    c.buf2 = mpilab_payload_alloc(maxb);
    mpilab_loggp_pair_result_t mine = {0}; /* the pair this rank is in, one round at a time */
    int ok = c.buf && c.buf2 && alloc_result(&mine, 0, 1, sizes, nsizes, o->prec.max_reps) == 0, all = 0, bad = 0;
    for (size_t k = 0; me == 0 && k < npairs; k++)
        memset(&results[k], 0, sizeof results[k]);
    MPI_Allreduce(&ok, &all, 1, MPI_INT, MPI_LAND, comm);
    /* sequential: one pair per round, in the design's order */
    int seq = o->mode == MPILAB_P2P_SEQUENTIAL;
    size_t nr = seq ? npairs : rounds;
    for (size_t r = 0; all && r < nr && rc == MPI_SUCCESS; r++) {
        size_t from = seq ? r : round_start[r], to = seq ? r + 1 : round_start[r + 1];
        int mine_ok = 0;
        for (size_t q = from; q < to; q++) {
            const mpilab_pair_t pr = pairs[seq ? q : order[q]];
            if (me != pr.i && me != pr.j)
                continue;
            c.i = pr.i;
            c.j = pr.j;
            mine.pair = pr;
            mine.measured = 0;
            rc = pair_run(&c, sizes, nsizes, &mine);
            mine_ok = rc == MPI_SUCCESS;
        }
        for (size_t q = from; q < to && rc == MPI_SUCCESS; q++) {
            size_t k = seq ? q : order[q];
            mpilab_loggp_pair_result_t *dst = NULL;
            if (me == 0) {
                dst = &results[k];
                dst->pair = pairs[k];
                dst->round = r;
                dst->nsizes = nsizes;
                dst->measured = 1;
                dst->points = calloc(nsizes, sizeof *dst->points);
                for (size_t s = 0; dst->points && s < nsizes; s++)
                    dst->points[s].bytes = sizes[s];
                if (!dst->points || bad)
                    dst = NULL;
            }
            rc = deliver(comm, me, pairs[k].i, 0, &mine, mine_ok, dst, &o->prec, &bad);
            if (rc == MPI_SUCCESS)
                rc = deliver(comm, me, pairs[k].j, 1, &mine, mine_ok, bad ? NULL : dst, &o->prec, &bad);
        }
        int rc2 = MPI_Barrier(comm);
        if (rc == MPI_SUCCESS)
            rc = rc2;
        size_t every = nr / 20 + 1;
        if (me == 0 && o->progress && n >= MPILAB_P2P_PROGRESS_RANKS && ((r + 1) % every == 0 || r + 1 == nr))
            fprintf(stderr, "[loggp] %s %zu/%zu (%zu pairs x %zu sizes)\n", seq ? "pair" : "round", r + 1, nr,
                    npairs, nsizes);
    }
    int good = all && rc == MPI_SUCCESS && !bad, allgood = 0;
    MPI_Allreduce(&good, &allgood, 1, MPI_INT, MPI_LAND, comm);
    if (rc == MPI_SUCCESS && !allgood)
        rc = all ? MPI_ERR_OTHER : MPI_ERR_NO_MEM;
    mpilab_payload_free(c.buf);
    mpilab_payload_free(c.buf2);
    mpilab_loggp_pair_result_free(&mine);
    MPI_Comm_free(&comm);
    if (rc != MPI_SUCCESS && me == 0)
        for (size_t k = 0; k < npairs; k++)
            mpilab_loggp_pair_result_free(&results[k]);
    return rc;
}

void mpilab_loggp_pair_result_free(mpilab_loggp_pair_result_t *r)
{
    if (!r)
        return;
    for (size_t k = 0; r->points && k < r->nsizes; k++) {
        free(r->points[k].rtt.samples);
        free(r->points[k].os.samples);
        free(r->points[k].orr.samples);
        free(r->points[k].g.samples);
    }
    free(r->points);
    r->points = NULL;
    r->nsizes = 0;
}
