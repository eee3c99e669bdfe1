/* The grid description of the multilane collectives: which rank is in which site, built
 * from site numbers, labels, host names (testbed names or a host file), a map file or a
 * measured latency matrix (include/mpilab/multilane.h). */
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "coll/multilane_internal.h"
#include "mpilab/coll.h"

static _Thread_local char last_error[320];

const char *mpilab_multilane_last_error(void) { return last_error; }

static void set_error(const char *fmt, va_list ap) __attribute__((format(printf, 1, 0)));
static void set_error(const char *fmt, va_list ap)
{
    vsnprintf(last_error, sizeof last_error, fmt, ap);
}

int mpilab_ml_fail(int code, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    set_error(fmt, ap);
    va_end(ap);
    return code;
}

static void *fail_null(int err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void *fail_null(int err, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    set_error(fmt, ap);
    va_end(ap);
    errno = err;
    return NULL;
}

void mpilab_grid_free(mpilab_grid_t *g)
{
    if (!g)
        return;
    free(g->site);
    free(g->site_start);
    free(g->members);
    free(g);
}

mpilab_grid_t *mpilab_grid_create(int nranks, const int *site_of_rank)
{
    if (nranks < 2)
        return fail_null(EINVAL, "grid: %d rank(s): a grid needs at least 2", nranks);
    if (!site_of_rank)
        return fail_null(EINVAL, "grid: no site numbers");
    for (int r = 0; r < nranks; r++)
        if (site_of_rank[r] < 0)
            return fail_null(EINVAL, "grid: rank %d: negative site %d", r, site_of_rank[r]);
    mpilab_grid_t *g = calloc(1, sizeof *g);
    int *renum = malloc((size_t)nranks * sizeof *renum); /* new number of rank r's site */
    if (!g || !renum) {
        free(g);
        free(renum);
        return fail_null(ENOMEM, "grid: out of memory");
    }
    g->nranks = nranks;
    g->site = malloc((size_t)nranks * sizeof *g->site);
    g->members = malloc((size_t)nranks * sizeof *g->members);
    if (!g->site || !g->members)
        goto nomem;
    /* renumber by lowest rank: site of rank r = number of the first rank with its label */
    int nsites = 0;
    for (int r = 0; r < nranks; r++) {
        int s = -1;
        for (int q = 0; q < r && s < 0; q++)
            if (site_of_rank[q] == site_of_rank[r])
                s = g->site[q];
        g->site[r] = s >= 0 ? s : nsites++;
    }
    free(renum);
    renum = NULL;
    if (nsites < 2) {
        mpilab_grid_free(g);
        return fail_null(EINVAL, "grid: all %d ranks are in one site: multilane needs at "
                                 "least 2 sites", nranks);
    }
    g->nsites = nsites;
    g->site_start = calloc((size_t)nsites + 1, sizeof *g->site_start);
    if (!g->site_start)
        goto nomem;
    for (int r = 0; r < nranks; r++)
        g->site_start[g->site[r] + 1]++;
    for (int s = 0; s < nsites; s++)
        g->site_start[s + 1] += g->site_start[s];
    int *fill = calloc((size_t)nsites, sizeof *fill);
    if (!fill)
        goto nomem;
    for (int r = 0; r < nranks; r++) {
        int s = g->site[r];
        g->members[g->site_start[s] + fill[s]++] = r;
    }
    free(fill);
    return g;
nomem:
    free(renum);
    mpilab_grid_free(g);
    return fail_null(ENOMEM, "grid: out of memory");
}

mpilab_grid_t *mpilab_ml_grid_copy(const mpilab_grid_t *g)
{
    return mpilab_grid_create(g->nranks, g->site);
}

int mpilab_grid_nranks(const mpilab_grid_t *g) { return g ? g->nranks : 0; }
int mpilab_grid_nsites(const mpilab_grid_t *g) { return g ? g->nsites : 0; }

int mpilab_grid_site_of(const mpilab_grid_t *g, int rank)
{
    return g && rank >= 0 && rank < g->nranks ? g->site[rank] : -1;
}

int mpilab_grid_site_size(const mpilab_grid_t *g, int site)
{
    return g && site >= 0 && site < g->nsites ? g->site_start[site + 1] - g->site_start[site] : 0;
}

int mpilab_grid_site_rank(const mpilab_grid_t *g, int site, int i)
{
    if (i < 0 || i >= mpilab_grid_site_size(g, site))
        return -1;
    return g->members[g->site_start[site] + i];
}

int mpilab_grid_lanes_max(const mpilab_grid_t *g, int root)
{
    int rs = mpilab_grid_site_of(g, root);
    if (rs < 0)
        return 0;
    int m = mpilab_grid_site_size(g, rs);
    for (int s = 0; s < g->nsites; s++)
        if (mpilab_grid_site_size(g, s) < m)
            m = mpilab_grid_site_size(g, s);
    return m;
}

mpilab_grid_t *mpilab_grid_from_labels(int nranks, const char *const *labels)
{
    if (nranks < 1 || !labels)
        return fail_null(EINVAL, "grid: no labels");
    int *site = malloc((size_t)nranks * sizeof *site);
    if (!site)
        return fail_null(ENOMEM, "grid: out of memory");
    for (int r = 0; r < nranks; r++) {
        if (!labels[r]) {
            free(site);
            return fail_null(EINVAL, "grid: rank %d has no site label", r);
        }
        site[r] = r;
        for (int q = 0; q < r; q++)
            if (strcmp(labels[q], labels[r]) == 0) {
                site[r] = site[q];
                break;
            }
    }
    mpilab_grid_t *g = mpilab_grid_create(nranks, site);
    free(site);
    return g;
}

/* Site of a testbed node name "<prefix>-s<S>n<J>" (possibly followed by a domain), or -1. */
static int testbed_site(const char *host)
{
    const char *p = strrchr(host, '-');
    if (!p || p[1] != 's')
        return -1;
    p += 2;
    char *end;
    errno = 0;
    long s = strtol(p, &end, 10);
    if (end == p || errno || s < 0 || s > INT_MAX || *end != 'n')
        return -1;
    p = end + 1;
    (void)strtol(p, &end, 10);
    if (end == p || (*end != '\0' && *end != '.'))
        return -1;
    return (int)s;
}

typedef struct {
    char *host, *label;
} hostline_t;

static void free_hostlines(hostline_t *h, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        free(h[i].host);
        free(h[i].label);
    }
    free(h);
}

