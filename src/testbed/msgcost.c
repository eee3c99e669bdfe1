/* libmpilab_msgcost.so: a configured CPU cost per message, for emulating a node whose
 * processor is slow at messaging (the LMO model's C_i, docs/models-lmo.md).
 *
 * Preloaded into an MPI rank (LD_PRELOAD; the testbed does it per node from the spec's
 * `[[node]] msg_cost`, docs/testbed-hetero.md), it intercepts the MPI calls through the profiling
 * interface (PMPI) and, for every message the rank sends or receives, spends
 * MPILAB_MSG_COST_US microseconds of the calling thread's CPU time in a busy loop
 * (CLOCK_THREAD_CPUTIME_ID): before a send is handed to the MPI (MPI_Send, MPI_Isend and
 * their synchronous, buffered and ready forms, the send half of MPI_Sendrecv) and after a
 * receive has completed (MPI_Recv, the receive half of MPI_Sendrecv, and a request of
 * MPI_Irecv when MPI_Wait/Test and their -all, -any and -some forms report it complete).
 * By default the cost is CPU time, not wall time: a rank that is preempted or throttled (a
 * cgroup CPU quota) takes longer to spend it, as a slow processor would.
 * MPILAB_MSG_COST_CLOCK=wall makes it wall time instead: the call returns a fixed time after
 * it began, whatever else runs, as on a node whose processor is its own (several emulated
 * nodes share this machine's CPUs, and a CPU-time cost there also grows with the other
 * nodes' work). It sleeps until MPILAB_MSGCOST_SPIN_NS before the end (an idle CPU may halt,
 * and its wake-up takes hundreds of microseconds) and spins on CLOCK_MONOTONIC for the rest,
 * so it uses at most that much CPU per message. Not charged: messages to or from
 * MPI_PROC_NULL, the MPI's own collectives (they do not pass through the MPI_ entry points),
 * persistent and matched-probe receives.
 *
 * MPILAB_MSG_COST_US: unset or 0: nothing is spent (the calls are passed on, and counted);
 * a decimal number of microseconds from 0 to 1000000 otherwise. MPILAB_MSG_COST_CLOCK: unset
 * or "cpu", or "wall". Anything else is refused with one line and exit status 2 when the
 * library is loaded. MPILAB_MSG_COST_DEBUG=1 prints, at MPI_Finalize, how many sends and
 * receives were charged, the clock, the time spent, the CPU time the calling thread used in
 * it and, with the wall clock, how late the largest one ended (the evidence that the library
 * sat in the rank's path, and how exact its cost was). */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <mpi.h>

#define MPILAB_MSGCOST_PENDING 4096 /* receive requests tracked at once */
#define MPILAB_MSGCOST_STACK 64     /* requests copied on the stack by the -all/-any/-some calls */
#define MPILAB_MSGCOST_SPIN_NS 500000 /* wall clock: the part of a cost spent spinning */

struct mpilab_msgcost {
    int64_t cost_ns; /* time spent per message */
    int wall;        /* the cost is wall time (MPILAB_MSG_COST_CLOCK=wall), else CPU time */
    int debug;
    unsigned long long sends, recvs, untracked;
    unsigned long long early; /* receives charged while others of their MPI_Testall/Waitall were in flight */
    int64_t spent_ns, cpu_ns, late_max_ns; /* time spent; CPU time used in it; wall: latest end */
    size_t npending;
    MPI_Request pending[MPILAB_MSGCOST_PENDING]; /* MPI_Irecv requests not yet completed */
};

static struct mpilab_msgcost g_mc;

