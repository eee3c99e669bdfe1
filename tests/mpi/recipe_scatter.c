/* Recipe check (docs/architecture.md, "Add a collective implementation"): a scatter
 * implementation added the public way, the entry and its test in this one file. The root
 * posts every block at once (MPI_Isend) and waits; the entry declares that the linear
 * scatter pattern predicts it, and mpilab_models_hockney then predicts its measurements
 * without any other file changing. */
#include <math.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mpi_check.h"
#include "mpilab/mpilab.h"

/* ---- the entry ---- */

typedef struct flat {
    MPI_Comm comm;
    int rank, size, root;
    size_t bytes;
    unsigned char *sbuf, *rbuf;
    MPI_Request *rq;
    MPI_Status *st;
} flat_t;

static void flat_teardown(void *vc)
{
    flat_t *c = vc;
    if (c) {
        free(c->sbuf);
        free(c->rbuf);
        free(c->rq);
        free(c->st);
        free(c);
    }
}

static int flat_setup(size_t bytes, int root, MPI_Comm comm, void **out)
{
    flat_t *c = calloc(1, sizeof *c);
    if (!c || bytes > (size_t)1 << 24)
        return free(c), -1;
    c->comm = comm;
    c->bytes = bytes;
    c->root = root;
    MPI_Comm_rank(comm, &c->rank);
    MPI_Comm_size(comm, &c->size);
    size_t p = (size_t)c->size;
    c->sbuf = malloc(bytes * p + 1);
    c->rbuf = malloc(bytes + 1);
    c->rq = malloc(p * sizeof *c->rq);
    c->st = malloc(p * sizeof *c->st);
    if (!c->sbuf || !c->rbuf || !c->rq || !c->st) {
        flat_teardown(c);
        return -1;
    }
    for (size_t r = 0; r < p; r++) /* block for rank r carries pattern(r, .) */
        for (size_t k = 0; k < bytes; k++)
            c->sbuf[r * bytes + k] = mpilab_ops_pattern((int)r, k);
    memset(c->rbuf, 0xA5, bytes + 1);
    *out = c;
    return 0;
}

static int flat_run(void *vc)
{
    flat_t *c = vc;
    int n = (int)c->bytes;
    if (c->rank != c->root)
        return MPI_Recv(c->rbuf, n, MPI_BYTE, c->root, 12, c->comm, MPI_STATUS_IGNORE);
    int k = 0;
    for (int r = 0; r < c->size; r++)
        if (r != c->root)
            MPI_Isend(c->sbuf + (size_t)r * c->bytes, n, MPI_BYTE, r, 12, c->comm, &c->rq[k++]);
    memcpy(c->rbuf, c->sbuf + (size_t)c->root * c->bytes, c->bytes);
    return MPI_Waitall(k, c->rq, c->st);
}

static int flat_validate(void *vc)
{
    flat_t *c = vc;
    for (size_t k = 0; k < c->bytes; k++)
        if (c->rbuf[k] != mpilab_ops_pattern(c->rank, k))
            return 1;
    return 0;
}

static const mpilab_op_t flat_entry = {
    .name = "scatter", .impl = "flat_isend", .bytes_desc = "per-rank block", .flags = MPILAB_OP_ROOTED,
    .setup = flat_setup, .run = flat_run, .validate = flat_validate, .teardown = flat_teardown,
    .family = "collective", .model = MPILAB_MODEL_SCATTER_LINEAR};

/* ---- its test ---- */


/* Synthetic p2p measurements with exact one-way times alpha + beta * bytes per pair (i, j),
 * plus one measurement of the new entry and one of an entry without a pattern. */
