/* The suite's operation-table entries: setup / run / validate / teardown per benchmark.
 * Every entry that moves data fills send buffers with mpilab_ops_pattern(sender, index) and
 * checks the receive buffers against the peer's pattern in validate. */
#include <limits.h>
#include <stdio.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "suite/suite_internal.h"

#define SENTINEL 0x5A
#define TAG_DATA 7401
#define TAG_REPLY 7402
#define TAG_LEFT 7403
#define TAG_RIGHT 7404
#define TAG_STATS 7405
#define MAX_SLOTS 4 /* receive slots of a streaming receiver (messages k % slots) */
#define CALIB_RUNS 5

typedef struct sctx {
    enum suite_kind kind;
    MPI_Comm comm;
    int rank, size;
    int role;      /* -1 idle; p2p: 0 sender/first, 1 second */
    int peer;
    size_t bytes;
    size_t nslots; /* receive slots of bytes each */
    unsigned char *sbuf, *rbuf;
    int received;  /* slots (or messages) received at least once */
    int64_t window, pairs, msgs;
    size_t poll_iters;
    double work_rate;
    double work_iters, run_time;
    double t_comm, t_comp;
    double peer_work_iters, peer_run_time, peer_work_rate; /* COMB, from validate */
    size_t comp_iters;
    uint64_t runs;
    int left, right; /* exchange neighbours */
} sctx_t;

static volatile double work_sink;

void suite_work(size_t iters)
{
    double x = work_sink;
    for (size_t k = 0; k < iters; k++)
        x = x * 0.999999 + 1e-7;
    work_sink = x;
}

/* Seconds of CPU time consumed by the calling thread. */
static double thread_cpu_seconds(void)
{
    struct timespec ts;
    if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts) != 0)
        return MPI_Wtime(); /* no per-thread clock: fall back to wall time */
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Work-loop iterations per second of this thread's own CPU time. Timing the
 * calibration on the thread's CPU clock, not the wall clock, keeps it the
 * uncontended peak rate even when other processes share the core (an
 * oversubscribed job, a concurrent test): a wall-clock calibration taken while
 * the core was shared came out low, and COMB availability then exceeded 1. */
double suite_work_rate(void)
{
    size_t n = 1u << 16;
    double best = 0.0;
    for (;;) { /* grow until one run takes >= 1 ms of CPU, then best of five */
        double t0 = thread_cpu_seconds();
        suite_work(n);
        double dt = thread_cpu_seconds() - t0;
        if (dt >= 1e-3 || n > ((size_t)1 << 30))
            break;
        n *= 2;
    }
    for (int r = 0; r < 5; r++) {
        double t0 = thread_cpu_seconds();
        suite_work(n);
        double dt = thread_cpu_seconds() - t0;
        double rate = dt > 0 ? (double)n / dt : 0.0;
        if (rate > best)
            best = rate;
    }
    return best;
}

/* ---- buffers ---- */

static void fill(unsigned char *b, size_t n, int rank)
{
    for (size_t k = 0; k < n; k++)
        b[k] = mpilab_ops_pattern(rank, k);
}

static int check(const unsigned char *b, size_t n, int rank)
{
    for (size_t k = 0; k < n; k++)
        if (b[k] != mpilab_ops_pattern(rank, k))
            return 1;
    return 0;
}

/* Collective: 0 if every rank's flag is 0. */
static int all_ok(int bad, MPI_Comm comm)
{
    int any = 0;
    MPI_Allreduce(&bad, &any, 1, MPI_INT, MPI_LOR, comm);
    return any == 0;
}

static void ctx_free(sctx_t *c)
{
    if (!c)
        return;
    free(c->sbuf);
    free(c->rbuf);
    free(c);
}

/* The kind of a fixed entry (its param; COMB entries carry their poll interval instead). */
static enum suite_kind kind_of(const mpilab_op_run_t *r)
{
    return (enum suite_kind)r->op->param;
}

