/* mpilab-selftest: the C part of `mpilab selftest`.
 *   clock: inject known clock offsets and drifts per rank into a real MPI run (the
 *          library's timer, mpilab/wtime.h), synchronise, and check every rank's model
 *          against the truth (mpilab_selftest_clock). Run under mpirun, all ranks on
 *          one node.
 *   fit:   robust Hockney and LogGP fits on synthetic samples of known parameters
 *          (mpilab_selftest_fit).
 * Writes JSON (--out FILE, atomically; stdout without). See docs/bench.md, docs/clocksync.md. */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <math.h>
#include <mpi.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include "common/stream.h"
#include "common/common.h"
#include "mpilab/mpilab.h"

static mpilab_placement_t g_placement; /* main: before and right after MPI_Init */

static int g_rank;

static void bad_input(const char *fmt, ...)
{
    if (g_rank == 0) {
        char msg[512];
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(msg, sizeof msg, fmt, ap);
        va_end(ap);
        fprintf(stderr, "mpilab-selftest: %s\n", msg);
    }
    MPI_Finalize();
    exit(2);
}

static void usage(void)
{
    if (g_rank == 0)
        printf("usage: mpilab-selftest clock [--inject SPEC|none] [--syncs N] [--out FILE]\n"
               "                             [--sync skampi|regression|hierarchical|leaders|auto|exact]\n"
               "       mpilab-selftest fit [--trials N] [--seed N] [--delayed F] [--out FILE]\n"
               "       mpilab-selftest link [--sizes LIST] [--min-reps N] [--max-reps N] [--eps X]\n"
               "                            [--burst N] [--rounds N] [--nice N|keep] [--out FILE]   (2 ranks: one real link)\n"
               "  --inject   offset=DURATION,drift=PPM,seed=N: every rank's clock gets an offset uniform in\n"
               "             [-offset, offset] and a drift in [-drift, drift] (default offset=10ms,drift=100ppm,seed=1)\n"
               "  --syncs    synchronisations, each checked (default 20)\n"
               "  --trials   synthetic data sets per link (default 5)\n"
               "  --delayed  fraction of samples delayed by the busy-machine model, 0..0.95 (default 0.5)\n"
               "  --sizes    message sizes of the link fits (default 0,1K,4K,16K,64K,128K)\n"
               "  --rounds   at most N rounds of measurement, 1..10 (default 1): after the first, the sizes\n"
               "             whose minimum is imprecise (its lowest spacings above 1%% of it) are measured again\n"
               "  --nice     the polling thread's priority while measuring the link, -20..19 (default -20: a\n"
               "             rank beside a busy process then gets its CPU when its message arrives), and its\n"
               "             session's autogroup's, given back after; needs root, else kept and said so;\n"
               "             keep: as launched\n");
}

static long long parse_count(const char *opt, const char *v, long long lo, long long hi)
{
    long long x;
    if (mpilab_parse_i64(v, &x) != 0 || x < lo || x > hi)
        bad_input("%s: '%s' is not an integer in %lld..%lld", opt, v, lo, hi);
    return x;
}

/* Rank 0 writes the document; a failed write is one line and exit status 2 (returned, so
 * that every rank still reaches MPI_Finalize: MPI_Abort would add Open MPI's banner). */
static int emit(json_t *root, const char *out)
{
    if (g_rank != 0)
        return 0;
    char err[256];
    if (out) {
        if (mpilab_json_write_atomic(out, root, err, sizeof err) != 0) {
            fprintf(stderr, "mpilab-selftest: %s\n", err);
            return 2;
        }
    } else {
        json_dumpf(root, stdout, JSON_INDENT(1));
        fputc('\n', stdout);
    }
    return 0;
}

static json_t *param_json(const mpilab_param_t *p)
{
    char fl[64];
    return json_pack("{s:f,s:f,s:f,s:f,s:s}", "value", p->value, "raw", p->raw, "lo", isfinite(p->lo) ? p->lo : -1.0,
                     "hi", isfinite(p->hi) ? p->hi : -1.0, "flags", mpilab_param_flags_str(p->flags, fl, sizeof fl));
}

