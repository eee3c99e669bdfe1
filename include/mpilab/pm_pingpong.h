/* A ping-pong over N MPTCP (or TCP) connections between two processes, the connections
 * used round robin (the path migration paper's Verbs-level test with N queue pairs). Every
 * byte is checked. The tool is tools/mpilab-pm-pingpong.c (it parses, calls, exits with
 * the status returned here); see docs/pathmig.md. */
#ifndef MPILAB_PM_PINGPONG_H
#define MPILAB_PM_PINGPONG_H

#include <stddef.h>
#include <stdio.h>

/* exit statuses of a run */
enum { MPILAB_PMPP_OK = 0, MPILAB_PMPP_FAILED = 1, MPILAB_PMPP_USAGE = 2,
       MPILAB_PMPP_STALLED = 3 };

typedef struct {
    const char *listen_at;  /* server: ADDR:PORT (exactly one of listen_at, connect_to) */
    const char *connect_to; /* client: ADDR:PORT */
    const char *rtt_log;    /* client: "ITER REALTIME RTT" per round trip to this file */
    long nconn;             /* connections, used round robin (1..4096) */
    long bytes;             /* message size */
    long iters;             /* client: round trips (rounded up to whole rounds) */
    double duration;        /* client: > 0: run this long instead (whole rounds) */
    long progress;          /* client: a "progress ITER REALTIME" line every K round trips */
    long stall;             /* client: > 0: exit MPILAB_PMPP_STALLED after S s without one */
    long long idle_at;      /* client: >= 0: wait idle_s seconds before this iteration */
    double idle_s;
    int tcp;                /* plain TCP instead of MPTCP */
} mpilab_pm_pingpong_opts;

void mpilab_pm_pingpong_defaults(mpilab_pm_pingpong_opts *o);
/* Run the server or the client. Progress and the client's one-line JSON summary (its
 * max_rtt is the pause) go to `out`; on failure the reason (one line) is in err and an
 * MPILAB_PMPP_* status is returned. */
int mpilab_pm_pingpong_run(const mpilab_pm_pingpong_opts *o, FILE *out, char *err,
                           size_t errlen);

#endif
