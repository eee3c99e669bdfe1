/* mpilab-wavefront's command line as library calls: its options (parsed from argv, with the
 * help text), matrices named on a command line (one file or band files), conversion with the
 * clean-up of a killed conversion's temporaries, verification against the in-core reference,
 * and a run's report and mpilab.results/1 document. A tool is then: parse, call, print
 * (tools/mpilab-wavefront.c). Needs jansson. */
#ifndef MPILAB_WAVEFRONT_CLI_H
#define MPILAB_WAVEFRONT_CLI_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "mpilab/wavefront.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum {
    MPILAB_WF_CMD_CREATE = 0,
    MPILAB_WF_CMD_CONVERT = 1,
    MPILAB_WF_CMD_RUN = 2,
    MPILAB_WF_CMD_VERIFY = 3,
    MPILAB_WF_CMD_BOUNDS = 4
} mpilab_wf_cmd;

/* One command line: argv[1] is the command, the rest its options and arguments. */
typedef struct {
    int cmd;                          /* mpilab_wf_cmd */
    int quiet;                        /* convert, run: --quiet */
    int mpi;                          /* run: --mpi */
    int64_t rows, cols;               /* create (required); bounds (default 2048 x 2048) */
    int64_t seed;                     /* create --seed (default 1) */
    int64_t iterations;               /* verify --iterations (run: run.iterations) */
    int64_t threads;                  /* bounds --threads (default 1) */
    size_t size;                      /* bounds --size: bytes over the three arrays (256M) */
    const char *data, *coef, *json;   /* run --data --coef --json (json NULL if not given) */
    const char *initial;              /* verify --initial (and --coef) */
    mpilab_wf_convert_opts convert;   /* convert's options */
    mpilab_wf_run_opts run;           /* run's options */
    char **args;                      /* the positional arguments (pointers into argv) */
    int nargs;
} mpilab_wf_cli;

enum {
    MPILAB_WF_CLI_RUN = 0,     /* carry out c->cmd */
    MPILAB_WF_CLI_HELP = 1,    /* -h/--help (also after a command): mpilab_wf_cli_help, exit 0 */
    MPILAB_WF_CLI_VERSION = 2, /* --version: print the version, exit 0 */
    MPILAB_WF_CLI_USAGE = 3,   /* no command, or an option getopt refused (it said why on
                                * stderr): mpilab_wf_cli_usage, exit 2 */
    MPILAB_WF_CLI_BAD = -1     /* bad input: one line in err, exit 2 */
};

/* Parse a whole command line (argv[0] the program). Returns one of MPILAB_WF_CLI_*. */
int mpilab_wf_cli_parse(int argc, char **argv, mpilab_wf_cli *c, char *err, size_t errlen);
/* The help text (every command and option with its unit and default) and the one-line usage
 * reminder, naming the program prog. */
void mpilab_wf_cli_help(FILE *f, const char *prog);
void mpilab_wf_cli_usage(FILE *f, const char *prog);

/* A matrix named on a command line: paths[0..n) (malloc'd). */
typedef struct {
    char **paths;
    int n;
} mpilab_wf_fileset;
/* NAME: the file itself, or its band files NAME.0, NAME.1, ... when NAME does not exist.
 * 0, or -1 + err (no such file nor band files; out of memory). */
int mpilab_wf_fileset_resolve(mpilab_wf_fileset *s, const char *name, char *err, size_t errlen);
/* names[0..n): one name is resolved as above, several are the band files in order. */
int mpilab_wf_fileset_names(mpilab_wf_fileset *s, char *const *names, int n, char *err,
                            size_t errlen);
void mpilab_wf_fileset_free(mpilab_wf_fileset *s);

/* The convert command: the inputs names[0..n) (mpilab_wf_fileset_names) converted into out
 * (mpilab_wf_convert). Before that, stale temporaries of a killed conversion into out (or
 * into its band files out.0 .. with o->nout > 1) are removed, each reported on log as
 * "<prog>: removed stale temporary file <name> (from a killed conversion)". *seconds: the
 * conversion's wall time. 0, or -1 + err. */
int mpilab_wf_convert_names(char *const *names, int n, const char *out,
                            const mpilab_wf_convert_opts *o, FILE *log, const char *prog,
                            double *seconds, char *err, size_t errlen);

/* What mpilab_wf_verify found. */
typedef struct {
    int64_t rows, cols, iterations;
    uint64_t reference_checksum, result_checksum; /* mpilab_wf_checksum */
    size_t n, ndiff;                              /* elements; elements not bitwise equal */
    int64_t first_row, first_col;                 /* the first difference (if ndiff) */
    double max_diff;                              /* largest |difference| (NaN if any is) */
} mpilab_wf_verify_result;
/* Compare `result` bitwise with the in-core reference (mpilab_wf_reference) applied
 * `iterations` times to `initial` with coefficients `coef` (each one file or band files,
 * mpilab_wf_fileset_resolve). A result file that records another number of in-place
 * iterations gets a line "note: <file> records N in-place iterations, not K" on notes; one
 * whose in-place run was interrupted is an error. 0 (r filled; r->ndiff == 0: equal), or
 * -1 + err. */
int mpilab_wf_verify(const char *initial, const char *coef, const char *result,
                     int64_t iterations, FILE *notes, mpilab_wf_verify_result *r, char *err,
                     size_t errlen);

/* The report of a run on f: the time of every iteration, the geometry and schedule, time
 * per iteration, bytes, requests, device bytes (where known) and each worker's time split.
 * mpi: the run was distributed (mpilab_wf_run_mpi). */
void mpilab_wf_run_report(FILE *f, const mpilab_wf_stats *st, const mpilab_wf_run_opts *o,
                          int mpi);
/* The mpilab.results/1 document of a run (docs/wavefront.md): provenance (a reference is
 * taken; its "options" and "clock_sync" are set here), the top-level "wavefront" object and
 * one measurement (op "wavefront", timing "iteration": the iteration times as samples and
 * their statistics at the default precision's confidence level and relative error). */
json_t *mpilab_wf_results(const mpilab_wf_stats *st, const mpilab_wf_run_opts *o, int mpi,
                          json_t *provenance);

#ifdef __cplusplus
}
#endif
#endif
