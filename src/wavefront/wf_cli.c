/* mpilab-wavefront's options and help text (include/mpilab/wavefront_cli.h). */
#include <errno.h>
#include <getopt.h>
#include <mpi.h> /* SMPI_H in the SMPI build */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mpilab/parse.h"
#include "common/common.h" /* mpilab_errf */
#include "mpilab/wavefront_cli.h"

_Static_assert(MPILAB_WF_CLI_BAD == -1, "the parsers return mpilab_errf's -1 as MPILAB_WF_CLI_BAD");

static const char help_text[] =
    "usage: %1$s COMMAND [OPTIONS]   (out-of-core Livermore loop 23; docs/wavefront.md)\n"
    "\n"
    "  %1$s create --rows M --cols N [--seed S] DATA COEF\n"
    "      Write a deterministic problem: DATA (M x N doubles) and COEF (5 planes), row-major.\n"
    "      --rows M, --cols N   matrix size in elements (>= 3 each)\n"
    "      --seed S             generator seed (integer >= 0, default 1)\n"
    "\n"
    "  %1$s convert --layout rowmajor|block|optimized [--mb MB --nb NB] [--t T] [--bands P]\n"
    "              [--quiet] IN [IN...] OUT\n"
    "      Pre-processing (row-major -> block/optimized) or post-processing (-> row-major);\n"
    "      writes OUT.tmp.<pid> and renames it; stale temporaries of a killed conversion are\n"
    "      removed (and reported).\n"
    "      --mb MB, --nb NB     block size in elements (rows x columns)\n"
    "      --t T                frontier thickness in elements (optimized layout, default 1)\n"
    "      --bands P            split the output into P band files OUT.0 .. OUT.<P-1>\n"
    "\n"
    "  %1$s run --data D --coef C --iterations K [OPTIONS]\n"
    "      Run K iterations in place on D (or on band files D.0, D.1, ... with --mpi).\n"
    "      --iterations K       iterations (integer >= 0)\n"
    "      --workers P          worker threads (default 1; with --mpi: one per rank)\n"
    "      --waves W            iterations in flight (default 1 = no wave chaining)\n"
    "      --chain band|block   wave chaining granularity (default band)\n"
    "      --io pread|mmap|uring|direct|auto\n"
    "                           I/O back end (default pread; direct = O_DIRECT, no page cache)\n"
    "      --queue-depth D      io_uring: blocks in flight per worker (1..32, default 4)\n"
    "      --mb MB, --nb NB     block size in elements (row-major data only)\n"
    "      --no-drop-behind     keep finished blocks in the page cache\n"
    "      --no-prefetch        no I/O helper thread: every transfer synchronous\n"
    "      --io-turns           workers take turns at the storage (one worker's step reads\n"
    "                           or write-back at a time, no read-ahead hints; threads only)\n"
    "      --mpi                distributed mode (run under mpirun, one band file per rank)\n"
    "      --sim-cell-flops F   SMPI build with --mpi: each cell's update executes F flops on\n"
    "                           the simulated host (the kernel has 11; default 0: the\n"
    "                           computation takes no simulated time)\n"
    "      --json FILE          write an mpilab.results/1 file (times in seconds, sizes in bytes)\n"
    "      --quiet              no per-iteration output\n"
    "\n"
    "  %1$s verify --initial D0 --coef C --iterations K RESULT\n"
    "      Compare RESULT bitwise with the in-core reference after K iterations (exit 0 equal,\n"
    "      1 different, 2 error; a file whose in-place run was interrupted is an error).\n"
    "\n"
    "  %1$s bounds [--size BYTES] [--threads P] [--rows M --cols N]\n"
    "      In-core bounds: triad bandwidth over 3 arrays of BYTES in total (default 256M;\n"
    "      suffixes K, M, G), loop-23 update rate of an M x N problem (default 2048 x 2048).\n"
    "\n"
    "  %1$s -h | --help      this help (also COMMAND -h)\n"
    "  %1$s --version        the mpilab version\n";

void mpilab_wf_cli_help(FILE *f, const char *prog)
{
    fprintf(f, help_text, prog);
}

void mpilab_wf_cli_usage(FILE *f, const char *prog)
{
    fprintf(f, "usage: %s create|convert|run|verify|bounds ... (%s --help for details)\n", prog,
            prog);
}

/* An integer option >= min; 0, or -1 + err. (Every parser returns mpilab_errf's -1 as
 * MPILAB_WF_CLI_BAD.) */
static int int_opt(const char *opt, const char *s, int64_t min, int64_t *out, char *err,
                   size_t errlen)
{
    long long v;
    if (mpilab_parse_i64(s, &v) || v < min)
        return mpilab_errf(err, errlen, "%s '%s': expected an integer >= %lld", opt, s,
                           (long long)min);
    *out = v;
    return 0;
}

