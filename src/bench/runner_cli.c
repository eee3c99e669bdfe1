/* mpilab-bench's options and entry list (include/mpilab/runner.h; the help text: runner_usage.c). */
#include <errno.h>
#include <getopt.h>
#include <libgen.h>
#include <limits.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "mpilab/parse.h"
#include "mpilab/adaptive.h"
#include "mpilab/runner.h"
#include "mpilab/suite.h"
#include "mpilab/forced.h"

#define MAX_SIZES 100000

static int fail(char *err, size_t errlen, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
    return MPILAB_RUNNER_BAD;
}

static int empty_item(const char *spec)
{
    return !*spec || spec[0] == ',' || spec[strlen(spec) - 1] == ',' || strstr(spec, ",,");
}

static int has(const mpilab_runner_config_t *c, const mpilab_op_t *op)
{
    for (size_t k = 0; k < c->nsel; k++)
        if (c->sel[k] == op)
            return 1;
    return 0;
}

/* One --ops item "name" or "name:impl" (t is modified). */
static int ops_item(mpilab_runner_config_t *c, char *t, char *err, size_t errlen)
{
    char *impl = strchr(t, ':');
    if (impl)
        *impl++ = '\0';
    int found_name = 0, found = 0;
    for (size_t k = 0; k < mpilab_ops_count(); k++) {
        const mpilab_op_t *op = mpilab_ops_get(k);
        if (strcmp(op->name, t) != 0)
            continue;
        found_name = 1;
        if (impl && strcmp(op->impl, impl) != 0)
            continue;
        found = 1;
        if (!impl && (op->flags & MPILAB_OP_GRID)) /* grid entries only when named */
            continue;
        if (!has(c, op))
            c->sel[c->nsel++] = op;
    }
    if (!found_name)
        return fail(err, errlen, "--ops: unknown operation '%s' (see --list)", t);
    if (!found)
        return fail(err, errlen, "--ops: unknown implementation '%s:%s' (see --list)", t, impl);
    return 0;
}

static int parse_ops(mpilab_runner_config_t *c, const char *spec, char *err, size_t errlen)
{
    if (empty_item(spec))
        return fail(err, errlen, "--ops: empty item in '%s'", spec);
    char *copy = strdup(spec);
    c->sel = calloc(mpilab_ops_count() + 1, sizeof *c->sel);
    int rc = copy && c->sel ? 0 : fail(err, errlen, "out of memory");
    char *save = NULL;
    for (char *t = copy ? strtok_r(copy, ",", &save) : NULL; rc == 0 && t; t = strtok_r(NULL, ",", &save))
        rc = ops_item(c, t, err, errlen);
    free(copy);
    return rc;
}

/* A comma list of names, each mapped by `one` (returns 0 or the error code). */
static int for_items(const char *opt, const char *spec, int (*one)(mpilab_runner_config_t *, const char *),
                     mpilab_runner_config_t *c, const char *known, char *err, size_t errlen)
{
    if (empty_item(spec))
        return fail(err, errlen, "%s: empty item in '%s'", opt, spec);
    char *copy = strdup(spec);
    if (!copy)
        return fail(err, errlen, "out of memory");
    char *save = NULL;
    int rc = 0;
    for (char *t = strtok_r(copy, ",", &save); rc == 0 && t; t = strtok_r(NULL, ",", &save))
        if (one(c, t) != 0)
            rc = fail(err, errlen, "%s: unknown %s '%s' (%s)", opt,
                      strcmp(opt, "--timing") == 0 ? "timing method" : "model", t, known);
    free(copy);
    return rc;
}

static int timing_one(mpilab_runner_config_t *c, const char *t)
{
    mpilab_timing_t tm;
    if (mpilab_timing_parse(t, &tm) != 0)
        return -1;
    for (size_t k = 0; k < c->ntiming; k++)
        if (c->timing[k] == tm)
            return 0;
    c->timing[c->ntiming++] = tm;
    return 0;
}

static int model_one(mpilab_runner_config_t *c, const char *t)
{
    if (strcmp(t, "hockney") == 0)
        c->hockney = 1;
    else if (strcmp(t, "loggp") == 0)
        c->loggp = 1;
    else if (strcmp(t, "lmo") == 0)
        c->lmo = 1;
    else
        return -1;
    return 0;
}

#define MAX_PLUGINS 16

/* Raw option values, checked after all are read. */
typedef struct raw {
    const char *ops, *sizes, *timing, *models, *model_sizes;
    long long min_reps, max_reps, budget_floor, root, depth, burst, warmup, pairs_seed;
    double time_budget; /* --time-budget: seconds of samples for the whole run (0 = none) */
    char osu[160];
    int version;
    const char *entries[MAX_PLUGINS]; /* --entries FILE.so, loaded after the options */
    size_t nentries;
} raw_t;

