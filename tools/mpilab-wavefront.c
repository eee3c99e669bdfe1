/* mpilab-wavefront: create | convert | run | verify for the out-of-core Livermore loop 23.
 * See docs/wavefront.md. */
#include <getopt.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "common/common.h"
#include "mpilab/stats.h"
#include "mpilab/version.h"
#include "mpilab/wavefront.h"

static const char *prog = "mpilab-wavefront";

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int die(const char *msg)
{
    fprintf(stderr, "%s: %s\n", prog, msg);
    return 2;
}

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
    "      --mpi                distributed mode (run under mpirun, one band file per rank)\n"
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

static int usage(void)
{
    fprintf(stderr, "usage: %s create|convert|run|verify|bounds ... (%s --help for details)\n",
            prog, prog);
    return 2;
}

static int help(void)
{
    printf(help_text, prog);
    return 0;
}

static int parse_pos_i64(const char *opt, const char *s, int64_t min, int64_t *out)
{
    long long v;
    if (mpilab_parse_i64(s, &v) || v < min) {
        fprintf(stderr, "%s: %s '%s': expected an integer >= %lld\n", prog, opt, s,
                (long long)min);
        return -1;
    }
    *out = v;
    return 0;
}

/* A matrix given as PATH, or as band files PATH.0, PATH.1, ... when PATH does not exist. */
typedef struct {
    char **paths;
    int n;
} fileset;

static void fileset_free(fileset *s)
{
    for (int i = 0; i < s->n; i++)
        free(s->paths[i]);
    free(s->paths);
    s->paths = NULL;
    s->n = 0;
}

static int fileset_resolve(fileset *s, const char *base)
{
    s->paths = NULL;
    s->n = 0;
    if (access(base, F_OK) == 0) {
        s->paths = malloc(sizeof *s->paths);
        if (!s->paths || !(s->paths[0] = strdup(base))) {
            free(s->paths);
            s->paths = NULL;
            fprintf(stderr, "%s: out of memory\n", prog);
            return -1;
        }
        s->n = 1;
        return 0;
    }
    for (int i = 0;; i++) {
        char p[4200];
        snprintf(p, sizeof p, "%s.%d", base, i);
        if (access(p, F_OK) != 0)
            break;
        char **np = realloc(s->paths, (size_t)(i + 1) * sizeof *np);
        if (!np || !(np[i] = strdup(p))) {
            if (np)
                s->paths = np;
            fileset_free(s);
            fprintf(stderr, "%s: out of memory\n", prog);
            return -1;
        }
        s->paths = np;
        s->n = i + 1;
    }
    if (s->n == 0) {
        fprintf(stderr, "%s: %s: no such file (nor band files %s.0, ...)\n", prog, base, base);
        return -1;
    }
    return 0;
}

/* ---- create ------------------------------------------------------------------------- */

static int cmd_create(int argc, char **argv)
{
    static const struct option lo[] = {{"rows", required_argument, 0, 'm'},
                                       {"cols", required_argument, 0, 'n'},
                                       {"seed", required_argument, 0, 's'},
                                       {"help", no_argument, 0, 'h'},
                                       {0, 0, 0, 0}};
    int64_t rows = 0, cols = 0, seed = 1;
    int c;
    while ((c = getopt_long(argc, argv, "m:n:s:h", lo, NULL)) != -1) {
        switch (c) {
        case 'm': if (parse_pos_i64("--rows", optarg, 3, &rows)) return 2; break;
        case 'n': if (parse_pos_i64("--cols", optarg, 3, &cols)) return 2; break;
        case 's': if (parse_pos_i64("--seed", optarg, 0, &seed)) return 2; break;
        case 'h': return help();
        default: return usage();
        }
    }
    if (!rows || !cols)
        return die("create: --rows and --cols are required");
    if (argc - optind != 2)
        return die("create: expected two file names: DATA COEF");
    char err[1024];
    if (mpilab_wf_create(argv[optind], argv[optind + 1], rows, cols, (uint64_t)seed, err,
                         sizeof err))
        return die(err);
    return 0;
}

