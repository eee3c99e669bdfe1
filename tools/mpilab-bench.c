/* mpilab-bench: measure operation-table entries (point-to-point, collectives, the
 * interconnect suite) with libmpilab's engine and write mpilab.results/1 JSON. Run under
 * mpirun or srun. The work is in the library (mpilab/runner.h); this parses, runs, writes.
 * See docs/bench.md. */
#include <string.h>
#include <unistd.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

#include "common/stream.h"
#include "mpilab/mpilab.h"
#include "mpilab/results.h"
#include "mpilab/runner.h"

/* Bad input: one line from rank 0, exit code 2 on every rank (all ranks parse the same
 * arguments, so they all reach this point). */
static int bad_input(int rank, const char *msg)
{
    if (rank == 0)
        fprintf(stderr, "mpilab-bench: %s\n", msg);
    MPI_Finalize();
    return 2;
}

/* --list [--json] on rank 0. */
static int list(int json)
{
    if (!json) {
        mpilab_runner_list(stdout);
        return 0;
    }
    json_t *j = mpilab_runner_list_json();
    int rc = json_dumpf(j, stdout, JSON_INDENT(1)) == 0 ? 0 : 1;
    putchar('\n');
    json_decref(j);
    return rc;
}

int main(int argc, char **argv)
{
    mpilab_stdout_guard();
    /* placement first: pinning and the polling mode must be set before MPI starts; an
     * unknown mode keeps the launch as it is and the parser below reports it */
    mpilab_placement_mode_t pm = MPILAB_PLACEMENT_AUTO;
    const char *pa = mpilab_placement_arg(argc, argv);
    if (pa && mpilab_placement_parse(pa, &pm) != 0)
        pm = MPILAB_PLACEMENT_KEEP;
    mpilab_placement_t placement;
    mpilab_placement_apply(pm, &placement);
    /* funneled: rank 0 writes the results file on a thread of its own while MPI_Finalize
     * runs (mpilab_runner_out_write_begin); that thread makes no MPI call */
    int provided = MPI_THREAD_SINGLE;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_FUNNELED, &provided);
    mpilab_placement_settle(MPI_COMM_WORLD, &placement);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    mpilab_runner_config_t c;
    char err[512];
    int what = mpilab_runner_parse(argc, argv, size, &c, err, sizeof err);
    if (what == MPILAB_RUNNER_RUN && c.placement_mode != pm) {
        snprintf(err, sizeof err, "--placement: give the option in full (--placement auto|keep)");
        what = MPILAB_RUNNER_BAD;
    }
    c.placement = &placement;
    int rc = 0;
    mpilab_runner_writer_t *writer = NULL;
    switch (what) {
    case MPILAB_RUNNER_BAD:
        mpilab_runner_config_free(&c);
        return bad_input(rank, err);
    case MPILAB_RUNNER_HELP:
        if (rank == 0)
            mpilab_runner_usage(stdout);
        break;
    case MPILAB_RUNNER_VERSION:
        if (rank == 0)
            printf("mpilab-bench %s\n", MPILAB_VERSION_STRING);
        break;
    case MPILAB_RUNNER_LIST:
        if (rank == 0)
            rc = list(c.list & 2);
        break;
    default: {
        json_t *doc = NULL;
        /* the output is checked before measuring (a FIFO without a reader: one line now) */
        int hold = -1, bad = rank == 0 && mpilab_runner_out_open(&c, &hold, err, sizeof err) != 0;
        MPI_Bcast(&bad, 1, MPI_INT, 0, MPI_COMM_WORLD);
        if (bad) {
            mpilab_runner_config_free(&c);
            return bad_input(rank, err);
        }
        /* --out -: standard output carries the one JSON document and nothing else; the
         * table and any other text printed while running go to standard error */
        int json_fd = -1;
        if (c.out && strcmp(c.out, "-") == 0) {
            fflush(stdout);
            json_fd = dup(STDOUT_FILENO);
            if (json_fd >= 0)
                dup2(STDERR_FILENO, STDOUT_FILENO);
        }
        rc = mpilab_runner_run(&c, argc, argv, &doc, err, sizeof err);
        if (json_fd >= 0) {
            fflush(stdout);
            dup2(json_fd, STDOUT_FILENO);
            close(json_fd);
        }
        if (rc == 2) {
            if (hold >= 0)
                close(hold);
            mpilab_runner_config_free(&c);
            return bad_input(rank, err);
        }
        /* a regular file is written (serialised, fsync'd, renamed into place) while
         * MPI_Finalize runs, and complete before this process exits */
        if (doc && c.out)
            writer = mpilab_runner_out_write_begin(&c, doc, hold, rc != 0, provided >= MPI_THREAD_FUNNELED);
        if (doc && c.out && !writer && mpilab_runner_out_write(&c, doc, hold, rc != 0, err, sizeof err) != 0) {
            fprintf(stderr, "mpilab-bench: %s\n", err);
            rc = 1;
        }
        json_decref(doc);
        MPI_Bcast(&rc, 1, MPI_INT, 0, MPI_COMM_WORLD);
    }
    }
    fflush(stdout);
    mpilab_runner_config_free(&c);
    MPI_Finalize();
    /* rank 0's exit status then carries a failed write (mpirun's status is non-zero when
     * any rank's is) */
    if (writer && mpilab_runner_out_write_end(writer, err, sizeof err) != 0) {
        fprintf(stderr, "mpilab-bench: %s\n", err);
        rc = 1;
    }
    return rc;
}