static int run_fit(int argc, char **argv)
{
    long long trials = 5, seed = 1;
    double delayed = 0.5;
    const char *out = NULL;
    static struct option lo[] = {{"trials", required_argument, 0, 't'}, {"seed", required_argument, 0, 's'},
                                 {"delayed", required_argument, 0, 'd'}, {"out", required_argument, 0, 'o'},
                                 {"help", no_argument, 0, 'h'}, {0, 0, 0, 0}};
    int c;
    opterr = 0;
    while ((c = getopt_long(argc, argv, ":h", lo, NULL)) != -1) {
        switch (c) {
        case 't': trials = parse_count("--trials", optarg, 1, 1000); break;
        case 's': seed = parse_count("--seed", optarg, 0, 1LL << 40); break;
        case 'd':
            if (mpilab_parse_double(optarg, &delayed) != 0 || !(delayed >= 0 && delayed <= 0.95))
                bad_input("--delayed: '%s' is not a fraction in 0..0.95", optarg);
            break;
        case 'o': out = optarg; break;
        case 'h': usage(); MPI_Finalize(); exit(0);
        default: {
            char why[128];
            bad_input("fit: %s (see --help)", mpilab_getopt_problem(c, argc, argv, why, sizeof why));
        }
        }
    }
    if (optind < argc)
        bad_input("fit: unexpected argument '%s'", argv[optind]);
    /* WAN: 2 ms, 100 Mbit/s TCP payload rate, 16 KiB shaper burst; shared memory:
     * 0.3 us, 35 GB/s, no burst */
    struct {
        const char *name;
        mpilab_fit_truth_t t;
    } links[] = {{"wan-2ms-100Mbit", {2e-3, 8.0 / 100e6 * 1514.0 / 1448.0, 16384, 15e-6, 12e-6, 0.3e-6}},
                 {"shm", {0.3e-6, 1.0 / 35e9, 0, 0.05e-6, 0.17e-6, 0.06e-6}}};
    json_t *root = json_pack("{s:s,s:f,s:I,s:o}", "kind", "selftest-fit", "delayed_fraction", delayed, "seed",
                             (json_int_t)seed, "links", json_array());
    for (size_t l = 0; l < sizeof links / sizeof links[0]; l++) {
        const mpilab_fit_truth_t *t = &links[l].t;
        json_t *runs = json_array();
        for (long long k = 0; k < trials; k++) {
            for (int outl = 0; outl < 2; outl++) {
                mpilab_fit_check_t fc;
                char err[256];
                if (mpilab_selftest_fit(t, (unsigned long)(seed + k), delayed, outl, &fc, err, sizeof err) != 0)
                    bad_input("fit: %s", err);
                json_array_append_new(
                    runs, json_pack("{s:I,s:b,s:o,s:o,s:o,s:o,s:{s:f,s:f}}", "trial", (json_int_t)k, "outliers", outl,
                                    "alpha", param_json(&fc.alpha), "beta", param_json(&fc.beta), "L",
                                    param_json(&fc.L), "G", param_json(&fc.G), "median_lsq", "L", fc.median_fit.L,
                                    "G", fc.median_fit.G));
            }
        }
        json_array_append_new(json_object_get(root, "links"),
                              json_pack("{s:s,s:{s:f,s:f,s:f,s:f},s:o}", "name", links[l].name, "truth", "alpha",
                                        t->os + t->L + t->orr, "beta", t->G, "L", t->L, "G", t->G, "runs", runs));
    }
    int rc = emit(root, out);
    json_decref(root);
    return rc;
}