/* ---- convert ------------------------------------------------------------------------ */

static int cmd_convert(int argc, char **argv)
{
    static const struct option lo[] = {{"layout", required_argument, 0, 'l'},
                                       {"mb", required_argument, 0, 'M'},
                                       {"nb", required_argument, 0, 'N'},
                                       {"t", required_argument, 0, 't'},
                                       {"bands", required_argument, 0, 'b'},
                                       {"quiet", no_argument, 0, 'q'},
                                       {"help", no_argument, 0, 'h'},
                                       {0, 0, 0, 0}};
    mpilab_wf_convert_opts o = {-1, 0, 0, 1, 1};
    int64_t v;
    int c, quiet = 0;
    while ((c = getopt_long(argc, argv, "l:M:N:t:b:qh", lo, NULL)) != -1) {
        switch (c) {
        case 'l':
            if ((o.layout = mpilab_wf_layout_parse(optarg)) < 0) {
                fprintf(stderr, "%s: --layout '%s': expected rowmajor, block or optimized\n",
                        prog, optarg);
                return 2;
            }
            break;
        case 'M': if (parse_pos_i64("--mb", optarg, 1, &o.mb)) return 2; break;
        case 'N': if (parse_pos_i64("--nb", optarg, 1, &o.nb)) return 2; break;
        case 't': if (parse_pos_i64("--t", optarg, 1, &o.t)) return 2; break;
        case 'b':
            if (parse_pos_i64("--bands", optarg, 1, &v)) return 2;
            if (v > 65536) return die("--bands: at most 65536");
            o.nout = (int)v;
            break;
        case 'q': quiet = 1; break;
        case 'h': return help();
        default: return usage();
        }
    }
    if (o.layout < 0)
        return die("convert: --layout is required");
    if (argc - optind < 2)
        return die("convert: expected input file(s) and an output name");
    char *out = argv[argc - 1];
    fileset in = {0};
    if (argc - optind == 2) {
        if (fileset_resolve(&in, argv[optind]))
            return 2;
    } else {
        int n = argc - optind - 1;
        in.paths = calloc((size_t)n, sizeof *in.paths);
        if (!in.paths)
            return die("out of memory");
        for (int i = 0; i < n; i++) {
            if (!(in.paths[i] = strdup(argv[optind + i]))) {
                fileset_free(&in);
                return die("out of memory");
            }
            in.n = i + 1;
        }
    }
    char err[1024], stale[4096];
    /* temporaries of a conversion that was killed: reported, then removed */
    for (int k = 0; k < (o.nout > 1 ? o.nout : 1); k++) {
        char name[4200];
        if (o.nout > 1)
            snprintf(name, sizeof name, "%s.%d", out, k);
        else
            snprintf(name, sizeof name, "%s", out);
        int ns = mpilab_wf_stale_temps(name, 1, stale, sizeof stale, err, sizeof err);
        if (ns < 0) {
            fileset_free(&in);
            return die(err);
        }
        for (char *line = ns ? strtok(stale, "\n") : NULL; line; line = strtok(NULL, "\n"))
            fprintf(stderr, "%s: removed stale temporary file %s (from a killed conversion)\n",
                    prog, line);
    }
    double t0 = now_s();
    int rc = mpilab_wf_convert((const char *const *)in.paths, in.n, out, &o, err, sizeof err);
    double t1 = now_s();
    fileset_free(&in);
    if (rc)
        return die(err);
    if (!quiet)
        printf("convert: %s -> %s%s in %.3f s\n", argv[optind], out, o.nout > 1 ? ".<band>" : "",
               t1 - t0);
    return 0;
}

/* ---- run ---------------------------------------------------------------------------- */

/* The iteration times through the library's statistics (the precision every mpilab
 * measurement is judged by: confidence level and relative error of the defaults). The
 * iteration count is fixed by --iterations, so "converged" says whether that count met the
 * precision, it does not stop the run. */