/* Common setup: roles, buffers. Collective (agrees on success). */
static int setup_common(const mpilab_op_run_t *run, enum suite_kind kind, size_t sfactor, size_t nslots,
                        sctx_t **out)
{
    *out = NULL;
    size_t bytes = run->bytes;
    MPI_Comm comm = run->comm;
    const mpilab_suite_config_t *cfg = mpilab_suite_config();
    sctx_t *c = calloc(1, sizeof *c);
    int bad = c == NULL || bytes > INT_MAX;
    if (c) {
        c->kind = kind;
        c->comm = comm;
        MPI_Comm_rank(comm, &c->rank);
        MPI_Comm_size(comm, &c->size);
        c->bytes = bytes;
        c->nslots = nslots;
        c->role = -1;
        c->window = (int64_t)cfg->window;
        c->msgs = (int64_t)cfg->comb_msgs;
        c->left = (c->rank + c->size - 1) % c->size;
        c->right = (c->rank + 1) % c->size;
        if (kind == SK_STREAM_MULTI) {
            int64_t k = cfg->pairs ? (int64_t)cfg->pairs : c->size / 2;
            c->pairs = k;
            if (k < 1 || 2 * k > c->size)
                bad = 1; /* not enough ranks for the asked pairs */
            else if (c->rank < 2 * k) {
                c->role = c->rank < k ? 0 : 1;
                c->peer = c->rank < k ? c->rank + (int)k : c->rank - (int)k;
            }
        } else if (kind == SK_SENDRECV || kind == SK_EXCHANGE || kind == SK_OVERLAP_IALLREDUCE) {
            c->role = 0;
        } else if (c->size < 2) {
            bad = 1;
        } else if (c->rank < 2) {
            c->role = c->rank;
            c->peer = 1 - c->rank;
        }
        if (!bad && c->role >= 0) {
            size_t sn = bytes * sfactor, rn = bytes * nslots;
            c->sbuf = malloc(sn > 0 ? sn : 1);
            c->rbuf = malloc(rn > 0 ? rn : 1);
            if (!c->sbuf || !c->rbuf)
                bad = 1;
            else
                memset(c->rbuf, SENTINEL, rn > 0 ? rn : 1);
        }
    }
    if (!all_ok(bad, comm)) {
        ctx_free(c);
        return -1;
    }
    *out = c;
    return 0;
}

/* setup_common (collective) with one send buffer, which every rank with a role fills with
 * its own pattern, and nslots receive slots; the measurement's state (NULL if it failed). */
static sctx_t *setup_filled(mpilab_op_run_t *r, enum suite_kind kind, size_t nslots)
{
    sctx_t *c;
    if (setup_common(r, kind, 1, nslots, &c) != 0)
        return NULL;
    if (c->role >= 0)
        fill(c->sbuf, r->bytes, c->rank);
    r->state = c;
    return c;
}

/* The start of every run: counted (suite-wide and for the measurement); its state. */
static sctx_t *count_run(mpilab_op_run_t *r)
{
    sctx_t *c = r->state;
    suite_counters.runs++;
    c->runs++;
    return c;
}

/* ---- point to point (ranks 0 and 1) ---- */

/* Setup of pingpong, pingping and sendrecv: one message buffer each way. */
static int su_message(mpilab_op_run_t *r)
{
    return setup_filled(r, kind_of(r), 1) ? 0 : -1;
}

static int run_pingpong(mpilab_op_run_t *r)
{
    sctx_t *c = count_run(r);
    if (c->role < 0)
        return MPI_SUCCESS;
    int n = (int)c->bytes, rc;
    if (c->role == 0) {
        rc = MPI_Send(c->sbuf, n, MPI_BYTE, c->peer, TAG_DATA, c->comm);
        if (rc == MPI_SUCCESS)
            rc = MPI_Recv(c->rbuf, n, MPI_BYTE, c->peer, TAG_DATA, c->comm, MPI_STATUS_IGNORE);
    } else {
        rc = MPI_Recv(c->rbuf, n, MPI_BYTE, c->peer, TAG_DATA, c->comm, MPI_STATUS_IGNORE);
        if (rc == MPI_SUCCESS)
            rc = MPI_Send(c->sbuf, n, MPI_BYTE, c->peer, TAG_DATA, c->comm);
    }
    c->received = 1;
    return rc;
}

