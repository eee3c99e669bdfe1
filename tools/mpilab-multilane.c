/* mpilab-multilane: the multilane scatter/gather experiments on a multi-site grid.  Builds
 * the grid description, measures the model's inputs (l, L, alpha, b_LAN, b(P)), times the
 * native, single-lane and multilane collectives per message size and P, and writes one JSON
 * document (schema mpilab.multilane/1, docs/multilane.md).  Run under mpirun. */
#include <errno.h>
#include <getopt.h>
#include <jansson.h>
#include <limits.h>
#include <mpi.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/stream.h"
#include "common/common.h"
#include "mpilab/multilane.h"
#include "mpilab/parse.h"
#include "mpilab/version.h"

static int g_rank;

static void die(int code, const char *fmt, ...) __attribute__((format(printf, 2, 3), noreturn));
static void die(int code, const char *fmt, ...)
{
    if (g_rank == 0) {
        char msg[600];
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(msg, sizeof msg, fmt, ap);
        va_end(ap);
        fprintf(stderr, "mpilab-multilane: %s\n", msg);
    }
    MPI_Finalize();
    exit(code);
}

static void usage(void)
{
    printf("usage: mpilab-multilane [options]   (under mpirun; every rank gets the same options)\n"
           "  --sites SRC       where the site of each rank comes from: testbed (host names\n"
           "                    PREFIX-sSnJ, default), hostfile:PATH, map:PATH, detect\n"
           "  --root R          root rank (default 0)\n"
           "  --ops LIST        scatter,gather (default both)\n"
           "  --impls LIST      native,single,multilane (default single,multilane)\n"
           "  --sizes SPEC      bytes per rank: list, A:B:STEP or A:B:xF, K/M/G suffixes\n"
           "                    (default 64K:4M:x4)\n"
           "  --lanes P         multilane P: a number, 'opt' (the schedule model's P_opt per\n"
           "                    operation and size; default) or 'all' (1..P_sup)\n"
           "  --reps N          timed repetitions per point (default 3; one checked warm-up)\n"
           "  --model-bytes B   message size for measuring b_LAN and b(P) (default 4M)\n"
           "  --model-reps N    repetitions per model measurement (default 3)\n"
           "  --alpha-bytes B   calibrate alpha per operation on runs at P_sup and B bytes per\n"
           "                    rank (default 1K; 0: no calibration, alpha from the WAN pair)\n"
           "  --no-model        skip the model measurement (needs a number for --lanes)\n"
           "  --json FILE       write the document to FILE (default: standard output)\n"
           "  --partial FILE    after each completed run, rewrite FILE (atomically) with the\n"
           "                    document so far, marked \"partial\": true; removed once the\n"
           "                    whole document is written (a stopped run leaves it behind)\n"
           "  -h, --help        this text\n"
           "      --version     the version\n"
           "Times are seconds, bandwidths bytes per second.  Errors: one line, exit 2.\n");
}

static int parse_int(const char *s, long lo, long hi, long *out)
{
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (end == s || *end || errno || v < lo || v > hi)
        return -1;
    *out = v;
    return 0;
}

static int in_list(const char *list, const char *word)
{
    size_t n = strlen(word);
    for (const char *p = list; p && *p;) {
        const char *c = strchr(p, ',');
        size_t len = c ? (size_t)(c - p) : strlen(p);
        if (len == n && strncmp(p, word, n) == 0)
            return 1;
        p = c ? c + 1 : NULL;
    }
    return 0;
}

static void check_list(const char *opt, const char *list, const char *const *allowed)
{
    char buf[256];
    snprintf(buf, sizeof buf, "%s", list);
    if (!*buf)
        die(2, "%s: empty list", opt);
    char *save = NULL;
    for (char *w = strtok_r(buf, ",", &save); w; w = strtok_r(NULL, ",", &save)) {
        int ok = 0;
        for (size_t i = 0; allowed[i]; i++)
            ok |= strcmp(w, allowed[i]) == 0;
        if (!ok)
            die(2, "%s: unknown item '%s'", opt, w);
    }
}

static void progress(void *arg, const char *op, const char *impl, int lanes, size_t bytes,
                     double median)
{
    (void)arg;
    if (g_rank == 0)
        fprintf(stderr, "mpilab-multilane: %s %-9s P=%-2d %9zu B  median %.4f s\n", op, impl,
                lanes, bytes, median);
}