static json_t *stats_json(const double *x, int64_t n)
{
    const mpilab_precision_t prec = MPILAB_PRECISION_DEFAULT;
    mpilab_stats_t s;
    mpilab_stats_compute(x, NULL, (size_t)(n > 0 ? n : 0), prec.cl, prec.eps, &s);
    json_t *o = json_object();
    if (n <= 0)
        return o;
    /* NaN (n < 2) is not JSON: null */
#define NUM(v) (isfinite(v) ? json_real(v) : json_null())
    json_object_set_new(o, "mean", NUM(s.mean));
    json_object_set_new(o, "ci_half", NUM(s.ci_half));
    json_object_set_new(o, "rel_err", NUM(s.rel_err));
    json_object_set_new(o, "median", NUM(s.median));
    json_object_set_new(o, "min", NUM(s.min));
    json_object_set_new(o, "max", NUM(s.max));
    json_object_set_new(o, "stdev", NUM(s.stdev));
#undef NUM
    json_object_set_new(o, "cl", json_real(prec.cl));
    json_object_set_new(o, "eps", json_real(prec.eps));
    json_object_set_new(o, "reps", json_integer((json_int_t)s.reps));
    json_object_set_new(o, "invalid", json_integer((json_int_t)s.invalid));
    json_object_set_new(o, "converged", json_boolean(s.converged));
    return o;
}