static int run_pingping(mpilab_op_run_t *r)
{
    sctx_t *c = count_run(r);
    if (c->role < 0)
        return MPI_SUCCESS;
    int n = (int)c->bytes;
    MPI_Request rq;
    int rc = MPI_Isend(c->sbuf, n, MPI_BYTE, c->peer, TAG_DATA, c->comm, &rq);
    if (rc != MPI_SUCCESS)
        return rc;
    rc = MPI_Recv(c->rbuf, n, MPI_BYTE, c->peer, TAG_DATA, c->comm, MPI_STATUS_IGNORE);
    int rc2 = MPI_Wait(&rq, MPI_STATUS_IGNORE);
    c->received = 1;
    return rc != MPI_SUCCESS ? rc : rc2;
}

/* Data from the peer in slot 0 (p2p entries), or nothing to check for idle ranks. */
static int validate_p2p(mpilab_op_run_t *r)
{
    sctx_t *c = r->state;
    if (c->role < 0)
        return 0;
    if (!c->received)
        return 1;
    for (size_t s = 0; s < c->nslots; s++)
        if (check(c->rbuf + s * c->bytes, c->bytes, c->peer))
            return 1;
    return 0;
}

/* ---- sendrecv (periodic chain) and exchange (both ring neighbours), all ranks ---- */

static int run_sendrecv(mpilab_op_run_t *r)
{
    sctx_t *c = count_run(r);
    int n = (int)c->bytes;
    int rc = MPI_Sendrecv(c->sbuf, n, MPI_BYTE, c->right, TAG_DATA, c->rbuf, n, MPI_BYTE, c->left, TAG_DATA,
                          c->comm, MPI_STATUS_IGNORE);
    c->received = 1;
    return rc;
}

static int validate_sendrecv(mpilab_op_run_t *r)
{
    sctx_t *c = r->state;
    return !c->received || check(c->rbuf, c->bytes, c->left);
}

static int su_exchange(mpilab_op_run_t *r)
{
    size_t b = r->bytes;
    sctx_t *c;
    /* sbuf: [to left | to right]; rbuf: [from left | from right] */
    if (setup_common(r, kind_of(r), 2, 2, &c) != 0)
        return -1;
    fill(c->sbuf, b, c->rank);
    for (size_t k = 0; k < b; k++)
        c->sbuf[b + k] = mpilab_ops_pattern(c->rank + c->size, k);
    r->state = c;
    return 0;
}

static int run_exchange(mpilab_op_run_t *r)
{
    sctx_t *c = count_run(r);
    int n = (int)c->bytes;
    MPI_Request rq[4];
    /* from the left neighbour comes what it sent to its right, and vice versa */
    MPI_Irecv(c->rbuf, n, MPI_BYTE, c->left, TAG_RIGHT, c->comm, &rq[0]);
    MPI_Irecv(c->rbuf + c->bytes, n, MPI_BYTE, c->right, TAG_LEFT, c->comm, &rq[1]);
    MPI_Isend(c->sbuf, n, MPI_BYTE, c->left, TAG_LEFT, c->comm, &rq[2]);
    MPI_Isend(c->sbuf + c->bytes, n, MPI_BYTE, c->right, TAG_RIGHT, c->comm, &rq[3]);
    MPI_Status st[4]; /* real statuses: MPICH's headers make GCC 12 flag MPI_STATUSES_IGNORE */
    int rc = MPI_Waitall(4, rq, st);
    c->received = 1;
    return rc;
}

