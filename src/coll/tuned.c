/* Tuned scatter / gather: choose the implementation predicted fastest from a table of
 * measured times (see include/mpilab/coll.h for the contract). */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mpilab/coll.h"

enum tuned_kind { TUNED_SCATTER = 1, TUNED_GATHER = 2 };

struct mpilab_tuned {
    enum tuned_kind kind;
    size_t nimpl, nsizes;
    mpilab_scatter_fn *sfns; /* kind == TUNED_SCATTER */
    mpilab_gather_fn *gfns;  /* kind == TUNED_GATHER */
    char **names;
    size_t *sizes;
    double *times;
};

static _Thread_local char last_error[256];

const char *mpilab_coll_last_error(void) { return last_error; }

static void *fail(int err, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(last_error, sizeof last_error, fmt, ap);
    va_end(ap);
    errno = err;
    return NULL;
}

void mpilab_tuned_free(mpilab_tuned_t *t)
{
    if (!t)
        return;
    if (t->names)
        for (size_t i = 0; i < t->nimpl; i++)
            free(t->names[i]);
    free(t->names);
    free(t->sfns);
    free(t->gfns);
    free(t->sizes);
    free(t->times);
    free(t);
}

/* Exactly one of sfns / gfns is non-NULL (it gives the kind). */
static mpilab_tuned_t *create(const mpilab_scatter_fn *sfns, const mpilab_gather_fn *gfns,
                              size_t nimpl, const char *const *names, size_t nsizes,
                              const size_t *sizes, const double *times)
{
    if (nimpl == 0)
        return fail(EINVAL, "tuned: no implementations (nimpl = 0)");
    if (nsizes == 0)
        return fail(EINVAL, "tuned: empty size table (nsizes = 0)");
    if ((!sfns && !gfns) || !names || !sizes || !times)
        return fail(EINVAL, "tuned: NULL table argument");
    if (nimpl > SIZE_MAX / sizeof(double) / nsizes)
        return fail(EINVAL, "tuned: table too large");
    for (size_t i = 0; i < nimpl; i++) {
        if (sfns ? !sfns[i] : !gfns[i])
            return fail(EINVAL, "tuned: implementation %zu is NULL", i);
        if (!names[i])
            return fail(EINVAL, "tuned: name of implementation %zu is NULL", i);
    }
    for (size_t s = 1; s < nsizes; s++)
        if (sizes[s] <= sizes[s - 1])
            return fail(EINVAL, "tuned: sizes not strictly increasing at index %zu (%zu after %zu)",
                        s, sizes[s], sizes[s - 1]);
    for (size_t s = 0; s < nsizes; s++)
        for (size_t i = 0; i < nimpl; i++) {
            double x = times[s * nimpl + i];
            if (!isfinite(x) || x < 0)
                return fail(EINVAL, "tuned: time of %s at %zu bytes is %g (need finite, >= 0)",
                            names[i], sizes[s], x);
        }

    mpilab_tuned_t *t = calloc(1, sizeof *t);
    if (!t)
        return fail(ENOMEM, "tuned: out of memory");
    t->kind = sfns ? TUNED_SCATTER : TUNED_GATHER;
    t->nimpl = nimpl;
    t->nsizes = nsizes;
    if (sfns)
        t->sfns = malloc(nimpl * sizeof *t->sfns);
    else
        t->gfns = malloc(nimpl * sizeof *t->gfns);
    t->names = calloc(nimpl, sizeof *t->names);
    t->sizes = malloc(nsizes * sizeof *t->sizes);
    t->times = malloc(nsizes * nimpl * sizeof *t->times);
    if ((!t->sfns && !t->gfns) || !t->names || !t->sizes || !t->times) {
        mpilab_tuned_free(t);
        return fail(ENOMEM, "tuned: out of memory");
    }
    for (size_t i = 0; i < nimpl; i++) {
        if (sfns)
            t->sfns[i] = sfns[i];
        else
            t->gfns[i] = gfns[i];
        size_t len = strlen(names[i]) + 1;
        if (!(t->names[i] = malloc(len))) {
            mpilab_tuned_free(t);
            return fail(ENOMEM, "tuned: out of memory");
        }
        memcpy(t->names[i], names[i], len);
    }
    memcpy(t->sizes, sizes, nsizes * sizeof *sizes);
    memcpy(t->times, times, nsizes * nimpl * sizeof *times);
    return t;
}

