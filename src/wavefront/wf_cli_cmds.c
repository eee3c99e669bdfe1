/* mpilab-wavefront's commands on files named on a command line: band-file sets, conversion
 * with the clean-up of a killed conversion, verification against the in-core reference
 * (include/mpilab/wavefront_cli.h). */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "common/common.h" /* mpilab_errf */
#include "mpilab/wavefront_cli.h"

void mpilab_wf_fileset_free(mpilab_wf_fileset *s)
{
    for (int i = 0; i < s->n; i++)
        free(s->paths[i]);
    free(s->paths);
    s->paths = NULL;
    s->n = 0;
}

/* Append a copy of path; 0 or -1 (out of memory: s is freed). */
static int fileset_add(mpilab_wf_fileset *s, const char *path)
{
    char **np = realloc(s->paths, (size_t)(s->n + 1) * sizeof *np);
    if (np)
        s->paths = np;
    if (!np || !(np[s->n] = strdup(path))) {
        mpilab_wf_fileset_free(s);
        return -1;
    }
    s->n++;
    return 0;
}

int mpilab_wf_fileset_resolve(mpilab_wf_fileset *s, const char *name, char *err, size_t errlen)
{
    s->paths = NULL;
    s->n = 0;
    if (access(name, F_OK) == 0)
        return fileset_add(s, name) ? mpilab_errf(err, errlen, "out of memory") : 0;
    for (int i = 0;; i++) {
        char p[4200];
        snprintf(p, sizeof p, "%s.%d", name, i);
        if (access(p, F_OK) != 0)
            break;
        if (fileset_add(s, p))
            return mpilab_errf(err, errlen, "out of memory");
    }
    if (s->n == 0)
        return mpilab_errf(err, errlen, "%s: no such file (nor band files %s.0, ...)", name,
                           name);
    return 0;
}

int mpilab_wf_fileset_names(mpilab_wf_fileset *s, char *const *names, int n, char *err,
                            size_t errlen)
{
    if (n == 1)
        return mpilab_wf_fileset_resolve(s, names[0], err, errlen);
    s->paths = NULL;
    s->n = 0;
    for (int i = 0; i < n; i++)
        if (fileset_add(s, names[i]))
            return mpilab_errf(err, errlen, "out of memory");
    return 0;
}