static int validate_exchange(mpilab_op_run_t *r)
{
    sctx_t *c = r->state;
    if (!c->received)
        return 1;
    /* left neighbour's "to right" block carries pattern(left + size); right's "to left" pattern(right) */
    return check(c->rbuf, c->bytes, c->left + c->size) || check(c->rbuf + c->bytes, c->bytes, c->right);
}

/* ---- streaming: a window of sends answered by one reply ---- */

static int su_stream(mpilab_op_run_t *r)
{
    const mpilab_suite_config_t *cfg = mpilab_suite_config();
    size_t slots = cfg->window < MAX_SLOTS ? cfg->window : MAX_SLOTS;
    return setup_filled(r, kind_of(r), slots) ? 0 : -1;
}

static int run_stream(mpilab_op_run_t *r)
{
    sctx_t *c = count_run(r);
    if (c->role < 0)
        return MPI_SUCCESS;
    int n = (int)c->bytes;
    size_t w = (size_t)c->window;
    MPI_Request *rq = malloc(w * sizeof *rq);
    MPI_Status *st = malloc(w * sizeof *st);
    if (!rq || !st) {
        free(rq);
        free(st);
        return MPI_ERR_NO_MEM;
    }
    int rc;
    if (c->role == 0) {
        for (size_t k = 0; k < w; k++) {
            MPI_Isend(c->sbuf, n, MPI_BYTE, c->peer, TAG_DATA, c->comm, &rq[k]);
            suite_counters.stream_sends++;
        }
        rc = MPI_Waitall((int)w, rq, st);
        if (rc == MPI_SUCCESS)
            rc = MPI_Recv(NULL, 0, MPI_BYTE, c->peer, TAG_REPLY, c->comm, MPI_STATUS_IGNORE);
        suite_counters.stream_windows++;
    } else {
        for (size_t k = 0; k < w; k++)
            MPI_Irecv(c->rbuf + (k % c->nslots) * c->bytes, n, MPI_BYTE, c->peer, TAG_DATA, c->comm, &rq[k]);
        rc = MPI_Waitall((int)w, rq, st);
        if (rc == MPI_SUCCESS)
            rc = MPI_Send(NULL, 0, MPI_BYTE, c->peer, TAG_REPLY, c->comm);
        c->received = 1;
    }
    free(rq);
    free(st);
    return rc;
}

static int validate_stream(mpilab_op_run_t *r)
{
    sctx_t *c = r->state;
    if (c->role != 1) /* senders and idle ranks receive no data (the reply is empty) */
        return 0;
    return validate_p2p(r);
}

/* ---- COMB polling method: both directions, poll between fixed work loops ---- */

/* The entry's param is its poll interval (work-loop iterations between polls). */
static int su_comb(mpilab_op_run_t *r)
{
    sctx_t *c = setup_filled(r, SK_COMB, 1);
    if (!c)
        return -1;
    c->poll_iters = r->op->param;
    c->work_rate = suite_work_rate();
    return 0;
}

/* COMB validation: the two ranks of the pair also swap their work counters, so the rank
 * that writes the results can report both ranks' CPU availability (validate runs on every
 * rank or on none: ops.h). */
static int validate_comb(mpilab_op_run_t *r)
{
    sctx_t *c = r->state;
    if (c->role >= 0) {
        double mine[3] = {c->work_iters, c->run_time, c->work_rate}, theirs[3] = {NAN, NAN, NAN};
        if (MPI_Sendrecv(mine, 3, MPI_DOUBLE, c->peer, TAG_STATS, theirs, 3, MPI_DOUBLE, c->peer, TAG_STATS,
                         c->comm, MPI_STATUS_IGNORE) != MPI_SUCCESS)
            return 1;
        c->peer_work_iters = theirs[0];
        c->peer_run_time = theirs[1];
        c->peer_work_rate = theirs[2];
    }
    return validate_p2p(r);
}