static int count_arg(const char *opt, const char *s, long long *out, char *err, size_t errlen)
{
    if (mpilab_parse_i64(s, out) != 0)
        return fail(err, errlen, "%s: '%s' is not an integer", opt, s);
    return 0;
}

static int real_arg(const char *opt, const char *s, double *out, char *err, size_t errlen)
{
    if (mpilab_parse_double(s, out) != 0)
        return fail(err, errlen, "%s: '%s' is not a number", opt, s);
    return 0;
}

enum { O_MPIALG = 200, O_PROBE, O_SKEW, O_EPSFOR, O_LIST = 256, O_JSON, O_OPS, O_SIZES, O_TIMING, O_CL, O_EPS, O_MINR, O_MAXR, O_ISO, O_SCHED, O_BACK,
       O_ROOT, O_SYNC, O_OUT, O_NOFIT, O_QUIET, O_FORMAT, O_DEPTH, O_SINGLE, O_SUITE, O_WARMUP, O_MODELS, O_BURST,
       O_ORWAIT, O_VERSION, O_PLACE, O_INJECT, O_MINTIME, O_BUDGET, O_ENTRIES, O_PGROUPS, O_PSEED,
       O_MSGLOG, O_LMOB, O_LMOR, O_LGPAIRS, O_LMOW, O_BFLOOR, O_IDLEPOLL, O_LMOE, O_MSIZES };

static const struct option longopts[] = {
    {"list", no_argument, 0, O_LIST}, {"json", no_argument, 0, O_JSON}, {"ops", required_argument, 0, O_OPS},
    {"sizes", required_argument, 0, O_SIZES}, {"timing", required_argument, 0, O_TIMING},
    {"cl", required_argument, 0, O_CL}, {"eps", required_argument, 0, O_EPS},
    {"eps-for", required_argument, 0, O_EPSFOR},
    {"min-reps", required_argument, 0, O_MINR}, {"max-reps", required_argument, 0, O_MAXR},
    {"isolation", required_argument, 0, O_ISO}, {"p2p-schedule", required_argument, 0, O_SCHED},
    {"p2p-back", required_argument, 0, O_BACK}, {"root", required_argument, 0, O_ROOT},
    {"sync", required_argument, 0, O_SYNC}, {"out", required_argument, 0, O_OUT},
    {"no-fit", no_argument, 0, O_NOFIT}, {"quiet", no_argument, 0, O_QUIET}, {"format", required_argument, 0, O_FORMAT},
    {"pipeline-depth", required_argument, 0, O_DEPTH}, {"allow-single-rep", no_argument, 0, O_SINGLE},
    {"help", no_argument, 0, 'h'}, {"version", no_argument, 0, O_VERSION},
    {"warmup", required_argument, 0, O_WARMUP}, {"models", required_argument, 0, O_MODELS},
    {"loggp-burst", required_argument, 0, O_BURST}, {"loggp-or-wait", required_argument, 0, O_ORWAIT},
    {"loggp-pairs", required_argument, 0, O_LGPAIRS},
    {"placement", required_argument, 0, O_PLACE}, {"inject-clock", required_argument, 0, O_INJECT},
    {"idle-poll", no_argument, 0, O_IDLEPOLL},
    {"min-time", required_argument, 0, O_MINTIME}, {"time-budget", required_argument, 0, O_BUDGET},
    {"budget-floor", required_argument, 0, O_BFLOOR},
    {"entries", required_argument, 0, O_ENTRIES}, {"pair-groups", required_argument, 0, O_PGROUPS},
    {"pairs-seed", required_argument, 0, O_PSEED}, {"iterations", required_argument, 0, 'i'},
    {"msglog", required_argument, 0, O_MSGLOG}, {"mpi-algorithms", no_argument, 0, O_MPIALG},
    {"probe", no_argument, 0, O_PROBE}, {"probe-skew", no_argument, 0, O_SKEW},
    {"lmo-bytes", required_argument, 0, O_LMOB},
    {"lmo-rendezvous", required_argument, 0, O_LMOR}, {"lmo-wait", required_argument, 0, O_LMOW},
    {"lmo-eps", required_argument, 0, O_LMOE}, {"model-sizes", required_argument, 0, O_MSIZES},
    /* the interconnect suite's parameters (mpilab_suite_option_names) */
    {"window", required_argument, 0, O_SUITE}, {"pairs", required_argument, 0, O_SUITE},
    {"poll-sweep", required_argument, 0, O_SUITE}, {"comb-msgs", required_argument, 0, O_SUITE},
    {0, 0, 0, 0}};

