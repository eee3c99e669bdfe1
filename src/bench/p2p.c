/* All-pairs point-to-point round trips (see include/mpilab/p2p.h). */
#include "mpilab/p2p.h"
#include "mpilab/wtime.h"
#include "payload.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TAG_PING 7201
#define TAG_PONG 7202
#define TAG_STOP 7203

size_t mpilab_p2p_schedule(int n, mpilab_pair_t *pairs, size_t *round_start)
{
    if (n < 2)
        return 0;
    /* Circle method: with an even number m of slots (a dummy slot for odd n), slot m-1
     * stays fixed and the others rotate; a pair with the dummy is a bye. */
    int m = (n % 2 == 0) ? n : n + 1;
    int rounds = m - 1;
    size_t k = 0;
    for (int r = 0; r < rounds; r++) {
        round_start[r] = k;
        for (int h = 0; h < m / 2; h++) {
            int a, b;
            if (h == 0) {
                a = r;
                b = m - 1;
            } else {
                a = (r + h) % (m - 1);
                b = (r - h + (m - 1)) % (m - 1);
            }
            if (a >= n || b >= n)
                continue;
            pairs[k].i = a < b ? a : b;
            pairs[k].j = a < b ? b : a;
            k++;
        }
    }
    round_start[rounds] = k;
    return (size_t)rounds;
}

/* Index of pair (i, j), i < j, in the lexicographic order of the results array. */
static size_t pair_index(int n, int i, int j)
{
    return (size_t)i * (size_t)(2 * n - i - 1) / 2 + (size_t)(j - i - 1);
}

/* First capacity of a pair's sample arrays (they double as needed, up to max_reps). */
#define P2P_CAP0 256

/* Room for `need` samples in r (capacity *cap, doubled, at most max(max_reps, need)); 0 or -1
 * when memory ran out (the arrays keep their old size). */
static int p2p_reserve(mpilab_p2p_result_t *r, size_t *cap, size_t need, size_t max_reps)
{
    if (need <= *cap)
        return 0;
    size_t c = mpilab_stats_capacity(*cap, need, max_reps);
    double *s = realloc(r->samples, c * sizeof *s);
    if (!s)
        return -1;
    r->samples = s;
    unsigned char *v = realloc(r->valid, c);
    if (!v)
        return -1;
    r->valid = v;
    *cap = c;
    return 0;
}

/* Repetition-controlled round trips between i and j; the samples stay on i. */
static int pair_loop(MPI_Comm comm, int me, int i, int j, char *out, char *back, size_t bytes,
                     size_t bytes_back, const mpilab_precision_t *prec, size_t warmup, mpilab_p2p_result_t *res)
{
    int rc = MPI_SUCCESS;
    if (me == i) {
        /* untimed round trips first: j answers them like any ping */
        for (size_t w = 0; w < warmup && rc == MPI_SUCCESS; w++) {
            rc = MPI_Send(out, (int)bytes, MPI_BYTE, j, TAG_PING, comm);
            if (rc == MPI_SUCCESS)
                rc = MPI_Recv(back, (int)bytes_back, MPI_BYTE, j, TAG_PONG, comm, MPI_STATUS_IGNORE);
        }
        /* The stop decision travels as the next message: a ping (TAG_PING) or an empty
         * TAG_STOP, so a repetition costs exactly one round trip. */
        size_t n = 0, cap = prec->max_reps < P2P_CAP0 ? prec->max_reps : P2P_CAP0;
        int stop = rc != MPI_SUCCESS;
        while (!stop && rc == MPI_SUCCESS) {
            double t0 = mpilab_wtime();
            rc = MPI_Send(out, (int)bytes, MPI_BYTE, j, TAG_PING, comm);
            if (rc == MPI_SUCCESS)
                rc = MPI_Recv(back, (int)bytes_back, MPI_BYTE, j, TAG_PONG, comm, MPI_STATUS_IGNORE);
            res->samples[n] = mpilab_wtime() - t0;
            res->valid[n] = 1;
            n++;
            stop = mpilab_stats_should_stop(res->samples, res->valid, n, prec) || rc != MPI_SUCCESS ||
                   p2p_reserve(res, &cap, n + 1, prec->max_reps) != 0;
        }
        int rc2 = MPI_Send(NULL, 0, MPI_BYTE, j, TAG_STOP, comm);
        if (rc == MPI_SUCCESS)
            rc = rc2;
        mpilab_stats_compute(res->samples, res->valid, n, prec->cl, prec->eps, &res->stats);
    } else if (me == j) {
        for (;;) {
            MPI_Status st;
            rc = MPI_Recv(out, (int)bytes, MPI_BYTE, i, MPI_ANY_TAG, comm, &st);
            if (rc != MPI_SUCCESS || st.MPI_TAG == TAG_STOP)
                break;
            rc = MPI_Send(back, (int)bytes_back, MPI_BYTE, i, TAG_PONG, comm);
            if (rc != MPI_SUCCESS)
                break;
        }
    }
    return rc;
}

