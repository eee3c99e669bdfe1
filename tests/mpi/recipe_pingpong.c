/* Recipe check (docs/architecture.md, "Add an operation"): a ping-pong variant added the
 * public way, the entry and its test in this one file. Ranks 0 and 1 swap their buffers with
 * MPI_Sendrecv_replace; the entry declares what it needs (a pair), its family, the derived
 * values it yields and how (latency = t, bandwidth = 2 * bytes / t), and the engine, the
 * results writer and the entry list pick all of it up without any other file changing. */
#include <math.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mpi_check.h"
#include "mpilab/mpilab.h"

/* ---- the entry ---- */

typedef struct swap {
    MPI_Comm comm;
    int rank, peer;
    size_t bytes;
    unsigned char *buf;
    unsigned long runs; /* even: own pattern in buf, odd: the peer's */
} swap_t;

static double last_bytes = -1.0; /* the size of the latest completed measurement here */

static int swap_setup(size_t bytes, int root, MPI_Comm comm, void **out)
{
    (void)root;
    swap_t *c = calloc(1, sizeof *c);
    int size;
    MPI_Comm_size(comm, &size);
    if (!c || size < 2 || bytes > (size_t)1 << 30) {
        free(c);
        return -1;
    }
    c->comm = comm;
    c->bytes = bytes;
    MPI_Comm_rank(comm, &c->rank);
    c->peer = c->rank < 2 ? 1 - c->rank : -1;
    c->buf = malloc(bytes ? bytes : 1);
    if (!c->buf) {
        free(c);
        return -1;
    }
    for (size_t k = 0; k < bytes; k++)
        c->buf[k] = mpilab_ops_pattern(c->rank, k);
    *out = c;
    return 0;
}

static int swap_run(void *vc)
{
    swap_t *c = vc;
    if (c->peer < 0)
        return MPI_SUCCESS;
    int rc = MPI_Sendrecv_replace(c->buf, (int)c->bytes, MPI_BYTE, c->peer, 11, c->peer, 11, c->comm,
                                  MPI_STATUS_IGNORE);
    c->runs++;
    return rc;
}

static int swap_validate(void *vc)
{
    swap_t *c = vc;
    if (c->peer < 0)
        return 0;
    if (c->runs == 0)
        return 1;
    int from = c->runs % 2 ? c->peer : c->rank;
    for (size_t k = 0; k < c->bytes; k++)
        if (c->buf[k] != mpilab_ops_pattern(from, k))
            return 1;
    return 0;
}

static void swap_teardown(void *vc)
{
    swap_t *c = vc;
    if (c) {
        last_bytes = (double)c->bytes;
        free(c->buf);
        free(c);
    }
}

static int swap_derive(const mpilab_op_t *op, size_t bytes, double t, mpilab_derived_t *d)
{
    (void)op;
    mpilab_derived_clear(d);
    if ((double)bytes != last_bytes)
        return -1; /* not measured at this size here */
    if (t > 0.0 && isfinite(t)) {
        d->latency_s = t;
        d->bandwidth_Bps = 2.0 * (double)bytes / t;
    }
    return 0;
}

static const mpilab_op_t swap_entry = {
    .name = "pingpong", .impl = "sendrecv_replace",
    .bytes_desc = "message (ranks 0 and 1 swap buffers with MPI_Sendrecv_replace)",
    .flags = MPILAB_OP_PAIR, .setup = swap_setup, .run = swap_run, .validate = swap_validate,
    .teardown = swap_teardown, .family = "latency", .derived = "latency_s,bandwidth_Bps", .derive = swap_derive};

/* ---- its test ---- */



/* The entry in --list --json, with the knowledge it declared. */
static void check_listed(void)
{
    json_t *list = mpilab_runner_list_json(), *e;
    size_t idx;
    int found = 0;
    json_array_foreach(json_object_get(list, "entries"), idx, e)
    {
        if (strcmp(json_string_value(json_object_get(e, "name")), "pingpong") != 0 ||
            strcmp(json_string_value(json_object_get(e, "impl")), "sendrecv_replace") != 0)
            continue;
        found = 1;
        json_t *needs = json_object_get(e, "needs"), *der = json_object_get(e, "derived");
        if (strcmp(json_string_value(json_object_get(e, "family")), "latency") != 0 || json_array_size(needs) != 1 ||
            strcmp(json_string_value(json_array_get(needs, 0)), "pair") != 0 || json_array_size(der) != 2 ||
            strcmp(json_string_value(json_array_get(der, 1)), "bandwidth_Bps") != 0)
            FAIL("listed with the wrong knowledge\n");
    }
    if (!found)
        FAIL("not in --list --json\n");
    json_decref(list);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &mpi_check_rank);
    if (mpilab_ops_register(&swap_entry) != 0)
        FAIL("register failed\n");
    const mpilab_op_t *op = mpilab_ops_find("pingpong", "sendrecv_replace");
    if (!op)
        MPI_Abort(MPI_COMM_WORLD, 1);
    /* the data check is real: correct after one and after two swaps */
    if (mpilab_ops_check(op, 4093, 0, MPI_COMM_WORLD) != 0)
        FAIL("mpilab_ops_check refused the entry\n");
    mpilab_bench_opts_t bo;
    mpilab_bench_opts_default(&bo);
    bo.prec.min_reps = bo.prec.max_reps = 3;
    char err[256];
    mpilab_bench_t *b = NULL;
    if (mpilab_bench_init(MPI_COMM_WORLD, &bo, &b, err, sizeof err) != 0)
        MPI_Abort(MPI_COMM_WORLD, 1);
    const size_t sizes[] = {1, 65536};
    for (size_t s = 0; s < 2; s++) {
        mpilab_result_t r;
        if (mpilab_bench_measure(b, op, sizes[s], MPILAB_TIMING_MAX, &r, err, sizeof err) != 0) {
            FAIL("measure: %s\n", err);
            continue;
        }
        if (!r.data_ok || r.stats.reps != 3)
            FAIL("%zu bytes: data_ok %d reps %zu\n", sizes[s], r.data_ok, r.stats.reps);
        json_t *m = mpilab_results_measurement(op, sizes[s], MPILAB_TIMING_MAX, &bo, 2, &r, 0);
        json_t *d = json_object_get(m, "derived");
        double t = r.stats.median;
        if (!rel_eq(json_real_value(json_object_get(d, "latency_s")), t, 1e-12) ||
            !rel_eq(json_real_value(json_object_get(d, "bandwidth_Bps")), 2.0 * (double)sizes[s] / t, 1e-12))
            FAIL("%zu bytes: derived values do not follow the entry's formula\n", sizes[s]);
        json_decref(m);
        mpilab_result_free(&r);
    }
    mpilab_derived_t d;
    if (swap_entry.derive(op, 7, 1e-3, &d) == 0)
        FAIL("derive accepted a size that was not measured\n");
    check_listed();
    mpilab_bench_finalize(b);
    int rc = mpi_check_done("recipe_pingpong");
    MPI_Finalize();
    return rc;
}
