/* The operation table: one checked registration path for the built-in lists the build names
 * (bench/entries_builtin.h), registered entries and plugins (include/mpilab/ops.h). */
#include "mpilab/ops.h"

#include <dlfcn.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "bench/entries_builtin.h"

/* The table: built-in entries (static, checked once) followed by registered copies. */
typedef struct table {
    const mpilab_op_t **e;
    size_t n, cap, nbuiltin;
    int inited, init_rc;
    char init_err[256];
    char error[256];   /* the latest refusal */
    void **handles;    /* plugins loaded (closed by mpilab_ops_clear_registered) */
    size_t nhandles;
} table_t;

static table_t tab;

unsigned char mpilab_ops_pattern(int rank, size_t index)
{
    /* a byte that depends on both the rank and the position */
    unsigned long long x = (unsigned long long)(rank + 1) * 2654435761ull + (unsigned long long)index * 40503ull;
    x ^= x >> 13;
    return (unsigned char)(x & 0xffu);
}

const char *mpilab_op_model_name(mpilab_op_model_t m)
{
    switch (m) {
    case MPILAB_MODEL_P2P_FIT: return "fit";
    case MPILAB_MODEL_SCATTER_LINEAR: return "scatter_linear";
    case MPILAB_MODEL_SCATTER_BINOMIAL: return "scatter_binomial";
    case MPILAB_MODEL_GATHER_LINEAR: return "gather_linear";
    case MPILAB_MODEL_GATHER_BINOMIAL: return "gather_binomial";
    default: return NULL;
    }
}

const char *mpilab_op_figure_name(mpilab_op_figure_t f)
{
    switch (f) {
    case MPILAB_FIGURE_CALL: return "call";
    case MPILAB_FIGURE_ROUND_TRIP: return "round_trip";
    case MPILAB_FIGURE_EXCHANGE: return "exchange";
    case MPILAB_FIGURE_BATCH: return "batch";
    case MPILAB_FIGURE_OVERLAP: return "overlap";
    default: return NULL;
    }
}

const char *mpilab_op_figure_text(mpilab_op_figure_t f)
{
    switch (f) {
    case MPILAB_FIGURE_CALL: return "time of one call";
    case MPILAB_FIGURE_ROUND_TRIP:
        return "one-way time: the round trip / 2, as IMB and OSU print a ping-pong (the results keep the round trip)";
    case MPILAB_FIGURE_EXCHANGE: return "time of one exchange: every rank taking part sends and receives at once";
    case MPILAB_FIGURE_BATCH:
        return "time of one batch of messages (not per message): the results derive the rate and bandwidth";
    case MPILAB_FIGURE_OVERLAP: return "time of one non-blocking operation and the computation around it, together";
    default: return NULL;
    }
}

double mpilab_op_figure_scale(mpilab_op_figure_t f)
{
    return f == MPILAB_FIGURE_ROUND_TRIP ? 0.5 : 1.0;
}

/* The operation a model pattern predicts (NULL: none needed, "" for the all-pairs fit). */
static const char *model_operation(mpilab_op_model_t m)
{
    switch (m) {
    case MPILAB_MODEL_SCATTER_LINEAR:
    case MPILAB_MODEL_SCATTER_BINOMIAL: return "scatter";
    case MPILAB_MODEL_GATHER_LINEAR:
    case MPILAB_MODEL_GATHER_BINOMIAL: return "gather";
    case MPILAB_MODEL_P2P_FIT: return "";
    default: return NULL;
    }
}

static int bad_word(const char *s)
{
    return !s || !*s || strpbrk(s, ":, \t\n") != NULL;
}

/* Number of keys of a comma list (-1 if a key is empty). */
static long count_keys(const char *list)
{
    long n = 0;
    for (const char *p = list; p && *p;) {
        const char *comma = strchr(p, ',');
        size_t len = comma ? (size_t)(comma - p) : strlen(p);
        if (len == 0)
            return -1;
        n++;
        p += len + (comma != NULL);
        if (comma && !*p)
            return -1;
    }
    return n;
}

static const mpilab_op_t *find_in(const char *name, const char *impl)
{
    for (size_t k = 0; k < tab.n; k++)
        if (strcmp(tab.e[k]->name, name) == 0 && strcmp(tab.e[k]->impl, impl) == 0)
            return tab.e[k];
    return NULL;
}