/* --sim-cell-flops F: a number of operations 0..1e6, only in the SMPI build (elsewhere nothing
 * would take simulated time). */
static int sim_cell_opt(const char *s, double *out, char *err, size_t errlen)
{
#ifndef SMPI_H
    (void)s;
    (void)out;
    return mpilab_errf(err, errlen, "--sim-cell-flops: only in the SMPI build (scripts/build "
                       "--smpi; run with mpilab wavefront run --sim)");
#else
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (end == s || *end || errno || !(v >= 0 && v <= 1e6))
        return mpilab_errf(err, errlen, "--sim-cell-flops '%s': expected a number 0..1e6", s);
    *out = v;
    return 0;
#endif
}

/* The getopt cases every command shares: 'h' (help) and anything getopt refused (one line
 * naming the option; getopt itself prints nothing, opterr being 0). */
#define OTHER_CASES                                                                                \
    case 'h': return MPILAB_WF_CLI_HELP;                                                           \
    default:                                                                                       \
        mpilab_errf(err, errlen, "%s: unknown option, or one given a value it does not take or "   \
                    "missing its value (--help lists them)", argv[optind - 1]);                    \
        return MPILAB_WF_CLI_BAD
#define INT_OPT(name, min, dst)                                                                    \
    if (int_opt(name, optarg, min, dst, err, errlen))                                              \
        return MPILAB_WF_CLI_BAD;                                                                  \
    break

/* The positional arguments: what getopt left after the options. */
static void positional(mpilab_wf_cli *c, int argc, char **argv)
{
    c->args = argv + optind;
    c->nargs = argc - optind;
}

static int parse_create(mpilab_wf_cli *c, int argc, char **argv, char *err, size_t errlen)
{
    static const struct option lo[] = {{"rows", required_argument, 0, 'm'},
                                       {"cols", required_argument, 0, 'n'},
                                       {"seed", required_argument, 0, 's'},
                                       {"help", no_argument, 0, 'h'},
                                       {0, 0, 0, 0}};
    int o;
    c->rows = c->cols = 0;
    while ((o = getopt_long(argc, argv, "m:n:s:h", lo, NULL)) != -1) {
        switch (o) {
        case 'm': INT_OPT("--rows", 3, &c->rows);
        case 'n': INT_OPT("--cols", 3, &c->cols);
        case 's': INT_OPT("--seed", 0, &c->seed);
        OTHER_CASES;
        }
    }
    positional(c, argc, argv);
    if (!c->rows || !c->cols)
        return mpilab_errf(err, errlen, "create: --rows and --cols are required");
    if (c->nargs != 2)
        return mpilab_errf(err, errlen, "create: expected two file names: DATA COEF");
    return MPILAB_WF_CLI_RUN;
}

static int parse_convert(mpilab_wf_cli *c, int argc, char **argv, char *err, size_t errlen)
{
    static const struct option lo[] = {{"layout", required_argument, 0, 'l'},
                                       {"mb", required_argument, 0, 'M'},
                                       {"nb", required_argument, 0, 'N'},
                                       {"t", required_argument, 0, 't'},
                                       {"bands", required_argument, 0, 'b'},
                                       {"quiet", no_argument, 0, 'q'},
                                       {"help", no_argument, 0, 'h'},
                                       {0, 0, 0, 0}};
    mpilab_wf_convert_opts *co = &c->convert;
    int64_t v = 0;
    int o;
    while ((o = getopt_long(argc, argv, "l:M:N:t:b:qh", lo, NULL)) != -1) {
        switch (o) {
        case 'l':
            if ((co->layout = mpilab_wf_layout_parse(optarg)) < 0)
                return mpilab_errf(err, errlen,
                                   "--layout '%s': expected rowmajor, block or optimized",
                                   optarg);
            break;
        case 'M': INT_OPT("--mb", 1, &co->mb);
        case 'N': INT_OPT("--nb", 1, &co->nb);
        case 't': INT_OPT("--t", 1, &co->t);
        case 'b':
            if (int_opt("--bands", optarg, 1, &v, err, errlen))
                return MPILAB_WF_CLI_BAD;
            if (v > 65536)
                return mpilab_errf(err, errlen, "--bands: at most 65536");
            co->nout = (int)v;
            break;
        case 'q': c->quiet = 1; break;
        OTHER_CASES;
        }
    }
    positional(c, argc, argv);
    if (co->layout < 0)
        return mpilab_errf(err, errlen, "convert: --layout is required");
    if (c->nargs < 2)
        return mpilab_errf(err, errlen, "convert: expected input file(s) and an output name");
    return MPILAB_WF_CLI_RUN;
}