/* --isolation MODE[,MODE...]: each mode once, at most the three there are. */
static int isolation_list(mpilab_runner_config_t *c, const char *v, char *err, size_t errlen)
{
    c->nisolation = 0;
    const char *p = v;
    for (;;) {
        const char *end = strchr(p, ',');
        size_t len = end ? (size_t)(end - p) : strlen(p);
        char name[16];
        mpilab_isolation_t iso;
        if (len == 0 || len >= sizeof name)
            return fail(err, errlen, "--isolation: malformed list '%s' (e.g. barrier,none)", v);
        memcpy(name, p, len);
        name[len] = '\0';
        if (mpilab_isolation_parse(name, &iso) != 0)
            return fail(err, errlen, "--isolation: unknown mode '%s' (barrier, none, sync)", name);
        for (size_t k = 0; k < c->nisolation; k++)
            if (c->isolation[k] == iso)
                return fail(err, errlen, "--isolation: '%s' given twice", name);
        c->isolation[c->nisolation++] = iso;
        if (!end)
            break;
        p = end + 1;
    }
    c->bo.isolation = c->isolation[0];
    return 0;
}

/* Options whose value is a name from a fixed set. */
static int named_arg(int opt, const char *v, mpilab_runner_config_t *c, char *err, size_t errlen)
{
    switch (opt) {
    case O_ISO:
        return isolation_list(c, v, err, errlen);
    case O_PLACE:
        if (mpilab_placement_parse(v, &c->placement_mode) != 0)
            return fail(err, errlen, "--placement: unknown mode '%s' (auto, keep)", v);
        return 0;
    case O_INJECT: {
        char why[256];
        if (mpilab_inject_plan_parse(v, &c->inject_plan, why, sizeof why) != 0)
            return fail(err, errlen, "--inject-clock: %s", why);
        c->inject = 1;
        c->inject_spec = v;
        return 0;
    }
    case O_SCHED:
        if (strcmp(v, "parallel") == 0)
            c->p2p_mode = MPILAB_P2P_PARALLEL;
        else if (strcmp(v, "sequential") == 0)
            c->p2p_mode = MPILAB_P2P_SEQUENTIAL;
        else
            return fail(err, errlen, "--p2p-schedule: unknown schedule '%s' (parallel, sequential)", v);
        return 0;
    default:
        if (mpilab_sync_method_parse(v, &c->bo.sync_method) != 0)
            return fail(err, errlen, "--sync: unknown method '%s' (auto, skampi, regression, hierarchical, leaders, exact)",
                        v);
        c->sync_given = 1;
        return 0;
    }
}

/* --pairs full|sampled|auto (a count goes to the suite's --pairs) */
static int pairs_design_arg(const char *v, mpilab_runner_config_t *c, char *err, size_t errlen)
{
    if (strcmp(v, "full") == 0)
        c->pairs_design = MPILAB_PAIRS_FULL;
    else if (strcmp(v, "sampled") == 0)
        c->pairs_design = MPILAB_PAIRS_SAMPLED;
    else if (strcmp(v, "auto") == 0)
        c->pairs_design = MPILAB_PAIRS_AUTO;
    else
        return fail(err, errlen, "--pairs: '%s' is neither full, sampled, auto nor a count of stream pairs", v);
    return 0;
}

/* --pair-groups auto|none|host|site|K */
static int pair_groups_arg(const char *v, mpilab_runner_config_t *c, char *err, size_t errlen)
{
    long long k;
    if (strcmp(v, "auto") && strcmp(v, "none") && strcmp(v, "host") && strcmp(v, "site") &&
        (mpilab_parse_i64(v, &k) != 0 || k < 1 || k > INT_MAX))
        return fail(err, errlen, "--pair-groups: '%s' is not auto, none, host, site or a block size >= 1", v);
    c->pair_groups = v;
    return 0;
}

/* IMB's -msglog [A:]B: sizes 0, 2^A, ..., 2^B (A default 0) */
static int msglog_arg(const char *v, raw_t *r, char *err, size_t errlen)
{
    long long a = 0, b;
    const char *colon = strchr(v, ':');
    char first[32];
    if (colon) {
        size_t n = (size_t)(colon - v);
        if (n == 0 || n >= sizeof first)
            return fail(err, errlen, "-msglog: '%s' is not [A:]B", v);
        memcpy(first, v, n);
        first[n] = '\0';
        if (mpilab_parse_i64(first, &a) != 0)
            return fail(err, errlen, "-msglog: '%s' is not [A:]B", v);
    }
    if (mpilab_parse_i64(colon ? colon + 1 : v, &b) != 0 || a < 0 || b > 30 || a > b)
        return fail(err, errlen, "-msglog: '%s' is not [A:]B with 0 <= A <= B <= 30", v);
    snprintf(r->osu, sizeof r->osu, "0,%lld:%lld:x2", 1LL << a, 1LL << b);
    r->sizes = r->osu;
    return 0;
}