static int run_comb(mpilab_op_run_t *r)
{
    sctx_t *c = count_run(r);
    if (c->role < 0)
        return MPI_SUCCESS;
    int n = (int)c->bytes;
    int64_t want = c->msgs, got = 0, sent = 0;
    MPI_Request rr = MPI_REQUEST_NULL, sr = MPI_REQUEST_NULL;
    double t0 = MPI_Wtime();
    int rc = MPI_Irecv(c->rbuf, n, MPI_BYTE, c->peer, TAG_DATA, c->comm, &rr);
    if (rc == MPI_SUCCESS)
        rc = MPI_Isend(c->sbuf, n, MPI_BYTE, c->peer, TAG_DATA, c->comm, &sr);
    sent = 1;
    suite_counters.comb_sends++;
    double iters = 0.0;
    /* one loop step = poll_iters of work, then one poll for arrival (and a look at the send) */
    while (rc == MPI_SUCCESS && got < want) {
        suite_work(c->poll_iters);
        iters += (double)c->poll_iters;
        suite_counters.comb_work_iters += c->poll_iters;
        int flag = 0;
        rc = MPI_Test(&rr, &flag, MPI_STATUS_IGNORE);
        suite_counters.comb_polls++;
        if (rc == MPI_SUCCESS && flag) {
            got++;
            suite_counters.comb_messages++;
            if (got < want)
                rc = MPI_Irecv(c->rbuf, n, MPI_BYTE, c->peer, TAG_DATA, c->comm, &rr);
        }
        if (rc == MPI_SUCCESS && sr != MPI_REQUEST_NULL) {
            flag = 0;
            rc = MPI_Test(&sr, &flag, MPI_STATUS_IGNORE);
            suite_counters.comb_send_tests++;
            if (rc == MPI_SUCCESS && flag && sent < want) {
                rc = MPI_Isend(c->sbuf, n, MPI_BYTE, c->peer, TAG_DATA, c->comm, &sr);
                sent++;
                suite_counters.comb_sends++;
            }
        }
    }
    /* all arrived: finish our own remaining sends */
    while (rc == MPI_SUCCESS && sr != MPI_REQUEST_NULL) {
        rc = MPI_Wait(&sr, MPI_STATUS_IGNORE);
        if (rc == MPI_SUCCESS && sent < want) {
            rc = MPI_Isend(c->sbuf, n, MPI_BYTE, c->peer, TAG_DATA, c->comm, &sr);
            sent++;
            suite_counters.comb_sends++;
        }
    }
    c->run_time += MPI_Wtime() - t0;
    c->work_iters += iters;
    c->received = got == want;
    return rc;
}

/* ---- overlap of non-blocking operations with computation ---- */

static int overlap_comm(sctx_t *c, size_t comp_iters)
{
    int n = (int)c->bytes;
    if (c->kind == SK_OVERLAP_IALLREDUCE) {
        MPI_Request rq;
        int rc = MPI_Iallreduce(c->sbuf, c->rbuf, n, MPI_UNSIGNED_CHAR, MPI_BOR, c->comm, &rq);
        suite_work(comp_iters);
        int rc2 = MPI_Wait(&rq, MPI_STATUS_IGNORE);
        return rc != MPI_SUCCESS ? rc : rc2;
    }
    if (c->role < 0) {
        suite_work(comp_iters);
        return MPI_SUCCESS;
    }
    MPI_Request rq[2];
    MPI_Irecv(c->rbuf, n, MPI_BYTE, c->peer, TAG_DATA, c->comm, &rq[0]);
    MPI_Isend(c->sbuf, n, MPI_BYTE, c->peer, TAG_DATA, c->comm, &rq[1]);
    suite_work(comp_iters);
    MPI_Status st[2];
    return MPI_Waitall(2, rq, st);
}

