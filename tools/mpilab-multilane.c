/* mpilab-multilane: the multilane scatter/gather experiments on a multi-site grid.  Builds
 * the grid description, measures the model's inputs (l, L, alpha, b_LAN, b(P)), times the
 * native, single-lane and multilane collectives per message size and P, and writes one JSON
 * document (schema mpilab.multilane/1, docs/multilane.md).  Run under mpirun. */
#include <errno.h>
#include <getopt.h>
#include <jansson.h>
#include <limits.h>
#include <math.h>
#include <mpi.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
           "  --no-model        skip the model measurement (needs a number for --lanes)\n"
           "  --json FILE       write the document to FILE (default: standard output)\n"
           "  -h, --help        this text;  --version  the version\n"
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

static json_t *num(double x) { return isfinite(x) ? json_real(x) : json_null(); }

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm comm = MPI_COMM_WORLD;
    int p;
    MPI_Comm_rank(comm, &g_rank);
    MPI_Comm_size(comm, &p);

    const char *sites = "testbed", *ops = "scatter,gather", *impls = "single,multilane";
    const char *sizes_spec = "64K:4M:x4", *lanes_arg = "opt", *json_path = NULL;
    long root = 0, reps = 3, model_reps = 3;
    size_t model_bytes = (size_t)4 << 20;
    int model = 1;
    enum { O_SITES = 256, O_ROOT, O_OPS, O_IMPLS, O_SIZES, O_LANES, O_REPS, O_MBYTES, O_MREPS,
           O_NOMODEL, O_JSON, O_VERSION };
    static const struct option lo[] = {
        {"sites", required_argument, 0, O_SITES}, {"root", required_argument, 0, O_ROOT},
        {"ops", required_argument, 0, O_OPS}, {"impls", required_argument, 0, O_IMPLS},
        {"sizes", required_argument, 0, O_SIZES}, {"lanes", required_argument, 0, O_LANES},
        {"reps", required_argument, 0, O_REPS}, {"model-bytes", required_argument, 0, O_MBYTES},
        {"model-reps", required_argument, 0, O_MREPS}, {"no-model", no_argument, 0, O_NOMODEL},
        {"json", required_argument, 0, O_JSON}, {"help", no_argument, 0, 'h'},
        {"version", no_argument, 0, O_VERSION}, {0, 0, 0, 0}};
    opterr = 0;
    int c, li;
    while ((c = getopt_long(argc, argv, "h", lo, &li)) != -1) {
        switch (c) {
        case O_SITES: sites = optarg; break;
        case O_ROOT:
            if (parse_int(optarg, 0, p - 1, &root))
                die(2, "--root %s: not a rank of this job (0..%d)", optarg, p - 1);
            break;
        case O_OPS: ops = optarg; break;
        case O_IMPLS: impls = optarg; break;
        case O_SIZES: sizes_spec = optarg; break;
        case O_LANES: lanes_arg = optarg; break;
        case O_REPS:
            if (parse_int(optarg, 1, 100000, &reps))
                die(2, "--reps %s: need an integer 1..100000", optarg);
            break;
        case O_MBYTES: {
            char err[200];
            size_t *sz = NULL, n = 0;
            if (mpilab_parse_size_list(optarg, 1, &sz, &n, err, sizeof err) || n != 1 || sz[0] < 2)
                die(2, "--model-bytes %s: need one size >= 2 bytes", optarg);
            model_bytes = sz[0];
            free(sz);
            break;
        }
        case O_MREPS:
            if (parse_int(optarg, 1, 1000, &model_reps))
                die(2, "--model-reps %s: need an integer 1..1000", optarg);
            break;
        case O_NOMODEL: model = 0; break;
        case O_JSON: json_path = optarg; break;
        case 'h':
            if (g_rank == 0)
                usage();
            MPI_Finalize();
            return 0;
        case O_VERSION:
            if (g_rank == 0)
                printf("mpilab-multilane %s\n", MPILAB_VERSION_STRING);
            MPI_Finalize();
            return 0;
        default:
            die(2, "unknown or incomplete option '%s' (see --help)", argv[optind - 1]);
        }
    }
    if (optind < argc)
        die(2, "unexpected argument '%s'", argv[optind]);
    static const char *const op_names[] = {"scatter", "gather", NULL};
    static const char *const impl_names[] = {"native", "single", "multilane", NULL};
    check_list("--ops", ops, op_names);
    check_list("--impls", impls, impl_names);
    char err[256];
    size_t *sizes = NULL, nsizes = 0;
    if (mpilab_parse_size_list(sizes_spec, 1000, &sizes, &nsizes, err, sizeof err))
        die(2, "--sizes: %s", err);
    long fixed_lanes = 0;
    const int all_lanes = strcmp(lanes_arg, "all") == 0, opt_lanes = strcmp(lanes_arg, "opt") == 0;
    if (!all_lanes && !opt_lanes && parse_int(lanes_arg, LONG_MIN, LONG_MAX, &fixed_lanes))
        die(2, "--lanes %s: need a number, 'opt' or 'all'", lanes_arg);
    if (!model && opt_lanes && in_list(impls, "multilane"))
        die(2, "--lanes opt needs the model: give a number or drop --no-model");

    mpilab_grid_t *g = mpilab_grid_build(comm, sites);
    if (!g)
        die(2, "--sites: %s", mpilab_multilane_last_error());
    const int pmax = mpilab_grid_lanes_max(g, (int)root);
    if (!all_lanes && !opt_lanes && (fixed_lanes < 1 || fixed_lanes > pmax))
        die(2, "--lanes %ld: need 1 <= P <= P_sup = %d (root %ld's site and the smallest other "
               "site)", fixed_lanes, pmax, root);
    for (size_t k = 0; k < nsizes; k++)
        if (sizes[k] > (size_t)INT_MAX / (size_t)p)
            die(2, "--sizes: %zu bytes x %d ranks exceeds the MPI count limit", sizes[k], p);

    mpilab_multilane_measured_t mm;
    memset(&mm, 0, sizeof mm);
    json_t *doc = json_object();
    json_object_set_new(doc, "schema", json_string("mpilab.multilane/1"));
    json_object_set_new(doc, "version", json_string(MPILAB_VERSION_STRING));
    json_t *grid = json_object(), *site_of = json_array();
    for (int r = 0; r < p; r++)
        json_array_append_new(site_of, json_integer(mpilab_grid_site_of(g, r)));
    json_object_set_new(grid, "source", json_string(sites));
    json_object_set_new(grid, "nranks", json_integer(p));
    json_object_set_new(grid, "nsites", json_integer(mpilab_grid_nsites(g)));
    json_object_set_new(grid, "site_of_rank", site_of);
    json_object_set_new(grid, "P_sup", json_integer(pmax));
    json_object_set_new(doc, "grid", grid);
    json_object_set_new(doc, "root", json_integer(root));
    const int two_sites = mpilab_grid_nsites(g) == 2;
    if (model) {
        if (mpilab_multilane_measure(comm, g, (int)root, model_bytes, (int)model_reps, &mm))
            die(1, "model: %s", mpilab_multilane_last_error());
        char *mj = mpilab_multilane_model_json(&mm, sizes, nsizes);
        json_t *mo = mj ? json_loads(mj, 0, NULL) : NULL;
        free(mj);
        if (!mo)
            die(1, "model: out of memory");
        json_object_set_new(mo, "two_sites", json_boolean(two_sites));
        json_object_set_new(doc, "model", mo);
    }

    /* synchronised clocks: a collective's time is the latest end minus the root's start */
    mpilab_clocksync_t cs;
    if (mpilab_clocksync_run(comm, MPILAB_SYNC_SKAMPI, &cs) != 0)
        die(1, "clock synchronisation failed");
    json_t *sync = json_object();
    json_object_set_new(sync, "method", json_string("skampi"));
    json_object_set_new(sync, "max_residual", num(cs.max_residual));
    json_object_set_new(doc, "clocksync", sync);
    json_object_set_new(doc, "timing", json_string("latest end minus the root's start, "
                                                   "synchronised clocks, barrier before each"));
    json_t *runs = json_array();
    double *times = malloc((size_t)reps * sizeof *times);
    for (int op = 0; op < 2; op++) {
        if (!in_list(ops, op_names[op]))
            continue;
        for (size_t k = 0; k < nsizes; k++) {
            const double M = (double)sizes[k];
            int list[1024], nl = 0;
            if (in_list(impls, "native"))
                list[nl++] = 0;
            if (in_list(impls, "single"))
                list[nl++] = 1;
            if (in_list(impls, "multilane")) {
                if (all_lanes)
                    for (int P = 1; P <= pmax && nl < 1024; P++)
                        list[nl++] = -P;
                else if (!opt_lanes)
                    list[nl++] = -(int)fixed_lanes;
                else
                    list[nl++] = -(int)mpilab_multilane_popt(&mm.params, op, mm.n0, mm.n1, M,
                                                              NULL);
            }
            for (int i = 0; i < nl; i++) {
                const int lanes = list[i] < 0 ? -list[i] : list[i];
                const char *impl = list[i] == 0 ? "native" : list[i] > 0 ? "single" : "multilane";
                double wall[2] = {0, 0};
                int rc = mpilab_multilane_run_timed(comm, g, op, lanes, (int)root, sizes[k],
                                                    (int)reps, &cs, times, wall);
                if (rc < 0)
                    die(1, "%s %s P=%d %zu bytes: %s", op_names[op], impl, lanes, sizes[k],
                        mpilab_multilane_last_error());
                if (rc > 0)
                    die(1, "%s %s P=%d %zu bytes: WRONG DATA received", op_names[op], impl,
                        lanes, sizes[k]);
                json_t *run = json_object(), *ts = json_array();
                double lo_t = INFINITY, sum = 0;
                for (long r = 0; r < reps; r++) {
                    json_array_append_new(ts, json_real(times[r]));
                    lo_t = fmin(lo_t, times[r]);
                    sum += times[r];
                }
                json_object_set_new(run, "op", json_string(op_names[op]));
                json_object_set_new(run, "impl", json_string(impl));
                json_object_set_new(run, "lanes", lanes ? json_integer(lanes) : json_null());
                json_object_set_new(run, "bytes", json_integer((json_int_t)sizes[k]));
                json_object_set_new(run, "times", ts);
                json_object_set_new(run, "mean", json_real(sum / (double)reps));
                json_object_set_new(run, "min", json_real(lo_t));
                json_object_set_new(run, "wall_start", json_real(wall[0]));
                json_object_set_new(run, "wall_end", json_real(wall[1]));
                if (model && two_sites && lanes) {
                    double paper = lanes == 1 && list[i] > 0
                                       ? mpilab_single_lane_time(&mm.params, mm.n0, mm.n1, M)
                                       : mpilab_multilane_time(&mm.params, mm.n0, mm.n1,
                                                               (size_t)lanes, M);
                    json_object_set_new(run, "predicted_paper", num(paper));
                    json_object_set_new(run, "predicted_sim",
                                        num(mpilab_multilane_sim_time(&mm.params, op, mm.n0,
                                                                      mm.n1, (size_t)lanes, M)));
                }
                json_array_append_new(runs, run);
                if (g_rank == 0)
                    fprintf(stderr, "mpilab-multilane: %s %-9s P=%-2d %9zu B  mean %.4f s\n",
                            op_names[op], impl, lanes, sizes[k], sum / (double)reps);
            }
        }
    }
    json_object_set_new(doc, "runs", runs);
    int code = 0;
    if (g_rank == 0) {
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
    json_decref(doc);
    free(times);
    free(sizes);
    mpilab_multilane_measured_free(&mm);
    mpilab_clocksync_free(&cs);
    mpilab_grid_free(g);
    MPI_Bcast(&code, 1, MPI_INT, 0, comm);
    MPI_Finalize();
    return code;
}
