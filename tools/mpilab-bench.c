/* mpilab-bench: measure point-to-point round trips and collective operations with the
 * MPIBlib-style engine of libmpilab and write mpilab.results/1 JSON. Run under mpirun or
 * srun. See docs/bench.md. */
#include <errno.h>
#include <getopt.h>
#include <libgen.h>
#include <limits.h>
#include <math.h>
#include <mpi.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "mpilab/parse.h"
#include "common/common.h"
#include "mpilab/mpilab.h"
#include "suite/suite_json.h"

#define MAX_SIZES 100000
#define MAX_RANGES 4
#define MAX_SIZES_LOGGP 2048 /* the piecewise split handles up to 2048 sizes */

static int g_rank;

/* Bad input: one line from rank 0, exit code 2 on every rank (all ranks parse the same
 * arguments, so they all reach this point). */
static void bad_input(const char *fmt, ...)
{
    if (g_rank == 0) {
        char msg[512];
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(msg, sizeof msg, fmt, ap);
        va_end(ap);
        fprintf(stderr, "mpilab-bench: %s\n", msg);
    }
    MPI_Finalize();
    exit(2);
}

static void usage(void)
{
    if (g_rank == 0)
        printf("usage: mpilab-bench [--list] [--ops LIST] [--sizes SPEC] [--timing LIST] [--cl X] [--eps X]\n"
               "                    [--min-reps N] [--max-reps N] [--isolation barrier|none|sync]\n"
               "                    [--p2p-schedule parallel|sequential] [--p2p-back BYTES] [--root R]\n"
               "                    [--sync skampi|regression] [--out FILE] [--no-fit] [--quiet]\n"
               "                    [--pipeline-depth N] [--allow-single-rep] [--warmup N]\n"
               "                    [--window N] [--pairs K] [--poll-sweep LIST] [--comb-msgs N]\n"
               "                    [--models hockney,loggp] [--loggp-burst N] [--loggp-or-wait F]\n"
               "  --ops        comma list of op or op:impl (default p2p,scatter,gather,bcast,allreduce)\n"
               "  --sizes      comma list of sizes (4K), ranges A:B:STEP or A:B:xF (default 1:64K:x4)\n"
               "  --timing     comma list of max,root,global,opspec (default max)\n"
               "  --warmup     untimed executions before each measurement (default 2)\n"
               "  --models     models to fit: hockney (from p2p), loggp (own measurement per\n"
               "               pair over --sizes); default hockney\n"
               "  --loggp-burst  messages per LogGP gap stream (default 16)\n"
               "  --loggp-or-wait  the receiver waits F round trips before timing o_r (default 2)\n"
               "  --window, --pairs, --poll-sweep, --comb-msgs: the interconnect suite's\n"
               "               streaming window, pair count, COMB poll intervals, messages\n"
               "See docs/bench.md.\n");
}

typedef struct sel {
    const mpilab_op_t *op; /* NULL = p2p */
} sel_t;

typedef struct opts {
    sel_t *sel;
    size_t nsel;
    int p2p;
    size_t *sizes;
    size_t nsizes;
    int timing[4];
    size_t ntiming;
    mpilab_bench_opts_t bo;
    mpilab_p2p_mode_t p2p_mode;
    long long p2p_back; /* -1 = same as bytes */
    const char *out;
    int no_fit, quiet, list, single;
    int hockney, loggp;   /* --models */
    mpilab_loggp_opts_t lg;
} opts_t;

static int sel_has(const opts_t *o, const mpilab_op_t *op)
{
    for (size_t k = 0; k < o->nsel; k++)
        if (o->sel[k].op == op)
            return 1;
    return 0;
}