static char *dupstr(const char *s)
{
    size_t n = strlen(s) + 1;
    char *d = malloc(n);
    if (d)
        memcpy(d, s, n);
    return d;
}

/* Parse a host file (HOST [key=value...] site=LABEL | HOST LABEL). */
static hostline_t *read_hostfile(const char *path, size_t *nout)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return fail_null(errno ? errno : EIO, "%s: %s", path, strerror(errno));
    hostline_t *h = NULL;
    size_t n = 0, cap = 0;
    char line[1024];
    int no = 0;
    while (fgets(line, sizeof line, f)) {
        no++;
        if (!strchr(line, '\n') && !feof(f)) {
            free_hostlines(h, n);
            fclose(f);
            return fail_null(EINVAL, "%s:%d: line too long", path, no);
        }
        char *hash = strchr(line, '#');
        if (hash)
            *hash = '\0';
        char *save = NULL;
        char *host = strtok_r(line, " \t\r\n", &save);
        if (!host)
            continue;
        const char *label = NULL;
        for (char *tok; (tok = strtok_r(NULL, " \t\r\n", &save));) {
            if (strncmp(tok, "site=", 5) == 0)
                label = tok + 5;
            else if (!strchr(tok, '=') && !label)
                label = tok;
        }
        if (!label || !*label) {
            free_hostlines(h, n);
            fclose(f);
            return fail_null(EINVAL, "%s:%d: host %s has no site label (add site=LABEL)", path,
                             no, host);
        }
        for (size_t i = 0; i < n; i++)
            if (strcmp(h[i].host, host) == 0) {
                free_hostlines(h, n);
                fclose(f);
                return fail_null(EINVAL, "%s:%d: host %s listed twice", path, no, host);
            }
        if (n == cap) {
            size_t nc = cap ? 2 * cap : 16;
            hostline_t *nh = realloc(h, nc * sizeof *nh);
            if (!nh) {
                free_hostlines(h, n);
                fclose(f);
                return fail_null(ENOMEM, "grid: out of memory");
            }
            h = nh;
            cap = nc;
        }
        h[n].host = dupstr(host);
        h[n].label = dupstr(label);
        n++;
        if (!h[n - 1].host || !h[n - 1].label) {
            free_hostlines(h, n);
            fclose(f);
            return fail_null(ENOMEM, "grid: out of memory");
        }
    }
    int err = ferror(f);
    fclose(f);
    if (err) {
        free_hostlines(h, n);
        return fail_null(EIO, "%s: read error", path);
    }
    if (n == 0) {
        free(h);
        return fail_null(EINVAL, "%s: no hosts", path);
    }
    *nout = n;
    return h;
}