/* OSU's and IMB's habits: -i/--iterations N (a fixed count), -x N (warm-up), -msglog */
static int peer_habit(int opt, const char *v, raw_t *r, char *err, size_t errlen)
{
    switch (opt) {
    case 'i': {
        int rc = count_arg("-i/--iterations", v, &r->min_reps, err, errlen);
        r->max_reps = r->min_reps;
        return rc;
    }
    case 'x': return count_arg("-x", v, &r->warmup, err, errlen);
    default: return msglog_arg(v, r, err, errlen);
    }
}

/* IMB spells its long options with one dash: -msglog becomes --msglog before getopt sees it
 * (which would read "-m sglog"); -npmin (IMB's sweep over process counts) has no runner
 * equivalent and is refused by name. */
static int imb_spellings(int argc, char **argv, char *err, size_t errlen)
{
    for (int k = 1; k < argc && strcmp(argv[k], "--") != 0; k++) {
        if (strcmp(argv[k], "-msglog") == 0)
            argv[k] = (char *)"--msglog";
        else if (strcmp(argv[k], "-npmin") == 0)
            return fail(err, errlen, "-npmin: IMB's sweep over process counts has no runner option; "
                                     "launch once per rank count (mpilab bench --np N)");
    }
    return 0;
}

static int loggp_pairs_arg(const char *v, mpilab_runner_config_t *c, char *err, size_t errlen)
{
    static const char *const names[] = {"auto", "design", "matching"};
    for (int k = 0; k < 3; k++)
        if (strcmp(v, names[k]) == 0) {
            c->loggp_pairs = k;
            return 0;
        }
    return fail(err, errlen, "--loggp-pairs: '%s' is not auto, design or matching", v);
}