static int cmd_run(int argc, char **argv, int full_argc, char **full_argv)
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
                                       {"queue-depth", required_argument, 0, 'Q'},
                                       {"chain", required_argument, 0, 'C'},
                                       {"mpi", no_argument, 0, 'x'},
                                       {"json", required_argument, 0, 'j'},
                                       {"quiet", no_argument, 0, 'q'},
                                       {"help", no_argument, 0, 'h'},
                                       {0, 0, 0, 0}};
    mpilab_wf_run_opts o = {1, 1, 1, MPILAB_WF_IO_PREAD, 0, 0, 1, 0, 0, 0};
    const char *data = NULL, *coef = NULL, *json = NULL;
    int use_mpi = 0, quiet = 0, c;
    int64_t v;
    while ((c = getopt_long(argc, argv, "d:c:k:P:W:i:M:N:DFQ:C:xj:qh", lo, NULL)) != -1) {
        switch (c) {
        case 'd': data = optarg; break;
        case 'c': coef = optarg; break;
        case 'k': if (parse_pos_i64("--iterations", optarg, 0, &o.iterations)) return 2; break;
        case 'P':
            if (parse_pos_i64("--workers", optarg, 1, &v)) return 2;
            if (v > 4096) return die("--workers: at most 4096");
            o.workers = (int)v;
            break;
        case 'W':
            if (parse_pos_i64("--waves", optarg, 1, &v)) return 2;
            o.waves = v > 1000000 ? 1000000 : (int)v;
            break;
        case 'i':
            if ((o.io = mpilab_wf_io_parse(optarg)) < 0) {
                fprintf(stderr, "%s: --io '%s': expected pread, mmap, uring, direct or auto\n",
                        prog, optarg);
                return 2;
            }
            break;
        case 'M': if (parse_pos_i64("--mb", optarg, 1, &o.mb)) return 2; break;
        case 'N': if (parse_pos_i64("--nb", optarg, 1, &o.nb)) return 2; break;
        case 'D': o.drop_behind = 0; break;
        case 'F': o.no_prefetch = 1; break;
        case 'Q':
            if (parse_pos_i64("--queue-depth", optarg, 1, &v)) return 2;
            if (v > 32) return die("--queue-depth: at most 32");
            o.queue_depth = (int)v;
            break;
        case 'C':
            if ((o.chain = mpilab_wf_chain_parse(optarg)) < 0) {
                fprintf(stderr, "%s: --chain '%s': expected band or block\n", prog, optarg);
                return 2;
            }
            break;
        case 'x': use_mpi = 1; break;
        case 'j': json = optarg; break;
        case 'q': quiet = 1; break;
        case 'h': return help();
        default: return usage();
        }
    }
    if (optind != argc)
        return die("run: unexpected argument (use --data and --coef)");
    if (!data || !coef)
        return die("run: --data and --coef are required");
    char err[1024] = "";
    mpilab_wf_stats st;
    int rank = 0, rc;
    MPI_Comm comm = MPI_COMM_NULL;
    if (use_mpi) {
        int provided; /* the I/O helper threads never call MPI */
        MPI_Init_thread(&full_argc, &full_argv, MPI_THREAD_FUNNELED, &provided);
        comm = MPI_COMM_WORLD;
        MPI_Comm_rank(comm, &rank);
        rc = mpilab_wf_run_mpi(comm, data, coef, &o, &st, err, sizeof err);
    } else {
        rc = mpilab_wf_run(data, coef, &o, &st, err, sizeof err);
    }
    if (rc) {
        if (rank == 0)
            fprintf(stderr, "%s: %s\n", prog, err);
        if (use_mpi)
            MPI_Finalize();
        return 2;
    }
    json_t *prov = mpilab_provenance(comm, prog, full_argc, full_argv);
    int status = 0;
    if (rank == 0) {
        double ioB = (double)(st.bytes_read + st.bytes_written);
        double mean = st.iterations > 0 ? st.total_s / (double)st.iterations : 0.0;
        if (!quiet) {
            for (int64_t i = 0; i < st.iterations; i++)
                printf("iteration %lld: %.6f s\n", (long long)i, st.iter_s[i]);
            printf("wavefront: %lldx%lld %s (coef %s) block %lldx%lld, %d %s, %d wave(s) chained "
                   "by %s, io %s\n",
                   (long long)st.rows, (long long)st.cols, mpilab_wf_layout_name(st.layout),
                   mpilab_wf_layout_name(st.coef_layout), (long long)st.mb, (long long)st.nb,
                   st.workers, use_mpi ? "ranks" : "workers", o.waves,
                   mpilab_wf_chain_name(st.chain), mpilab_wf_io_name(st.io));
            printf("buffer slots (blocks in flight) per worker: %d, engine buffers %.1f MiB\n",
                   st.queue_depth, (double)st.buffer_bytes / 1048576.0);
            printf("time per iteration %.6f s, total %.6f s\n", mean, st.total_s);
            printf("bytes read %lld, written %lld, I/O bandwidth %.1f MiB/s, peak RSS %ld KiB\n",
                   (long long)st.bytes_read, (long long)st.bytes_written,
                   st.total_s > 0 ? ioB / st.total_s / 1048576.0 : 0.0, st.maxrss_kb);
            printf("requests read %lld, written %lld\n", (long long)st.requests_read,
                   (long long)st.requests_written);
            if (st.dev_read_bytes >= 0)
                printf("device bytes read %lld, written %lld\n", (long long)st.dev_read_bytes,
                       (long long)st.dev_write_bytes);
            for (int i = 0; st.compute_s && i < st.workers; i++)
                printf("worker %d: compute %.3f s, I/O wait %.3f s, dependency wait %.3f s, "
                       "I/O helper busy %.3f s\n", i, st.compute_s[i], st.io_wait_s[i],
                       st.dep_wait_s[i], st.io_busy_s[i]);
        }
        if (json) {
            json_t *root = json_object();
            json_object_set_new(root, "schema", json_string(MPILAB_RESULTS_SCHEMA));
            json_t *opts = json_pack("{s:s,s:I,s:i,s:i,s:s,s:s,s:i,s:b,s:b}", "mode", use_mpi ? "mpi" : "threads",
                                     "iterations", (json_int_t)o.iterations, "workers", o.workers,
                                     "waves", o.waves, "chain", mpilab_wf_chain_name(o.chain),
                                     "io", mpilab_wf_io_name(o.io),
                                     "queue_depth", o.queue_depth,
                                     "drop_behind", o.drop_behind, "prefetch", !o.no_prefetch);
            json_object_set_new(prov, "options", opts);
            json_object_set_new(prov, "clock_sync", json_null());
            json_object_set(root, "provenance", prov);
            json_t *wf = json_object();
            json_object_set_new(wf, "N", json_integer(st.cols));
            json_object_set_new(wf, "M", json_integer(st.rows));
            json_object_set_new(wf, "layout", json_string(mpilab_wf_layout_name(st.layout)));
            json_object_set_new(wf, "coef_layout", json_string(mpilab_wf_layout_name(st.coef_layout)));
            json_object_set_new(wf, "MB", json_integer(st.mb));
            json_object_set_new(wf, "NB", json_integer(st.nb));
            json_object_set_new(wf, "T", json_integer(st.layout == MPILAB_WF_OPTIMIZED ? st.t : 0));
            json_object_set_new(wf, "mode", json_string(use_mpi ? "mpi" : "threads"));
            json_object_set_new(wf, "workers", json_integer(st.workers));
            json_object_set_new(wf, "waves", json_integer(o.waves));
            json_object_set_new(wf, "chain", json_string(mpilab_wf_chain_name(st.chain)));
            json_object_set_new(wf, "buffer_bytes", json_integer(st.buffer_bytes));
            json_object_set_new(wf, "io", json_string(mpilab_wf_io_name(st.io)));
            json_object_set_new(wf, "queue_depth", json_integer(st.queue_depth));
            json_object_set_new(wf, "drop_behind", json_boolean(o.drop_behind));
            json_object_set_new(wf, "iterations", json_integer(st.iterations));
            json_object_set_new(wf, "total_s", json_real(st.total_s));
            json_object_set_new(wf, "time_per_iteration_s", json_real(mean));
            json_object_set_new(wf, "bytes_read", json_integer(st.bytes_read));
            json_object_set_new(wf, "bytes_written", json_integer(st.bytes_written));
            json_object_set_new(wf, "requests_read", json_integer(st.requests_read));
            json_object_set_new(wf, "requests_written", json_integer(st.requests_written));
            json_object_set_new(wf, "io_bandwidth_Bps", json_real(st.total_s > 0 ? ioB / st.total_s : 0.0));
            json_object_set_new(wf, "peak_rss_bytes", json_integer((json_int_t)st.maxrss_kb * 1024));
            json_object_set_new(wf, "prefetch", json_boolean(st.prefetch));
            json_object_set_new(wf, "dev_read_bytes", st.dev_read_bytes >= 0 ? json_integer(st.dev_read_bytes) : json_null());
            json_object_set_new(wf, "dev_write_bytes", st.dev_write_bytes >= 0 ? json_integer(st.dev_write_bytes) : json_null());
            json_t *pw = json_array();
            for (int i = 0; st.compute_s && i < st.workers; i++)
                json_array_append_new(pw, json_pack("{s:i,s:f,s:f,s:f,s:f}", "worker", i,
                                                    "compute_s", st.compute_s[i],
                                                    "io_wait_s", st.io_wait_s[i],
                                                    "dep_wait_s", st.dep_wait_s[i],
                                                    "io_busy_s", st.io_busy_s[i]));
            json_object_set_new(wf, "per_worker", pw);
            json_t *samples = json_array(), *valid = json_array();
            for (int64_t i = 0; i < st.iterations; i++) {
                json_array_append_new(samples, json_real(st.iter_s[i]));
                json_array_append_new(valid, json_true());
            }
            json_object_set_new(wf, "iteration_s", json_deep_copy(samples));
            json_object_set_new(root, "wavefront", wf);
            char impl[64];
            snprintf(impl, sizeof impl, "%s/%s", mpilab_wf_layout_name(st.layout), mpilab_wf_io_name(st.io));
            json_t *m = json_object();
            json_object_set_new(m, "op", json_string("wavefront"));
            json_object_set_new(m, "impl", json_string(impl));
            json_object_set_new(m, "timing", json_string("iteration"));
            json_object_set_new(m, "bytes", json_integer(st.iterations > 0 ? (st.bytes_read + st.bytes_written) / st.iterations : 0));
            json_object_set_new(m, "ranks", json_integer(use_mpi ? st.workers : 1));
            json_object_set_new(m, "workers", json_integer(st.workers));
            json_object_set_new(m, "waves", json_integer(o.waves));
            json_object_set_new(m, "chain", json_string(mpilab_wf_chain_name(st.chain)));
            json_object_set_new(m, "MB", json_integer(st.mb));
            json_object_set_new(m, "NB", json_integer(st.nb));
            json_object_set_new(m, "stats", stats_json(st.iter_s, st.iterations));
            json_object_set_new(m, "samples", samples);
            json_object_set_new(m, "valid", valid);
            json_object_set_new(root, "measurements", json_pack("[o]", m));
            if (mpilab_json_write_atomic(json, root, err, sizeof err)) {
                fprintf(stderr, "%s: %s\n", prog, err);
                status = 2;
            }
            json_decref(root);
        }
    }
    json_decref(prov);
    mpilab_wf_stats_free(&st);
    if (use_mpi)
        MPI_Finalize();
    return status;
}