mpilab_grid_t *mpilab_grid_from_hosts(int nranks, const char *const *hosts, const char *hostfile)
{
    if (nranks < 1 || !hosts)
        return fail_null(EINVAL, "grid: no host names");
    if (!hostfile) {
        int *site = malloc((size_t)nranks * sizeof *site);
        if (!site)
            return fail_null(ENOMEM, "grid: out of memory");
        for (int r = 0; r < nranks; r++) {
            site[r] = testbed_site(hosts[r]);
            if (site[r] < 0) {
                free(site);
                return fail_null(EINVAL, "grid: rank %d: host '%s' is not a testbed node name "
                                         "(PREFIX-sSnJ); give a host file or a map", r, hosts[r]);
            }
        }
        mpilab_grid_t *g = mpilab_grid_create(nranks, site);
        free(site);
        return g;
    }
    size_t n = 0;
    hostline_t *h = read_hostfile(hostfile, &n);
    if (!h)
        return NULL;
    const char **labels = malloc((size_t)nranks * sizeof *labels);
    if (!labels) {
        free_hostlines(h, n);
        return fail_null(ENOMEM, "grid: out of memory");
    }
    for (int r = 0; r < nranks; r++) {
        labels[r] = NULL;
        for (size_t i = 0; i < n && !labels[r]; i++)
            if (strcmp(h[i].host, hosts[r]) == 0)
                labels[r] = h[i].label;
        if (!labels[r]) {
            free(labels);
            free_hostlines(h, n);
            return fail_null(EINVAL, "%s: rank %d's host '%s' is not listed", hostfile, r,
                             hosts[r]);
        }
    }
    mpilab_grid_t *g = mpilab_grid_from_labels(nranks, labels);
    free(labels);
    free_hostlines(h, n);
    return g;
}