/* Both measurements' start: the sizes and repetitions checked, then a private duplicate of
 * comm_in (the measurement's messages never match a caller's) with this rank and the size. */
static int p2p_open(MPI_Comm comm_in, size_t bytes, size_t bytes_back, const mpilab_precision_t *prec,
                    MPI_Comm *comm, int *me, int *n)
{
    if (bytes > INT_MAX || bytes_back > INT_MAX || prec->max_reps < 1)
        return MPI_ERR_COUNT;
    int rc = MPI_Comm_dup(comm_in, comm);
    if (rc != MPI_SUCCESS)
        return rc;
    MPI_Comm_rank(*comm, me);
    MPI_Comm_size(*comm, n);
    return MPI_SUCCESS;
}

int mpilab_p2p_measure(MPI_Comm comm_in, size_t bytes, size_t bytes_back, mpilab_p2p_mode_t mode,
                       const mpilab_precision_t *prec, mpilab_p2p_result_t *results)
{
    return mpilab_p2p_measure_warm(comm_in, bytes, bytes_back, mode, prec, MPILAB_P2P_WARMUP, results);
}

int mpilab_p2p_measure_warm(MPI_Comm comm_in, size_t bytes, size_t bytes_back, mpilab_p2p_mode_t mode,
                            const mpilab_precision_t *prec, size_t warmup, mpilab_p2p_result_t *results)
{
    MPI_Comm comm;
    int me, n;
    int rc = p2p_open(comm_in, bytes, bytes_back, prec, &comm, &me, &n);
    if (rc != MPI_SUCCESS)
        return rc;
    size_t npairs = (size_t)n * (size_t)(n - 1) / 2;
    for (int i = 0; i < n; i++)
        for (int j = i + 1; j < n; j++) {
            mpilab_p2p_result_t *r = &results[pair_index(n, i, j)];
            memset(r, 0, sizeof *r);
            r->pair.i = i;
            r->pair.j = j;
            r->bytes = bytes;
            r->bytes_back = bytes_back;
            size_t cap0 = prec->max_reps < P2P_CAP0 ? prec->max_reps : P2P_CAP0;
            r->samples = calloc(cap0, sizeof *r->samples);
            r->valid = calloc(cap0, 1);
            if (!r->samples || !r->valid)
                rc = MPI_ERR_NO_MEM;
        }
    char *out = mpilab_payload_alloc(bytes);
    char *back = mpilab_payload_alloc(bytes_back);
    if (!out || !back)
        rc = MPI_ERR_NO_MEM;
    int ok = rc == MPI_SUCCESS, all = 0;
    MPI_Allreduce(&ok, &all, 1, MPI_INT, MPI_LAND, comm);
    if (!all) {
        rc = rc != MPI_SUCCESS ? rc : MPI_ERR_NO_MEM;
        goto done;
    }
    if (mode == MPILAB_P2P_SEQUENTIAL) {
        for (int i = 0; i < n && rc == MPI_SUCCESS; i++)
            for (int j = i + 1; j < n && rc == MPI_SUCCESS; j++) {
                rc = pair_loop(comm, me, i, j, out, back, bytes, bytes_back, prec, warmup,
                               &results[pair_index(n, i, j)]);
                int rc2 = MPI_Barrier(comm);
                if (rc == MPI_SUCCESS)
                    rc = rc2;
            }
    } else {
        mpilab_pair_t *pairs = calloc(npairs, sizeof *pairs);
        size_t *starts = calloc((size_t)n + 2, sizeof *starts);
        if (!pairs || !starts) {
            free(pairs);
            free(starts);
            rc = MPI_ERR_NO_MEM;
            goto done;
        }
        size_t rounds = mpilab_p2p_schedule(n, pairs, starts);
        for (size_t r = 0; r < rounds && rc == MPI_SUCCESS; r++) {
            for (size_t k = starts[r]; k < starts[r + 1]; k++) {
                int i = pairs[k].i, j = pairs[k].j;
                if (me == i || me == j)
                    rc = pair_loop(comm, me, i, j, out, back, bytes, bytes_back, prec, warmup,
                                   &results[pair_index(n, i, j)]);
            }
            int rc2 = MPI_Barrier(comm);
            if (rc == MPI_SUCCESS)
                rc = rc2;
            /* progress for runs long enough to need it: at most ~20 lines per size */
            size_t every = rounds / 20 + 1;
            if (me == 0 && n >= MPILAB_P2P_PROGRESS_RANKS && ((r + 1) % every == 0 || r + 1 == rounds))
                fprintf(stderr, "mpilab-bench: all pairs %zu B: round %zu/%zu\n", bytes, r + 1, rounds);
        }
        free(pairs);
        free(starts);
    }
    /* Every rank learns every pair's result from its rank i. */
    for (int i = 0; i < n && rc == MPI_SUCCESS; i++)
        for (int j = i + 1; j < n && rc == MPI_SUCCESS; j++) {
            mpilab_p2p_result_t *r = &results[pair_index(n, i, j)];
            unsigned long long reps = r->stats.reps;
            MPI_Bcast(&reps, 1, MPI_UNSIGNED_LONG_LONG, i, comm);
            size_t cap = me == i ? (size_t)reps : (prec->max_reps < P2P_CAP0 ? prec->max_reps : P2P_CAP0);
            int oom = reps > INT_MAX || p2p_reserve(r, &cap, (size_t)reps, (size_t)reps) != 0, anyoom = 0;
            MPI_Allreduce(&oom, &anyoom, 1, MPI_INT, MPI_LOR, comm);
            if (anyoom) {
                rc = MPI_ERR_NO_MEM;
                break;
            }
            rc = MPI_Bcast(r->samples, (int)reps, MPI_DOUBLE, i, comm);
            for (size_t k = 0; k < reps; k++)
                r->valid[k] = 1;
            mpilab_stats_compute(r->samples, r->valid, (size_t)reps, prec->cl, prec->eps, &r->stats);
        }
done:
    mpilab_payload_free(out);
    mpilab_payload_free(back);
    MPI_Comm_free(&comm);
    if (rc != MPI_SUCCESS)
        for (size_t k = 0; k < npairs; k++)
            mpilab_p2p_result_free(&results[k]);
    return rc;
}