/* Checkpoint (rank 0): the document so far, marked partial, to the --partial file. */
static void checkpoint(void *arg, json_t *doc)
{
    const char *path = arg;
    if (g_rank != 0)
        return;
    json_t *copy = json_copy(doc); /* shallow: the runs are shared, not copied */
    char *text = NULL;
    if (copy) {
        json_object_set_new(copy, "partial", json_true());
        json_object_set_new(copy, "partial_reason", json_string("the run stopped before its "
                                                                "plan was complete"));
        text = json_dumps(copy, JSON_INDENT(1) | JSON_REAL_PRECISION(17));
    }
    char err[256];
    if (!text || mpilab_write_atomic(path, text, strlen(text), err, sizeof err))
        fprintf(stderr, "mpilab-multilane: --partial %s: %s\n", path,
                text ? err : "out of memory");
    free(text);
    json_decref(copy);
}

/* Write the document (rank 0) to path or standard output; the exit code, agreed. */
static int emit(MPI_Comm comm, json_t *doc, const char *json_path)
{
    int code = 0;
    if (g_rank == 0) {
        char err[256];
        char *text = json_dumps(doc, JSON_INDENT(1) | JSON_REAL_PRECISION(17));
        if (!text) {
            fprintf(stderr, "mpilab-multilane: out of memory\n");
            code = 1;
        } else if (json_path) {
            if (mpilab_write_atomic(json_path, text, strlen(text), err, sizeof err)) {
                fprintf(stderr, "mpilab-multilane: %s\n", err);
                code = 2;
            }
        } else {
            fputs(text, stdout);
            fputc('\n', stdout);
        }
        free(text);
    }
    MPI_Bcast(&code, 1, MPI_INT, 0, comm);
    return code;
}

/* Options not parsed by getopt: lists, sizes and lanes, checked against the job and grid. */
typedef struct opts {
    const char *ops, *impls, *sizes_spec, *lanes_arg, *json_path, *partial_path;
    long root, reps, model_reps;
} opts_t;

static void parse_options(int argc, char **argv, int p, opts_t *o,
                          mpilab_multilane_experiment_t *x)
{
    enum { O_SITES = 256, O_ROOT, O_OPS, O_IMPLS, O_SIZES, O_LANES, O_REPS, O_MBYTES, O_MREPS,
           O_ABYTES, O_NOMODEL, O_JSON, O_PARTIAL, O_VERSION };
    static const struct option lo[] = {
        {"sites", required_argument, 0, O_SITES}, {"root", required_argument, 0, O_ROOT},
        {"ops", required_argument, 0, O_OPS}, {"impls", required_argument, 0, O_IMPLS},
        {"sizes", required_argument, 0, O_SIZES}, {"lanes", required_argument, 0, O_LANES},
        {"reps", required_argument, 0, O_REPS}, {"model-bytes", required_argument, 0, O_MBYTES},
        {"model-reps", required_argument, 0, O_MREPS}, {"no-model", no_argument, 0, O_NOMODEL},
        {"alpha-bytes", required_argument, 0, O_ABYTES},
        {"json", required_argument, 0, O_JSON}, {"partial", required_argument, 0, O_PARTIAL},
        {"help", no_argument, 0, 'h'},
        {"version", no_argument, 0, O_VERSION}, {0, 0, 0, 0}};
    opterr = 0;
    int c, li;
    while ((c = getopt_long(argc, argv, "h", lo, &li)) != -1) {
        switch (c) {
        case O_SITES: x->sites = optarg; break;
        case O_ROOT:
            if (parse_int(optarg, 0, p - 1, &o->root))
                die(2, "--root %s: not a rank of this job (0..%d)", optarg, p - 1);
            break;
        case O_OPS: o->ops = optarg; break;
        case O_IMPLS: o->impls = optarg; break;
        case O_SIZES: o->sizes_spec = optarg; break;
        case O_LANES: o->lanes_arg = optarg; break;
        case O_REPS:
            if (parse_int(optarg, 1, 100000, &o->reps))
                die(2, "--reps %s: need an integer 1..100000", optarg);
            break;
        case O_MBYTES: {
            char err[200];
            size_t *sz = NULL, n = 0;
            if (mpilab_parse_size_list(optarg, 1, &sz, &n, err, sizeof err) || n != 1 || sz[0] < 2)
                die(2, "--model-bytes %s: need one size >= 2 bytes", optarg);
            x->model_bytes = sz[0];
            free(sz);
            break;
        }
        case O_MREPS:
            if (parse_int(optarg, 1, 1000, &o->model_reps))
                die(2, "--model-reps %s: need an integer 1..1000", optarg);
            break;
        case O_ABYTES: {
            char err[200];
            size_t *sz = NULL, n = 0;
            if (strcmp(optarg, "0") == 0)
                x->alpha_bytes = 0;
            else if (mpilab_parse_size_list(optarg, 1, &sz, &n, err, sizeof err) || n != 1 ||
                     sz[0] > ((size_t)1 << 24))
                die(2, "--alpha-bytes %s: need one size 0..16M", optarg);
            else
                x->alpha_bytes = sz[0];
            free(sz);
            break;
        }
        case O_NOMODEL: x->model = 0; break;
        case O_JSON: o->json_path = optarg; break;
        case O_PARTIAL: o->partial_path = optarg; break;
        case 'h':
            if (g_rank == 0)
                usage();
            MPI_Finalize();
            exit(0);
        case O_VERSION:
            if (g_rank == 0)
                printf("mpilab-multilane %s\n", MPILAB_VERSION_STRING);
            MPI_Finalize();
            exit(0);
        default:
            die(2, "unknown or incomplete option '%s' (see --help)", argv[optind - 1]);
        }
    }
    if (optind < argc)
        die(2, "unexpected argument '%s'", argv[optind]);
}