mpilab_tuned_t *mpilab_tuned_scatter_create(size_t nimpl, const mpilab_scatter_fn *impls,
                                            const char *const *names, size_t nsizes,
                                            const size_t *sizes, const double *times)
{
    if (!impls)
        return fail(EINVAL, "tuned: NULL implementation array");
    return create(impls, NULL, nimpl, names, nsizes, sizes, times);
}

mpilab_tuned_t *mpilab_tuned_gather_create(size_t nimpl, const mpilab_gather_fn *impls,
                                           const char *const *names, size_t nsizes,
                                           const size_t *sizes, const double *times)
{
    if (!impls)
        return fail(EINVAL, "tuned: NULL implementation array");
    return create(NULL, impls, nimpl, names, nsizes, sizes, times);
}

size_t mpilab_tuned_choice_index(const mpilab_tuned_t *t, size_t bytes)
{
    if (!t)
        return 0;
    const size_t n = t->nsizes, ni = t->nimpl;
    size_t lo = 0, hi = 0; /* rows to interpolate between */
    double f = 0;
    if (bytes <= t->sizes[0]) {
        lo = hi = 0;
    } else if (bytes >= t->sizes[n - 1]) {
        lo = hi = n - 1;
    } else {
        size_t a = 0, b = n - 1; /* sizes[a] < bytes < sizes[b] */
        while (b - a > 1) {
            size_t mid = a + (b - a) / 2;
            if (t->sizes[mid] <= bytes)
                a = mid;
            else
                b = mid;
        }
        lo = a;
        hi = b;
        f = (double)(bytes - t->sizes[a]) / (double)(t->sizes[b] - t->sizes[a]);
    }
    size_t best = 0;
    double best_t = INFINITY;
    for (size_t i = 0; i < ni; i++) {
        double x0 = t->times[lo * ni + i], x1 = t->times[hi * ni + i];
        double x = lo == hi ? x0 : x0 + (x1 - x0) * f;
        if (x < best_t) {
            best_t = x;
            best = i;
        }
    }
    return best;
}

const char *mpilab_tuned_choice(const mpilab_tuned_t *t, size_t bytes)
{
    if (!t)
        return NULL;
    return t->names[mpilab_tuned_choice_index(t, bytes)];
}

static int call_bytes(int count, MPI_Datatype type, size_t *bytes)
{
    MPI_Count sz = 0;
    int rc = MPI_Type_size_x(type, &sz);
    if (rc != MPI_SUCCESS)
        return rc;
    if (count < 0 || sz < 0)
        return MPI_ERR_COUNT;
    *bytes = (size_t)count * (size_t)sz;
    return MPI_SUCCESS;
}

int mpilab_tuned_scatter(const mpilab_tuned_t *t, const void *sendbuf, int sendcount,
                         MPI_Datatype sendtype, void *recvbuf, int recvcount,
                         MPI_Datatype recvtype, int root, MPI_Comm comm)
{
    if (!t || t->kind != TUNED_SCATTER)
        return MPI_ERR_ARG;
    size_t bytes;
    int rc = call_bytes(recvcount, recvtype, &bytes);
    if (rc != MPI_SUCCESS)
        return rc;
    mpilab_scatter_fn fn = t->sfns[mpilab_tuned_choice_index(t, bytes)];
    return fn(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, root, comm);
}

int mpilab_tuned_gather(const mpilab_tuned_t *t, const void *sendbuf, int sendcount,
                        MPI_Datatype sendtype, void *recvbuf, int recvcount,
                        MPI_Datatype recvtype, int root, MPI_Comm comm)
{
    if (!t || t->kind != TUNED_GATHER)
        return MPI_ERR_ARG;
    size_t bytes;
    int rc = call_bytes(sendcount, sendtype, &bytes);
    if (rc != MPI_SUCCESS)
        return rc;
    mpilab_gather_fn fn = t->gfns[mpilab_tuned_choice_index(t, bytes)];
    return fn(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, root, comm);
}