mpilab_grid_t *mpilab_grid_read_map(const char *path, int nranks)
{
    if (!path)
        return fail_null(EINVAL, "grid: no map file");
    if (nranks < 1)
        return fail_null(EINVAL, "grid: %d ranks", nranks);
    FILE *f = fopen(path, "r");
    if (!f)
        return fail_null(errno ? errno : EIO, "%s: %s", path, strerror(errno));
    char **labels = calloc((size_t)nranks, sizeof *labels);
    int *lineof = calloc((size_t)nranks, sizeof *lineof);
    mpilab_grid_t *g = NULL;
    char line[1024];
    int no = 0;
    if (!labels || !lineof) {
        fail_null(ENOMEM, "grid: out of memory");
        goto out;
    }
    while (fgets(line, sizeof line, f)) {
        no++;
        if (!strchr(line, '\n') && !feof(f)) {
            fail_null(EINVAL, "%s:%d: line too long", path, no);
            goto out;
        }
        char *hash = strchr(line, '#');
        if (hash)
            *hash = '\0';
        char *save = NULL;
        char *rtok = strtok_r(line, " \t\r\n", &save);
        if (!rtok)
            continue;
        char *label = strtok_r(NULL, " \t\r\n", &save);
        char *extra = label ? strtok_r(NULL, " \t\r\n", &save) : NULL;
        char *end;
        errno = 0;
        long r = strtol(rtok, &end, 10);
        if (*end || end == rtok || errno) {
            fail_null(EINVAL, "%s:%d: '%s' is not a rank (expected: RANK SITE)", path, no, rtok);
            goto out;
        }
        if (!label || extra) {
            fail_null(EINVAL, "%s:%d: expected two fields: RANK SITE", path, no);
            goto out;
        }
        if (r < 0 || r >= nranks) {
            fail_null(EINVAL, "%s:%d: rank %ld out of range (the job has %d ranks)", path, no, r,
                      nranks);
            goto out;
        }
        if (labels[r]) {
            fail_null(EINVAL, "%s:%d: rank %ld already mapped at line %d", path, no, r,
                      lineof[r]);
            goto out;
        }
        if (!(labels[r] = dupstr(label))) {
            fail_null(ENOMEM, "grid: out of memory");
            goto out;
        }
        lineof[r] = no;
    }
    if (ferror(f)) {
        fail_null(EIO, "%s: read error", path);
        goto out;
    }
    for (int r = 0; r < nranks; r++)
        if (!labels[r]) {
            fail_null(EINVAL, "%s: rank %d is missing from the map", path, r);
            goto out;
        }
    g = mpilab_grid_from_labels(nranks, (const char *const *)labels);
    if (!g) { /* prefix the file name to the reason */
        char why[sizeof last_error];
        snprintf(why, sizeof why, "%s", last_error);
        fail_null(EINVAL, "%s: %s", path, why);
    }
out:
    fclose(f);
    if (labels)
        for (int r = 0; r < nranks; r++)
            free(labels[r]);
    free(labels);
    free(lineof);
    return g;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static int uf_find(int *parent, int x)
{
    while (parent[x] != x)
        x = parent[x] = parent[parent[x]];
    return x;
}

static double pair_lat(const double *lat, int n, int i, int j)
{
    return 0.5 * (lat[(size_t)i * n + j] + lat[(size_t)j * n + i]);
}

/* The pairs across one pair of sites must agree within this factor: one WAN link gives
 * every pair across it about the same latency, while ranks of one site split by load
 * (a pair measured while a rank was off its CPU) do not. */
#define DETECT_ACROSS_SPREAD 2.0

/* Join the pairs below thr (union-find in parent) and check the partition: every pair
 * inside a site below thr, no site of one rank, the pairs across each two sites within
 * DETECT_ACROSS_SPREAD.  0 if it holds, else -1 with the reason in why. */
static int partition_at(int n, const double *lat, double thr, int *parent, char *why,
                        size_t whylen)
{
    for (int i = 0; i < n; i++)
        parent[i] = i;
    for (int i = 0; i < n; i++)
        for (int j = i + 1; j < n; j++)
            if (pair_lat(lat, n, i, j) < thr)
                parent[uf_find(parent, i)] = uf_find(parent, j);
    for (int i = 0; i < n; i++)
        for (int j = i + 1; j < n; j++)
            if (uf_find(parent, i) == uf_find(parent, j) && pair_lat(lat, n, i, j) >= thr) {
                snprintf(why, whylen, "ranks %d and %d are in one site by their neighbours but "
                                      "%.3g s apart (split at %.3g s)", i, j,
                         pair_lat(lat, n, i, j), thr);
                return -1;
            }
    for (int i = 0; i < n; i++) {
        int alone = 1;
        for (int j = 0; j < n && alone; j++)
            alone = j == i || uf_find(parent, i) != uf_find(parent, j);
        if (alone) {
            snprintf(why, whylen, "rank %d would be a site of its own (split at %.3g s), as a "
                                  "rank held off its CPU looks; detection needs 2 ranks a site",
                     i, thr);
            return -1;
        }
    }
    for (int a = 0; a < n; a++)
        for (int b = a + 1; b < n; b++) {
            int ra = uf_find(parent, a), rb = uf_find(parent, b);
            if (ra != a || rb != b) /* each pair of sites once, by their union-find roots */
                continue;
            double lo = INFINITY, hi = 0;
            int li = 0, lj = 0, hi_i = 0, hi_j = 0;
            for (int i = 0; i < n; i++)
                for (int j = 0; j < n; j++) {
                    if (uf_find(parent, i) != ra || uf_find(parent, j) != rb)
                        continue;
                    double x = pair_lat(lat, n, i, j);
                    if (x < lo) {
                        lo = x;
                        li = i;
                        lj = j;
                    }
                    if (x > hi) {
                        hi = x;
                        hi_i = i;
                        hi_j = j;
                    }
                }
            if (hi > DETECT_ACROSS_SPREAD * lo) {
                snprintf(why, whylen, "across two sites ranks %d-%d are %.3g s apart but %d-%d "
                                      "%.3g s (over %gx; split at %.3g s)", hi_i, hi_j, hi, li,
                         lj, lo, DETECT_ACROSS_SPREAD, thr);
                return -1;
            }
        }
    return 0;
}

/* The candidate split after the one at (best, thr), if `tried`: the largest ratio gap of
 * at least 2x between consecutive sorted latencies v[0..np) below `best` (ties: higher
 * threshold first).  Returns the ratio (< 2: none left) and sets *cand. */
static double next_split(const double *v, size_t np, int tried, double best, double thr,
                         double *cand)
{
    double ratio = 1.0;
    *cand = 0;
    for (size_t i = 0; i + 1 < np; i++) {
        double r = v[i + 1] / v[i], t = sqrt(v[i] * v[i + 1]);
        if (r > ratio && (!tried || r < best || (r == best && t > thr))) {
            ratio = r;
            *cand = t;
        }
    }
    return ratio;
}

mpilab_grid_t *mpilab_grid_from_latency(int n, const double *lat, double *split)
{
    if (n < 2 || !lat)
        return fail_null(EINVAL, "detect: need a latency matrix of at least 2 ranks");
    const size_t np = (size_t)n * (size_t)(n - 1) / 2;
    double *v = malloc(np * sizeof *v);
    int *parent = malloc((size_t)n * sizeof *parent);
    mpilab_grid_t *g = NULL;
    if (!v || !parent) {
        fail_null(ENOMEM, "detect: out of memory");
        goto out;
    }
    size_t k = 0;
    for (int i = 0; i < n; i++)
        for (int j = i + 1; j < n; j++) {
            double x = pair_lat(lat, n, i, j);
            if (!isfinite(x) || x <= 0) {
                fail_null(EINVAL, "detect: latency of ranks %d and %d is %g (need finite, > 0)",
                          i, j, x);
                goto out;
            }
            v[k++] = x;
        }
    qsort(v, np, sizeof *v, cmp_double);
    /* candidate splits: every gap of at least 2x between consecutive latencies, largest
     * ratio first; the first that gives a consistent partition wins (on a loaded machine
     * the LAN latencies themselves can spread by more than 2x) */
    double best = 1.0, thr = 0;
    int tried = 0, found = 0;
    char first_why[200] = "", why[200];
    for (;;) {
        double cand;
        double ratio = next_split(v, np, tried, best, thr, &cand);
        if (ratio < 2.0)
            break;
        best = ratio;
        thr = cand;
        tried++;
        if (partition_at(n, lat, thr, parent, why, sizeof why) == 0) {
            found = 1;
            break;
        }
        if (!first_why[0])
            snprintf(first_why, sizeof first_why, "%s", why);
    }
    if (!tried) {
        double top = 1.0;
        for (size_t i = 0; i + 1 < np; i++)
            top = v[i + 1] / v[i] > top ? v[i + 1] / v[i] : top;
        fail_null(EINVAL, "detect: no site structure in the latencies (%.3g..%.3g s, largest "
                          "gap %.2fx < 2x): all ranks look like one site", v[0], v[np - 1], top);
        goto out;
    }
    if (!found) {
        fail_null(EINVAL, "detect: no consistent sites (%d splits tried; the largest gap: %s)",
                  tried, first_why);
        goto out;
    }
    for (int i = 0; i < n; i++)
        parent[i] = uf_find(parent, i);
    g = mpilab_grid_create(n, parent);
    if (g && split)
        *split = thr;
out:
    free(v);
    free(parent);
    return g;
}

/* ------------------------------------------------------------------ collective builders */

int mpilab_grid_measure_latency(MPI_Comm comm, int reps, double *lat)
{
    int rank, p;
    if (reps < 1 || !lat)
        return mpilab_ml_fail(-1, "latency: need reps >= 1 and a matrix");
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &p);
    double *row = calloc((size_t)p, sizeof *row);
    if (!row)
        return mpilab_ml_fail(-1, "latency: out of memory");
    /* round-robin tournament: p-1 (or p) rounds of disjoint pairs measured at once */
    const int n = p % 2 ? p + 1 : p;
    char b = 0;
    for (int round = 0; round < n - 1; round++) {
        int partner;
        if (rank == n - 1)
            partner = round;
        else if (rank == round)
            partner = n - 1;
        else
            partner = ((2 * round - rank) % (n - 1) + (n - 1)) % (n - 1);
        if (partner >= p || partner == rank)
            continue;
        double best = INFINITY;
        for (int k = -1; k < reps; k++) { /* k = -1: warm-up */
            double t0 = MPI_Wtime();
            if (rank < partner) {
                MPI_Send(&b, 1, MPI_CHAR, partner, MPILAB_COLL_TAG, comm);
                MPI_Recv(&b, 1, MPI_CHAR, partner, MPILAB_COLL_TAG, comm, MPI_STATUS_IGNORE);
            } else {
                MPI_Recv(&b, 1, MPI_CHAR, partner, MPILAB_COLL_TAG, comm, MPI_STATUS_IGNORE);
                MPI_Send(&b, 1, MPI_CHAR, partner, MPILAB_COLL_TAG, comm);
            }
            double t = MPI_Wtime() - t0;
            if (k >= 0 && t < best)
                best = t;
        }
        row[partner] = best / 2.0;
    }
    int rc = MPI_Allgather(row, p, MPI_DOUBLE, lat, p, MPI_DOUBLE, comm);
    free(row);
    return rc == MPI_SUCCESS ? 0 : mpilab_ml_fail(-1, "latency: MPI_Allgather failed");
}