/* run's options that take a value from a list of names or a bounded count. */
static int run_named(mpilab_wf_cli *c, int o, char *err, size_t errlen)
{
    mpilab_wf_run_opts *ro = &c->run;
    int64_t v = 0;
    switch (o) {
    case 'P':
        if (int_opt("--workers", optarg, 1, &v, err, errlen))
            return MPILAB_WF_CLI_BAD;
        if (v > 4096)
            return mpilab_errf(err, errlen, "--workers: at most 4096");
        ro->workers = (int)v;
        break;
    case 'W':
        if (int_opt("--waves", optarg, 1, &v, err, errlen))
            return MPILAB_WF_CLI_BAD;
        ro->waves = v > 1000000 ? 1000000 : (int)v;
        break;
    case 'i':
        if ((ro->io = mpilab_wf_io_parse(optarg)) < 0)
            return mpilab_errf(err, errlen,
                               "--io '%s': expected pread, mmap, uring, direct or auto",
                               optarg);
        break;
    case 'Q':
        if (int_opt("--queue-depth", optarg, 1, &v, err, errlen))
            return MPILAB_WF_CLI_BAD;
        if (v > 32)
            return mpilab_errf(err, errlen, "--queue-depth: at most 32");
        ro->queue_depth = (int)v;
        break;
    case 'C':
        if ((ro->chain = mpilab_wf_chain_parse(optarg)) < 0)
            return mpilab_errf(err, errlen, "--chain '%s': expected band or block", optarg);
        break;
    }
    return MPILAB_WF_CLI_RUN;
}

static int parse_run(mpilab_wf_cli *c, int argc, char **argv, char *err, size_t errlen)
{
    static const struct option lo[] = {{"data", required_argument, 0, 'd'},
                                       {"coef", required_argument, 0, 'c'},
                                       {"iterations", required_argument, 0, 'k'},
                                       {"workers", required_argument, 0, 'P'},
                                       {"waves", required_argument, 0, 'W'},
                                       {"io", required_argument, 0, 'i'},
                                       {"mb", required_argument, 0, 'M'},
                                       {"nb", required_argument, 0, 'N'},
                                       {"no-drop-behind", no_argument, 0, 'D'},
                                       {"no-prefetch", no_argument, 0, 'F'},
                                       {"io-turns", no_argument, 0, 'T'},
                                       {"queue-depth", required_argument, 0, 'Q'},
                                       {"chain", required_argument, 0, 'C'},
                                       {"mpi", no_argument, 0, 'x'},
                                       {"sim-cell-flops", required_argument, 0, 'S'},
                                       {"json", required_argument, 0, 'j'},
                                       {"quiet", no_argument, 0, 'q'},
                                       {"help", no_argument, 0, 'h'},
                                       {0, 0, 0, 0}};
    mpilab_wf_run_opts *ro = &c->run;
    int o;
    while ((o = getopt_long(argc, argv, "d:c:k:P:W:i:M:N:DFTQ:C:xS:j:qh", lo, NULL)) != -1) {
        switch (o) {
        case 'd': c->data = optarg; break;
        case 'c': c->coef = optarg; break;
        case 'k': INT_OPT("--iterations", 0, &ro->iterations);
        case 'P': case 'W': case 'i': case 'Q': case 'C':
            if (run_named(c, o, err, errlen) != MPILAB_WF_CLI_RUN)
                return MPILAB_WF_CLI_BAD;
            break;
        case 'M': INT_OPT("--mb", 1, &ro->mb);
        case 'N': INT_OPT("--nb", 1, &ro->nb);
        case 'D': ro->drop_behind = 0; break;
        case 'F': ro->no_prefetch = 1; break;
        case 'T': ro->io_turns = 1; break;
        case 'x': c->mpi = 1; break;
        case 'S':
            if (sim_cell_opt(optarg, &ro->sim_cell_flops, err, errlen))
                return MPILAB_WF_CLI_BAD;
            break;
        case 'j': c->json = optarg; break;
        case 'q': c->quiet = 1; break;
        OTHER_CASES;
        }
    }
    positional(c, argc, argv);
    if (c->nargs != 0)
        return mpilab_errf(err, errlen, "run: unexpected argument (use --data and --coef)");
    if (!c->data || !c->coef)
        return mpilab_errf(err, errlen, "run: --data and --coef are required");
    if (ro->sim_cell_flops > 0 && !c->mpi)
        return mpilab_errf(err, errlen, "--sim-cell-flops: needs --mpi (simulated ranks)");
    /* the results file is written after the iterations, which change DATA in place */
    if (c->json && mpilab_output_check(c->json, err, errlen))
        return MPILAB_WF_CLI_BAD;
    return MPILAB_WF_CLI_RUN;
}