static int run_clock(int argc, char **argv)
{
    int rc = 0;
    long long syncs = 20;
    const char *out = NULL, *inject = "offset=10ms,drift=100ppm,seed=1";
    mpilab_sync_method_t method = MPILAB_SYNC_SKAMPI;
    static struct option lo[] = {{"inject", required_argument, 0, 'i'}, {"syncs", required_argument, 0, 'n'},
                                 {"sync", required_argument, 0, 'm'},   {"out", required_argument, 0, 'o'},
                                 {"help", no_argument, 0, 'h'},        {0, 0, 0, 0}};
    int c;
    opterr = 0;
    while ((c = getopt_long(argc, argv, ":h", lo, NULL)) != -1) {
        switch (c) {
        case 'i': inject = optarg; break;
        case 'n': syncs = parse_count("--syncs", optarg, 1, 10000); break;
        case 'm':
            if (mpilab_sync_method_parse(optarg, &method) != 0)
                bad_input("--sync: unknown method '%s' (skampi, regression, hierarchical, leaders, auto, exact)",
                          optarg);
            break;
        case 'o': out = optarg; break;
        case 'h': usage(); MPI_Finalize(); exit(0);
        default: {
            char why[128];
            bad_input("clock: %s (see --help)", mpilab_getopt_problem(c, argc, argv, why, sizeof why));
        }
        }
    }
    if (optind < argc)
        bad_input("clock: unexpected argument '%s'", argv[optind]);
    mpilab_inject_plan_t plan;
    int use = strcmp(inject, "none") != 0;
    char err[256];
    if (use && mpilab_inject_plan_parse(inject, &plan, err, sizeof err) != 0)
        bad_input("--inject: %s", err);
    int size;
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (size < 2)
        bad_input("clock: needs at least 2 ranks (run under mpirun -np N)");
    size_t n = (size_t)syncs * (size_t)(size - 1);
    mpilab_clock_check_t *chk = calloc(n, sizeof *chk);
    if (!chk)
        bad_input("out of memory");
    if (mpilab_selftest_clock(MPI_COMM_WORLD, use ? &plan : NULL, method, (size_t)syncs, chk, err, sizeof err) != 0)
        bad_input("clock: %s", err);
    json_t *prov = mpilab_provenance(MPI_COMM_WORLD, "mpilab-selftest", argc, argv);
    if (g_rank == 0) {
        json_t *arr = json_array();
        double maxerr = 0.0, maxerr1 = 0.0;
        size_t inside = 0, drift_in = 0, drift_5ppm = 0, inside1 = 0, within10 = 0;
        for (size_t k = 0; k < n; k++) {
            const mpilab_clock_check_t *q = &chk[k];
            maxerr = fmax(maxerr, fabs(q->error));
            inside += fabs(q->error) <= q->uncertainty;
            maxerr1 = fmax(maxerr1, fabs(q->error_1s));
            drift_in += fabs(q->est_drift - q->true_drift) <= q->drift_uncertainty;
            drift_5ppm += fabs(q->est_drift - q->true_drift) <= 5e-6;
            inside1 += fabs(q->error_1s) <= q->uncertainty + q->drift_uncertainty;
            within10 += fabs(q->error_1s) <= 10e-6;
            json_array_append_new(arr, json_pack("{s:i,s:i,s:f,s:f,s:f,s:f,s:f,s:f,s:i,s:b}", "sync", q->sync, "rank",
                                                 q->rank, "true_offset_s", q->true_offset, "true_drift", q->true_drift,
                                                 "est_offset_s", q->est_offset, "est_drift", q->est_drift, "error_s",
                                                 q->error, "uncertainty_s", q->uncertainty, "attempts", q->attempts,
                                                 "precise", q->precise));
            json_t *last = json_array_get(arr, json_array_size(arr) - 1);
            json_object_set_new(last, "drift_uncertainty", json_real(q->drift_uncertainty));
            json_object_set_new(last, "error_1s_s", json_real(q->error_1s));
            json_object_set_new(last, "stopped", json_string(mpilab_sync_stop_name(q->stopped)));
        }
        json_t *inj = use ? json_pack("{s:f,s:f,s:I}", "max_offset_s", plan.max_offset, "max_drift", plan.max_drift,
                                      "seed", (json_int_t)plan.seed)
                          : json_null();
        json_t *root = json_pack("{s:s,s:s,s:i,s:o,s:o,s:{s:f,s:I,s:I},s:o}", "kind", "selftest-clock", "method",
                                 mpilab_sync_method_name(method), "ranks", size, "inject", inj, "checks", arr,
                                 "summary", "max_abs_error_s", maxerr, "within_uncertainty", (json_int_t)inside, "n",
                                 (json_int_t)n, "provenance", prov ? prov : json_null());
        json_object_set_new(root, "placement", json_string(g_placement.reason));
        json_t *sm = json_object_get(root, "summary");
        json_object_set_new(sm, "drift_within_uncertainty", json_integer((json_int_t)drift_in));
        json_object_set_new(sm, "drift_within_5ppm", json_integer((json_int_t)drift_5ppm));
        json_object_set_new(sm, "max_abs_error_1s_s", json_real(maxerr1));
        json_object_set_new(sm, "error_1s_within_uncertainty", json_integer((json_int_t)inside1));
        json_object_set_new(sm, "error_1s_within_10us", json_integer((json_int_t)within10));
        rc = emit(root, out);
        json_decref(root);
    } else if (prov) {
        json_decref(prov);
    }
    free(chk);
    return rc;
}