void mpilab_p2p_result_free(mpilab_p2p_result_t *r)
{
    free(r->samples);
    free(r->valid);
    r->samples = NULL;
    r->valid = NULL;
}

#define TAG_RESULT 7204
#define TAG_SAMPLES 7205

/* One pair of a plan on this rank: measured (i, j), its result sent by i to rank 0 (i != 0). */
static int plan_pair(MPI_Comm comm, int me, const mpilab_pair_t *pq, char *out, char *back, size_t bytes,
                     size_t bytes_back, const mpilab_precision_t *prec, size_t warmup, mpilab_p2p_result_t *res)
{
    if (me == pq->j)
        return pair_loop(comm, me, pq->i, pq->j, out, back, bytes, bytes_back, prec, warmup, res);
    if (me != pq->i)
        return MPI_SUCCESS;
    memset(res, 0, sizeof *res);
    res->pair = *pq;
    res->bytes = bytes;
    res->bytes_back = bytes_back;
    size_t cap = prec->max_reps < P2P_CAP0 ? prec->max_reps : P2P_CAP0;
    res->samples = calloc(cap, sizeof *res->samples);
    res->valid = calloc(cap, 1);
    int rc;
    if (res->samples && res->valid) {
        rc = pair_loop(comm, me, pq->i, pq->j, out, back, bytes, bytes_back, prec, warmup, res);
    } else {
        MPI_Send(NULL, 0, MPI_BYTE, pq->j, TAG_STOP, comm); /* j stops at once */
        rc = MPI_ERR_NO_MEM;
    }
    if (me != 0) {
        /* the statistics, then the samples (reps of them) */
        int rc2 = MPI_Send(&res->stats, (int)sizeof res->stats, MPI_BYTE, 0, TAG_RESULT, comm);
        if (rc2 == MPI_SUCCESS && res->stats.reps > 0)
            rc2 = MPI_Send(res->samples, (int)res->stats.reps, MPI_DOUBLE, 0, TAG_SAMPLES, comm);
        rc = rc == MPI_SUCCESS ? rc2 : rc;
    }
    return rc;
}

/* Rank 0: every pair of round positions [a, b) of the plan delivered to the sink (its own
 * pair from res0, the others received from their rank i). */