/* The registration checks: 0, or -1 with one line naming the entry in err. */
static int check_entry(const mpilab_op_t *op, char *err, size_t errlen)
{
    if (!op || bad_word(op->name) || bad_word(op->impl)) {
        snprintf(err, errlen, "entry %s:%s: name and impl must be non-empty words (no ':', ',' or blanks)",
                 op && op->name ? op->name : "(null)", op && op->impl ? op->impl : "(null)");
        return -1;
    }
    const char *missing = !op->setup ? "setup" : !op->run ? "run" : !op->validate ? "validate"
                        : !op->teardown ? "teardown" : NULL;
    if (missing) {
        snprintf(err, errlen, "entry %s:%s: no %s function", op->name, op->impl, missing);
        return -1;
    }
    if (!mpilab_op_figure_name(op->figure)) {
        snprintf(err, errlen, "entry %s:%s: figure %d is not one of MPILAB_FIGURE_CALL..MPILAB_FIGURE_LAST", op->name,
                 op->impl, (int)op->figure);
        return -1;
    }
    long nkeys = count_keys(op->derived);
    if (nkeys < 0 || nkeys > MPILAB_DERIVED_MAX) {
        snprintf(err, errlen, "entry %s:%s: derived keys '%s' are not a comma list of 1..%d keys", op->name,
                 op->impl, op->derived, MPILAB_DERIVED_MAX);
        return -1;
    }
    if (nkeys > 0 && !op->derive) {
        snprintf(err, errlen, "entry %s:%s declares derived keys (%s) but no derive function", op->name, op->impl,
                 op->derived);
        return -1;
    }
    if (nkeys == 0 && op->derive) {
        snprintf(err, errlen, "entry %s:%s has a derive function but declares no derived keys", op->name,
                 op->impl);
        return -1;
    }
    const char *fits = model_operation(op->model);
    if ((unsigned)op->model > MPILAB_MODEL_GATHER_BINOMIAL ||
        (fits && *fits && strcmp(fits, op->name) != 0) || (fits && !*fits && !(op->flags & MPILAB_OP_ALLPAIRS))) {
        const char *m = mpilab_op_model_name(op->model);
        snprintf(err, errlen, "entry %s:%s: model pattern %s does not fit the operation %s", op->name, op->impl,
                 m ? m : "(unknown)", fits && !*fits ? "(fit needs an all-pairs entry)" : op->name);
        return -1;
    }
    if (find_in(op->name, op->impl)) {
        snprintf(err, errlen, "entry %s:%s is defined twice", op->name, op->impl);
        return -1;
    }
    return 0;
}

static int append(const mpilab_op_t *op)
{
    if (tab.n == tab.cap) {
        size_t nc = tab.cap ? 2 * tab.cap : 64;
        const mpilab_op_t **ne = realloc(tab.e, nc * sizeof *ne);
        if (!ne)
            return -1;
        tab.e = ne;
        tab.cap = nc;
    }
    tab.e[tab.n++] = op;
    return 0;
}

int mpilab_ops_init(char *err, size_t errlen)
{
    if (!tab.inited) {
        tab.inited = 1;
        for (size_t l = 0; mpilab_builtin_entry_lists[l]; l++) {
            const mpilab_entry_list_t *list = mpilab_builtin_entry_lists[l];
            for (size_t k = 0; k < list->n; k++) {
                char why[224];
                if (check_entry(&list->entries[k], why, sizeof why) != 0 || append(&list->entries[k]) != 0) {
                    if (tab.init_rc == 0)
                        snprintf(tab.init_err, sizeof tab.init_err, "%s: %s", list->file, why);
                    tab.init_rc = -1;
                }
            }
        }
        tab.nbuiltin = tab.n;
    }
    if (tab.init_rc != 0 && err)
        snprintf(err, errlen, "%s", tab.init_err);
    return tab.init_rc;
}

size_t mpilab_ops_count(void)
{
    mpilab_ops_init(NULL, 0);
    return tab.n;
}

const mpilab_op_t *mpilab_ops_get(size_t k)
{
    mpilab_ops_init(NULL, 0);
    return k < tab.n ? tab.e[k] : NULL;
}

