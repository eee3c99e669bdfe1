/* How a rank waits for its MPI requests: spinning in the MPI library (MPI_Waitall,
 * MPI_Recv, MPI_Barrier: the MPI polls, and a rank that waits keeps its CPU), or sleeping
 * between tests (MPI_Testall, then clock_nanosleep for a short interval, with the thread's
 * timer slack set to 1 us so the sleep ends when asked). Sleeping costs up to one interval
 * of latency per wait and frees the CPU for ranks that have work: with more ranks than
 * CPUs (4 ranks on 2 cores) a spinning rank holds a CPU for the scheduler's slice (about
 * 1 ms) while the rank a message is for waits its turn. docs/models-lmo.md, "Waiting". */
#ifndef MPILAB_WAIT_H
#define MPILAB_WAIT_H

#include <mpi.h>
#include "mpilab/mpi_check.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum mpilab_wait_mode {
    MPILAB_WAIT_SPIN = 0, /* the MPI's own blocking calls */
    MPILAB_WAIT_SLEEP = 1 /* test, sleep `interval_s`, test again */
} mpilab_wait_mode_t;

typedef struct mpilab_wait {
    mpilab_wait_mode_t mode;
    double interval_s; /* sleep between tests of a timed wait (MPILAB_WAIT_SLEEP) */
    double idle_s;     /* sleep between tests of an untimed wait (barriers between rounds) */
} mpilab_wait_t;

#define MPILAB_WAIT_INTERVAL_DEFAULT 20e-6
#define MPILAB_WAIT_IDLE_DEFAULT 1e-3
#define MPILAB_WAIT_INTERVAL_MAX 0.1

/* Spin (what a NULL mpilab_wait_t * means everywhere). */
void mpilab_wait_default(mpilab_wait_t *w);
/* "spin", "sleep" or "sleep:DURATION" (a duration in (0, 100ms], e.g. 20us); 0 or -1. */
int mpilab_wait_parse(const char *s, mpilab_wait_t *w);
/* "spin" or "sleep" (the mode's name). */
const char *mpilab_wait_name(const mpilab_wait_t *w);
/* Before a series of sleeping waits: the calling thread's timer slack to 1 us (Linux
 * prctl PR_SET_TIMERSLACK; the default 50 us would lengthen every short sleep). */
void mpilab_wait_prepare(const mpilab_wait_t *w);

/* MPI_Waitall(n, rq, st), or with w sleeping: MPI_Testall until done, sleeping
 * w->interval_s (idle: w->idle_s) between tests. w NULL: spin. */
int mpilab_wait_all(int n, MPI_Request *rq, MPI_Status *st, const mpilab_wait_t *w, int idle);
/* Blocking receive / send / barrier with the wait w (MPI_Irecv/MPI_Isend/MPI_Ibarrier and
 * mpilab_wait_all when sleeping; the plain blocking call when spinning). */
int mpilab_wait_recv(void *buf, int n, MPI_Datatype t, int src, int tag, MPI_Comm comm, MPI_Status *st,
                     const mpilab_wait_t *w, int idle);
int mpilab_wait_send(const void *buf, int n, MPI_Datatype t, int dst, int tag, MPI_Comm comm,
                     const mpilab_wait_t *w, int idle);
int mpilab_wait_barrier(MPI_Comm comm, const mpilab_wait_t *w);

#ifdef __cplusplus
}
#endif

#endif