/* One option; returns 0, MPILAB_RUNNER_HELP or MPILAB_RUNNER_BAD. */
static int one_option(int opt, int li, const char *v, mpilab_runner_config_t *c, raw_t *r, char *err, size_t errlen)
{
    size_t sz;
    switch (opt) {
    case O_SUITE:
        if (strcmp(longopts[li].name, "pairs") == 0 && (v[0] < '0' || v[0] > '9'))
            return pairs_design_arg(v, c, err, errlen);
        return mpilab_suite_parse_option(longopts[li].name, v, err, errlen) != 0 ? MPILAB_RUNNER_BAD : 0;
    case O_PGROUPS: return pair_groups_arg(v, c, err, errlen);
    case O_PSEED:
        if (mpilab_parse_i64(v, &r->pairs_seed) != 0 || r->pairs_seed < 0)
            return fail(err, errlen, "--pairs-seed: '%s' is not a non-negative integer", v);
        c->pairs_seed = (unsigned long long)r->pairs_seed;
        return 0;
    case O_MPIALG: c->mpi_algorithms = 1; return 0;
    case O_PROBE: c->probe = 1; return 0;
    case O_MSIZES: r->model_sizes = v; return 0;
    case O_SKEW: c->probe = c->probe_skew = 1; return 0;
    case O_LIST: c->list |= 1; return 0;
    case O_JSON: c->list |= 2; return 0;
    case O_OPS: r->ops = v; return 0;
    case O_SIZES: r->sizes = v; return 0;
    case 'm':
        if (strchr(v, ','))
            return fail(err, errlen, "-m: '%s' is not [MIN:]MAX", v);
        snprintf(r->osu, sizeof r->osu, "%s%s:x2", strchr(v, ':') ? "" : "1:", v);
        r->sizes = r->osu;
        return 0;
    case 'i': case 'x': case O_MSGLOG: return peer_habit(opt, v, r, err, errlen);
    case O_TIMING: r->timing = v; return 0;
    case O_CL: return real_arg("--cl", v, &c->bo.prec.cl, err, errlen);
    case O_EPS: return real_arg("--eps", v, &c->bo.prec.eps, err, errlen);
    case O_EPSFOR: return mpilab_eps_rules_parse(v, &c->eps_for, err, errlen);
    case O_MINR: return count_arg("--min-reps", v, &r->min_reps, err, errlen);
    case O_MAXR: return count_arg("--max-reps", v, &r->max_reps, err, errlen);
    case O_BFLOOR: return count_arg("--budget-floor", v, &r->budget_floor, err, errlen);
    case O_BUDGET:
        if (mpilab_parse_duration(v, &r->time_budget) != 0 || r->time_budget > 86400.0)
            return fail(err, errlen, "--time-budget: '%s' is not a duration like 60s (0..86400s)", v);
        return 0;
    case O_MINTIME:
        if (mpilab_parse_duration(v, &c->bo.prec.min_time) != 0 || c->bo.prec.min_time > 3600.0)
            return fail(err, errlen, "--min-time: '%s' is not a duration like 10ms (0..3600s)", v);
        return 0;
    case O_ISO: case O_SCHED: case O_SYNC: case O_PLACE: case O_INJECT: return named_arg(opt, v, c, err, errlen);
    case O_BACK:
        if (mpilab_parse_size(v, &sz) != 0 || sz > INT_MAX)
            return fail(err, errlen, "--p2p-back: bad size '%s'", v);
        c->p2p_back = (long long)sz;
        return 0;
    case O_ROOT: return count_arg("--root", v, &r->root, err, errlen);
    case O_OUT: c->out = v; return 0;
    case O_NOFIT: c->no_fit = 1; return 0;
    case O_QUIET: c->quiet = 1; return 0;
    case O_IDLEPOLL: c->idle_poll = 1; return 0;
    case O_FORMAT:
        if (strcmp(v, "table") != 0 && strcmp(v, "csv") != 0)
            return fail(err, errlen, "--format: '%s': expected table or csv", v);
        c->csv = strcmp(v, "csv") == 0;
        return 0;
    case O_DEPTH: return count_arg("--pipeline-depth", v, &r->depth, err, errlen);
    case O_SINGLE: c->single = 1; return 0;
    case O_WARMUP: return count_arg("--warmup", v, &r->warmup, err, errlen);
    case O_MODELS: r->models = v; return 0;
    case O_LMOB:
        if (mpilab_parse_size(v, &sz) != 0 || sz == 0 || sz > INT_MAX)
            return fail(err, errlen, "--lmo-bytes: '%s' is not a size in 1..%d bytes", v, INT_MAX);
        c->lmo_bytes = sz;
        return 0;
    case O_LMOR:
        if (mpilab_parse_size(v, &sz) != 0 || sz > INT_MAX)
            return fail(err, errlen, "--lmo-rendezvous: '%s' is not a size in 0..%d bytes", v, INT_MAX);
        c->lmo_rendezvous = sz;
        return 0;
    case O_LMOW:
        if (mpilab_wait_parse(v, &c->lmo_wait) != 0)
            return fail(err, errlen, "--lmo-wait: '%s' is not spin, sleep or sleep:DURATION (0 < DURATION <= 100ms)",
                        v);
        return 0;
    case O_LMOE:
        if (real_arg("--lmo-eps", v, &c->lmo_eps, err, errlen) != 0)
            return MPILAB_RUNNER_BAD;
        if (!(c->lmo_eps > 0.0 && c->lmo_eps < 1.0))
            return fail(err, errlen, "--lmo-eps: %g outside (0,1)", c->lmo_eps);
        return 0;
    case O_BURST: return count_arg("--loggp-burst", v, &r->burst, err, errlen);
    case O_LGPAIRS: return loggp_pairs_arg(v, c, err, errlen);
    case O_ORWAIT: return real_arg("--loggp-or-wait", v, &c->lg.or_wait_factor, err, errlen);
    case 'h': return MPILAB_RUNNER_HELP;
    case O_VERSION: r->version = 1; return 0;
    case O_ENTRIES:
        if (r->nentries >= MAX_PLUGINS)
            return fail(err, errlen, "--entries: at most %d files", MAX_PLUGINS);
        if (!*v)
            return fail(err, errlen, "--entries: empty file name");
        r->entries[r->nentries++] = v;
        return 0;
    default: return MPILAB_RUNNER_BAD;
    }
}