static int plan_collect(MPI_Comm comm, const mpilab_p2p_plan_t *plan, size_t a, size_t b, size_t round,
                        size_t bytes, size_t bytes_back, const mpilab_p2p_result_t *res0, mpilab_p2p_sink_t sink,
                        void *ctx)
{
    int rc = MPI_SUCCESS;
    for (size_t k = a; k < b; k++) {
        size_t idx = plan->order[k];
        const mpilab_pair_t *pq = &plan->pairs[idx];
        if (pq->i == 0) {
            sink(ctx, idx, round, res0);
            continue;
        }
        mpilab_p2p_result_t r;
        memset(&r, 0, sizeof r);
        r.pair = *pq;
        r.bytes = bytes;
        r.bytes_back = bytes_back;
        int rc2 = MPI_Recv(&r.stats, (int)sizeof r.stats, MPI_BYTE, pq->i, TAG_RESULT, comm, MPI_STATUS_IGNORE);
        size_t n = rc2 == MPI_SUCCESS ? r.stats.reps : 0;
        if (n > 0) {
            r.samples = malloc(n * sizeof *r.samples);
            r.valid = malloc(n);
            if (r.samples && r.valid && n <= INT_MAX) {
                rc2 = MPI_Recv(r.samples, (int)n, MPI_DOUBLE, pq->i, TAG_SAMPLES, comm, MPI_STATUS_IGNORE);
                memset(r.valid, 1, n);
            } else {
                rc2 = MPI_ERR_NO_MEM; /* the run stops: the samples are not received */
            }
        }
        if (rc2 == MPI_SUCCESS)
            sink(ctx, idx, round, &r);
        mpilab_p2p_result_free(&r);
        if (rc2 != MPI_SUCCESS)
            return rc2;
    }
    return rc;
}

int mpilab_p2p_measure_plan(MPI_Comm comm_in, size_t bytes, size_t bytes_back, mpilab_p2p_mode_t mode,
                            const mpilab_precision_t *prec, size_t warmup, const mpilab_p2p_plan_t *plan,
                            int quiet, mpilab_p2p_sink_t sink, void *ctx)
{
    MPI_Comm comm;
    int me, n;
    int rc = p2p_open(comm_in, bytes, bytes_back, prec, &comm, &me, &n);
    if (rc != MPI_SUCCESS)
        return rc;
    char *out = mpilab_payload_alloc(bytes);
    char *back = mpilab_payload_alloc(bytes_back);
    int ok = out && back, all = 0;
    MPI_Allreduce(&ok, &all, 1, MPI_INT, MPI_LAND, comm);
    rc = all ? MPI_SUCCESS : MPI_ERR_NO_MEM;
    int seq = mode == MPILAB_P2P_SEQUENTIAL;
    size_t rounds = seq ? plan->npairs : plan->rounds, every = rounds / 20 + 1;
    for (size_t r = 0; r < rounds && rc == MPI_SUCCESS; r++) {
        /* sequential: round r is pair r alone, in plan->pairs order */
        size_t a = seq ? r : plan->round_start[r], b = seq ? r + 1 : plan->round_start[r + 1];
        mpilab_p2p_result_t mine;
        memset(&mine, 0, sizeof mine);
        for (size_t k = a; k < b && rc == MPI_SUCCESS; k++) {
            size_t idx = seq ? k : plan->order[k];
            rc = plan_pair(comm, me, &plan->pairs[idx], out, back, bytes, bytes_back, prec, warmup, &mine);
        }
        if (me == 0 && rc == MPI_SUCCESS) {
            mpilab_p2p_plan_t one = *plan;
            size_t pos = r;
            if (seq)
                one.order = &pos; /* round r: position 0 .. 1 of a one-element order */
            rc = seq ? plan_collect(comm, &one, 0, 1, r, bytes, bytes_back, &mine, sink, ctx)
                     : plan_collect(comm, plan, a, b, r, bytes, bytes_back, &mine, sink, ctx);
        }
        mpilab_p2p_result_free(&mine);
        int rc2 = MPI_Barrier(comm);
        rc = rc == MPI_SUCCESS ? rc2 : rc;
        if (me == 0 && !quiet && !seq && n >= MPILAB_P2P_PROGRESS_RANKS && ((r + 1) % every == 0 || r + 1 == rounds))
            fprintf(stderr, "mpilab-bench: %s %zu B: round %zu/%zu (%zu pairs)\n", plan->label ? plan->label : "pairs",
                    bytes, r + 1, rounds, plan->npairs);
    }
    /* a failure on one rank is every rank's */
    int bad = rc != MPI_SUCCESS, anybad = 0;
    MPI_Allreduce(&bad, &anybad, 1, MPI_INT, MPI_LOR, comm);
    if (anybad && rc == MPI_SUCCESS)
        rc = MPI_ERR_OTHER;
    mpilab_payload_free(out);
    mpilab_payload_free(back);
    MPI_Comm_free(&comm);
    return rc;
}