static void parse_ops(opts_t *o, const char *spec)
{
    char *copy = strdup(spec);
    if (!copy)
        bad_input("out of memory");
    size_t cap = mpilab_ops_count() + 1;
    o->sel = calloc(cap, sizeof *o->sel);
    if (!o->sel)
        bad_input("out of memory");
    if (!*spec || spec[0] == ',' || spec[strlen(spec) - 1] == ',' || strstr(spec, ",,"))
        bad_input("--ops: empty item in '%s'", spec);
    char *save = NULL;
    for (char *t = strtok_r(copy, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
        char *impl = strchr(t, ':');
        if (impl)
            *impl++ = '\0';
        if (strcmp(t, "p2p") == 0) {
            if (impl && strcmp(impl, "roundtrip") != 0)
                bad_input("--ops: unknown implementation 'p2p:%s' (p2p has: roundtrip)", impl);
            o->p2p = 1;
            continue;
        }
        int found_name = 0, found = 0;
        for (size_t k = 0; k < mpilab_ops_count(); k++) {
            const mpilab_op_t *op = mpilab_ops_get(k);
            if (strcmp(op->name, t) != 0)
                continue;
            found_name = 1;
            if (impl && strcmp(op->impl, impl) != 0)
                continue;
            found = 1;
            if (!sel_has(o, op))
                o->sel[o->nsel++].op = op;
        }
        if (!found_name)
            bad_input("--ops: unknown operation '%s' (see --list)", t);
        if (!found)
            bad_input("--ops: unknown implementation '%s:%s' (see --list)", t, impl);
    }
    free(copy);
}

static void parse_timing(opts_t *o, const char *spec)
{
    char *copy = strdup(spec);
    if (!copy)
        bad_input("out of memory");
    if (!*spec || spec[0] == ',' || spec[strlen(spec) - 1] == ',' || strstr(spec, ",,"))
        bad_input("--timing: empty item in '%s'", spec);
    o->ntiming = 0;
    char *save = NULL;
    for (char *t = strtok_r(copy, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
        mpilab_timing_t tm;
        if (mpilab_timing_parse(t, &tm) != 0)
            bad_input("--timing: unknown timing method '%s' (max, root, global, opspec)", t);
        int dup = 0;
        for (size_t k = 0; k < o->ntiming; k++)
            dup |= o->timing[k] == (int)tm;
        if (!dup)
            o->timing[o->ntiming++] = (int)tm;
    }
    free(copy);
}

static long long parse_count(const char *opt, const char *s)
{
    long long v;
    if (mpilab_parse_i64(s, &v) != 0)
        bad_input("%s: '%s' is not an integer", opt, s);
    return v;
}

static double parse_real(const char *opt, const char *s)
{
    double v;
    if (mpilab_parse_double(s, &v) != 0)
        bad_input("%s: '%s' is not a number", opt, s);
    return v;
}

static void print_list(void)
{
    printf("p2p roundtrip p2p\n");
    for (size_t k = 0; k < mpilab_ops_count(); k++) {
        const mpilab_op_t *op = mpilab_ops_get(k);
        printf("%s %s max,root,global%s\n", op->name, op->impl, (op->flags & MPILAB_OP_OPSPEC) ? ",opspec" : "");
    }
}

static void parse_models(opts_t *o, const char *spec)
{
    if (!*spec || spec[0] == ',' || spec[strlen(spec) - 1] == ',' || strstr(spec, ",,"))
        bad_input("--models: empty item in '%s'", spec);
    char *copy = strdup(spec);
    if (!copy)
        bad_input("out of memory");
    o->hockney = o->loggp = 0;
    char *save = NULL;
    for (char *t = strtok_r(copy, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
        if (strcmp(t, "hockney") == 0)
            o->hockney = 1;
        else if (strcmp(t, "loggp") == 0)
            o->loggp = 1;
        else
            bad_input("--models: unknown model '%s' (hockney, loggp)", t);
    }
    free(copy);
}

static void parse_args(int argc, char **argv, int size, opts_t *o)
{
    memset(o, 0, sizeof *o);
    mpilab_bench_opts_default(&o->bo);
    mpilab_loggp_opts_default(&o->lg);
    o->hockney = 1;
    const char *models = NULL;
    long long burst = (long long)o->lg.burst;
    o->p2p_back = -1;
    const char *ops = "p2p,scatter,gather,bcast,allreduce", *sizes = "1:64K:x4", *timing = "max";
    long long min_reps = 5, max_reps = 100, root = 0, depth = 10;
    enum { O_LIST = 256, O_OPS, O_SIZES, O_TIMING, O_CL, O_EPS, O_MINR, O_MAXR, O_ISO, O_SCHED, O_BACK,
           O_ROOT, O_SYNC, O_OUT, O_NOFIT, O_QUIET, O_DEPTH, O_SINGLE, O_HELP, O_SUITE, O_WARMUP, O_MODELS,
           O_BURST, O_ORWAIT };
    static const struct option lo[] = {
        {"list", no_argument, 0, O_LIST}, {"ops", required_argument, 0, O_OPS},
        {"sizes", required_argument, 0, O_SIZES}, {"timing", required_argument, 0, O_TIMING},
        {"cl", required_argument, 0, O_CL}, {"eps", required_argument, 0, O_EPS},
        {"min-reps", required_argument, 0, O_MINR}, {"max-reps", required_argument, 0, O_MAXR},
        {"isolation", required_argument, 0, O_ISO}, {"p2p-schedule", required_argument, 0, O_SCHED},
        {"p2p-back", required_argument, 0, O_BACK}, {"root", required_argument, 0, O_ROOT},
        {"sync", required_argument, 0, O_SYNC}, {"out", required_argument, 0, O_OUT},
        {"no-fit", no_argument, 0, O_NOFIT}, {"quiet", no_argument, 0, O_QUIET},
        {"pipeline-depth", required_argument, 0, O_DEPTH}, {"allow-single-rep", no_argument, 0, O_SINGLE},
        {"help", no_argument, 0, O_HELP}, {"warmup", required_argument, 0, O_WARMUP},
        {"models", required_argument, 0, O_MODELS}, {"loggp-burst", required_argument, 0, O_BURST},
        {"loggp-or-wait", required_argument, 0, O_ORWAIT},
        /* the interconnect suite's parameters (mpilab_suite_option_names) */
        {"window", required_argument, 0, O_SUITE}, {"pairs", required_argument, 0, O_SUITE},
        {"poll-sweep", required_argument, 0, O_SUITE}, {"comb-msgs", required_argument, 0, O_SUITE},
        {0, 0, 0, 0}};
    opterr = 0;
    int c, li = 0;
    while ((c = getopt_long(argc, argv, "", lo, &li)) != -1) {
        switch (c) {
        case O_SUITE: {
            char err[256];
            if (mpilab_suite_parse_option(lo[li].name, optarg, err, sizeof err) != 0)
                bad_input("%s", err);
            break;
        }
        case O_LIST: o->list = 1; break;
        case O_OPS: ops = optarg; break;
        case O_SIZES: sizes = optarg; break;
        case O_TIMING: timing = optarg; break;
        case O_CL: o->bo.prec.cl = parse_real("--cl", optarg); break;
        case O_EPS: o->bo.prec.eps = parse_real("--eps", optarg); break;
        case O_MINR: min_reps = parse_count("--min-reps", optarg); break;
        case O_MAXR: max_reps = parse_count("--max-reps", optarg); break;
        case O_ISO:
            if (mpilab_isolation_parse(optarg, &o->bo.isolation) != 0)
                bad_input("--isolation: unknown mode '%s' (barrier, none, sync)", optarg);
            break;
        case O_SCHED:
            if (strcmp(optarg, "parallel") == 0)
                o->p2p_mode = MPILAB_P2P_PARALLEL;
            else if (strcmp(optarg, "sequential") == 0)
                o->p2p_mode = MPILAB_P2P_SEQUENTIAL;
            else
                bad_input("--p2p-schedule: unknown schedule '%s' (parallel, sequential)", optarg);
            break;
        case O_BACK: {
            size_t v;
            if (mpilab_parse_size(optarg, &v) != 0 || v > INT_MAX)
                bad_input("--p2p-back: bad size '%s'", optarg);
            o->p2p_back = (long long)v;
            break;
        }
        case O_ROOT: root = parse_count("--root", optarg); break;
        case O_SYNC:
            if (mpilab_sync_method_parse(optarg, &o->bo.sync_method) != 0)
                bad_input("--sync: unknown method '%s' (skampi, regression)", optarg);
            break;
        case O_OUT: o->out = optarg; break;
        case O_NOFIT: o->no_fit = 1; break;
        case O_QUIET: o->quiet = 1; break;
        case O_DEPTH: depth = parse_count("--pipeline-depth", optarg); break;
        case O_SINGLE: o->single = 1; break;
        case O_WARMUP: {
            long long w = parse_count("--warmup", optarg);
            if (w < 0 || w > 1000000)
                bad_input("--warmup: %lld outside 0..1000000", w);
            o->bo.warmup = (size_t)w;
            break;
        }
        case O_MODELS: models = optarg; break;
        case O_BURST: burst = parse_count("--loggp-burst", optarg); break;
        case O_ORWAIT:
            o->lg.or_wait_factor = parse_real("--loggp-or-wait", optarg);
            if (!(o->lg.or_wait_factor > 1.0 && o->lg.or_wait_factor <= 1000.0))
                bad_input("--loggp-or-wait: %g outside (1,1000]", o->lg.or_wait_factor);
            break;
        case O_HELP:
            usage();
            MPI_Finalize();
            exit(0);
        default:
            if (optopt)
                bad_input("option '-%c' unknown or missing its argument (see --help)", optopt);
            bad_input("option '%s' unknown or missing its argument (see --help)", argv[optind - 1]);
        }
    }
    if (optind < argc)
        bad_input("unexpected argument '%s'", argv[optind]);
    /* after the options: the COMB entries depend on --poll-sweep */
    if (mpilab_suite_register() != 0)
        bad_input("cannot register the interconnect suite's operations");
    if (o->list)
        return;
    if (!(o->bo.prec.cl > 0.0 && o->bo.prec.cl < 1.0))
        bad_input("--cl: %g outside (0,1)", o->bo.prec.cl);
    if (!(o->bo.prec.eps > 0.0 && o->bo.prec.eps < 1.0))
        bad_input("--eps: %g outside (0,1)", o->bo.prec.eps);
    if (min_reps < (o->single ? 1 : 2))
        bad_input("--min-reps: %lld is below %d", min_reps, o->single ? 1 : 2);
    if (max_reps < 1 || max_reps > 1000000)
        bad_input("--max-reps: %lld outside 1..1000000", max_reps);
    if (min_reps > max_reps)
        bad_input("--min-reps %lld is greater than --max-reps %lld", min_reps, max_reps);
    if (root < 0 || root >= size)
        bad_input("--root: %lld outside 0..%d", root, size - 1);
    if (depth < 1 || depth > 100000)
        bad_input("--pipeline-depth: %lld outside 1..100000", depth);
    o->bo.prec.min_reps = (size_t)min_reps;
    o->bo.prec.max_reps = (size_t)max_reps;
    o->bo.root = (int)root;
    o->bo.pipeline_depth = (size_t)depth;
    parse_ops(o, ops);
    parse_timing(o, timing);
    if (models)
        parse_models(o, models);
    if (burst < 2 || burst > 100000)
        bad_input("--loggp-burst: %lld outside 2..100000", burst);
    o->lg.burst = (size_t)burst;
    char err[256];
    if (mpilab_parse_size_list(sizes, MAX_SIZES, &o->sizes, &o->nsizes, err, sizeof err) != 0)
        bad_input("--sizes: %s", err);
    for (size_t k = 0; k < o->nsizes; k++)
        if (o->sizes[k] > INT_MAX)
            bad_input("--sizes: %zu bytes exceeds the MPI count limit %d", o->sizes[k], INT_MAX);
    if (o->p2p && size < 2)
        bad_input("--ops p2p needs at least 2 ranks");
    if (o->loggp) {
        if (o->no_fit)
            bad_input("--no-fit contradicts --models loggp");
        if (size < 2)
            bad_input("--models loggp needs at least 2 ranks");
        if (o->nsizes < 2)
            bad_input("--models loggp needs at least 2 message sizes in --sizes");
        if (min_reps < 2)
            bad_input("--models loggp needs --min-reps >= 2");
        o->lg.prec = o->bo.prec;
        o->lg.mode = o->p2p_mode;
        char lerr[256];
        if (mpilab_loggp_check(o->sizes, o->nsizes, &o->lg, lerr, sizeof lerr) != 0)
            bad_input("--models loggp: %s", lerr);
    }
    if (o->out) {
        /* the output directory must exist and be writable before measuring */
        char *copy = strdup(o->out);
        const char *dir = copy ? dirname(copy) : ".";
        if (*o->out == '\0' || access(dir, W_OK) != 0)
            bad_input("--out: cannot write '%s' (%s)", o->out, *o->out ? strerror(errno) : "empty path");
        free(copy);
    }
}

static json_t *jreal(double x)
{
    return isfinite(x) ? json_real(x) : json_null();
}

static json_t *stats_json(const mpilab_stats_t *s)
{
    json_t *j = json_object();
    json_object_set_new(j, "mean", jreal(s->mean));
    json_object_set_new(j, "ci_half", jreal(s->ci_half));
    json_object_set_new(j, "rel_err", jreal(s->rel_err));
    json_object_set_new(j, "median", jreal(s->median));
    json_object_set_new(j, "min", jreal(s->min));
    json_object_set_new(j, "max", jreal(s->max));
    json_object_set_new(j, "stdev", jreal(s->stdev));
    json_object_set_new(j, "reps", json_integer((json_int_t)s->reps));
    json_object_set_new(j, "invalid", json_integer((json_int_t)s->invalid));
    json_object_set_new(j, "converged", json_boolean(s->converged));
    return j;
}

static json_t *samples_json(const double *s, const unsigned char *v, size_t n, json_t **valid)
{
    json_t *a = json_array();
    *valid = json_array();
    for (size_t k = 0; k < n; k++) {
        json_array_append_new(a, jreal(s[k]));
        json_array_append_new(*valid, json_boolean(v[k]));
    }
    return a;
}

static json_t *precision_json(const mpilab_precision_t *p)
{
    return json_pack("{s:f,s:f,s:I,s:I}", "cl", p->cl, "eps", p->eps, "min_reps", (json_int_t)p->min_reps,
                     "max_reps", (json_int_t)p->max_reps);
}

/* human table row + progress */
typedef struct row {
    char op[48], impl[48], timing[12];
    size_t bytes;
    double mean, ci;
    size_t reps;
    int converged;
} row_t;

static void progress(const opts_t *o, size_t k, size_t total, const row_t *r)
{
    if (o->quiet || g_rank != 0)
        return;
    int tty = isatty(STDERR_FILENO);
    fprintf(stderr, "%s[%zu/%zu] %s:%s %s %zu B: %.3g s (%zu reps)%s", tty ? "\r\033[K" : "", k, total, r->op,
            r->impl, r->timing, r->bytes, r->mean, r->reps, tty ? "" : "\n");
    if (tty && k == total)
        fputc('\n', stderr);
    fflush(stderr);
}

static void print_table(const row_t *rows, size_t n)
{
    printf("%-10s %-10s %-7s %10s %12s %11s %5s %s\n", "op", "impl", "timing", "bytes", "mean(us)", "+-CI(us)",
           "reps", "converged");
    for (size_t k = 0; k < n; k++) {
        const row_t *r = &rows[k];
        char ci[32];
        if (isfinite(r->ci))
            snprintf(ci, sizeof ci, "%.3f", r->ci * 1e6);
        else
            snprintf(ci, sizeof ci, "-");
        printf("%-10s %-10s %-7s %10zu %12.3f %11s %5zu %s\n", r->op, r->impl, r->timing, r->bytes, r->mean * 1e6,
               ci, r->reps, r->converged ? "yes" : "no");
    }
}

/* Hockney fits per pair (one-way = half round trip) and predictions of own scatter/gather. */

/* A measurement a model can predict: op, impl, the mean (a JSON real), bytes and root.
 * Returns 0 if the entry lacks one of them. */
static int pred_target(json_t *m, const char **op, const char **impl, json_t **mean, double *bytes, size_t *root)
{
    *op = json_string_value(json_object_get(m, "op"));
    *impl = json_string_value(json_object_get(m, "impl"));
    *mean = json_object_get(json_object_get(m, "stats"), "mean");
    if (!*op || !*impl || !json_is_real(*mean))
        return 0;
    *bytes = (double)json_integer_value(json_object_get(m, "bytes"));
    *root = (size_t)json_integer_value(json_object_get(m, "root"));
    return 1;
}
static json_t *build_models(const opts_t *o, int size, json_t *meas)
{
    size_t npairs = (size_t)size * (size_t)(size - 1) / 2;
    double *x = calloc(o->nsizes, sizeof *x), *y = calloc(o->nsizes, sizeof *y);
    mpilab_hockney_t *mat = calloc((size_t)size * (size_t)size, sizeof *mat);
    /* piecewise models: each unordered pair's ranges, shared by (i,j) and (j,i) */
    mpilab_pair_model_t *pm = calloc((size_t)size * (size_t)size, sizeof *pm);
    mpilab_hockney_range_t *rgs = calloc(npairs * MAX_RANGES, sizeof *rgs);
    int *have = calloc((size_t)size * (size_t)size, sizeof *have);
    json_t *pairs = json_array();
    if (!x || !y || !mat || !pm || !rgs || !have)
        goto out;
    for (size_t pk = 0, i = 0; i < (size_t)size; i++)
        for (size_t j = i + 1; j < (size_t)size; j++, pk++) {
            size_t n = 0;
            size_t idx;
            json_t *m;
            json_array_foreach(meas, idx, m)
            {
                json_t *pr = json_object_get(m, "pair");
                if (!pr || (size_t)json_integer_value(json_array_get(pr, 0)) != i ||
                    (size_t)json_integer_value(json_array_get(pr, 1)) != j)
                    continue;
                json_t *mean = json_object_get(json_object_get(m, "stats"), "mean");
                if (!json_is_real(mean) || n >= o->nsizes)
                    continue;
                x[n] = (double)json_integer_value(json_object_get(m, "bytes"));
                y[n] = 0.5 * json_real_value(mean);
                n++;
            }
            mpilab_hockney_t h;
            if (mpilab_hockney_fit(x, y, n, &h) != 0)
                continue;
            mat[i * (size_t)size + j] = mat[j * (size_t)size + i] = h;
            have[i * (size_t)size + j] = have[j * (size_t)size + i] = 1;
            mpilab_hockney_range_t *rg = &rgs[pk * MAX_RANGES];
            size_t nr = mpilab_hockney_fit_ranges(x, y, n, rg, MAX_RANGES);
            mpilab_pair_model_t pmod = {h, rg, nr};
            pm[i * (size_t)size + j] = pm[j * (size_t)size + i] = pmod;
            json_t *ranges = json_array();
            for (size_t r = 0; r < nr; r++)
                json_array_append_new(ranges, json_pack("{s:I,s:I,s:o,s:o}", "from", (json_int_t)rg[r].from, "to", (json_int_t)rg[r].to,
                                                        "alpha", jreal(rg[r].h.alpha), "beta", jreal(rg[r].h.beta)));
            json_array_append_new(pairs, json_pack("{s:I,s:I,s:o,s:o,s:I,s:o}", "i", (json_int_t)i, "j",
                                                   (json_int_t)j, "alpha", jreal(h.alpha), "beta", jreal(h.beta),
                                                   "points", (json_int_t)n, "ranges", ranges));
        }
    (void)npairs;
out:;
    json_t *models = json_object();
    json_object_set_new(models, "hockney", json_pack("{s:o,s:s}", "pairs", pairs, "fit_on",
                                                     "half round trip of p2p with bytes == bytes_back"));
    int complete = size >= 2 && mat && have;
    for (int i = 0; complete && i < size; i++)
        for (int j = 0; j < size; j++)
            if (i != j && !have[i * size + j])
                complete = 0;
    json_t *pred = json_array();
    if (complete) {
        size_t idx;
        json_t *m;
        json_array_foreach(meas, idx, m)
        {
            const char *op, *impl;
            json_t *mean;
            double b;
            size_t root;
            if (!pred_target(m, &op, &impl, &mean, &b, &root))
                continue;
            /* predicted: per-protocol ranges; predicted_single: the whole-range fit */
            double p, p1;
            const size_t n = (size_t)size;
            if (!strcmp(op, "scatter") && !strcmp(impl, "linear")) {
                p = mpilab_predict_scatter_linear_ranges(pm, n, root, b);
                p1 = mpilab_predict_scatter_linear(mat, n, root, b);
            } else if (!strcmp(op, "scatter") && !strcmp(impl, "binomial")) {
                p = mpilab_predict_scatter_binomial_ranges(pm, n, root, b);
                p1 = mpilab_predict_scatter_binomial(mat, n, root, b);
            } else if (!strcmp(op, "gather") && !strcmp(impl, "linear")) {
                p = mpilab_predict_gather_linear_ranges(pm, n, root, b);
                p1 = mpilab_predict_gather_linear(mat, n, root, b);
            } else if (!strcmp(op, "gather") && !strcmp(impl, "binomial")) {
                p = mpilab_predict_gather_binomial_ranges(pm, n, root, b);
                p1 = mpilab_predict_gather_binomial(mat, n, root, b);
            } else {
                continue;
            }
            json_array_append_new(pred, json_pack("{s:s,s:s,s:O,s:I,s:o,s:o,s:o}", "op", op, "impl", impl, "timing",
                                                  json_object_get(m, "timing"), "bytes", (json_int_t)b,
                                                  "predicted", jreal(p), "predicted_single", jreal(p1),
                                                  "measured", jreal(json_real_value(mean))));
        }
    }
    json_object_set_new(models, "predictions", pred);
    free(x);
    free(y);
    free(mat);
    free(pm);
    free(rgs);
    free(have);
    return models;
}

/* ------------------------------------------------------------------------- LogGP */

static json_t *series_json(const mpilab_loggp_series_t *se)
{
    json_t *a = json_array();
    for (size_t k = 0; k < se->stats.reps; k++)
        json_array_append_new(a, jreal(se->samples[k]));
    return a;
}

static json_t *loggp_params_json(const mpilab_loggp_t *f, json_t *obj)
{
    json_object_set_new(obj, "L", jreal(f->L));
    json_object_set_new(obj, "L_raw", jreal(f->L_raw));
    json_object_set_new(obj, "os", jreal(f->os));
    json_object_set_new(obj, "os_per_byte", jreal(f->os_per_byte));
    json_object_set_new(obj, "or", jreal(f->orr));
    json_object_set_new(obj, "or_per_byte", jreal(f->or_per_byte));
    json_object_set_new(obj, "g", jreal(f->g));
    json_object_set_new(obj, "G", jreal(f->G));
    json_t *fl = json_array();
    if (f->flags & MPILAB_LOGGP_L_CLAMPED)
        json_array_append_new(fl, json_string("L_clamped"));
    if (f->flags & MPILAB_LOGGP_G_CLAMPED)
        json_array_append_new(fl, json_string("G_clamped"));
    if (f->flags & MPILAB_LOGGP_GAP_CLAMPED)
        json_array_append_new(fl, json_string("g_clamped"));
    json_object_set_new(obj, "flags", fl);
    return obj;
}

/* models.loggp: per-pair fits (on the per-size medians), per-size data, and predictions of
 * the linear and binomial scatter/gather measured in this run. Prints a table on stdout. */
static json_t *build_loggp(const opts_t *o, int size, const mpilab_loggp_pair_result_t *res, json_t *meas)
{
    const size_t n = o->nsizes, p = (size_t)size;
    double *x = calloc(n, sizeof *x), *rtt = calloc(n, sizeof *rtt), *os = calloc(n, sizeof *os),
           *orr = calloc(n, sizeof *orr), *g = calloc(n, sizeof *g);
    mpilab_loggp_t *mat = calloc(p * p, sizeof *mat);
    /* per pair k: its ranges (nr[k] of them; 0 = the summary fit alone) */
    size_t npairs = p * (p - 1) / 2;
    mpilab_loggp_t *prg = calloc(npairs * MAX_RANGES, sizeof *prg);
    double *pfrom = calloc(npairs * MAX_RANGES, sizeof *pfrom), *pto = calloc(npairs * MAX_RANGES, sizeof *pto);
    size_t *pnr = calloc(npairs, sizeof *pnr);
    mpilab_loggp_t *summ = calloc(npairs ? npairs : 1, sizeof *summ); /* per pair k: the summary fit */
    mpilab_loggp_pair_model_t *pmod = calloc(p * p, sizeof *pmod);
    json_t *pairs = json_array(), *pred = json_array();
    int complete = x && rtt && os && orr && g && mat && prg && pfrom && pto && pnr && summ && pmod;
    if (complete)
        printf("\nLogGP per pair (sender i -> receiver j; fit on per-size medians)\n"
               "%-7s %10s %10s %10s %10s %12s %s\n", "pair", "L(us)", "os(us)", "or(us)", "g(us)", "G(ns/B)",
               "flags");
    for (size_t k = 0, i = 0; complete && i < p; i++)
        for (size_t j = i + 1; j < p; j++, k++) {
            const mpilab_loggp_pair_result_t *r = &res[k];
            json_t *ps = json_array();
            for (size_t s = 0; s < n; s++) {
                const mpilab_loggp_point_t *pt = &r->points[s];
                x[s] = (double)pt->bytes;
                rtt[s] = pt->rtt.stats.median;
                os[s] = pt->os.stats.median;
                orr[s] = pt->orr.stats.median;
                g[s] = pt->g.stats.median;
                json_array_append_new(
                    ps, json_pack("{s:I,s:o,s:o,s:o,s:o,s:{s:o,s:o,s:o,s:o},s:{s:o,s:o,s:o,s:o}}", "bytes",
                                  (json_int_t)pt->bytes, "rtt", jreal(rtt[s]), "os", jreal(os[s]), "or",
                                  jreal(orr[s]), "g", jreal(g[s]), "stats", "rtt", stats_json(&pt->rtt.stats), "os",
                                  stats_json(&pt->os.stats), "or", stats_json(&pt->orr.stats), "g",
                                  stats_json(&pt->g.stats), "samples", "rtt", series_json(&pt->rtt), "os",
                                  series_json(&pt->os), "or", series_json(&pt->orr), "g", series_json(&pt->g)));
            }
            json_t *pj = json_pack("{s:I,s:I,s:I}", "i", (json_int_t)i, "j", (json_int_t)j, "round",
                                   (json_int_t)r->round);
            mpilab_loggp_t f;
            char err[256];
            /* protocol ranges: the Hockney piecewise split of this run's half round trips */
            mpilab_hockney_range_t hr[MAX_RANGES];
            double from[MAX_RANGES], to[MAX_RANGES], half[MAX_SIZES_LOGGP];
            size_t nr = 0;
            int positive = n <= MAX_SIZES_LOGGP;
            for (size_t s = 0; positive && s < n; s++) {
                half[s] = 0.5 * rtt[s];
                positive = half[s] > 0;
            }
            if (positive)
                nr = mpilab_hockney_fit_ranges(x, half, n, hr, MAX_RANGES);
            for (size_t q = 0; q < nr; q++) {
                from[q] = hr[q].from;
                to[q] = hr[q].to;
            }
            mpilab_loggp_t rf[MAX_RANGES];
            int frc = nr > 0 ? mpilab_loggp_fit_ranges(x, rtt, os, orr, g, n, from, to, nr, rf, &f, err, sizeof err)
                             : mpilab_loggp_fit(x, rtt, os, orr, g, n, &f, err, sizeof err);
            if (frc != 0) {
                json_object_set_new(pj, "flags", json_pack("[s]", "fit_failed"));
                json_object_set_new(pj, "error", json_string(err));
                complete = 0;
                printf("%zu->%zu   fit failed: %s\n", i, j, err);
            } else {
                loggp_params_json(&f, pj);
                mat[i * p + j] = mat[j * p + i] = f;
                summ[k] = f;
                pnr[k] = nr;
                json_t *ra = json_array();
                for (size_t q = 0; q < nr; q++) {
                    prg[k * MAX_RANGES + q] = rf[q];
                    pfrom[k * MAX_RANGES + q] = from[q];
                    pto[k * MAX_RANGES + q] = to[q];
                    json_t *rj = json_pack("{s:I,s:I}", "from", (json_int_t)from[q], "to", (json_int_t)to[q]);
                    json_array_append_new(ra, loggp_params_json(&rf[q], rj));
                }
                json_object_set_new(pj, "ranges", ra);
                printf("%zu->%-4zu %10.3f %10.3f %10.3f %10.3f %12.4f %s%s%s\n", i, j, f.L * 1e6, f.os * 1e6,
                       f.orr * 1e6, f.g * 1e6, f.G * 1e9, (f.flags & MPILAB_LOGGP_L_CLAMPED) ? "L_clamped " : "",
                       (f.flags & MPILAB_LOGGP_G_CLAMPED) ? "G_clamped " : "", (f.flags & MPILAB_LOGGP_GAP_CLAMPED) ? "g_clamped" : "");
            }
            json_object_set_new(pj, "per_size", ps);
            json_array_append_new(pairs, pj);
        }
    if (complete) {
        size_t idx;
        json_t *m;
        json_array_foreach(meas, idx, m)
        {
            const char *op, *impl;
            json_t *mean;
            double b;
            size_t root;
            if (!pred_target(m, &op, &impl, &mean, &b, &root))
                continue;
            int lin = !strcmp(impl, "linear"), bin = !strcmp(impl, "binomial");
            int sc = !strcmp(op, "scatter"), ga = !strcmp(op, "gather");
            if (!(lin || bin) || !(sc || ga))
                continue;
            double pv;
            if (lin) {
                /* every pair charged with the parameters of the protocol range of b */
                for (size_t k = 0, i = 0; i < p; i++)
                    for (size_t j = i + 1; j < p; j++, k++)
                        if (pnr[k] > 0) {
                            size_t q = mpilab_loggp_pick_range(&pfrom[k * MAX_RANGES], &pto[k * MAX_RANGES], pnr[k], b);
                            mat[i * p + j] = mat[j * p + i] = prg[k * MAX_RANGES + q];
                        }
                pv = sc ? mpilab_loggp_predict_scatter_linear(mat, p, root, b)
                        : mpilab_loggp_predict_gather_linear(mat, p, root, b);
            } else {
                /* binomial: messages carry whole subtrees, each charged with the range of its
                 * own size (pair models hold the per-range fits) */
                for (size_t k = 0, i = 0; i < p; i++)
                    for (size_t j = i + 1; j < p; j++, k++) {
                        mpilab_loggp_pair_model_t pmk = {.whole = summ[k], .ranges = &prg[k * MAX_RANGES],
                                                         .from = &pfrom[k * MAX_RANGES],
                                                         .to = &pto[k * MAX_RANGES], .nranges = pnr[k]};
                        pmod[i * p + j] = pmod[j * p + i] = pmk;
                    }
                pv = sc ? mpilab_loggp_predict_scatter_binomial_ranges(pmod, p, root, b)
                        : mpilab_loggp_predict_gather_binomial_ranges(pmod, p, root, b);
            }
            json_array_append_new(pred, json_pack("{s:s,s:s,s:O,s:I,s:o,s:o}", "op", op, "impl", impl, "timing",
                                                  json_object_get(m, "timing"), "bytes", (json_int_t)b,
                                                  "predicted", jreal(pv), "measured", jreal(json_real_value(mean))));
        }
    }
    free(x);
    free(rtt);
    free(os);
    free(orr);
    free(g);
    free(mat);
    free(prg);
    free(pfrom);
    free(pto);
    free(pnr);
    free(summ);
    free(pmod);
    return json_pack("{s:o,s:o,s:s,s:I,s:f}", "pairs", pairs, "predictions", pred, "fit_on",
                     "per-size medians; ranges: least-squares lines per protocol range (Hockney split of half "
                     "the round trip); pair: slopes of the smallest size's range, os/or/g measured at the "
                     "smallest size carried to 0 bytes, G of the largest range", "burst",
                     (json_int_t)o->lg.burst, "or_wait_factor", o->lg.or_wait_factor);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int size;
    MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    opts_t o;
    parse_args(argc, argv, size, &o);
    if (o.list) {
        if (g_rank == 0)
            print_list();
        MPI_Finalize();
        return 0;
    }
    char err[256];
    mpilab_bench_t *b = NULL;
    if (mpilab_bench_init(MPI_COMM_WORLD, &o.bo, &b, err, sizeof err) != 0)
        bad_input("%s", err);

    size_t back_fixed = o.p2p_back >= 0 ? (size_t)o.p2p_back : 0;
    size_t total = (o.p2p ? o.nsizes : 0) + o.nsel * o.nsizes * o.ntiming, done = 0;
    size_t nrows_cap = total * (size_t)(size > 1 ? size * (size - 1) / 2 : 1) + 1;
    row_t *rows = g_rank == 0 ? calloc(nrows_cap, sizeof *rows) : NULL;
    size_t nrows = 0;
    json_t *meas = json_array();
    json_t *skipped = json_array();
    int exit_code = 0;
    int sync_used = 0, suite_used = 0;
    size_t nsyncs = 0;
    double worst_residual = 0.0;
    size_t npairs = (size_t)size * (size_t)(size - 1) / 2;
    size_t fit_sizes = 0;

    if (o.p2p) {
        mpilab_p2p_result_t *res = calloc(npairs, sizeof *res);
        for (size_t s = 0; s < o.nsizes && res; s++) {
            size_t bytes = o.sizes[s], back = o.p2p_back >= 0 ? back_fixed : bytes;
            MPI_Barrier(MPI_COMM_WORLD);
            double wall0 = MPI_Wtime();
            int prc = mpilab_p2p_measure(MPI_COMM_WORLD, bytes, back, o.p2p_mode, &o.bo.prec, res);
            double p2p_wall = MPI_Wtime() - wall0;
            if (prc != MPI_SUCCESS) {
                if (g_rank == 0)
                    fprintf(stderr, "mpilab-bench: p2p at %zu bytes failed\n", bytes);
                exit_code = 1;
                break;
            }
            fit_sizes += back == bytes;
            row_t worst = {0};
            for (size_t k = 0; k < npairs; k++) {
                mpilab_p2p_result_t *q = &res[k];
                if (g_rank == 0) {
                    json_t *valid;
                    json_t *samples = samples_json(q->samples, q->valid, q->stats.reps, &valid);
                    json_t *m = json_pack("{s:s,s:s,s:s,s:s,s:[i,i],s:I,s:I,s:i,s:o,s:o,s:o,s:o}", "op", "p2p", "impl",
                                          "roundtrip", "timing", "p2p", "schedule",
                                          o.p2p_mode == MPILAB_P2P_PARALLEL ? "parallel" : "sequential", "pair",
                                          q->pair.i, q->pair.j, "bytes", (json_int_t)bytes, "bytes_back",
                                          (json_int_t)back, "ranks", size, "precision", precision_json(&o.bo.prec),
                                          "stats", stats_json(&q->stats), "samples", samples, "valid", valid);
                    /* seconds the whole all-pairs measurement at this size took */
                    json_object_set_new(m, "all_pairs_wall_s", json_real(p2p_wall));
                    json_array_append_new(meas, m);
                    row_t *r = &rows[nrows++];
                    snprintf(r->op, sizeof r->op, "p2p");
                    snprintf(r->impl, sizeof r->impl, "%d<->%d", q->pair.i, q->pair.j);
                    snprintf(r->timing, sizeof r->timing, "p2p");
                    r->bytes = bytes;
                    r->mean = q->stats.mean;
                    r->ci = q->stats.ci_half;
                    r->reps = q->stats.reps;
                    r->converged = q->stats.converged;
                    if (k == 0 || q->stats.mean > worst.mean)
                        worst = *r;
                }
                mpilab_p2p_result_free(q);
            }
            snprintf(worst.impl, sizeof worst.impl, "all-pairs");
            worst.bytes = bytes;
            progress(&o, ++done, total, &worst);
        }
        free(res);
    }

    for (size_t e = 0; e < o.nsel && exit_code == 0; e++) {
        const mpilab_op_t *op = o.sel[e].op;
        for (size_t s = 0; s < o.nsizes && exit_code == 0; s++) {
            for (size_t t = 0; t < o.ntiming && exit_code == 0; t++) {
                mpilab_timing_t tm = (mpilab_timing_t)o.timing[t];
                mpilab_result_t r;
                if (mpilab_bench_measure(b, op, o.sizes[s], tm, &r, err, sizeof err) != 0) {
                    if (g_rank == 0)
                        fprintf(stderr, "mpilab-bench: %s\n", err);
                    exit_code = 1;
                    break;
                }
                done++;
                if (!r.applied) {
                    if (g_rank == 0 && s == 0)
                        json_array_append_new(skipped, json_pack("{s:s,s:s,s:s}", "op", op->name, "impl",
                                                                 op->impl, "timing", mpilab_timing_name(tm)));
                    if (g_rank == 0) {
                        row_t sk = {.bytes = o.sizes[s], .mean = NAN};
                        snprintf(sk.op, sizeof sk.op, "%s", op->name);
                        snprintf(sk.impl, sizeof sk.impl, "%s", op->impl);
                        snprintf(sk.timing, sizeof sk.timing, "%s", mpilab_timing_name(tm));
                        progress(&o, done, total, &sk);
                    }
                    mpilab_result_free(&r);
                    continue;
                }
                int used_sync = r.sync_residual > 0.0 || tm == MPILAB_TIMING_GLOBAL ||
                                (o.bo.isolation == MPILAB_ISO_SYNC && tm != MPILAB_TIMING_OPSPEC);
                if (used_sync && size > 1) {
                    sync_used = 1;
                    nsyncs++;
                    if (r.sync_residual > worst_residual)
                        worst_residual = r.sync_residual;
                }
                if (!r.data_ok) {
                    if (g_rank == 0)
                        fprintf(stderr, "mpilab-bench: %s:%s delivered wrong data at %zu bytes\n", op->name,
                                op->impl, o.sizes[s]);
                    exit_code = 1;
                }
                if (g_rank == 0) {
                    json_t *valid;
                    json_t *samples = samples_json(r.samples, r.valid, r.stats.reps, &valid);
                    json_t *m = json_pack("{s:s,s:s,s:s,s:s,s:I,s:i,s:i,s:o,s:o,s:o,s:o,s:f,s:b}", "op", op->name,
                                          "impl", op->impl, "timing", mpilab_timing_name(tm), "isolation",
                                          tm == MPILAB_TIMING_OPSPEC ? "barrier" : mpilab_isolation_name(o.bo.isolation),
                                          "bytes", (json_int_t)o.sizes[s], "root", o.bo.root, "ranks", size,
                                          "precision", precision_json(&o.bo.prec), "stats", stats_json(&r.stats),
                                          "samples", samples, "valid", valid, "wall_s", r.wall, "data_ok", r.data_ok);
                    if (tm == MPILAB_TIMING_ROOT)
                        json_object_set_new(m, "confirm_s", json_real(r.confirm_time));
                    if (used_sync)
                        json_object_set_new(m, "clock_sync_residual_s", json_real(r.sync_residual));
                    if (o.bo.isolation == MPILAB_ISO_NONE && tm != MPILAB_TIMING_OPSPEC)
                        json_object_set_new(m, "pipeline_depth", json_integer((json_int_t)o.bo.pipeline_depth));
                    /* derived quantities from the median: one preempted repetition on a shared machine
                     * must not decide a latency or a bandwidth (mean and CI stay in "stats") */
                    json_t *dv = mpilab_suite_derived_json(op, o.sizes[s], r.stats.median);
                    if (dv) {
                        json_object_set_new(m, "derived", dv);
                        suite_used = 1;
                    }
                    json_array_append_new(meas, m);
                    row_t *row = &rows[nrows++];
                    snprintf(row->op, sizeof row->op, "%s", op->name);
                    snprintf(row->impl, sizeof row->impl, "%s", op->impl);
                    snprintf(row->timing, sizeof row->timing, "%s", mpilab_timing_name(tm));
                    row->bytes = o.sizes[s];
                    row->mean = r.stats.mean;
                    row->ci = r.stats.ci_half;
                    row->reps = r.stats.reps;
                    row->converged = r.stats.converged;
                    progress(&o, done, total, row);
                }
                mpilab_result_free(&r);
            }
        }
    }

    mpilab_loggp_pair_result_t *lres = NULL;
    if (o.loggp && exit_code == 0) {
        lres = calloc(npairs, sizeof *lres);
        int ok = lres != NULL, all = 0;
        MPI_Allreduce(&ok, &all, 1, MPI_INT, MPI_LAND, MPI_COMM_WORLD);
        int lrc = all ? mpilab_loggp_measure(MPI_COMM_WORLD, o.sizes, o.nsizes, &o.lg, lres) : MPI_ERR_NO_MEM;
        if (lrc != MPI_SUCCESS) {
            if (g_rank == 0)
                fprintf(stderr, "mpilab-bench: LogGP measurement failed (MPI error %d)\n", lrc);
            exit_code = 1;
            free(lres);
            lres = NULL;
        } else if (g_rank == 0 && !o.quiet) {
            fprintf(stderr, "[loggp] %zu pairs x %zu sizes measured\n", npairs, o.nsizes);
        }
    }

    /* Provenance is collective (host names and mapping of every rank). */
    json_t *prov = mpilab_provenance(MPI_COMM_WORLD, "mpilab-bench", argc, argv);
    if (g_rank == 0) {
        json_t *opt = json_object();
        json_t *tl = json_array();
        for (size_t t = 0; t < o.ntiming; t++)
            json_array_append_new(tl, json_string(mpilab_timing_name((mpilab_timing_t)o.timing[t])));
        json_t *sz = json_array();
        for (size_t k = 0; k < o.nsizes; k++)
            json_array_append_new(sz, json_integer((json_int_t)o.sizes[k]));
        json_t *ol = json_array();
        if (o.p2p)
            json_array_append_new(ol, json_string("p2p:roundtrip"));
        for (size_t e = 0; e < o.nsel; e++) {
            char nm[128];
            snprintf(nm, sizeof nm, "%s:%s", o.sel[e].op->name, o.sel[e].op->impl);
            json_array_append_new(ol, json_string(nm));
        }
        json_object_set_new(opt, "ops", ol);
        json_object_set_new(opt, "sizes", sz);
        json_object_set_new(opt, "timing", tl);
        json_object_set_new(opt, "timing_skipped", skipped);
        skipped = NULL;
        json_object_set_new(opt, "precision", precision_json(&o.bo.prec));
        json_object_set_new(opt, "isolation", json_string(mpilab_isolation_name(o.bo.isolation)));
        json_object_set_new(opt, "warmup", json_integer((json_int_t)o.bo.warmup));
        if (o.bo.isolation == MPILAB_ISO_NONE)
            json_object_set_new(opt, "pipeline_depth", json_integer((json_int_t)o.bo.pipeline_depth));
        json_object_set_new(opt, "p2p_schedule", json_string(o.p2p_mode == MPILAB_P2P_PARALLEL ? "parallel" : "sequential"));
        json_object_set_new(opt, "p2p_back", o.p2p_back >= 0 ? json_integer(o.p2p_back) : json_string("same"));
        json_object_set_new(opt, "root", json_integer(o.bo.root));
        json_object_set_new(opt, "sync", json_string(mpilab_sync_method_name(o.bo.sync_method)));
        json_object_set_new(opt, "resync", json_string("before every measurement that uses synchronised clocks"));
        json_object_set_new(opt, "fit", json_boolean(!o.no_fit));
        json_t *ml = json_array();
        if (o.hockney)
            json_array_append_new(ml, json_string("hockney"));
        if (o.loggp)
            json_array_append_new(ml, json_string("loggp"));
        json_object_set_new(opt, "models", ml);
        json_object_set_new(prov, "options", opt);
        const mpilab_clocksync_t *cs = mpilab_bench_clocksync(b);
        if (sync_used && cs) {
            json_t *rk = json_array();
            for (int r = 1; r < cs->nranks; r++)
                json_array_append_new(rk, json_pack("{s:i,s:o,s:o,s:o,s:o}", "rank", r, "offset_s", jreal(cs->ranks[r].offset),
                                                    "drift", jreal(cs->ranks[r].drift), "residual_s",
                                                    jreal(cs->ranks[r].residual), "uncertainty_s",
                                                    jreal(cs->ranks[r].uncertainty)));
            json_object_set_new(prov, "clock_sync",
                                json_pack("{s:s,s:o,s:I,s:o,s:o}", "method", mpilab_sync_method_name(cs->method),
                                          "max_residual_s", jreal(worst_residual), "syncs", (json_int_t)nsyncs,
                                          "last_duration_s", jreal(cs->duration), "ranks", rk));
        } else {
            json_object_set_new(prov, "clock_sync", json_null());
        }
        json_t *root = json_object();
        json_object_set_new(root, "schema", json_string(MPILAB_RESULTS_SCHEMA));
        json_object_set_new(root, "provenance", prov);
        prov = NULL;
        json_object_set_new(root, "measurements", meas);
        meas = NULL;
        if (suite_used)
            json_object_set_new(root, "suite", mpilab_suite_config_json());
        json_t *models = NULL;
        if (!o.no_fit && o.hockney && o.p2p && fit_sizes >= 2)
            models = build_models(&o, size, json_object_get(root, "measurements"));
        print_table(rows, nrows);
        if (lres) {
            if (!models)
                models = json_object();
            json_object_set_new(models, "loggp", build_loggp(&o, size, lres, json_object_get(root, "measurements")));
        }
        if (models)
            json_object_set_new(root, "models", models);
        if (o.out && mpilab_json_write_atomic(o.out, root, err, sizeof err) != 0) {
            fprintf(stderr, "mpilab-bench: %s\n", err);
            exit_code = 1;
        }
        json_decref(root);
        fflush(stdout);
    }
    MPI_Bcast(&exit_code, 1, MPI_INT, 0, MPI_COMM_WORLD);
    json_decref(prov);
    json_decref(meas);
    json_decref(skipped);
    free(rows);
    for (size_t k = 0; lres && k < npairs; k++)
        mpilab_loggp_pair_result_free(&lres[k]);
    free(lres);
    mpilab_bench_finalize(b);
    free(o.sel);
    free(o.sizes);
    MPI_Finalize();
    return exit_code;
}