/* Range checks of the numeric options, in the order the runner always reported them. */
static int check_numbers(mpilab_runner_config_t *c, const raw_t *r, int nranks, char *err, size_t errlen)
{
    if (r->warmup < 0 || r->warmup > 1000000)
        return fail(err, errlen, "--warmup: %lld outside 0..1000000", r->warmup);
    if (!(c->lg.or_wait_factor > 1.0 && c->lg.or_wait_factor <= 1000.0))
        return fail(err, errlen, "--loggp-or-wait: %g outside (1,1000]", c->lg.or_wait_factor);
    if (!(c->bo.prec.cl > 0.0 && c->bo.prec.cl < 1.0))
        return fail(err, errlen, "--cl: %g outside (0,1)", c->bo.prec.cl);
    if (!(c->bo.prec.eps > 0.0 && c->bo.prec.eps < 1.0))
        return fail(err, errlen, "--eps: %g outside (0,1)", c->bo.prec.eps);
    if (r->min_reps < (c->single ? 1 : 2))
        return fail(err, errlen, "--min-reps: %lld is below %d", r->min_reps, c->single ? 1 : 2);
    if (r->max_reps < 1 || r->max_reps > 1000000)
        return fail(err, errlen, "--max-reps: %lld outside 1..1000000", r->max_reps);
    if (r->min_reps > r->max_reps)
        return fail(err, errlen, "--min-reps %lld is greater than --max-reps %lld", r->min_reps, r->max_reps);
    if (r->budget_floor < 1 || r->budget_floor > r->max_reps)
        return fail(err, errlen, "--budget-floor: %lld outside 1..%lld (--max-reps)", r->budget_floor, r->max_reps);
    if (r->root < 0 || r->root >= nranks)
        return fail(err, errlen, "--root: %lld outside 0..%d", r->root, nranks - 1);
    if (r->depth < 1 || r->depth > 100000)
        return fail(err, errlen, "--pipeline-depth: %lld outside 1..100000", r->depth);
    if (r->burst < 2 || r->burst > 100000)
        return fail(err, errlen, "--loggp-burst: %lld outside 2..100000", r->burst);
    c->bo.warmup = (size_t)r->warmup;
    c->bo.prec.min_reps = (size_t)r->min_reps;
    c->bo.prec.max_reps = (size_t)r->max_reps;
    c->bo.prec.budget_floor = (size_t)r->budget_floor;
    c->bo.root = (int)r->root;
    c->bo.pipeline_depth = (size_t)r->depth;
    c->lg.burst = (size_t)r->burst;
    return 0;
}

/* The clock synchronisation: simulated (the SMPI build), every rank reads SimGrid's one
 * clock, so unless --sync names a method or --inject-clock gives the ranks clocks of their
 * own, the default is exact (no probing); exact anywhere else would be false: refused. The
 * default elsewhere is auto (mpilab_sync_auto_choice). */
static int sync_choice(mpilab_runner_config_t *c, char *err, size_t errlen)
{
    if (!c->sync_given) {
        c->bo.sync_method = mpilab_clock_global_build() && !c->inject ? MPILAB_SYNC_EXACT : MPILAB_SYNC_AUTO;
        return 0;
    }
    if (c->bo.sync_method != MPILAB_SYNC_EXACT)
        return 0;
    if (!mpilab_clock_global_build())
        return fail(err, errlen, "--sync exact: only a simulated run (the SMPI build) reads one global clock");
    if (c->inject)
        return fail(err, errlen, "--sync exact: --inject-clock gives every rank a clock of its own");
    return 0;
}

/* Checks that need the selection and the sizes. */
/* Each measurement's share of --time-budget: the total over the measurements the run will
 * take (all-pairs entries: one per size and round of pairs measured at once). */
static void budget_share(mpilab_runner_config_t *c, const raw_t *r, int nranks)
{
    c->time_budget = r->time_budget;
    size_t rounds = nranks < 2 ? 1
                    : c->p2p_mode == MPILAB_P2P_SEQUENTIAL ? (size_t)nranks * (size_t)(nranks - 1) / 2
                    : (size_t)(nranks % 2 ? nranks : nranks - 1);
    if (nranks >= 3 && mpilab_pairs_resolve(c->pairs_design, nranks) == MPILAB_PAIRS_SAMPLED) {
        /* the design's size without its groups (a few pairs more with them); greedy rounds
         * are about twice the largest degree (ring 2 + matchings + 1) */
        int m = mpilab_pairs_default_matchings(nranks);
        rounds = c->p2p_mode == MPILAB_P2P_SEQUENTIAL ? mpilab_pairs_sample_max(nranks, 0, m)
                                                       : (size_t)(2 * (m + 3));
    }
    size_t count = 0;
    for (size_t k = 0; k < c->nsel; k++)
        count += (c->adaptive ? c->auto_budget : c->nsizes) *
                 ((c->sel[k]->flags & MPILAB_OP_ALLPAIRS) ? rounds : c->ntiming * c->nisolation);
    double share = count ? r->time_budget / (double)count : r->time_budget;
    if (r->time_budget > 0.0 && share < c->bo.prec.min_time)
        share = c->bo.prec.min_time; /* never below the time the rule waits for */
    c->bo.prec.max_time = r->time_budget > 0.0 ? share : 0.0;
    /* simulated time is noiseless: identical samples converge once their median has an
     * interval, and the budget (simulated seconds) ends no measurement before that */
    size_t need = mpilab_median_ci_min_n(c->bo.prec.cl), top = c->bo.prec.max_reps;
    need = need > c->bo.prec.min_reps ? need : c->bo.prec.min_reps;
    if (mpilab_clock_global_build() && need > c->bo.prec.budget_floor)
        c->bo.prec.budget_floor = need < top ? need : top;
}

