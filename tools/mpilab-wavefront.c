/* mpilab-wavefront: create | convert | run | verify | bounds for the out-of-core Livermore
 * loop 23. The work is in the library (mpilab/wavefront.h, mpilab/wavefront_cli.h): this
 * parses, calls, prints. See docs/wavefront.md. */
#include <mpi.h>
#include <stdio.h>

#include "common/common.h" /* mpilab_provenance */
#include "common/stream.h"
#include "mpilab/results.h"
#include "mpilab/version.h"
#include "mpilab/wavefront.h"
#include "mpilab/wavefront_cli.h"

static const char *prog = "mpilab-wavefront";

static int die(const char *msg)
{
    fprintf(stderr, "%s: %s\n", prog, msg);
    return 2;
}

static int cmd_create(const mpilab_wf_cli *c)
{
    char err[1024];
    if (mpilab_wf_create(c->args[0], c->args[1], c->rows, c->cols, (uint64_t)c->seed, err,
                         sizeof err))
        return die(err);
    return 0;
}

static int cmd_convert(const mpilab_wf_cli *c)
{
    char err[1024];
    const char *out = c->args[c->nargs - 1];
    double seconds;
    if (mpilab_wf_convert_names(c->args, c->nargs - 1, out, &c->convert, stderr, prog, &seconds,
                                err, sizeof err))
        return die(err);
    if (!c->quiet)
        printf("convert: %s -> %s%s in %.3f s\n", c->args[0], out,
               c->convert.nout > 1 ? ".<band>" : "", seconds);
    return 0;
}

/* The run (threads, or one band per rank under MPI); rank 0 prints the report and writes the
 * results file. argc/argv: the whole command line (MPI_Init, provenance). */
static int cmd_run(const mpilab_wf_cli *c, int argc, char **argv)
{
    char err[1024] = "";
    mpilab_wf_stats st;
    int rank = 0, rc;
    MPI_Comm comm = MPI_COMM_NULL;
    if (c->mpi) {
        int provided; /* the I/O helper threads never call MPI */
        MPI_Init_thread(&argc, &argv, MPI_THREAD_FUNNELED, &provided);
        comm = MPI_COMM_WORLD;
        MPI_Comm_rank(comm, &rank);
        rc = mpilab_wf_run_mpi(comm, c->data, c->coef, &c->run, &st, err, sizeof err);
    } else {
        rc = mpilab_wf_run(c->data, c->coef, &c->run, &st, err, sizeof err);
    }
    int status = rc ? 2 : 0;
    if (rc && rank == 0)
        die(err);
    if (rc == 0) {
        json_t *prov = mpilab_provenance(comm, prog, argc, argv);
        if (rank == 0 && !c->quiet)
            mpilab_wf_run_report(stdout, &st, &c->run, c->mpi);
        if (rank == 0 && c->json) {
            json_t *doc = mpilab_wf_results(&st, &c->run, c->mpi, prov);
            if (mpilab_results_write(c->json, doc, err, sizeof err))
                status = die(err);
            json_decref(doc);
        }
        json_decref(prov);
        mpilab_wf_stats_free(&st);
    }
    if (c->mpi)
        MPI_Finalize();
    return status;
}

/* Exit 0 bitwise equal, 1 different, 2 error. */
static int cmd_verify(const mpilab_wf_cli *c)
{
    char err[1024];
    mpilab_wf_verify_result r;
    if (mpilab_wf_verify(c->initial, c->coef, c->args[0], c->iterations, stdout, &r, err,
                         sizeof err))
        return die(err);
    printf("reference checksum %016llx\nresult    checksum %016llx\n",
           (unsigned long long)r.reference_checksum, (unsigned long long)r.result_checksum);
    if (r.ndiff) {
        printf("DIFFERENT: %zu of %zu elements differ (first at row %lld col %lld), max |diff| "
               "%g\n", r.ndiff, r.n, (long long)r.first_row, (long long)r.first_col, r.max_diff);
        return 1;
    }
    printf("bitwise equal: %lldx%lld after %lld iterations\n", (long long)r.rows,
           (long long)r.cols, (long long)r.iterations);
    return 0;
}

static int cmd_bounds(const mpilab_wf_cli *c)
{
    double bw = mpilab_wf_triad_bandwidth(c->size / 24, (int)c->threads, 5);
    double rate = mpilab_wf_kernel_rate(c->rows, c->cols, 3);
    if (bw <= 0 || rate <= 0)
        return die("bounds: out of memory");
    printf("triad_bandwidth_Bps %.6g\n", bw);
    printf("kernel_bound_updates_per_s %.6g\n", bw / 56.0);
    printf("kernel_updates_per_s %.6g\n", rate);
    printf("kernel_fraction_of_bound %.4f\n", rate / (bw / 56.0));
    return 0;
}

int main(int argc, char **argv)
{
    mpilab_stdout_guard();
    mpilab_wf_cli c;
    char err[1024];
    switch (mpilab_wf_cli_parse(argc, argv, &c, err, sizeof err)) {
    case MPILAB_WF_CLI_HELP: mpilab_wf_cli_help(stdout, prog); return 0;
    case MPILAB_WF_CLI_VERSION: printf("%s %s\n", prog, MPILAB_VERSION_STRING); return 0;
    case MPILAB_WF_CLI_USAGE: mpilab_wf_cli_usage(stderr, prog); return 2;
    case MPILAB_WF_CLI_BAD: return die(err);
    default: break;
    }
    switch (c.cmd) {
    case MPILAB_WF_CMD_CREATE: return cmd_create(&c);
    case MPILAB_WF_CMD_CONVERT: return cmd_convert(&c);
    case MPILAB_WF_CMD_RUN: return cmd_run(&c, argc, argv);
    case MPILAB_WF_CMD_VERIFY: return cmd_verify(&c);
    default: return cmd_bounds(&c);
    }
}