/* Detection: a clustering refused is measured again, each pair keeping its smallest
 * latency over the measurements (load only adds time), up to DETECT_ATTEMPTS of
 * DETECT_REPS round trips a pair. */
#define DETECT_ATTEMPTS 4
#define DETECT_REPS 20

/* Collective: measure, cluster on rank 0, and again while rank 0 refuses.  Rank 0 returns
 * the grid or NULL with the reason (last error); the other ranks return NULL. */
static mpilab_grid_t *detect_sites(MPI_Comm comm, int rank, int p)
{
    const size_t pp = (size_t)p * (size_t)p;
    double *lat = malloc(pp * sizeof *lat), *now = malloc(pp * sizeof *now);
    int bad = !lat || !now, anybad = 0, attempt = 0, done = 0;
    mpilab_grid_t *g = NULL;
    MPI_Allreduce(&bad, &anybad, 1, MPI_INT, MPI_LOR, comm);
    if (anybad)
        mpilab_ml_fail(-1, "detect: out of memory");
    while (!anybad && !done && attempt < DETECT_ATTEMPTS) {
        bad = mpilab_grid_measure_latency(comm, DETECT_REPS, now) != 0;
        MPI_Allreduce(&bad, &anybad, 1, MPI_INT, MPI_LOR, comm);
        if (anybad) {
            if (!bad)
                mpilab_ml_fail(-1, "detect: the latency measurement failed on another rank");
            break;
        }
        for (size_t k = 0; k < pp; k++)
            lat[k] = attempt == 0 || now[k] < lat[k] ? now[k] : lat[k];
        attempt++;
        if (rank == 0)
            done = (g = mpilab_grid_from_latency(p, lat, NULL)) != NULL;
        MPI_Bcast(&done, 1, MPI_INT, 0, comm);
    }
    if (rank == 0 && !g && !anybad) {
        char why[sizeof last_error];
        snprintf(why, sizeof why, "%s", last_error);
        mpilab_ml_fail(-1, "%s; %d measurements, each pair's smallest kept", why, attempt);
    }
    free(lat);
    free(now);
    return g;
}