static int check_selection(mpilab_runner_config_t *c, const raw_t *r, int nranks, char *err, size_t errlen)
{
    for (size_t k = 0; k < c->nsizes; k++)
        if (c->sizes[k] > INT_MAX)
            return fail(err, errlen, "--sizes: %zu bytes exceeds the MPI count limit %d", c->sizes[k], INT_MAX);
    for (size_t k = 0; k < c->nsel; k++)
        if ((c->sel[k]->flags & MPILAB_OP_ALLPAIRS) && nranks < 2)
            return fail(err, errlen, "--ops %s needs at least 2 ranks", c->sel[k]->name);
    budget_share(c, r, nranks);
    if (c->loggp) {
        if (c->no_fit)
            return fail(err, errlen, "--no-fit contradicts --models loggp");
        if (nranks < 2)
            return fail(err, errlen, "--models loggp needs at least 2 ranks");
        if (c->nsizes < 2)
            return fail(err, errlen, "--models loggp needs at least 2 message sizes in --sizes");
        if (r->min_reps < 2)
            return fail(err, errlen, "--models loggp needs --min-reps >= 2");
        c->lg.prec = c->bo.prec;
        /* LogGP keeps four series per size and pair in memory: at most 1000 repetitions each */
        if (c->lg.prec.max_reps > MPILAB_LOGGP_MAX_REPS)
            c->lg.prec.max_reps = MPILAB_LOGGP_MAX_REPS;
        if (c->lg.prec.min_reps > c->lg.prec.max_reps)
            c->lg.prec.min_reps = c->lg.prec.max_reps;
        c->lg.mode = c->p2p_mode;
        c->lg.progress = !c->quiet;
        char lerr[256];
        if (mpilab_loggp_check(c->sizes, c->nsizes, &c->lg, lerr, sizeof lerr) != 0)
            return fail(err, errlen, "--models loggp: %s", lerr);
    }
    if (c->lmo) {
        if (c->no_fit)
            return fail(err, errlen, "--no-fit contradicts --models lmo");
        if (nranks < 3)
            return fail(err, errlen, "--models lmo needs at least 3 ranks (a point-to-two triplet), got %d", nranks);
    }
    if (c->out) {
        /* the output directory must exist and be writable before measuring */
        char *copy = strdup(c->out);
        const char *dir = copy ? dirname(copy) : ".";
        int bad = *c->out == '\0' || access(dir, W_OK) != 0;
        int e = errno;
        free(copy);
        if (bad)
            return fail(err, errlen, "--out: cannot write '%s' (%s)", c->out, *c->out ? strerror(e) : "empty path");
    }
    return 0;
}

/* --sizes auto:MIN:MAX[:BUDGET]: the coarse start list (x8) and the budget (default: the
 * count of the list MIN..MAX x4, the default list's spacing). */
static int auto_sizes(mpilab_runner_config_t *c, const char *spec, char *err, size_t errlen)
{
    char buf[128], *f[4] = {0};
    int nf = 0;
    snprintf(buf, sizeof buf, "%s", spec + 5);
    for (char *save = NULL, *t = strtok_r(buf, ":", &save); t && nf < 4; t = strtok_r(NULL, ":", &save))
        f[nf++] = t;
    size_t lo, hi, budget = 0;
    long long b = 0;
    if (strlen(spec) >= sizeof buf || nf < 2 || nf > 3 || strchr(spec + 5, ',') || mpilab_parse_size(f[0], &lo) != 0 ||
        mpilab_parse_size(f[1], &hi) != 0 || (nf == 3 && (mpilab_parse_i64(f[2], &b) != 0 || b < 3 || b > 1000)))
        return fail(err, errlen, "--sizes: '%s' is not auto:MIN:MAX[:BUDGET] (BUDGET 3..1000)", spec);
    if (lo >= hi || hi > INT_MAX)
        return fail(err, errlen, "--sizes: %s: an impossible size range (MIN < MAX <= %d bytes needed)", spec, INT_MAX);
    c->sizes = malloc(64 * sizeof *c->sizes);
    /* the default budget: the count of the default list's spacing (x4, as 1:64K:x4) over
     * MIN..MAX, so never more sizes than that fixed list */
    budget = c->sizes ? mpilab_adaptive_start(lo, hi, 4, c->sizes, 64) : 0;
    c->auto_budget = nf == 3 ? (size_t)b : budget;
    c->nsizes = c->sizes ? mpilab_adaptive_start(lo, hi, 8, c->sizes, 64) : 0;
    if (c->nsizes == 0)
        return fail(err, errlen, "out of memory");
    if (c->nsizes > c->auto_budget)
        return fail(err, errlen, "--sizes: %s: the budget %zu is below the %zu sizes of the start list", spec,
                    c->auto_budget, c->nsizes);
    c->adaptive = 1;
    return 0;
}

