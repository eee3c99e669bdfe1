/* libmpilab_ucx_yield.so: preloaded into the ranks of an MPICH (ch4:ucx) job, it makes a
 * rank that waits give its CPU away: every call of ucp_worker_progress that progressed
 * nothing is followed by sched_yield(), as Open MPI's `mpi_yield_when_idle 1` yields after
 * an idle opal_progress.
 *
 * Why (docs/tune.md, "MPICH with more ranks than cores"): Debian's MPICH 4.0.2 is ch4:ucx
 * and its progress engine spins; ch4 has no yield setting (MPIR_CVAR_POLLS_BEFORE_YIELD is
 * ch3's), UCX has none either (ucx_info -c), so with more ranks than cores a message waits
 * for the end of the spinning rank's time slice (milliseconds; docs/mpi-stacks.md). MPICH's
 * netmod progress calls ucp_worker_progress through the PLT on every poll, which is where
 * this library steps in; the algorithms, the selection and the data path are MPICH's own.
 *
 * What it changes: a waiting rank costs a sched_yield system call per idle poll instead of
 * a spin; with a core per rank that is a little more latency, with fewer cores than ranks
 * the waiting rank hands its core to a rank that has work. It is not MPICH as shipped: the
 * numbers measured with it say so (docs/tune.md). MPILAB_UCX_YIELD=0 passes the calls on
 * unchanged; MPILAB_UCX_YIELD_DEBUG=1 prints at exit how many calls there were and how many
 * of them yielded (the evidence, without timing, that the library sat in MPICH's path). */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* RTLD_NEXT */
#endif
#include <dlfcn.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <ucp/api/ucp.h>

typedef unsigned (*mpilab_ucx_progress_fn)(ucp_worker_h);

struct mpilab_ucx_yield {
    pthread_once_t once;
    mpilab_ucx_progress_fn progress; /* the next ucp_worker_progress (UCX's, or a wrapper's) */
    int on;
    atomic_ullong calls;
    atomic_ullong yields;
};

static struct mpilab_ucx_yield g_yield = {PTHREAD_ONCE_INIT, NULL, 0, 0, 0};

static void mpilab_ucx_yield_resolve(void)
{
    g_yield.progress = (mpilab_ucx_progress_fn)dlsym(RTLD_NEXT, "ucp_worker_progress");
    const char *off = getenv("MPILAB_UCX_YIELD");
    g_yield.on = !(off && strcmp(off, "0") == 0);
}

unsigned ucp_worker_progress(ucp_worker_h worker)
{
    pthread_once(&g_yield.once, mpilab_ucx_yield_resolve);
    if (!g_yield.progress) {
        abort(); /* preloaded into a process without UCX: nothing to pass the call to */
    }
    unsigned n = g_yield.progress(worker);
    atomic_fetch_add_explicit(&g_yield.calls, 1, memory_order_relaxed);
    if (n == 0 && g_yield.on) {
        atomic_fetch_add_explicit(&g_yield.yields, 1, memory_order_relaxed);
        sched_yield();
    }
    return n;
}

__attribute__((destructor)) static void mpilab_ucx_yield_report(void)
{
    const char *dbg = getenv("MPILAB_UCX_YIELD_DEBUG");
    if (dbg && strcmp(dbg, "0") != 0) {
        fprintf(stderr, "mpilab-ucx-yield: pid %ld: %llu ucp_worker_progress calls, %llu idle "
                "ones yielded\n", (long)getpid(), (unsigned long long)atomic_load(&g_yield.calls),
                (unsigned long long)atomic_load(&g_yield.yields));
    }
}
