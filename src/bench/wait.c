/* Waiting for MPI requests by spinning or by sleeping between tests (include/mpilab/wait.h). */
#include "mpilab/wait.h"

#include <errno.h>
#include <string.h>
#include <time.h>
#ifdef __linux__
#include <sys/prctl.h>
#endif

#include "mpilab/parse.h"

void mpilab_wait_default(mpilab_wait_t *w)
{
    *w = (mpilab_wait_t){MPILAB_WAIT_SPIN, MPILAB_WAIT_INTERVAL_DEFAULT, MPILAB_WAIT_IDLE_DEFAULT};
}

int mpilab_wait_parse(const char *s, mpilab_wait_t *w)
{
    mpilab_wait_t v;
    mpilab_wait_default(&v);
    if (!s)
        return -1;
    if (strcmp(s, "spin") == 0) {
        *w = v;
        return 0;
    }
    if (strncmp(s, "sleep", 5) != 0 || (s[5] != '\0' && s[5] != ':'))
        return -1;
    v.mode = MPILAB_WAIT_SLEEP;
    if (s[5] == ':') {
        double d;
        if (mpilab_parse_duration(s + 6, &d) != 0 || !(d > 0) || d > MPILAB_WAIT_INTERVAL_MAX)
            return -1;
        v.interval_s = d;
    }
    *w = v;
    return 0;
}

const char *mpilab_wait_name(const mpilab_wait_t *w)
{
    return w && w->mode == MPILAB_WAIT_SLEEP ? "sleep" : "spin";
}

void mpilab_wait_prepare(const mpilab_wait_t *w)
{
#ifdef PR_SET_TIMERSLACK
    if (w && w->mode == MPILAB_WAIT_SLEEP)
        (void)prctl(PR_SET_TIMERSLACK, 1000UL, 0UL, 0UL, 0UL);
#else
    (void)w;
#endif
}

static void nap(double s)
{
    struct timespec ts = {(time_t)s, (long)((s - (double)(time_t)s) * 1e9)};
    while (clock_nanosleep(CLOCK_MONOTONIC, 0, &ts, &ts) == EINTR)
        ;
}

int mpilab_wait_all(int n, MPI_Request *rq, MPI_Status *st, const mpilab_wait_t *w, int idle)
{
    if (!w || w->mode != MPILAB_WAIT_SLEEP)
        return MPI_Waitall(n, rq, st);
    double s = idle ? w->idle_s : w->interval_s;
    for (;;) {
        int done = 0, rc = MPI_Testall(n, rq, &done, st);
        if (rc != MPI_SUCCESS || done)
            return rc;
        nap(s);
    }
}

int mpilab_wait_recv(void *buf, int n, MPI_Datatype t, int src, int tag, MPI_Comm comm, MPI_Status *st,
                     const mpilab_wait_t *w, int idle)
{
    if (!w || w->mode != MPILAB_WAIT_SLEEP)
        return MPI_Recv(buf, n, t, src, tag, comm, st);
    MPI_Request rq;
    int rc = MPI_Irecv(buf, n, t, src, tag, comm, &rq);
    return rc == MPI_SUCCESS ? mpilab_wait_all(1, &rq, st, w, idle) : rc;
}

int mpilab_wait_send(const void *buf, int n, MPI_Datatype t, int dst, int tag, MPI_Comm comm,
                     const mpilab_wait_t *w, int idle)
{
    if (!w || w->mode != MPILAB_WAIT_SLEEP)
        return MPI_Send(buf, n, t, dst, tag, comm);
    MPI_Request rq;
    MPI_Status st;
    int rc = MPI_Isend(buf, n, t, dst, tag, comm, &rq);
    return rc == MPI_SUCCESS ? mpilab_wait_all(1, &rq, &st, w, idle) : rc;
}

int mpilab_wait_barrier(MPI_Comm comm, const mpilab_wait_t *w)
{
    if (!w || w->mode != MPILAB_WAIT_SLEEP)
        return MPI_Barrier(comm);
    MPI_Request rq;
    MPI_Status st;
    int rc = MPI_Ibarrier(comm, &rq);
    return rc == MPI_SUCCESS ? mpilab_wait_all(1, &rq, &st, w, 1) : rc;
}