static int cmp_d(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Median over CALIB_RUNS of the slowest rank's time of f: collective. */
static double calib(sctx_t *c, size_t comp_iters, int comm_on)
{
    double t[CALIB_RUNS];
    for (int k = 0; k < CALIB_RUNS; k++) {
        MPI_Barrier(c->comm);
        double t0 = MPI_Wtime();
        if (comm_on)
            overlap_comm(c, comp_iters);
        else
            suite_work(comp_iters);
        double dt = MPI_Wtime() - t0, mx = 0.0;
        MPI_Allreduce(&dt, &mx, 1, MPI_DOUBLE, MPI_MAX, c->comm);
        t[k] = mx;
    }
    qsort(t, CALIB_RUNS, sizeof t[0], cmp_d);
    return t[CALIB_RUNS / 2];
}

static int su_overlap(mpilab_op_run_t *r)
{
    size_t b = r->bytes;
    MPI_Comm comm = r->comm;
    sctx_t *c;
    if (setup_common(r, kind_of(r), 1, 1, &c) != 0)
        return -1;
    if (c->kind == SK_OVERLAP_IALLREDUCE) {
        /* bitwise OR of one-hot-per-rank bits is exact for any rank count */
        for (size_t k = 0; k < b; k++)
            c->sbuf[k] = (unsigned char)((mpilab_ops_pattern(c->rank, k) & 1u) << (c->rank % 8));
    } else if (c->role >= 0) {
        fill(c->sbuf, b, c->rank);
    }
    c->work_rate = suite_work_rate();
    double rate = c->work_rate;
    MPI_Allreduce(MPI_IN_PLACE, &rate, 1, MPI_DOUBLE, MPI_MIN, comm);
    c->t_comm = calib(c, 0, 1);
    c->comp_iters = (size_t)(c->t_comm * rate) + 1;
    c->t_comp = calib(c, c->comp_iters, 0);
    r->state = c;
    return 0;
}

static int run_overlap(mpilab_op_run_t *r)
{
    sctx_t *c = count_run(r);
    int rc = overlap_comm(c, c->comp_iters);
    c->received = 1;
    return rc;
}

static int validate_overlap(mpilab_op_run_t *r)
{
    sctx_t *c = r->state;
    if (c->kind == SK_OVERLAP_ISEND)
        return validate_p2p(r);
    if (!c->received)
        return 1;
    for (size_t k = 0; k < c->bytes; k++) {
        unsigned want = 0;
        for (int r = 0; r < c->size; r++)
            want |= (mpilab_ops_pattern(r, k) & 1u) << (r % 8);
        if (c->rbuf[k] != (unsigned char)want)
            return 1;
    }
    return 0;
}

/* ---- teardown ---- */

static void teardown(mpilab_op_run_t *r)
{
    ctx_free(r->state);
    r->state = NULL;
}

/* ---- derived values, from the measurement's state (suite_internal.h) ---- */

const suite_measured_t *suite_measured(const mpilab_op_run_t *r, suite_measured_t *m)
{
    const sctx_t *c = r->state;
    if (!c)
        return NULL;
    *m = (suite_measured_t){.multi = c->kind == SK_STREAM_MULTI, .window = c->window, .pairs = c->pairs,
                            .msgs = c->msgs, .poll_iters = (double)c->poll_iters, .work_rate = c->work_rate,
                            .work_iters = c->work_iters, .run_time = c->run_time, .t_comm = c->t_comm,
                            .t_comp = c->t_comp, .peer_work_iters = c->peer_work_iters,
                            .peer_run_time = c->peer_run_time, .peer_work_rate = c->peer_work_rate};
    return m;
}

/* ---- the table: every entry with its knowledge (designated initializers) ---- */

#define SUITE_ENTRY(n, k, d, fl, fam, dv, s, r, v, der, fig)                                                 \
    {.name = n, .impl = "mpi", .bytes_desc = d, .flags = fl, .setup = s, .run = r, .validate = v,          \
     .teardown = teardown, .family = fam, .derived = dv, .derive = der, .param = k, .figure = fig}
#define LAT "bandwidth_Bps,latency_s"
#define STREAM "bandwidth_Bps,msg_rate,window,pairs"
#define OVERLAP "overlap_pct,t_comm,t_comp,t_total"
static const mpilab_op_t fixed[] = {
    SUITE_ENTRY("pingpong", SK_PINGPONG, "message (round trip between ranks 0 and 1)", MPILAB_OP_PAIR, "latency",
                LAT, su_message, run_pingpong, validate_p2p, suite_derive_pingpong,
                MPILAB_FIGURE_ROUND_TRIP),
    SUITE_ENTRY("pingping", SK_PINGPING, "message (both of ranks 0 and 1 send at once)", MPILAB_OP_PAIR, "latency",
                LAT, su_message, run_pingping, validate_p2p, suite_derive_pingping,
                MPILAB_FIGURE_EXCHANGE),
    SUITE_ENTRY("sendrecv", SK_SENDRECV, "message (to right, from left, periodic chain)", 0, "latency",
                "bandwidth_Bps", su_message, run_sendrecv, validate_sendrecv, suite_derive_sendrecv,
                MPILAB_FIGURE_EXCHANGE),
    SUITE_ENTRY("exchange", SK_EXCHANGE, "message (to and from both ring neighbours)", 0, "latency",
                "bandwidth_Bps", su_exchange, run_exchange, validate_exchange, suite_derive_exchange,
                MPILAB_FIGURE_EXCHANGE),
    SUITE_ENTRY("stream", SK_STREAM, "message (window of sends 0 -> 1, one reply)", MPILAB_OP_PAIR, "streaming",
                STREAM, su_stream, run_stream, validate_stream, suite_derive_stream,
                MPILAB_FIGURE_BATCH),
    SUITE_ENTRY("stream_multi", SK_STREAM_MULTI, "message (window per pair, k pairs at once)", 0, "streaming",
                STREAM, su_stream, run_stream, validate_stream, suite_derive_stream,
                MPILAB_FIGURE_BATCH),
    SUITE_ENTRY("overlap_isend", SK_OVERLAP_ISEND, "message (Isend/Irecv 0 <-> 1 around computation)",
                MPILAB_OP_PAIR, "overlap", OVERLAP, su_overlap, run_overlap, validate_overlap, suite_derive_overlap,
                MPILAB_FIGURE_OVERLAP),
    SUITE_ENTRY("overlap_iallreduce", SK_OVERLAP_IALLREDUCE, "message (Iallreduce around computation)", 0,
                "overlap", OVERLAP, su_overlap, run_overlap, validate_overlap, suite_derive_overlap,
                MPILAB_FIGURE_OVERLAP),
};

int suite_owns(const mpilab_op_t *op)
{
    return op && op->teardown == teardown;
}

int suite_register_entries(const mpilab_suite_config_t *cfg)
{
    for (size_t k = 0; k < sizeof fixed / sizeof fixed[0]; k++)
        if (mpilab_ops_register_as(&fixed[k], "suite") != 0)
            return -1;
    for (size_t k = 0; k < cfg->npoll; k++) {
        char impl[32]; /* copied by the registration */
        snprintf(impl, sizeof impl, "poll%zu", cfg->poll_sweep[k]);
        mpilab_op_t e = {.name = "comb", .impl = impl,
                         .bytes_desc = "message (each way, COMB polling method)", .flags = MPILAB_OP_PAIR,
                         .setup = su_comb, .run = run_comb, .validate = validate_comb, .teardown = teardown,
                         .family = "availability",
                         .derived = "bandwidth_Bps,msg_rate,cpu_avail,cpu_avail_peer,poll_interval,"
                                    "poll_interval_s,work_rate,msgs",
                         .derive = suite_derive_comb, .param = cfg->poll_sweep[k],
                         .figure = MPILAB_FIGURE_BATCH};
        if (mpilab_ops_register_as(&e, "suite") != 0)
            return -1;
    }
    return 0;
}