static int64_t mpilab_msgcost_ns(clockid_t clk)
{
    struct timespec ts;
    clock_gettime(clk, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* Wall clock: sleep to MPILAB_MSGCOST_SPIN_NS before the end, then spin to it. */
static void mpilab_msgcost_spend_wall(void)
{
    int64_t t0 = mpilab_msgcost_ns(CLOCK_MONOTONIC), end = t0 + g_mc.cost_ns;
    int64_t wake = end - MPILAB_MSGCOST_SPIN_NS;
    if (wake > t0) {
        struct timespec ts = {.tv_sec = (time_t)(wake / 1000000000), .tv_nsec = (long)(wake % 1000000000)};
        while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
            ;
    }
    int64_t now = mpilab_msgcost_ns(CLOCK_MONOTONIC);
    while (now < end)
        now = mpilab_msgcost_ns(CLOCK_MONOTONIC);
    g_mc.spent_ns += now - t0;
    if (now - end > g_mc.late_max_ns)
        g_mc.late_max_ns = now - end;
}

static void mpilab_msgcost_spend(void)
{
    if (g_mc.cost_ns <= 0)
        return;
    int64_t c0 = mpilab_msgcost_ns(CLOCK_THREAD_CPUTIME_ID), used = 0;
    if (g_mc.wall) {
        mpilab_msgcost_spend_wall();
        used = mpilab_msgcost_ns(CLOCK_THREAD_CPUTIME_ID) - c0;
    } else {
        while (used < g_mc.cost_ns)
            used = mpilab_msgcost_ns(CLOCK_THREAD_CPUTIME_ID) - c0;
        g_mc.spent_ns += used;
    }
    g_mc.cpu_ns += used;
}

static void mpilab_msgcost_send(int dest)
{
    if (dest == MPI_PROC_NULL)
        return;
    g_mc.sends++;
    mpilab_msgcost_spend();
}

static void mpilab_msgcost_recv(void)
{
    g_mc.recvs++;
    mpilab_msgcost_spend();
}

/* Remember a receive request; with the table full it is charged now instead. */
static void mpilab_msgcost_track(int rc, int source, const MPI_Request *req)
{
    if (rc != MPI_SUCCESS || source == MPI_PROC_NULL)
        return;
    if (g_mc.npending == MPILAB_MSGCOST_PENDING) {
        g_mc.untracked++;
        mpilab_msgcost_recv();
        return;
    }
    g_mc.pending[g_mc.npending++] = *req;
}

/* Whether `r` is a tracked receive request. */
static int mpilab_msgcost_pending(MPI_Request r)
{
    for (size_t k = 0; k < g_mc.npending; k++)
        if (memcmp(&g_mc.pending[k], &r, sizeof r) == 0)
            return 1;
    return 0;
}

/* Whether `r` was a tracked receive request (then it is forgotten). */
static int mpilab_msgcost_take(MPI_Request r)
{
    for (size_t k = 0; k < g_mc.npending; k++) {
        if (memcmp(&g_mc.pending[k], &r, sizeof r) == 0) {
            g_mc.pending[k] = g_mc.pending[--g_mc.npending];
            return 1;
        }
    }
    return 0;
}

/* A copy of the first n request handles (they become MPI_REQUEST_NULL when they complete):
 * on the stack for a few, else allocated (NULL when that fails: nothing is charged). */
static MPI_Request *mpilab_msgcost_copy(int n, const MPI_Request *reqs, MPI_Request *stack)
{
    if (n <= 0 || !reqs)
        return NULL;
    MPI_Request *c = n <= MPILAB_MSGCOST_STACK ? stack : malloc((size_t)n * sizeof *c);
    if (c)
        memcpy(c, reqs, (size_t)n * sizeof *c);
    return c;
}

static void mpilab_msgcost_done(MPI_Request *c, MPI_Request *stack)
{
    if (c != stack)
        free(c);
}

__attribute__((constructor)) static void mpilab_msgcost_init(void)
{
    const char *v = getenv("MPILAB_MSG_COST_US"), *dbg = getenv("MPILAB_MSG_COST_DEBUG");
    const char *clk = getenv("MPILAB_MSG_COST_CLOCK");
    g_mc.debug = dbg && *dbg && strcmp(dbg, "0") != 0;
    if (clk && strcmp(clk, "cpu") != 0 && strcmp(clk, "wall") != 0) {
        fprintf(stderr, "mpilab-msgcost: MPILAB_MSG_COST_CLOCK=%s: not 'cpu' or 'wall'\n", clk);
        _exit(2);
    }
    g_mc.wall = clk && strcmp(clk, "wall") == 0;
    if (!v || !*v)
        return;
    char *end = NULL;
    double us = strtod(v, &end);
    if (end == v || *end != '\0' || !isfinite(us) || us < 0 || us > 1e6) {
        fprintf(stderr, "mpilab-msgcost: MPILAB_MSG_COST_US=%s: not a number of microseconds from 0 to 1000000\n", v);
        _exit(2);
    }
    g_mc.cost_ns = (int64_t)llround(us * 1e3);
}

int MPI_Finalize(void)
{
    if (g_mc.debug) {
        int rank = -1;
        PMPI_Comm_rank(MPI_COMM_WORLD, &rank);
        fprintf(stderr, "mpilab-msgcost: rank %d: %llu sends and %llu receives charged (%llu untracked, %llu while others were in flight), %.3f us each, %.3f us of %s time spent, %.3f us of CPU time used in it, latest end %.3f us late\n",
                rank, g_mc.sends, g_mc.recvs, g_mc.untracked, g_mc.early, (double)g_mc.cost_ns / 1e3, (double)g_mc.spent_ns / 1e3,
                g_mc.wall ? "wall" : "CPU", (double)g_mc.cpu_ns / 1e3, (double)g_mc.late_max_ns / 1e3);
        fflush(stderr);
    }
    return PMPI_Finalize();
}

/* ---- sends: the cost before the message is handed to the MPI (the standard, synchronous,
 * buffered and ready forms differ only in the name they pass the call on to) */

#define MPILAB_MSGCOST_SEND(name)                                                                  \
    int MPI_##name(const void *buf, int count, MPI_Datatype type, int dest, int tag, MPI_Comm comm)   \
    {                                                                                              \
        mpilab_msgcost_send(dest);                                                                 \
        return PMPI_##name(buf, count, type, dest, tag, comm);                                     \
    }
#define MPILAB_MSGCOST_ISEND(name)                                                                 \
    int MPI_##name(const void *buf, int count, MPI_Datatype type, int dest, int tag, MPI_Comm comm,   \
                   MPI_Request *req)                                                               \
    {                                                                                              \
        mpilab_msgcost_send(dest);                                                                 \
        return PMPI_##name(buf, count, type, dest, tag, comm, req);                                \
    }

MPILAB_MSGCOST_SEND(Send)
MPILAB_MSGCOST_SEND(Ssend)
MPILAB_MSGCOST_SEND(Bsend)
MPILAB_MSGCOST_SEND(Rsend)
MPILAB_MSGCOST_ISEND(Isend)
MPILAB_MSGCOST_ISEND(Issend)
MPILAB_MSGCOST_ISEND(Ibsend)
MPILAB_MSGCOST_ISEND(Irsend)

/* ---- receives: the cost once the message is in */

int MPI_Recv(void *buf, int count, MPI_Datatype type, int source, int tag, MPI_Comm comm, MPI_Status *st)
{
    int rc = PMPI_Recv(buf, count, type, source, tag, comm, st);
    if (rc == MPI_SUCCESS && source != MPI_PROC_NULL)
        mpilab_msgcost_recv();
    return rc;
}

int MPI_Sendrecv(const void *sbuf, int scount, MPI_Datatype stype, int dest, int stag, void *rbuf, int rcount,
                 MPI_Datatype rtype, int source, int rtag, MPI_Comm comm, MPI_Status *st)
{
    mpilab_msgcost_send(dest);
    int rc = PMPI_Sendrecv(sbuf, scount, stype, dest, stag, rbuf, rcount, rtype, source, rtag, comm, st);
    if (rc == MPI_SUCCESS && source != MPI_PROC_NULL)
        mpilab_msgcost_recv();
    return rc;
}

int MPI_Sendrecv_replace(void *buf, int count, MPI_Datatype type, int dest, int stag, int source, int rtag,
                         MPI_Comm comm, MPI_Status *st)
{
    mpilab_msgcost_send(dest);
    int rc = PMPI_Sendrecv_replace(buf, count, type, dest, stag, source, rtag, comm, st);
    if (rc == MPI_SUCCESS && source != MPI_PROC_NULL)
        mpilab_msgcost_recv();
    return rc;
}

int MPI_Irecv(void *buf, int count, MPI_Datatype type, int source, int tag, MPI_Comm comm, MPI_Request *req)
{
    int rc = PMPI_Irecv(buf, count, type, source, tag, comm, req);
    mpilab_msgcost_track(rc, source, req);
    return rc;
}

int MPI_Request_free(MPI_Request *req)
{
    if (req)
        (void)mpilab_msgcost_take(*req); /* freed, never waited for: not charged */
    return PMPI_Request_free(req);
}

/* ---- completion of receive requests */

int MPI_Wait(MPI_Request *req, MPI_Status *st)
{
    MPI_Request r = *req;
    int rc = PMPI_Wait(req, st);
    if (rc == MPI_SUCCESS && mpilab_msgcost_take(r))
        mpilab_msgcost_recv();
    return rc;
}

int MPI_Test(MPI_Request *req, int *flag, MPI_Status *st)
{
    MPI_Request r = *req;
    int rc = PMPI_Test(req, flag, st);
    if (rc == MPI_SUCCESS && *flag && mpilab_msgcost_take(r))
        mpilab_msgcost_recv();
    return rc;
}

static void mpilab_msgcost_all(int n, MPI_Request *c)
{
    for (int k = 0; c && k < n; k++)
        if (mpilab_msgcost_take(c[k]))
            mpilab_msgcost_recv();
}

/* MPI_Testall reports nothing until every request is complete, but a receive that is in
 * has been taken by the MPI's progress: it is charged at the first MPI_Testall that finds
 * it complete (MPI_Request_get_status, which leaves the request as it is), so that a rank
 * waiting for two replies spends the first one's cost while the second is in flight, as
 * the LMO model's root does (docs/models-lmo.md). */
int MPI_Testall(int n, MPI_Request reqs[], int *flag, MPI_Status sts[])
{
    MPI_Request stack[MPILAB_MSGCOST_STACK], *c = mpilab_msgcost_copy(n, reqs, stack);
    int rc = PMPI_Testall(n, reqs, flag, sts);
    if (rc == MPI_SUCCESS && *flag)
        mpilab_msgcost_all(n, c);
    unsigned long long charged = 0;
    for (int k = 0; rc == MPI_SUCCESS && !*flag && c && k < n; k++) {
        int in = 0;
        if (mpilab_msgcost_pending(c[k]) && PMPI_Request_get_status(c[k], &in, MPI_STATUS_IGNORE) == MPI_SUCCESS &&
            in && mpilab_msgcost_take(c[k])) {
            charged++;
            mpilab_msgcost_recv();
        }
    }
    /* counted as taken while others were in flight when one of the set is still not in */
    for (int k = 0, in = 1; charged > 0 && k < n; k++) {
        if (PMPI_Request_get_status(c[k], &in, MPI_STATUS_IGNORE) == MPI_SUCCESS && !in) {
            g_mc.early += charged;
            break;
        }
    }
    mpilab_msgcost_done(c, stack);
    return rc;
}

/* MPI_Waitall as a loop of MPI_Testall (above) while a tracked receive is among the requests,
 * so that each is charged when it comes in, as a processor takes a message when it arrives
 * (a linear gather's root spends the first blocks' costs while the last are in flight); the
 * MPI's own MPI_Waitall polls its progress engine the same way. Without one: the MPI's. */
int MPI_Waitall(int n, MPI_Request reqs[], MPI_Status sts[])
{
    int tracked = 0;
    for (int k = 0; reqs && k < n && !tracked; k++)
        tracked = mpilab_msgcost_pending(reqs[k]);
    if (!tracked)
        return PMPI_Waitall(n, reqs, sts);
    int flag = 0, rc = MPI_SUCCESS;
    while (rc == MPI_SUCCESS && !flag)
        rc = MPI_Testall(n, reqs, &flag, sts);
    return rc;
}

static void mpilab_msgcost_one(int n, const MPI_Request *c, int idx)
{
    if (c && idx != MPI_UNDEFINED && idx >= 0 && idx < n && mpilab_msgcost_take(c[idx]))
        mpilab_msgcost_recv();
}

int MPI_Waitany(int n, MPI_Request reqs[], int *idx, MPI_Status *st)
{
    MPI_Request stack[MPILAB_MSGCOST_STACK], *c = mpilab_msgcost_copy(n, reqs, stack);
    int rc = PMPI_Waitany(n, reqs, idx, st);
    if (rc == MPI_SUCCESS)
        mpilab_msgcost_one(n, c, *idx);
    mpilab_msgcost_done(c, stack);
    return rc;
}

int MPI_Testany(int n, MPI_Request reqs[], int *idx, int *flag, MPI_Status *st)
{
    MPI_Request stack[MPILAB_MSGCOST_STACK], *c = mpilab_msgcost_copy(n, reqs, stack);
    int rc = PMPI_Testany(n, reqs, idx, flag, st);
    if (rc == MPI_SUCCESS && *flag)
        mpilab_msgcost_one(n, c, *idx);
    mpilab_msgcost_done(c, stack);
    return rc;
}

static void mpilab_msgcost_some(int n, const MPI_Request *c, int out, const int *idx)
{
    for (int k = 0; out != MPI_UNDEFINED && k < out; k++)
        mpilab_msgcost_one(n, c, idx[k]);
}

/* MPI_Waitsome and MPI_Testsome: the same arguments, the completed ones in idx[0..*out) */
#define MPILAB_MSGCOST_SOME(name)                                                                  \
    int MPI_##name(int n, MPI_Request reqs[], int *out, int idx[], MPI_Status sts[])               \
    {                                                                                              \
        MPI_Request stack[MPILAB_MSGCOST_STACK], *c = mpilab_msgcost_copy(n, reqs, stack);         \
        int rc = PMPI_##name(n, reqs, out, idx, sts);                                              \
        if (rc == MPI_SUCCESS)                                                                     \
            mpilab_msgcost_some(n, c, *out, idx);                                                  \
        mpilab_msgcost_done(c, stack);                                                             \
        return rc;                                                                                 \
    }

MPILAB_MSGCOST_SOME(Waitsome)
MPILAB_MSGCOST_SOME(Testsome)
