/* The measurement engine (include/mpilab/bench.h): repetition control, isolation and the
 * four timing methods. Samples are collected on the root of the measurement, which also
 * makes the stop decision and broadcasts it; every rank gets the samples at the end. */
#include "mpilab/bench.h"
#include "mpilab/multilane.h"
#include "mpilab/wtime.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TAG_CONFIRM 7301
#define TAG_ACK 7302
#define TAG_ACKPP 7303
#define ACK_PROBES 30
#define SYNC_SLACK0 2e-4 /* first window: 200 us after the decision */
#define SYNC_SLACK_MAX 1.0

struct mpilab_bench {
    MPI_Comm comm;
    int rank, size;
    mpilab_bench_opts_t o;
    mpilab_clocksync_t sync;
    int have_sync;
    double sync_end; /* this rank's mpilab_wtime() when the sync in use ended */
    double *ack; /* [size] one-way zero-byte time rank -> root */
    int have_ack;
    /* MPILAB_SYNC_AUTO is resolved once, at the first synchronisation (o.sync_method then
     * holds the choice): what was asked for and the nodes counted, for the results */
    mpilab_sync_method_t sync_requested;
    int sync_nodes;
};

void mpilab_bench_opts_default(mpilab_bench_opts_t *o)
{
    mpilab_precision_t p = MPILAB_PRECISION_DEFAULT;
    o->prec = p;
    o->isolation = MPILAB_ISO_BARRIER;
    o->root = 0;
    o->sync_method = MPILAB_SYNC_SKAMPI;
    o->resync = 1;
    o->pipeline_depth = 10;
    o->warmup = 2;
}