const mpilab_op_t *mpilab_ops_find(const char *name, const char *impl)
{
    mpilab_ops_init(NULL, 0);
    return name && impl ? find_in(name, impl) : NULL;
}

const char *mpilab_ops_error(void)
{
    return tab.error;
}

/* A registered copy owns its name, impl and origin strings (freed with it). */
typedef struct owned_op {
    mpilab_op_t op;
    const char *origin;
    char strings[];
} owned_op_t;

const char *mpilab_ops_origin(const mpilab_op_t *op)
{
    mpilab_ops_init(NULL, 0);
    for (size_t k = 0; k < tab.n; k++)
        if (tab.e[k] == op)
            return k < tab.nbuiltin ? "builtin" : ((const owned_op_t *)(const void *)op)->origin;
    return NULL;
}

static int register_from(const mpilab_op_t *op, const char *origin)
{
    mpilab_ops_init(NULL, 0);
    tab.error[0] = '\0';
    if (check_entry(op, tab.error, sizeof tab.error) != 0)
        return -1;
    size_t ln = strlen(op->name) + 1, li = strlen(op->impl) + 1, lo = strlen(origin) + 1;
    owned_op_t *o = malloc(sizeof *o + ln + li + lo);
    if (!o) {
        snprintf(tab.error, sizeof tab.error, "entry %s:%s: out of memory", op->name, op->impl);
        return -1;
    }
    o->op = *op;
    memcpy(o->strings, op->name, ln);
    memcpy(o->strings + ln, op->impl, li);
    memcpy(o->strings + ln + li, origin, lo);
    o->op.name = o->strings;
    o->op.impl = o->strings + ln;
    o->origin = o->strings + ln + li;
    if (!o->op.bytes_desc)
        o->op.bytes_desc = "user-defined";
    if (!o->op.family)
        o->op.family = "user";
    if (append(&o->op) != 0) {
        free(o);
        snprintf(tab.error, sizeof tab.error, "entry %s:%s: out of memory", op->name, op->impl);
        return -1;
    }
    return 0;
}

int mpilab_ops_register(const mpilab_op_t *op)
{
    return register_from(op, "registered");
}

int mpilab_ops_register_as(const mpilab_op_t *op, const char *origin)
{
    return register_from(op, origin ? origin : "registered");
}

int mpilab_ops_load(const char *path, char *err, size_t errlen)
{
    mpilab_ops_init(NULL, 0);
    struct stat st; /* a FIFO or device would block or be read for ever inside dlopen */
    if (stat(path, &st) == 0 && !S_ISREG(st.st_mode)) {
        snprintf(err, errlen, "%s: not a regular file (a shared library built with "
                 "MPILAB_PLUGIN_ENTRIES)", path);
        return -1;
    }
    void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        const char *why = dlerror();
        snprintf(err, errlen, "%s: cannot load: %s", path, why ? why : "unknown error");
        return -1;
    }
    const mpilab_entry_list_t *list = dlsym(h, "mpilab_entries_plugin");
    if (!list) {
        snprintf(err, errlen, "%s: defines no MPILAB_PLUGIN_ENTRIES (symbol mpilab_entries_plugin)", path);
        dlclose(h);
        return -1;
    }
    void **nh = realloc(tab.handles, (tab.nhandles + 1) * sizeof *nh);
    if (!nh) {
        snprintf(err, errlen, "%s: out of memory", path);
        dlclose(h);
        return -1;
    }
    tab.handles = nh;
    tab.handles[tab.nhandles++] = h; /* kept open: its entries' functions live there */
    for (size_t k = 0; k < list->n; k++)
        if (register_from(&list->entries[k], path) != 0) {
            snprintf(err, errlen, "%s: %s", path, tab.error);
            return -1;
        }
    return 0;
}

void mpilab_ops_clear_registered(void)
{
    mpilab_ops_init(NULL, 0);
    for (size_t k = tab.nbuiltin; k < tab.n; k++)
        free((owned_op_t *)(void *)tab.e[k]); /* op is the first member of its owned_op_t */
    tab.n = tab.nbuiltin;
    for (size_t k = 0; k < tab.nhandles; k++)
        dlclose(tab.handles[k]);
    free(tab.handles);
    tab.handles = NULL;
    tab.nhandles = 0;
}