/* ---- verify ------------------------------------------------------------------------- */

static int cmd_verify(int argc, char **argv)
{
    static const struct option lo[] = {{"initial", required_argument, 0, 'I'},
                                       {"coef", required_argument, 0, 'c'},
                                       {"iterations", required_argument, 0, 'k'},
                                       {"help", no_argument, 0, 'h'},
                                       {0, 0, 0, 0}};
    const char *initial = NULL, *coef = NULL;
    int64_t k = -1;
    int c;
    while ((c = getopt_long(argc, argv, "I:c:k:h", lo, NULL)) != -1) {
        switch (c) {
        case 'I': initial = optarg; break;
        case 'c': coef = optarg; break;
        case 'k': if (parse_pos_i64("--iterations", optarg, 0, &k)) return 2; break;
        case 'h': return help();
        default: return usage();
        }
    }
    if (!initial || !coef || k < 0)
        return die("verify: --initial, --coef and --iterations are required");
    if (argc - optind != 1)
        return die("verify: expected one RESULT file (or band base name)");
    fileset fi, fc, fr;
    if (fileset_resolve(&fi, initial))
        return 2;
    if (fileset_resolve(&fc, coef)) {
        fileset_free(&fi);
        return 2;
    }
    if (fileset_resolve(&fr, argv[optind])) {
        fileset_free(&fi);
        fileset_free(&fc);
        return 2;
    }
    char err[1024];
    double *d0 = NULL, *cf = NULL, *res = NULL;
    int status = 2;
    for (int i = 0; i < fr.n; i++) {
        int64_t done;
        int intr;
        if (mpilab_wf_file_state(fr.paths[i], &done, &intr, err, sizeof err)) {
            die(err);
            goto out;
        }
        if (intr) {
            snprintf(err, sizeof err, "%s: an in-place run was interrupted: the file holds a mix "
                     "of iterations", fr.paths[i]);
            die(err);
            goto out;
        }
        if (done != k)
            printf("note: %s records %lld in-place iterations, not %lld\n", fr.paths[i],
                   (long long)done, (long long)k);
    }
    int64_t r0, c0, p0, r1, c1, p1, r2, c2, p2;
    if (mpilab_wf_load((const char *const *)fi.paths, fi.n, &d0, &r0, &c0, &p0, err, sizeof err) ||
        mpilab_wf_load((const char *const *)fc.paths, fc.n, &cf, &r1, &c1, &p1, err, sizeof err) ||
        mpilab_wf_load((const char *const *)fr.paths, fr.n, &res, &r2, &c2, &p2, err, sizeof err)) {
        die(err);
        goto out;
    }
    if (p0 != 1 || p2 != 1 || p1 != 5) {
        die("verify: expected data files (1 plane) for --initial and RESULT, 5 planes for --coef");
        goto out;
    }
    if (r0 != r1 || r0 != r2 || c0 != c1 || c0 != c2) {
        snprintf(err, sizeof err, "verify: sizes differ: initial %lldx%lld, coef %lldx%lld, result %lldx%lld",
                 (long long)r0, (long long)c0, (long long)r1, (long long)c1, (long long)r2, (long long)c2);
        die(err);
        goto out;
    }
    mpilab_wf_reference(d0, cf, r0, c0, k);
    size_t n = (size_t)(r0 * c0);
    uint64_t hr = mpilab_wf_checksum(d0, n), hx = mpilab_wf_checksum(res, n);
    size_t ndiff = 0, first = 0;
    double maxd = 0;
    for (size_t i = 0; i < n; i++)
        if (memcmp(&d0[i], &res[i], sizeof(double)) != 0) {
            if (!ndiff)
                first = i;
            ndiff++;
            double dd = fabs(d0[i] - res[i]);
            if (dd > maxd || isnan(dd))
                maxd = dd;
        }
    printf("reference checksum %016llx\nresult    checksum %016llx\n", (unsigned long long)hr,
           (unsigned long long)hx);
    if (ndiff) {
        printf("DIFFERENT: %zu of %zu elements differ (first at row %lld col %lld), max |diff| %g\n",
               ndiff, n, (long long)(first / (size_t)c0), (long long)(first % (size_t)c0), maxd);
        status = 1;
    } else {
        printf("bitwise equal: %lldx%lld after %lld iterations\n", (long long)r0, (long long)c0,
               (long long)k);
        status = 0;
    }
out:
    free(d0);
    free(cf);
    free(res);
    fileset_free(&fi);
    fileset_free(&fc);
    fileset_free(&fr);
    return status;
}