static json_t *synthetic(int p, double mean)
{
    json_t *meas = json_array();
    const double sizes[] = {0, 1024, 4096, 65536};
    for (int i = 0; i < p; i++)
        for (int j = i + 1; j < p; j++)
            for (size_t s = 0; s < 4; s++) {
                double alpha = 1e-6 * (1 + i + j), beta = 1e-9 * (1 + j);
                json_array_append_new(meas, json_pack("{s:s,s:s,s:[i,i],s:I,s:I,s:{s:f}}", "op", "p2p", "impl",
                                                      "roundtrip", "pair", i, j, "bytes", (json_int_t)sizes[s],
                                                      "bytes_back", (json_int_t)sizes[s], "stats", "mean",
                                                      2.0 * (alpha + beta * sizes[s])));
            }
    json_array_append_new(meas, json_pack("{s:s,s:s,s:s,s:I,s:i,s:{s:f}}", "op", "scatter", "impl", "flat_isend",
                                          "timing", "max", "bytes", (json_int_t)2048, "root", 1, "stats", "mean",
                                          mean));
    json_array_append_new(meas, json_pack("{s:s,s:s,s:s,s:I,s:i,s:{s:f}}", "op", "bcast", "impl", "native",
                                          "timing", "max", "bytes", (json_int_t)2048, "root", 1, "stats", "mean",
                                          mean));
    return meas;
}

static void check_predicted(int p)
{
    json_t *meas = synthetic(p, 1e-3);
    json_t *models = mpilab_models_hockney(meas, p);
    json_t *pred = json_object_get(models, "predictions");
    double want = 0; /* linear scatter from root 1: one block to every other rank in turn */
    for (int j = 0; j < p; j++)
        if (j != 1) {
            int lo = j < 1 ? j : 1, hi = j < 1 ? 1 : j;
            want += 1e-6 * (1 + lo + hi) + 1e-9 * (1 + hi) * 2048;
        }
    if (json_array_size(pred) != 1)
        FAIL("%zu predictions, expected exactly the new entry's\n", json_array_size(pred));
    json_t *e = json_array_get(pred, 0);
    const char *impl = json_string_value(json_object_get(e, "impl"));
    double got = json_real_value(json_object_get(e, "predicted_single"));
    if (!impl || strcmp(impl, "flat_isend") != 0 || !(fabs(got - want) <= 1e-9 * want))
        FAIL("prediction %s %.9g, expected flat_isend %.9g\n", impl ? impl : "(none)", got, want);
    json_decref(models);
    json_decref(meas);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int size;
    MPI_Comm_rank(MPI_COMM_WORLD, &mpi_check_rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (mpilab_ops_register(&flat_entry) != 0)
        FAIL("register failed\n");
    const mpilab_op_t *op = mpilab_ops_find("scatter", "flat_isend");
    if (!op)
        MPI_Abort(MPI_COMM_WORLD, 1);
    const size_t sizes[] = {0, 1, 4093, 65537};
    for (size_t s = 0; s < 4; s++)
        for (int root = 0; root < size; root++)
            if (mpilab_ops_check(op, sizes[s], root, MPI_COMM_WORLD) != 0)
                FAIL("%zu bytes root %d: wrong data\n", sizes[s], root);
    mpilab_bench_opts_t bo;
    mpilab_bench_opts_default(&bo);
    bo.prec.min_reps = bo.prec.max_reps = 3;
    char err[256];
    mpilab_bench_t *b = NULL;
    mpilab_result_t r;
    if (mpilab_bench_init(MPI_COMM_WORLD, &bo, &b, err, sizeof err) != 0 ||
        mpilab_bench_measure(b, op, 1024, MPILAB_TIMING_MAX, &r, err, sizeof err) != 0)
        MPI_Abort(MPI_COMM_WORLD, 1);
    if (!r.data_ok || r.stats.reps != 3)
        FAIL("engine: data_ok %d reps %zu\n", r.data_ok, r.stats.reps);
    mpilab_result_free(&r);
    mpilab_bench_finalize(b);
    if (mpi_check_rank == 0)
        check_predicted(size);
    int rc = mpi_check_done("recipe_scatter");
    MPI_Finalize();
    return rc;
}