int main(int argc, char **argv)
{
    mpilab_stdout_guard();
    MPI_Init(&argc, &argv);
    MPI_Comm comm = MPI_COMM_WORLD;
    int p;
    MPI_Comm_rank(comm, &g_rank);
    MPI_Comm_size(comm, &p);

    opts_t o = {.ops = "scatter,gather", .impls = "single,multilane", .sizes_spec = "64K:4M:x4",
                .lanes_arg = "opt", .root = 0, .reps = 3, .model_reps = 3};
    mpilab_multilane_experiment_t x = {.sites = "testbed", .model = 1,
                                       .model_bytes = (size_t)4 << 20, .alpha_bytes = 1024,
                                       .progress = progress};
    parse_options(argc, argv, p, &o, &x);
    static const char *const op_names[] = {"scatter", "gather", NULL};
    static const char *const impl_names[] = {"native", "single", "multilane", NULL};
    check_list("--ops", o.ops, op_names);
    check_list("--impls", o.impls, impl_names);
    char err[256];
    size_t *sizes = NULL, nsizes = 0;
    if (mpilab_parse_size_list(o.sizes_spec, 1000, &sizes, &nsizes, err, sizeof err))
        die(2, "--sizes: %s", err);
    long fixed_lanes = 0;
    const int all_lanes = strcmp(o.lanes_arg, "all") == 0;
    const int opt_lanes = strcmp(o.lanes_arg, "opt") == 0;
    if (!all_lanes && !opt_lanes && parse_int(o.lanes_arg, LONG_MIN, LONG_MAX, &fixed_lanes))
        die(2, "--lanes %s: need a number, 'opt' or 'all'", o.lanes_arg);
    if (!x.model && opt_lanes && in_list(o.impls, "multilane"))
        die(2, "--lanes opt needs the model: give a number or drop --no-model");

    mpilab_grid_t *g = mpilab_grid_build(comm, x.sites);
    if (!g)
        die(2, "--sites: %s", mpilab_multilane_last_error());
    const int pmax = mpilab_grid_lanes_max(g, (int)o.root);
    if (!all_lanes && !opt_lanes && (fixed_lanes < 1 || fixed_lanes > pmax))
        die(2, "--lanes %ld: need 1 <= P <= P_sup = %d (root %ld's site and the smallest other "
               "site)", fixed_lanes, pmax, o.root);
    for (size_t k = 0; k < nsizes; k++)
        if (sizes[k] > (size_t)INT_MAX / (size_t)p)
            die(2, "--sizes: %zu bytes x %d ranks exceeds the MPI count limit", sizes[k], p);

    x.root = (int)o.root;
    x.reps = (int)o.reps;
    x.model_reps = (int)o.model_reps;
    x.sizes = sizes;
    x.nsizes = nsizes;
    for (int op = 0; op < 2; op++)
        x.ops |= in_list(o.ops, op_names[op]) ? 1u << op : 0u;
    x.native = in_list(o.impls, "native");
    x.single = in_list(o.impls, "single");
    x.multilane = in_list(o.impls, "multilane");
    x.lanes = all_lanes ? MPILAB_ML_LANES_ALL : opt_lanes ? MPILAB_ML_LANES_OPT : (int)fixed_lanes;
    if (o.partial_path) {
        x.checkpoint = checkpoint;
        x.checkpoint_arg = (void *)o.partial_path;
    }
    char why[600];
    json_t *doc = mpilab_multilane_experiment_run(comm, g, &x, why, sizeof why);
    if (!doc)
        die(1, "%s", why);
    int code = emit(comm, doc, o.json_path);
    if (code == 0 && o.partial_path && g_rank == 0)
        remove(o.partial_path); /* the whole document is written: nothing partial is left */
    json_decref(doc);
    free(sizes);
    mpilab_grid_free(g);
    MPI_Finalize();
    return code;
}