static int parse_verify(mpilab_wf_cli *c, int argc, char **argv, char *err, size_t errlen)
{
    static const struct option lo[] = {{"initial", required_argument, 0, 'I'},
                                       {"coef", required_argument, 0, 'c'},
                                       {"iterations", required_argument, 0, 'k'},
                                       {"help", no_argument, 0, 'h'},
                                       {0, 0, 0, 0}};
    int o;
    while ((o = getopt_long(argc, argv, "I:c:k:h", lo, NULL)) != -1) {
        switch (o) {
        case 'I': c->initial = optarg; break;
        case 'c': c->coef = optarg; break;
        case 'k': INT_OPT("--iterations", 0, &c->iterations);
        OTHER_CASES;
        }
    }
    positional(c, argc, argv);
    if (!c->initial || !c->coef || c->iterations < 0)
        return mpilab_errf(err, errlen, "verify: --initial, --coef and --iterations are required");
    if (c->nargs != 1)
        return mpilab_errf(err, errlen, "verify: expected one RESULT file (or band base name)");
    return MPILAB_WF_CLI_RUN;
}

static int parse_bounds(mpilab_wf_cli *c, int argc, char **argv, char *err, size_t errlen)
{
    static const struct option lo[] = {{"size", required_argument, 0, 's'},
                                       {"threads", required_argument, 0, 'P'},
                                       {"rows", required_argument, 0, 'm'},
                                       {"cols", required_argument, 0, 'n'},
                                       {"help", no_argument, 0, 'h'},
                                       {0, 0, 0, 0}};
    int o;
    c->rows = c->cols = 2048;
    while ((o = getopt_long(argc, argv, "s:P:m:n:h", lo, NULL)) != -1) {
        switch (o) {
        case 's':
            if (mpilab_parse_size(optarg, &c->size) || c->size < 3 * 8 * 1024)
                return mpilab_errf(err, errlen, "--size '%s': expected a size such as 256M",
                                   optarg);
            break;
        case 'P': INT_OPT("--threads", 1, &c->threads);
        case 'm': INT_OPT("--rows", 3, &c->rows);
        case 'n': INT_OPT("--cols", 3, &c->cols);
        OTHER_CASES;
        }
    }
    positional(c, argc, argv);
    if (c->threads > 1024)
        return mpilab_errf(err, errlen, "--threads: at most 1024");
    return MPILAB_WF_CLI_RUN;
}

int mpilab_wf_cli_parse(int argc, char **argv, mpilab_wf_cli *c, char *err, size_t errlen)
{
    static const struct {
        const char *name;
        int (*parse)(mpilab_wf_cli *, int, char **, char *, size_t);
    } cmds[] = {[MPILAB_WF_CMD_CREATE] = {"create", parse_create},
                [MPILAB_WF_CMD_CONVERT] = {"convert", parse_convert},
                [MPILAB_WF_CMD_RUN] = {"run", parse_run},
                [MPILAB_WF_CMD_VERIFY] = {"verify", parse_verify},
                [MPILAB_WF_CMD_BOUNDS] = {"bounds", parse_bounds}};
    memset(c, 0, sizeof *c);
    c->seed = 1;
    c->iterations = -1;
    c->threads = 1;
    c->size = (size_t)256 << 20;
    c->convert = (mpilab_wf_convert_opts){.layout = -1, .t = 1, .nout = 1};
    c->run = (mpilab_wf_run_opts){.iterations = 1, .workers = 1, .waves = 1,
                                  .io = MPILAB_WF_IO_PREAD, .drop_behind = 1,
                                  .chain = MPILAB_WF_CHAIN_BAND};
    if (argc < 2)
        return MPILAB_WF_CLI_USAGE;
    const char *cmd = argv[1];
    if (!strcmp(cmd, "-h") || !strcmp(cmd, "--help"))
        return MPILAB_WF_CLI_HELP;
    if (!strcmp(cmd, "--version"))
        return MPILAB_WF_CLI_VERSION;
    for (int k = 0; k < (int)(sizeof cmds / sizeof *cmds); k++)
        if (!strcmp(cmd, cmds[k].name)) {
            c->cmd = k;
            optind = 1; /* the command's own argv: argv[1] is its argv[0] */
            opterr = 0;
            return cmds[k].parse(c, argc - 1, argv + 1, err, errlen);
        }
    return mpilab_errf(err, errlen,
                       "unknown command '%s' (create, convert, run, verify, bounds; --help)",
                       cmd);
}