static const char default_sizes[] = "1:64K:x4";

static void defaults(mpilab_runner_config_t *c, raw_t *r)
{
    memset(c, 0, sizeof *c);
    mpilab_bench_opts_default(&c->bo);
    mpilab_loggp_opts_default(&c->lg);
    c->isolation[0] = c->bo.isolation;
    c->nisolation = 1;
    c->hockney = 1;
    c->lmo_bytes = 65536;
    c->lmo_rendezvous = 65536;
    mpilab_wait_default(&c->lmo_wait);
    c->p2p_back = -1;
    mpilab_extend_opts_default(&c->ext);
    *r = (raw_t){.ops = "p2p,scatter,gather,bcast,allreduce", .sizes = default_sizes, .timing = "max",
                 .min_reps = 5, .max_reps = 1000000, .budget_floor = 1, .time_budget = 60.0, .root = 0, .depth = 10, .burst = (long long)c->lg.burst,
                 .warmup = (long long)c->bo.warmup};
}

int mpilab_runner_parse(int argc, char **argv, int nranks, mpilab_runner_config_t *c, char *err, size_t errlen)
{
    raw_t r;
    defaults(c, &r);
    opterr = 0;
    optind = 1;
    if (imb_spellings(argc, argv, err, errlen) != 0)
        return MPILAB_RUNNER_BAD;
    int opt, li = 0;
    while ((opt = getopt_long(argc, argv, ":hm:i:x:", longopts, &li)) != -1) {
        if (opt == '?' || opt == ':') {
            char why[128];
            return fail(err, errlen, "%s (see --help)", mpilab_getopt_problem(opt, argc, argv, why, sizeof why));
        }
        int rc = one_option(opt, li, optarg, c, &r, err, errlen);
        if (rc != 0)
            return rc;
    }
    if (optind < argc)
        return fail(err, errlen, "unexpected argument '%s'", argv[optind]);
    if (r.version)
        return MPILAB_RUNNER_VERSION;
    /* after the options: the built-in entries pass the registration checks, the COMB
     * entries depend on --poll-sweep, then the plugins */
    char why[400];
    if (mpilab_ops_init(why, sizeof why) != 0)
        return fail(err, errlen, "%s", why);
    if (mpilab_suite_register() != 0)
        return fail(err, errlen, "the interconnect suite's entries: %s", mpilab_ops_error());
    for (size_t k = 0; k < r.nentries; k++)
        if (mpilab_ops_load(r.entries[k], why, sizeof why) != 0)
            return fail(err, errlen, "--entries: %s", why);
    if (c->mpi_algorithms && mpilab_forced_register(why, sizeof why) < 0)
        return fail(err, errlen, "%s", why);
    if (c->list == 2)
        return fail(err, errlen, "--json goes with --list");
    if (c->list)
        return MPILAB_RUNNER_LIST;
    int rc = check_numbers(c, &r, nranks, err, errlen);
    if (rc == 0)
        rc = sync_choice(c, err, errlen);
    if (rc == 0)
        rc = parse_ops(c, r.ops, err, errlen);
    if (rc == 0)
        rc = for_items("--timing", r.timing, timing_one, c, "max, root, global, opspec", err, errlen);
    if (rc == 0 && r.models) {
        c->hockney = c->loggp = c->lmo = 0;
        rc = for_items("--models", r.models, model_one, c, "hockney, loggp, lmo", err, errlen);
    }
    if (rc == 0 && strncmp(r.sizes, "auto:", 5) == 0)
        rc = auto_sizes(c, r.sizes, err, errlen);
    else if (rc == 0 && mpilab_parse_size_list(r.sizes, MAX_SIZES, &c->sizes, &c->nsizes, err, errlen) != 0) {
        char why[200];
        snprintf(why, sizeof why, "%s", err);
        rc = fail(err, errlen, "%s: %s", r.sizes == r.osu ? "-m/-msglog" : "--sizes", why);
    }
    if (rc == 0 && r.model_sizes && strcmp(r.model_sizes, "extend") != 0 && strcmp(r.model_sizes, "fixed") != 0)
        rc = fail(err, errlen, "--model-sizes: '%s' is not extend or fixed", r.model_sizes);
    c->model_extend = !c->no_fit && (c->hockney || c->loggp) &&
                      (r.model_sizes ? strcmp(r.model_sizes, "extend") == 0 : r.sizes == default_sizes);
    return rc == 0 ? check_selection(c, &r, nranks, err, errlen) : rc;
}

void mpilab_runner_config_free(mpilab_runner_config_t *c)
{
    free(c->sel);
    free(c->sizes);
    c->sel = NULL;
    c->sizes = NULL;
    mpilab_eps_rules_free(&c->eps_for);
}
