/* Recipe (docs/architecture.md, "Add an operation"), the whole of it: a ping-pong variant in
 * one file, built as a plugin and loaded by the tools, no other file edited:
 *   mpicc -shared -fPIC -I<mpilab>/include recipe_pingpong.c -o swap.so
 *   mpirun -np 2 mpilab-bench --entries ./swap.so --ops pingpong:sendrecv_replace
 * Ranks 0 and 1 swap their buffers with MPI_Sendrecv_replace; the entry declares what it
 * needs (a pair), its family, the derived values it yields and how (latency = t, bandwidth
 * = 2 * bytes / t), and the engine, the results and the entry list pick all of it up.
 * tests/mpi/recipe_check.c and tests/mpi/recipe_plugin.sh check it. */
#include <math.h>
#include <stdlib.h>

#include "mpilab/ops.h"

typedef struct swap {
    int peer;           /* -1: this rank takes no part */
    unsigned char *buf;
    unsigned long runs; /* even: own pattern in buf, odd: the peer's */
} swap_t;

static int swap_setup(mpilab_op_run_t *r)
{
    if (r->size < 2 || r->bytes > (size_t)1 << 30)
        return -1;
    swap_t *c = calloc(1, sizeof *c);
    if (!c)
        return -1;
    c->peer = r->rank < 2 ? 1 - r->rank : -1;
    c->buf = malloc(r->bytes ? r->bytes : 1);
    if (!c->buf) {
        free(c);
        return -1;
    }
    for (size_t k = 0; k < r->bytes; k++)
        c->buf[k] = mpilab_ops_pattern(r->rank, k);
    r->state = c;
    return 0;
}

static int swap_run(mpilab_op_run_t *r)
{
    swap_t *c = r->state;
    if (c->peer < 0)
        return MPI_SUCCESS;
    int rc = MPI_Sendrecv_replace(c->buf, (int)r->bytes, MPI_BYTE, c->peer, 11, c->peer, 11, r->comm,
                                  MPI_STATUS_IGNORE);
    c->runs++;
    return rc;
}

static int swap_validate(mpilab_op_run_t *r)
{
    const swap_t *c = r->state;
    if (c->peer < 0)
        return 0;
    if (c->runs == 0)
        return 1;
    int from = c->runs % 2 ? c->peer : r->rank;
    for (size_t k = 0; k < r->bytes; k++)
        if (c->buf[k] != mpilab_ops_pattern(from, k))
            return 1;
    return 0;
}

static void swap_teardown(mpilab_op_run_t *r)
{
    swap_t *c = r->state;
    if (c) {
        free(c->buf);
        free(c);
    }
    r->state = NULL;
}

/* Called by the engine after the measurement, before teardown, with the median time t. */
static int swap_derive(const mpilab_op_run_t *r, double t, mpilab_derived_t *d)
{
    if (!r->state)
        return -1; /* not measured */
    if (t > 0.0 && isfinite(t)) {
        mpilab_derived_set(d, "latency_s", t);
        mpilab_derived_set(d, "bandwidth_Bps", 2.0 * (double)r->bytes / t);
    }
    return 0;
}

MPILAB_PLUGIN_ENTRIES({.name = "pingpong", .impl = "sendrecv_replace",
                       .bytes_desc = "message (ranks 0 and 1 swap buffers with MPI_Sendrecv_replace)",
                       .flags = MPILAB_OP_PAIR, .setup = swap_setup, .run = swap_run, .validate = swap_validate,
                       .teardown = swap_teardown, .family = "latency", .derived = "latency_s,bandwidth_Bps",
                       .figure = MPILAB_FIGURE_EXCHANGE, .derive = swap_derive});