mpilab_grid_t *mpilab_grid_build(MPI_Comm comm, const char *how)
{
    int rank, p;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &p);
    const char *method = how ? how : "";
    char *names = NULL;
    mpilab_grid_t *detected = NULL; /* rank 0's, with detect */
    int need_hosts = strcmp(method, "testbed") == 0 || strncmp(method, "hostfile:", 9) == 0;
    int detect = strcmp(method, "detect") == 0;
    if (need_hosts) {
        char me[MPI_MAX_PROCESSOR_NAME + 1] = {0};
        int len = 0;
        MPI_Get_processor_name(me, &len);
        names = calloc((size_t)p, MPI_MAX_PROCESSOR_NAME + 1);
        if (names)
            MPI_Gather(me, MPI_MAX_PROCESSOR_NAME + 1, MPI_CHAR, names,
                       MPI_MAX_PROCESSOR_NAME + 1, MPI_CHAR, 0, comm);
        else /* still take part; the root reports */
            MPI_Gather(me, MPI_MAX_PROCESSOR_NAME + 1, MPI_CHAR, NULL, 0, MPI_CHAR, 0, comm);
    } else if (detect)
        detected = detect_sites(comm, rank, p);
    /* rank 0 builds; the outcome (sites or the reason) is broadcast */
    struct {
        int ok;
        char why[sizeof last_error];
    } msg = {0, {0}};
    int *site = calloc((size_t)p, sizeof *site);
    mpilab_grid_t *g = NULL;
    if (rank == 0) {
        if (!site)
            mpilab_ml_fail(-1, "grid: out of memory");
        else if (need_hosts) {
            const char **hosts = malloc((size_t)p * sizeof *hosts);
            if (names && hosts) {
                for (int r = 0; r < p; r++)
                    hosts[r] = names + (size_t)r * (MPI_MAX_PROCESSOR_NAME + 1);
                g = mpilab_grid_from_hosts(p, hosts, method[0] == 'h' ? method + 9 : NULL);
            } else
                mpilab_ml_fail(-1, "grid: out of memory");
            free(hosts);
        } else if (strncmp(method, "map:", 4) == 0)
            g = mpilab_grid_read_map(method + 4, p);
        else if (detect) {
            g = detected;
            detected = NULL;
        } else
            mpilab_ml_fail(-1, "grid: unknown site source '%s' (testbed, hostfile:PATH, "
                               "map:PATH, detect)", method);
        if (g) {
            msg.ok = 1;
            for (int r = 0; r < p; r++)
                site[r] = g->site[r];
        } else
            snprintf(msg.why, sizeof msg.why, "%s", last_error);
    }
    MPI_Bcast(&msg, (int)sizeof msg, MPI_BYTE, 0, comm);
    int have = site != NULL, all = 0;
    MPI_Allreduce(&have, &all, 1, MPI_INT, MPI_LAND, comm);
    if (msg.ok && all) {
        MPI_Bcast(site, p, MPI_INT, 0, comm);
        if (rank != 0)
            g = mpilab_grid_create(p, site);
    } else {
        mpilab_grid_free(g);
        g = NULL;
        if (rank != 0 || !msg.ok)
            mpilab_ml_fail(-1, "%s", msg.ok ? "grid: out of memory" : msg.why);
        errno = EINVAL;
    }
    free(site);
    free(names);
    mpilab_grid_free(detected);
    return g;
}