static json_t *hockney_json(const mpilab_hockney_robust_t *h)
{
    json_t *rg = json_array();
    for (size_t r = 0; r < h->nranges; r++)
        json_array_append_new(rg, json_pack("{s:f,s:f,s:f,s:f}", "from", h->ranges[r].from, "to", h->ranges[r].to,
                                            "alpha", h->ranges[r].h.alpha, "beta", h->ranges[r].h.beta));
    return json_pack("{s:o,s:o,s:o}", "alpha", param_json(&h->alpha), "beta", param_json(&h->beta), "ranges", rg);
}

/* --nice for the link test on every rank; the highest nice value in force on any rank after it
 * (the least favoured rank), and in `why` what this rank did. */
static int link_priority(const char *arg, int *group_old, char *why, size_t len)
{
    int mine;
    *group_old = INT_MIN;
    if (strcmp(arg, "keep") == 0) {
        errno = 0;
        mine = getpriority(PRIO_PROCESS, 0);
        if (mine == -1 && errno != 0)
            mine = 0;
        snprintf(why, len, "priority kept as launched (--nice keep): nice %d", mine);
    } else
        mine = mpilab_placement_priority((int)parse_count("--nice", arg, -20, 19), group_old, why, len);
    int worst = mine;
    MPI_Allreduce(&mine, &worst, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    return worst;
}

static int run_link(int argc, char **argv)
{
    int rc = 0;
    const char *out = NULL, *spec = "0,1K,4K,16K,64K,128K", *nice = "-20";
    mpilab_precision_t prec = {5, 20, 0.95, 0.05, 0.0, 0.0, 1};
    long long burst = 8, rounds = 1;
    static struct option lo[] = {{"sizes", required_argument, 0, 's'},   {"min-reps", required_argument, 0, 'a'},
                                 {"max-reps", required_argument, 0, 'b'}, {"eps", required_argument, 0, 'e'},
                                 {"burst", required_argument, 0, 'g'},    {"out", required_argument, 0, 'o'},
                                 {"rounds", required_argument, 0, 'r'},   {"nice", required_argument, 0, 'n'},
                                 {"help", no_argument, 0, 'h'},           {0, 0, 0, 0}};
    int c;
    opterr = 0;
    while ((c = getopt_long(argc, argv, ":h", lo, NULL)) != -1) {
        switch (c) {
        case 's': spec = optarg; break;
        case 'a': prec.min_reps = (size_t)parse_count("--min-reps", optarg, 1, 100000); break;
        case 'b': prec.max_reps = (size_t)parse_count("--max-reps", optarg, 1, 100000); break;
        case 'e':
            if (mpilab_parse_double(optarg, &prec.eps) != 0 || !(prec.eps > 0 && prec.eps < 1))
                bad_input("--eps: '%s' is not a fraction in (0,1)", optarg);
            break;
        case 'g': burst = parse_count("--burst", optarg, 2, 100000); break;
        case 'r': rounds = parse_count("--rounds", optarg, 1, 10); break;
        case 'o': out = optarg; break;
        case 'n': nice = optarg; break;
        case 'h': usage(); MPI_Finalize(); exit(0);
        default: {
            char why[128];
            bad_input("link: %s (see --help)", mpilab_getopt_problem(c, argc, argv, why, sizeof why));
        }
        }
    }
    if (optind < argc)
        bad_input("link: unexpected argument '%s'", argv[optind]);
    char err[256];
    if (mpilab_precision_check(&prec, err, sizeof err) != 0)
        bad_input("%s", err);
    size_t *sizes = NULL, ns = 0;
    if (mpilab_parse_size_list(spec, 2048, &sizes, &ns, err, sizeof err) != 0)
        bad_input("--sizes: %s", err);
    int size;
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (size != 2)
        bad_input("link: needs exactly 2 ranks (run under mpirun -np 2)");
    if (strcmp(nice, "keep") != 0)
        parse_count("--nice", nice, -20, 19); /* checked on every rank before anything changes */
    char pwhy[400];
    int group_old;
    int nice_worst = link_priority(nice, &group_old, pwhy, sizeof pwhy);
    mpilab_link_fit_t f;
    int frc = mpilab_selftest_link(MPI_COMM_WORLD, sizes, ns, &prec, (size_t)burst, (size_t)rounds, &f, err, sizeof err);
    MPI_Barrier(MPI_COMM_WORLD); /* both ranks done measuring before the session's group is given back */
    mpilab_placement_priority_restore(group_old);
    if (frc != 0)
        bad_input("link: %s", err);
    json_t *prov = mpilab_provenance(MPI_COMM_WORLD, "mpilab-selftest", argc, argv);
    if (g_rank == 0) {
        json_t *sz = json_array(), *per = json_array();
        for (size_t k = 0; k < ns; k++) {
            json_array_append_new(sz, json_integer((json_int_t)sizes[k]));
            if (k < 64)
                json_array_append_new(per, json_pack("{s:I,s:f,s:f,s:f,s:I,s:f}", "bytes", (json_int_t)sizes[k],
                                                     "oneway_min_s", f.oneway_min[k], "oneway_median_s",
                                                     f.oneway_median[k], "residual_s",
                                                     isfinite(f.oneway_residual[k]) ? f.oneway_residual[k] : 0.0,
                                                     "reps", (json_int_t)f.reps[k], "oneway_low_spacing_s",
                                                     f.oneway_low_spacing[k]));
        }
        const mpilab_loggp_robust_t *l = &f.loggp;
        json_t *root = json_pack(
            "{s:s,s:o,s:o,s:o,s:o,s:o,s:o,s:o}", "kind", "selftest-link", "sizes", sz, "per_size", per, "hockney",
            f.hockney_ok ? hockney_json(&f.hockney) : json_pack("{s:s}", "error", f.hockney_err), "loggp",
            f.loggp_ok ? json_pack("{s:o,s:o,s:o,s:o,s:o}", "L", param_json(&l->L), "os", param_json(&l->os), "or",
                                   param_json(&l->orr), "g", param_json(&l->g), "G", param_json(&l->G))
                       : json_pack("{s:s}", "error", f.loggp_err),
            "former_hockney",
            f.former_hockney_ok ? json_pack("{s:f,s:f}", "alpha", f.former_hockney.alpha, "beta", f.former_hockney.beta)
                                : json_null(),
            "former_loggp",
            f.former_loggp_ok ? json_pack("{s:f,s:f,s:f,s:f}", "L", f.former_loggp.L, "L_raw", f.former_loggp.L_raw,
                                          "G", f.former_loggp.G, "os", f.former_loggp.os)
                              : json_null(),
            "provenance", prov ? prov : json_null());
        json_object_set_new(root, "placement", json_string(g_placement.reason));
        json_object_set_new(root, "priority", json_pack("{s:s,s:i}", "rank0", pwhy, "nice_worst", nice_worst));
        rc = emit(root, out);
        json_decref(root);
    } else if (prov) {
        json_decref(prov);
    }
    free(sizes);
    return rc;
}

int main(int argc, char **argv)
{
    mpilab_stdout_guard();
    /* the link test measures like mpilab-bench: one CPU per rank when the kernel has them */
    mpilab_placement_apply(MPILAB_PLACEMENT_AUTO, &g_placement);
    MPI_Init(&argc, &argv);
    mpilab_placement_settle(MPI_COMM_WORLD, &g_placement);
    MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
    if (argc >= 2 && (strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "--help") == 0)) {
        usage();
        MPI_Finalize();
        return 0;
    }
    if (argc >= 2 && strcmp(argv[1], "--version") == 0) {
        if (g_rank == 0)
            printf("mpilab-selftest %s\n", MPILAB_VERSION_STRING);
        MPI_Finalize();
        return 0;
    }
    if (argc < 2)
        bad_input("missing mode: clock, fit or link (see --help)");
    int rc;
    if (strcmp(argv[1], "clock") == 0)
        rc = run_clock(argc - 1, argv + 1);
    else if (strcmp(argv[1], "fit") == 0)
        rc = run_fit(argc - 1, argv + 1);
    else if (strcmp(argv[1], "link") == 0)
        rc = run_link(argc - 1, argv + 1);
    else
        bad_input("unknown mode '%s' (clock, fit, link)", argv[1]);
    MPI_Finalize();
    return rc;
}