int mpilab_bench_init(MPI_Comm comm, const mpilab_bench_opts_t *opts, mpilab_bench_t **out,
                      char *err, size_t errlen)
{
    *out = NULL;
    int size;
    MPI_Comm_size(comm, &size);
    if (mpilab_precision_check(&opts->prec, err, errlen) != 0)
        return -1;
    if (opts->root < 0 || opts->root >= size) {
        snprintf(err, errlen, "root %d outside the communicator (0..%d)", opts->root, size - 1);
        return -1;
    }
    if (opts->pipeline_depth < 1) {
        snprintf(err, errlen, "pipeline depth must be at least 1");
        return -1;
    }
    mpilab_bench_t *b = calloc(1, sizeof *b);
    if (!b || !(b->ack = calloc((size_t)size, sizeof *b->ack))) {
        free(b);
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    MPI_Comm_dup(comm, &b->comm);
    MPI_Comm_rank(b->comm, &b->rank);
    b->size = size;
    b->o = *opts;
    b->sync_requested = opts->sync_method;
    *out = b;
    return 0;
}

void mpilab_bench_finalize(mpilab_bench_t *b)
{
    if (!b)
        return;
    if (b->have_sync)
        mpilab_clocksync_free(&b->sync);
    MPI_Comm_free(&b->comm);
    free(b->ack);
    free(b);
}

const mpilab_clocksync_t *mpilab_bench_clocksync(const mpilab_bench_t *b)
{
    return b->have_sync ? &b->sync : NULL;
}

MPI_Comm mpilab_bench_comm(const mpilab_bench_t *b)
{
    return b->comm;
}

static const char *timing_names[] = {"max", "root", "global", "opspec"};
static const char *iso_names[] = {"barrier", "none", "sync"};

const char *mpilab_timing_name(mpilab_timing_t t)
{
    return (unsigned)t < 4 ? timing_names[t] : "?";
}

int mpilab_timing_parse(const char *s, mpilab_timing_t *out)
{
    for (int k = 0; k < 4; k++)
        if (strcmp(s, timing_names[k]) == 0) {
            *out = (mpilab_timing_t)k;
            return 0;
        }
    return -1;
}

void mpilab_bench_set_isolation(mpilab_bench_t *b, mpilab_isolation_t iso)
{
    b->o.isolation = iso;
}

void mpilab_bench_set_eps(mpilab_bench_t *b, double eps)
{
    b->o.prec.eps = eps;
}

const char *mpilab_isolation_name(mpilab_isolation_t i)
{
    return (unsigned)i < 3 ? iso_names[i] : "?";
}

int mpilab_isolation_parse(const char *s, mpilab_isolation_t *out)
{
    for (int k = 0; k < 3; k++)
        if (strcmp(s, iso_names[k]) == 0) {
            *out = (mpilab_isolation_t)k;
            return 0;
        }
    return -1;
}

/* Whether some rank's flag is set, known on every rank: the measurement's agreements (setup,
 * warm-up, memory, data check), none inside a timed region. A reduce and a broadcast rather
 * than MPI_Allreduce: on a real MPI the same answer at a few microseconds more; simulated,
 * SimGrid's default MPI_Allreduce is exactly this pair, and with the survey's binomial
 * reduce (smpi/reduce:binomial) it becomes a tree instead of every rank sending to the root
 * at once (p^2 simulator work per call at 1024 ranks), without changing the MPI_Allreduce
 * that an allreduce measurement times. */
static int any_rank(MPI_Comm comm, int flag)
{
    int any = 0;
    MPI_Reduce(&flag, &any, 1, MPI_INT, MPI_LOR, 0, comm);
    MPI_Bcast(&any, 1, MPI_INT, 0, comm);
    return any;
}

/* Zero-byte confirmation of completion: every rank tells the root. */
static void confirm(mpilab_bench_t *b)
{
    int root = b->o.root;
    if (b->rank == root) {
        for (int k = 1; k < b->size; k++)
            MPI_Recv(NULL, 0, MPI_BYTE, MPI_ANY_SOURCE, TAG_CONFIRM, b->comm, MPI_STATUS_IGNORE);
    } else {
        MPI_Send(NULL, 0, MPI_BYTE, root, TAG_CONFIRM, b->comm);
    }
}

/* Root timing: one sample of the confirmation alone, after a barrier, interleaved with the
 * repetitions (one after each), so that it sees the same load as they do. On the root. */
static double confirm_sample(mpilab_bench_t *b)
{
    MPI_Barrier(b->comm);
    double t0 = mpilab_wtime();
    confirm(b);
    return mpilab_wtime() - t0;
}

static int cmp_double(const void *a, const void *c)
{
    double x = *(const double *)a, y = *(const double *)c;
    return (x > y) - (x < y);
}

/* One-way zero-byte time between the root and every other rank: median half round trip. */
static void measure_ack(mpilab_bench_t *b)
{
    int root = b->o.root;
    for (int i = 0; i < b->size; i++) {
        if (i == root)
            continue;
        double rt[ACK_PROBES];
        for (int k = 0; k < ACK_PROBES; k++) {
            if (b->rank == root) {
                double t0 = mpilab_wtime();
                MPI_Send(NULL, 0, MPI_BYTE, i, TAG_ACKPP, b->comm);
                MPI_Recv(NULL, 0, MPI_BYTE, i, TAG_ACKPP, b->comm, MPI_STATUS_IGNORE);
                rt[k] = 0.5 * (mpilab_wtime() - t0);
            } else if (b->rank == i) {
                MPI_Recv(NULL, 0, MPI_BYTE, root, TAG_ACKPP, b->comm, MPI_STATUS_IGNORE);
                MPI_Send(NULL, 0, MPI_BYTE, root, TAG_ACKPP, b->comm);
            }
        }
        if (b->rank == root) {
            qsort(rt, ACK_PROBES, sizeof rt[0], cmp_double);
            b->ack[i] = rt[ACK_PROBES / 2];
        }
    }
    MPI_Bcast(b->ack, b->size, MPI_DOUBLE, root, b->comm);
    b->have_ack = 1;
}

/* Wait for the start of a repetition; returns the local start time and sets *late. */
static double rep_start(mpilab_bench_t *b, double window, int *late)
{
    *late = 0;
    if (b->o.isolation == MPILAB_ISO_SYNC) {
        double ls = mpilab_clock_to_local(&b->sync, b->rank, window);
        double now = mpilab_wtime();
        if (now > ls) {
            *late = 1;
            return now;
        }
        while (mpilab_wtime() < ls)
            ;
        return ls;
    }
    MPI_Barrier(b->comm);
    return mpilab_wtime();
}

/* Operation-specific timing: per non-root rank i, the time from the root's start until
 * i's acknowledgement arrives, minus the one-way acknowledgement time; max over i. */
static double rep_opspec(mpilab_bench_t *b, const mpilab_op_t *op, mpilab_op_run_t *ctx, int *failed)
{
    int root = b->o.root;
    double worst = 0.0;
    if (b->size == 1) {
        double t0 = mpilab_wtime();
        *failed |= op->run(ctx) != MPI_SUCCESS;
        return mpilab_wtime() - t0;
    }
    for (int i = 0; i < b->size; i++) {
        if (i == root)
            continue;
        MPI_Barrier(b->comm);
        double t0 = mpilab_wtime();
        *failed |= op->run(ctx) != MPI_SUCCESS;
        if (b->rank == i)
            MPI_Send(NULL, 0, MPI_BYTE, root, TAG_ACK, b->comm);
        if (b->rank == root) {
            MPI_Recv(NULL, 0, MPI_BYTE, i, TAG_ACK, b->comm, MPI_STATUS_IGNORE);
            double task = mpilab_wtime() - t0 - b->ack[i];
            if (i == (root == 0 ? 1 : 0) || task > worst)
                worst = task;
        }
    }
    return worst;
}

/* One sample (per-repetition time) known on the root; *late set on the root. */
static double one_sample(mpilab_bench_t *b, const mpilab_op_t *op, mpilab_op_run_t *ctx, mpilab_timing_t timing,
                         double window, int *late_out, int *failed)
{
    int root = b->o.root;
    int late = 0;
    if (timing == MPILAB_TIMING_OPSPEC) {
        *late_out = 0;
        return rep_opspec(b, op, ctx, failed);
    }
    size_t reps = b->o.isolation == MPILAB_ISO_NONE ? b->o.pipeline_depth : 1;
    double t0 = rep_start(b, window, &late);
    for (size_t k = 0; k < reps; k++)
        *failed |= op->run(ctx) != MPI_SUCCESS;
    double t1 = mpilab_wtime();
    double value = 0.0;
    double in[3], outv[3] = {0, 0, 0};
    switch (timing) {
    case MPILAB_TIMING_MAX:
        in[0] = t1 - t0;
        in[1] = late;
        MPI_Reduce(in, outv, 2, MPI_DOUBLE, MPI_MAX, root, b->comm);
        value = outv[0];
        break;
    case MPILAB_TIMING_ROOT:
        confirm(b);
        t1 = mpilab_wtime();
        in[0] = late;
        MPI_Reduce(in, &outv[1], 1, MPI_DOUBLE, MPI_MAX, root, b->comm);
        value = t1 - t0; /* raw: the confirmation is subtracted by root_decide */
        break;
    case MPILAB_TIMING_GLOBAL:
    default: {
        double g0 = b->o.isolation == MPILAB_ISO_SYNC ? window : mpilab_clock_to_global(&b->sync, b->rank, t0);
        in[0] = -g0;
        in[1] = late;
        in[2] = mpilab_clock_to_global(&b->sync, b->rank, t1);
        MPI_Reduce(in, outv, 3, MPI_DOUBLE, MPI_MAX, root, b->comm);
        value = outv[2] + outv[0]; /* latest end - earliest (common) start */
        break;
    }
    }
    *late_out = outv[1] > 0.0;
    return value / (double)reps;
}

/* Set up the operation on every rank and run the warm-up calls; on failure the operation is
 * torn down and err says why. */
static int measure_setup(mpilab_bench_t *b, const mpilab_op_t *op, size_t bytes, mpilab_op_run_t *ctx,
                         char *err, size_t errlen)
{
    mpilab_op_run_init(ctx, op, bytes, b->o.root, b->comm);
    int bad = op->setup(ctx) != 0, anybad = any_rank(b->comm, bad);
    if (anybad) {
        if (!bad)
            op->teardown(ctx);
        snprintf(err, errlen, "%s:%s: setup failed for %zu bytes", op->name, op->impl, bytes);
        return -1;
    }
    for (size_t w = 0; w < b->o.warmup; w++) {
        int rc = op->run(ctx), anyfail = any_rank(b->comm, rc != MPI_SUCCESS);
        if (anyfail) {
            op->teardown(ctx);
            /* grid entries say why (no grid, bad P): the reason is the same on every rank */
            const int grid = (op->flags & MPILAB_OP_GRID) && *mpilab_multilane_last_error();
            snprintf(err, errlen, "%s:%s: the operation failed at %zu bytes%s%s", op->name, op->impl,
                     bytes, grid ? ": " : "", grid ? mpilab_multilane_last_error() : "");
            return -1;
        }
    }
    return 0;
}

/* The largest offset-error bound of the sync in use, now: each rank's bound at the end of the
 * synchronisation grows by its drift uncertainty per second since (a busy machine can leave
 * an offset-only model with a drift bound of several percent, i.e. milliseconds within a
 * measurement of some tens of ms). */
static double sync_uncertainty_now(const mpilab_bench_t *b)
{
    double age = mpilab_wtime() - b->sync_end, worst = 0.0;
    if (!(age > 0.0))
        age = 0.0;
    for (int r = 0; r < b->sync.nranks; r++) {
        double u = b->sync.ranks[r].uncertainty + b->sync.ranks[r].drift_uncertainty * age;
        if (u > worst)
            worst = u;
    }
    return worst;
}

/* Clock synchronisation (when need_sync, not for opspec timing) and the acknowledgement
 * calibration (opspec timing), each as the options ask; -1 with err if the sync failed. */
static int measure_calibrate(mpilab_bench_t *b, mpilab_timing_t timing, int need_sync, char *err,
                             size_t errlen)
{
    /* an exact synchronisation (one global clock) stays exact: nothing to resynchronise */
    int exact = b->have_sync && b->sync.method == MPILAB_SYNC_EXACT;
    if (need_sync && timing != MPILAB_TIMING_OPSPEC && ((b->o.resync && !exact) || !b->have_sync)) {
        /* the first synchronisation resolves the drift over its window; a resynchronisation
         * takes it from the line through the previous one and itself (clocksync.h) */
        mpilab_clocksync_t prev = b->sync;
        int had = b->have_sync;
        b->have_sync = 0;
        if (!had && mpilab_sync_resolve(b->comm, b->o.sync_method, &b->o.sync_method, &b->sync_nodes) != MPI_SUCCESS) {
            snprintf(err, errlen, "clock synchronisation failed: choosing the method");
            return -1;
        }
        if (mpilab_clocksync_run_window(b->comm, b->o.sync_method, had ? 0.0 : MPILAB_SYNC_DRIFT_WINDOW_S,
                                        &b->sync) != MPI_SUCCESS) {
            if (had)
                mpilab_clocksync_free(&prev);
            snprintf(err, errlen, "clock synchronisation failed");
            return -1;
        }
        if (had) {
            (void)mpilab_clocksync_refine_drift(&b->sync, &prev);
            mpilab_clocksync_free(&prev);
        }
        b->have_sync = 1;
        b->sync_end = mpilab_wtime();
        b->sync.requested = b->sync_requested;
        b->sync.nodes = b->sync_nodes;
    }
    if (timing == MPILAB_TIMING_OPSPEC && !b->have_ack)
        measure_ack(b);
    return 0;
}

/* Root timing's per-repetition buffers: raw times, their late flags and the confirmation
 * samples (all NULL for the other timing methods). */
typedef struct root_bufs {
    double *raw, *conf;
    unsigned char *ontime;
    size_t cap; /* capacity of these and of the result's samples and valid (on the root) */
} root_bufs_t;

/* First capacity of a measurement's sample arrays (they double as needed). */
#define SAMPLES_CAP0 256

static void root_bufs_free(root_bufs_t *rb)
{
    free(rb->raw);
    free(rb->conf);
    free(rb->ontime);
}

/* The result's sample arrays and, for root timing, rb, at their first capacity (they grow on
 * the root as repetitions come: the time budget, not max_reps, usually ends a measurement);
 * agreed on every rank: -1 (with everything freed) if any rank ran out of memory. */
static int measure_alloc(mpilab_bench_t *b, int rooted, mpilab_result_t *res, root_bufs_t *rb)
{
    size_t cap = b->o.prec.max_reps < SAMPLES_CAP0 ? b->o.prec.max_reps : SAMPLES_CAP0;
    rb->cap = cap;
    res->samples = calloc(cap, sizeof *res->samples);
    res->valid = calloc(cap, 1);
    rb->raw = rooted ? calloc(cap, sizeof *rb->raw) : NULL;
    rb->conf = rooted ? calloc(cap, sizeof *rb->conf) : NULL;
    rb->ontime = rooted ? calloc(cap, 1) : NULL;
    int oom = !res->samples || !res->valid || (rooted && (!rb->raw || !rb->conf || !rb->ontime));
    int anyoom = any_rank(b->comm, oom);
    if (anyoom) {
        root_bufs_free(rb);
        mpilab_result_free(res);
        return -1;
    }
    return 0;
}

/* Grows one array to cap elements of size sz (kept on failure); 0 or -1. */
static int grow_one(void **p, size_t cap, size_t sz)
{
    if (!*p)
        return 0;
    void *q = realloc(*p, cap * sz);
    if (!q)
        return -1;
    *p = q;
    return 0;
}

/* Room for at least `need` samples (and root timing's buffers): doubles the capacity, never
 * beyond max_reps; 0, or -1 when memory ran out (the arrays keep their old size). */
static int measure_reserve(mpilab_result_t *res, root_bufs_t *rb, size_t need, size_t max_reps)
{
    if (need <= rb->cap)
        return 0;
    size_t cap = mpilab_stats_capacity(rb->cap, need, max_reps);
    if (grow_one((void **)&res->samples, cap, sizeof *res->samples) || grow_one((void **)&res->valid, cap, 1) ||
        grow_one((void **)&rb->raw, cap, sizeof *rb->raw) || grow_one((void **)&rb->conf, cap, sizeof *rb->conf) ||
        grow_one((void **)&rb->ontime, cap, 1))
        return -1;
    rb->cap = cap;
    return 0;
}

/* On the root: record sample n (value v, late flag, confirmation sample cv); returns n + 1. */
static size_t record_sample(mpilab_timing_t timing, mpilab_result_t *res, root_bufs_t *rb, size_t n,
                            double v, int late, double cv)
{
    if (timing == MPILAB_TIMING_ROOT) {
        /* corrected with the median of all confirmations so far; a corrected time
         * <= 0 is invalid, never averaged in */
        rb->raw[n] = v;
        rb->ontime[n] = !late;
        rb->conf[n] = cv;
        n++;
        /* the correction (a median over every confirmation) is redone where the stop rule
         * judges, and once more after the last repetition (root_final) */
        if (mpilab_stats_checkpoint(n)) {
            memcpy(res->valid, rb->ontime, n);
            mpilab_root_correct(rb->raw, n, rb->conf, n, res->samples, res->valid, NULL);
        } else {
            res->samples[n - 1] = v;
            res->valid[n - 1] = 0; /* not judged before the next correction */
        }
    } else {
        res->samples[n] = v;
        /* opspec subtracts a one-way acknowledgement time: a result <= 0 is
         * impossible, invalid, never averaged in (counted in `negative`) */
        res->valid[n] = !late && (timing != MPILAB_TIMING_OPSPEC || v > 0.0);
        if (timing == MPILAB_TIMING_OPSPEC && !late && !(v > 0.0))
            res->negative++;
        n++;
    }
    return n;
}

/* The repetitions until the root's stop decision (broadcast: with sync isolation as a
 * negative next window); returns the number of samples, known on the root. */
static size_t measure_loop(mpilab_bench_t *b, const mpilab_op_t *op, mpilab_op_run_t *ctx, mpilab_timing_t timing,
                           mpilab_result_t *res, root_bufs_t *rb, int *failed)
{
    int root = b->o.root;
    int rooted = timing == MPILAB_TIMING_ROOT;
    size_t depth = b->o.isolation == MPILAB_ISO_NONE ? b->o.pipeline_depth : 1;
    int use_window = b->o.isolation == MPILAB_ISO_SYNC && timing != MPILAB_TIMING_OPSPEC;
    double slack = SYNC_SLACK0, window = 0.0;
    if (use_window) {
        if (b->rank == root)
            window = mpilab_clock_to_global(&b->sync, root, mpilab_wtime()) + slack;
        MPI_Bcast(&window, 1, MPI_DOUBLE, root, b->comm);
    }
    size_t n = 0;
    for (;;) {
        int late = 0;
        double v = one_sample(b, op, ctx, timing, window, &late, failed);
        double cv = rooted ? confirm_sample(b) / (double)depth : 0.0;
        int stop = 0;
        if (b->rank == root) {
            n = record_sample(timing, res, rb, n, v, late, cv);
            stop = mpilab_stats_should_stop(res->samples, res->valid, n, &b->o.prec) ||
                   measure_reserve(res, rb, n + 1, b->o.prec.max_reps) != 0;
            if (use_window) {
                if (late && slack < SYNC_SLACK_MAX)
                    slack *= 2.0;
                double next = mpilab_clock_to_global(&b->sync, root, mpilab_wtime()) + slack;
                window = stop ? -1.0 : next;
            }
        }
        if (use_window) {
            MPI_Bcast(&window, 1, MPI_DOUBLE, root, b->comm);
            stop = window < 0.0;
        } else {
            MPI_Bcast(&stop, 1, MPI_INT, root, b->comm);
        }
        if (stop)
            break;
    }
    return n;
}

/* Data check after the last repetition (receive buffers hold the last call's data); 1 if the
 * data were right on every rank and no call failed. */
static int measure_check_data(mpilab_bench_t *b, const mpilab_op_t *op, mpilab_op_run_t *ctx, int failed)
{
    /* validate runs on every rank or on none: it may communicate (ops.h) */
    int anyfailed = any_rank(b->comm, failed);
    int wrong = anyfailed ? 1 : op->validate(ctx) != 0, anywrong = any_rank(b->comm, wrong);
    return !anywrong;
}

/* Root timing: the confirmation's own statistics and the count of impossible corrected
 * times, from the root to every rank. */
static void share_confirm(mpilab_bench_t *b, mpilab_result_t *res, root_bufs_t *rb, size_t n)
{
    int root = b->o.root;
    double cnt[2] = {0, 0};
    if (b->rank == root) {
        mpilab_stats_compute(rb->conf, NULL, n, b->o.prec.cl, b->o.prec.eps, &res->confirm_stats);
        for (size_t k = 0; k < n; k++)
            cnt[0] += rb->ontime[k] && !res->valid[k];
        cnt[1] = res->confirm_stats.median;
    }
    MPI_Bcast(cnt, 2, MPI_DOUBLE, root, b->comm);
    MPI_Bcast(rb->conf, (int)n, MPI_DOUBLE, root, b->comm);
    if (b->rank != root)
        mpilab_stats_compute(rb->conf, NULL, n, b->o.prec.cl, b->o.prec.eps, &res->confirm_stats);
    res->negative = (size_t)cnt[0];
    res->confirm_time = cnt[1];
}

/* The root's samples, flags and counts to every rank, and the statistics computed on each. */
static void measure_share(mpilab_bench_t *b, mpilab_timing_t timing, mpilab_result_t *res,
                          root_bufs_t *rb, size_t n)
{
    int root = b->o.root;
    int rooted = timing == MPILAB_TIMING_ROOT;
    unsigned long long nn = n;
    MPI_Bcast(&nn, 1, MPI_UNSIGNED_LONG_LONG, root, b->comm);
    n = (size_t)nn;
    if (b->rank == root && rooted) { /* root_final: every confirmation in the correction */
        memcpy(res->valid, rb->ontime, n);
        mpilab_root_correct(rb->raw, n, rb->conf, n, res->samples, res->valid, NULL);
    }
    int oom = b->rank != root && measure_reserve(res, rb, n, n) != 0;
    int anyoom = any_rank(b->comm, oom);
    if (anyoom) /* a rank cannot hold the root's samples: they are kept up to its capacity */
        n = nn = 0;
    MPI_Bcast(res->samples, (int)n, MPI_DOUBLE, root, b->comm);
    MPI_Bcast(res->valid, (int)n, MPI_UNSIGNED_CHAR, root, b->comm);
    mpilab_stats_compute(res->samples, res->valid, n, b->o.prec.cl, b->o.prec.eps, &res->stats);
    mpilab_stats_compute(NULL, NULL, 0, b->o.prec.cl, b->o.prec.eps, &res->confirm_stats);
    res->confirm_time = 0.0;
    if (!rooted) { /* opspec's count, known on the root */
        unsigned long long neg = res->negative;
        MPI_Bcast(&neg, 1, MPI_UNSIGNED_LONG_LONG, root, b->comm);
        res->negative = (size_t)neg;
    }
    if (rooted)
        share_confirm(b, res, rb, n);
}

int mpilab_bench_measure(mpilab_bench_t *b, const mpilab_op_t *op, size_t bytes,
                         mpilab_timing_t timing, mpilab_result_t *res, char *err, size_t errlen)
{
    memset(res, 0, sizeof *res);
    res->applied = 1;
    if ((unsigned)timing > MPILAB_TIMING_OPSPEC) {
        snprintf(err, errlen, "unknown timing method %d", (int)timing);
        return -1;
    }
    if (timing == MPILAB_TIMING_OPSPEC && !(op->flags & MPILAB_OP_OPSPEC)) {
        res->applied = 0;
        res->data_ok = 1;
        mpilab_stats_compute(NULL, NULL, 0, b->o.prec.cl, b->o.prec.eps, &res->stats);
        return 0;
    }
    int root = b->o.root;
    mpilab_op_run_t run, *ctx = &run;
    if (measure_setup(b, op, bytes, ctx, err, errlen) != 0)
        return -1;
    /* wall: the cost of the measurement itself (clock sync, confirmation/ack calibration
     * and the repetitions), not buffer setup, warm-up and data validation */
    double wall0 = mpilab_wtime();
    int need_sync = timing == MPILAB_TIMING_GLOBAL || b->o.isolation == MPILAB_ISO_SYNC;
    if (measure_calibrate(b, timing, need_sync, err, errlen) != 0) {
        op->teardown(ctx);
        return -1;
    }
    int rooted = timing == MPILAB_TIMING_ROOT;
    root_bufs_t rb;
    if (measure_alloc(b, rooted, res, &rb) != 0) {
        op->teardown(ctx);
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    int failed = 0;
    size_t n = measure_loop(b, op, ctx, timing, res, &rb, &failed);
    double wall = mpilab_wtime() - wall0;
    res->data_ok = measure_check_data(b, op, ctx, failed);
    measure_share(b, timing, res, &rb, n);
    root_bufs_free(&rb);
    /* the entry's derived values from the median, while its state still holds the run's */
    mpilab_derived_clear(&res->derived);
    res->derived_ok = op->derive && op->derive(ctx, res->stats.median, &res->derived) == 0;
    /* a key the entry does not declare would be dropped from the results without a word:
     * refused on every rank (the reason names the key where it was set) */
    int undeclared = res->derived_ok && mpilab_derived_check(op, &res->derived, err, errlen) != 0;
    if (any_rank(b->comm, undeclared)) {
        op->teardown(ctx);
        if (!undeclared)
            snprintf(err, errlen, "entry %s:%s: derive set a key its derived keys (%s) do not declare "
                     "(on another rank)", op->name, op->impl, op->derived);
        return -1;
    }
    op->teardown(ctx);
    res->sync_residual = need_sync && b->have_sync && timing != MPILAB_TIMING_OPSPEC ? b->sync.max_residual : 0.0;
    res->sync_uncertainty = need_sync && b->have_sync && timing != MPILAB_TIMING_OPSPEC ? sync_uncertainty_now(b) : 0.0;
    MPI_Bcast(&wall, 1, MPI_DOUBLE, root, b->comm);
    res->wall = wall;
    return 0;
}

void mpilab_result_free(mpilab_result_t *r)
{
    if (!r)
        return;
    free(r->samples);
    free(r->valid);
    r->samples = NULL;
    r->valid = NULL;
}