const char *mpilab_op_timings(const mpilab_op_t *op)
{
    if (op->flags & MPILAB_OP_ALLPAIRS)
        return "p2p";
    return (op->flags & MPILAB_OP_OPSPEC) ? "max,root,global,opspec" : "max,root,global";
}

double mpilab_op_volume(const mpilab_op_t *op, size_t bytes, int p)
{
    const double *v = op->volume;
    if (v[0] == 0.0 && v[1] == 0.0 && v[2] == 0.0)
        return -1.0;
    double f = v[0] + v[1] * p + v[2] * (double)p * p;
    return f > 0.0 ? f * (double)bytes : -1.0;
}

void mpilab_op_run_init(mpilab_op_run_t *r, const mpilab_op_t *op, size_t bytes, int root, MPI_Comm comm)
{
    memset(r, 0, sizeof *r);
    r->op = op;
    r->comm = comm;
    r->root = root;
    r->bytes = bytes;
    MPI_Comm_rank(comm, &r->rank);
    MPI_Comm_size(comm, &r->size);
}

/* ---- derived values ---- */

void mpilab_derived_clear(mpilab_derived_t *d)
{
    d->n = 0;
}

static int derived_put(mpilab_derived_t *d, const char *key, double value, int count)
{
    for (size_t k = 0; k < d->n; k++)
        if (strcmp(d->v[k].key, key) == 0) {
            d->v[k].value = value;
            d->v[k].count = count;
            return 0;
        }
    if (d->n >= MPILAB_DERIVED_MAX)
        return -1;
    d->v[d->n].key = key;
    d->v[d->n].value = value;
    d->v[d->n].count = count;
    d->n++;
    return 0;
}

int mpilab_derived_set(mpilab_derived_t *d, const char *key, double value)
{
    return isfinite(value) ? derived_put(d, key, value, 0) : 0;
}

int mpilab_derived_set_count(mpilab_derived_t *d, const char *key, int64_t n)
{
    return n ? derived_put(d, key, (double)n, 1) : 0;
}

double mpilab_derived_get(const mpilab_derived_t *d, const char *key)
{
    for (size_t k = 0; k < d->n; k++)
        if (strcmp(d->v[k].key, key) == 0)
            return d->v[k].value;
    return NAN;
}

/* Whether key is one of the comma list's keys. */
static int key_listed(const char *list, const char *key)
{
    size_t len = strlen(key);
    for (const char *p = list; p && *p;) {
        const char *comma = strchr(p, ',');
        size_t n = comma ? (size_t)(comma - p) : strlen(p);
        if (n == len && strncmp(p, key, n) == 0)
            return 1;
        p += n + (comma != NULL);
    }
    return 0;
}

int mpilab_derived_check(const mpilab_op_t *op, const mpilab_derived_t *d, char *err, size_t errlen)
{
    for (size_t k = 0; k < d->n; k++)
        if (!key_listed(op->derived, d->v[k].key)) {
            snprintf(err, errlen, "entry %s:%s: derive set '%s', which its derived keys (%s) do not declare",
                     op->name, op->impl, d->v[k].key, op->derived ? op->derived : "none");
            return -1;
        }
    return 0;
}

int mpilab_ops_check(const mpilab_op_t *op, size_t bytes, int root, MPI_Comm comm)
{
    mpilab_op_run_t r;
    mpilab_op_run_init(&r, op, bytes, root, comm);
    int bad = op->setup(&r) != 0;
    int anybad = 0;
    MPI_Allreduce(&bad, &anybad, 1, MPI_INT, MPI_LOR, comm);
    if (anybad) {
        if (!bad)
            op->teardown(&r);
        return -1;
    }
    int failed = op->run(&r) != MPI_SUCCESS, anyfailed = 0;
    /* validate runs on every rank or on none: it may communicate (ops.h) */
    MPI_Allreduce(&failed, &anyfailed, 1, MPI_INT, MPI_LOR, comm);
    if (anyfailed) {
        op->teardown(&r);
        return -1;
    }
    int wrong = op->validate(&r) != 0, anywrong = 0;
    op->teardown(&r);
    MPI_Allreduce(&wrong, &anywrong, 1, MPI_INT, MPI_LOR, comm);
    return anywrong ? 1 : 0;
}
