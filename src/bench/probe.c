/* mpilab-bench --probe: every selected entry run once per size, without timing, each call
 * announced on stderr, so that a trace of the MPI library (its error stack, or the audit
 * library's lines, docs/tune.md) can be read call by call. */
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "mpilab/runner.h"

/* With --probe-skew, which ranks give one byte less: the receivers of the root's data
 * (bcast, scatter and the all-to-all kinds: their receive is truncated), the root where it
 * receives (gather, reduce). */
static int skewed(const char *name, int rank)
{
    int root_receives = strcmp(name, "gather") == 0 || strcmp(name, "reduce") == 0;
    return root_receives ? rank == 0 : rank != 0;
}

/* The MPI error string on one line. */
static void one_line(char *s)
{
    for (char *p = s; *p; p++)
        if (*p == '\n' || *p == '\r')
            *p = '|';
}

/* One line to stderr, or appended to MPILAB_PROBE_LOG/probe.RANK.log (where the audit
 * library writes too, so that one process's lines stay in order). */
static void say(int rank, const char *fmt, ...)
{
    char line[MPI_MAX_ERROR_STRING + 512];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    if (n <= 0)
        return;
    size_t len = (size_t)n < sizeof line ? (size_t)n : sizeof line - 1;
    const char *dir = getenv("MPILAB_PROBE_LOG");
    int fd = STDERR_FILENO;
    if (dir && *dir) {
        char path[4096];
        snprintf(path, sizeof path, "%s/probe.%d.log", dir, rank);
        fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
        if (fd < 0)
            return;
    }
    if (write(fd, line, len) < 0) {
        /* a lost line shows as a missing one; nothing else to do here */
    }
    if (fd != STDERR_FILENO)
        close(fd);
}

static void probe_one(const mpilab_op_t *op, size_t bytes, int skew, MPI_Comm comm, int rank)
{
    size_t mine = skew && bytes >= 2 && skewed(op->name, rank) ? bytes - 1 : bytes;
    mpilab_op_run_t r;
    mpilab_op_run_init(&r, op, mine, 0, comm);
    if (op->setup(&r) != 0) {
        say(rank, "mpilab-probe: rank %d setup-failed %s:%s %zu\n", rank, op->name, op->impl, bytes);
        return;
    }
    say(rank, "mpilab-probe: rank %d begin %s:%s %zu\n", rank, op->name, op->impl, bytes);
    int rc = op->run(&r);
    char msg[MPI_MAX_ERROR_STRING + 1] = "";
    int len = 0;
    if (rc != MPI_SUCCESS && MPI_Error_string(rc, msg, &len) == MPI_SUCCESS)
        one_line(msg);
    say(rank, "mpilab-probe: rank %d end %s:%s %zu rc %d%s%s\n", rank, op->name, op->impl, bytes, rc,
        *msg ? " error " : "", msg);
    op->teardown(&r);
}

int mpilab_runner_probe(const mpilab_runner_config_t *c, char *err, size_t errlen)
{
    int rank;
    MPI_Comm comm;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    if (MPI_Comm_dup(MPI_COMM_WORLD, &comm) != MPI_SUCCESS) {
        snprintf(err, errlen, "--probe: cannot duplicate MPI_COMM_WORLD");
        return 1;
    }
    MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN);
    for (size_t e = 0; e < c->nsel; e++) {
        const mpilab_op_t *op = c->sel[e];
        if (op->flags & (MPILAB_OP_ALLPAIRS | MPILAB_OP_GRID))
            continue; /* measured per pair or on a grid: not a single call */
        for (size_t s = 0; s < c->nsizes; s++) {
            MPI_Barrier(MPI_COMM_WORLD);
            probe_one(op, c->sizes[s], c->probe_skew, comm, rank);
        }
    }
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Comm_free(&comm);
    return 0;
}