/* ---- bounds ------------------------------------------------------------------------- */

static int cmd_bounds(int argc, char **argv)
{
    static const struct option lo[] = {{"size", required_argument, 0, 's'},
                                       {"threads", required_argument, 0, 'P'},
                                       {"rows", required_argument, 0, 'm'},
                                       {"cols", required_argument, 0, 'n'},
                                       {"help", no_argument, 0, 'h'},
                                       {0, 0, 0, 0}};
    size_t size = (size_t)256 << 20;
    int64_t threads = 1, rows = 2048, cols = 2048;
    int c;
    while ((c = getopt_long(argc, argv, "s:P:m:n:h", lo, NULL)) != -1) {
        switch (c) {
        case 's':
            if (mpilab_parse_size(optarg, &size) || size < 3 * 8 * 1024) {
                fprintf(stderr, "%s: --size '%s': expected a size such as 256M\n", prog, optarg);
                return 2;
            }
            break;
        case 'P': if (parse_pos_i64("--threads", optarg, 1, &threads)) return 2; break;
        case 'm': if (parse_pos_i64("--rows", optarg, 3, &rows)) return 2; break;
        case 'n': if (parse_pos_i64("--cols", optarg, 3, &cols)) return 2; break;
        case 'h': return help();
        default: return usage();
        }
    }
    if (threads > 1024)
        return die("--threads: at most 1024");
    double bw = mpilab_wf_triad_bandwidth(size / 24, (int)threads, 5);
    double rate = mpilab_wf_kernel_rate(rows, cols, 3);
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
    if (argc < 2)
        return usage();
    const char *cmd = argv[1];
    if (!strcmp(cmd, "-h") || !strcmp(cmd, "--help"))
        return help();
    if (!strcmp(cmd, "--version")) {
        printf("%s %s\n", prog, MPILAB_VERSION_STRING);
        return 0;
    }
    if (!strcmp(cmd, "create"))
        return cmd_create(argc - 1, argv + 1);
    if (!strcmp(cmd, "convert"))
        return cmd_convert(argc - 1, argv + 1);
    if (!strcmp(cmd, "run"))
        return cmd_run(argc - 1, argv + 1, argc, argv);
    if (!strcmp(cmd, "verify"))
        return cmd_verify(argc - 1, argv + 1);
    if (!strcmp(cmd, "bounds"))
        return cmd_bounds(argc - 1, argv + 1);
    fprintf(stderr, "%s: unknown command '%s' (create, convert, run, verify, bounds; --help)\n",
            prog, cmd);
    return 2;
}