static double now_s(void)
{
    struct timespec ts;
    (clock_gettime)(CLOCK_MONOTONIC, &ts); /* real time, also under SMPI (wf_worker.h) */
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Temporaries of a conversion into out (or its nout band files) that was killed: removed,
 * each reported on log. 0, or -1 + err. */
static int remove_stale(const char *out, int nout, FILE *log, const char *prog, char *err,
                        size_t errlen)
{
    char stale[4096];
    for (int k = 0; k < (nout > 1 ? nout : 1); k++) {
        char name[4200];
        if (nout > 1)
            snprintf(name, sizeof name, "%s.%d", out, k);
        else
            snprintf(name, sizeof name, "%s", out);
        int ns = mpilab_wf_stale_temps(name, 1, stale, sizeof stale, err, errlen);
        if (ns < 0)
            return -1;
        char *save = NULL;
        for (char *line = ns ? strtok_r(stale, "\n", &save) : NULL; line;
             line = strtok_r(NULL, "\n", &save))
            if (log)
                fprintf(log, "%s: removed stale temporary file %s (from a killed conversion)\n",
                        prog, line);
    }
    return 0;
}

int mpilab_wf_convert_names(char *const *names, int n, const char *out,
                            const mpilab_wf_convert_opts *o, FILE *log, const char *prog,
                            double *seconds, char *err, size_t errlen)
{
    mpilab_wf_fileset in;
    if (mpilab_wf_fileset_names(&in, names, n, err, errlen))
        return -1;
    int rc = remove_stale(out, o->nout, log, prog, err, errlen);
    if (rc == 0) {
        double t0 = now_s();
        rc = mpilab_wf_convert((const char *const *)in.paths, in.n, out, o, err, errlen);
        *seconds = now_s() - t0;
    }
    mpilab_wf_fileset_free(&in);
    return rc ? -1 : 0;
}

/* Each band of the result: an interrupted in-place run is an error, another iteration count
 * than k a note. */
static int check_states(const mpilab_wf_fileset *fr, int64_t k, FILE *notes, char *err,
                        size_t errlen)
{
    for (int i = 0; i < fr->n; i++) {
        int64_t done;
        int intr;
        if (mpilab_wf_file_state(fr->paths[i], &done, &intr, err, errlen))
            return -1;
        if (intr)
            return mpilab_errf(err, errlen, "%s: an in-place run was interrupted: the file "
                               "holds a mix of iterations", fr->paths[i]);
        if (done != k && notes)
            fprintf(notes, "note: %s records %lld in-place iterations, not %lld\n", fr->paths[i],
                    (long long)done, (long long)k);
    }
    return 0;
}

/* Load the three matrices (d[0] initial, d[1] coefficients, d[2] result) and check that they
 * fit together; 0 or -1 + err. */
static int load_three(mpilab_wf_fileset *fs, double **d, int64_t *rows, int64_t *cols,
                      char *err, size_t errlen)
{
    int64_t r[3], c[3], p[3];
    for (int i = 0; i < 3; i++)
        if (mpilab_wf_load((const char *const *)fs[i].paths, fs[i].n, &d[i], &r[i], &c[i], &p[i],
                           err, errlen))
            return -1;
    if (p[0] != 1 || p[2] != 1 || p[1] != 5)
        return mpilab_errf(err, errlen, "verify: expected data files (1 plane) for --initial "
                           "and RESULT, 5 planes for --coef");
    if (r[0] != r[1] || r[0] != r[2] || c[0] != c[1] || c[0] != c[2])
        return mpilab_errf(err, errlen, "verify: sizes differ: initial %lldx%lld, coef "
                           "%lldx%lld, result %lldx%lld", (long long)r[0], (long long)c[0],
                           (long long)r[1], (long long)c[1], (long long)r[2], (long long)c[2]);
    *rows = r[0];
    *cols = c[0];
    return 0;
}

/* Bitwise comparison of the reference ref with the result res (n elements). */
static void compare(const double *ref, const double *res, mpilab_wf_verify_result *r)
{
    size_t n = (size_t)(r->rows * r->cols), first = 0;
    r->n = n;
    r->reference_checksum = mpilab_wf_checksum(ref, n);
    r->result_checksum = mpilab_wf_checksum(res, n);
    r->ndiff = 0;
    r->max_diff = 0;
    for (size_t i = 0; i < n; i++)
        if (memcmp(&ref[i], &res[i], sizeof(double)) != 0) {
            if (!r->ndiff)
                first = i;
            r->ndiff++;
            double dd = fabs(ref[i] - res[i]);
            if (dd > r->max_diff || isnan(dd))
                r->max_diff = dd;
        }
    r->first_row = (int64_t)(first / (size_t)r->cols);
    r->first_col = (int64_t)(first % (size_t)r->cols);
}

int mpilab_wf_verify(const char *initial, const char *coef, const char *result,
                     int64_t iterations, FILE *notes, mpilab_wf_verify_result *r, char *err,
                     size_t errlen)
{
    const char *names[3] = {initial, coef, result};
    mpilab_wf_fileset fs[3] = {{0}};
    double *d[3] = {NULL, NULL, NULL};
    int rc = 0;
    for (int i = 0; i < 3 && rc == 0; i++)
        rc = mpilab_wf_fileset_resolve(&fs[i], names[i], err, errlen);
    if (rc == 0)
        rc = check_states(&fs[2], iterations, notes, err, errlen);
    if (rc == 0)
        rc = load_three(fs, d, &r->rows, &r->cols, err, errlen);
    if (rc == 0) {
        r->iterations = iterations;
        mpilab_wf_reference(d[0], d[1], r->rows, r->cols, iterations);
        compare(d[0], d[2], r);
    }
    for (int i = 0; i < 3; i++) {
        free(d[i]);
        mpilab_wf_fileset_free(&fs[i]);
    }
    return rc;
}
