/* Tuned dispatcher: the choice follows the table (interpolated between measured sizes,
 * clamped outside, ties to the lower index) and bad tables are refused with a reason.
 * No MPI calls are made here (the dispatch itself is tested in tests/mpi/coll_tuned.c). */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "mpilab/coll.h"

#include "kit.h"


static void check_choice(const mpilab_tuned_t *t, size_t bytes, const char *want)
{
    const char *got = mpilab_tuned_choice(t, bytes);
    CHECKF(got && strcmp(got, want) == 0, "choice at %zu bytes: %s, want %s", bytes,
          got ? got : "(null)", want);
}

MPILAB_TEST(choice_follows_the_table)
{
    const mpilab_scatter_fn impls[] = {mpilab_scatter_linear, mpilab_scatter_binomial};
    const char *names[] = {"linear", "binomial"};
    const size_t sizes[] = {0, 1024, 65536};
    /* rows: size 0, 1024, 65536; columns: linear, binomial */
    const double times[] = {1, 5, 2, 6, 100, 50};
    mpilab_tuned_t *t = mpilab_tuned_scatter_create(2, impls, names, 3, sizes, times);
    CHECKF(t != NULL, "create failed: %s", mpilab_coll_last_error());
    if (!t)
        return;
    check_choice(t, 0, "linear");
    check_choice(t, 1024, "linear");
    check_choice(t, 65536, "binomial");
    check_choice(t, 1 << 24, "binomial"); /* beyond the table: last row */
    /* Between 1024 and 65536: linear 2 + 98 f, binomial 6 + 44 f, equal at f = 4/54, i.e.
     * 1024 + 64512 * 4 / 54 = 5802.7 bytes.  A nearest-lower-row rule would say linear up
     * to 65535; interpolation switches at the crossing. */
    check_choice(t, 5802, "linear");
    check_choice(t, 5803, "binomial");
    check_choice(t, 40000, "binomial");
    CHECKF(mpilab_tuned_choice_index(t, 100) == 0, "index at 100");
    CHECKF(mpilab_tuned_choice_index(t, 60000) == 1, "index at 60000");
    /* a scatter table cannot run a gather */
    int x = 0;
    CHECKF(mpilab_tuned_gather(t, &x, 1, MPI_INT, &x, 1, MPI_INT, 0, MPI_COMM_WORLD) == MPI_ERR_ARG,
          "gather through a scatter table");
    mpilab_tuned_free(t);

    /* ties go to the lower index; a one-row table applies everywhere */
    const mpilab_gather_fn g[] = {mpilab_gather_binomial, mpilab_gather_linear};
    const char *gn[] = {"binomial", "linear"};
    const size_t one[] = {4096};
    const double tie[] = {3, 3};
    t = mpilab_tuned_gather_create(2, g, gn, 1, one, tie);
    CHECKF(t != NULL, "gather create failed: %s", mpilab_coll_last_error());
    if (t) {
        check_choice(t, 0, "binomial");
        check_choice(t, 1 << 20, "binomial");
        CHECKF(mpilab_tuned_scatter(t, &x, 1, MPI_INT, &x, 1, MPI_INT, 0, MPI_COMM_WORLD) ==
                  MPI_ERR_ARG, "scatter through a gather table");
        mpilab_tuned_free(t);
    }
    const double second[] = {3, 2.5};
    t = mpilab_tuned_gather_create(2, g, gn, 1, one, second);
    if (t) {
        check_choice(t, 12, "linear");
        mpilab_tuned_free(t);
    }
    mpilab_tuned_free(NULL);
    CHECKF(mpilab_tuned_choice(NULL, 0) == NULL, "choice of NULL table");
    CHECKF(mpilab_tuned_scatter(NULL, &x, 1, MPI_INT, &x, 1, MPI_INT, 0, MPI_COMM_WORLD) ==
              MPI_ERR_ARG, "NULL table");
}

static void expect_refused(const char *what, size_t nimpl, const mpilab_scatter_fn *impls,
                           const char *const *names, size_t nsizes, const size_t *sizes,
                           const double *times, const char *needle)
{
    errno = 0;
    mpilab_tuned_t *t = mpilab_tuned_scatter_create(nimpl, impls, names, nsizes, sizes, times);
    CHECKF(t == NULL, "%s accepted", what);
    mpilab_tuned_free(t);
    CHECKF(errno == EINVAL, "%s: errno %d", what, errno);
    CHECKF(strstr(mpilab_coll_last_error(), needle) != NULL, "%s: reason '%s' lacks '%s'", what,
          mpilab_coll_last_error(), needle);
}

MPILAB_TEST(bad_tables_refused_with_a_reason)
{
    const mpilab_scatter_fn impls[] = {mpilab_scatter_linear, mpilab_scatter_binomial};
    const mpilab_scatter_fn nullimpl[] = {mpilab_scatter_linear, NULL};
    const char *names[] = {"linear", "binomial"};
    const char *nullname[] = {"linear", NULL};
    const size_t sizes[] = {0, 1024};
    const size_t same[] = {1024, 1024};
    const size_t down[] = {1024, 8};
    const double ok[] = {1, 2, 3, 4};
    const double nan_t[] = {1, NAN, 3, 4};
    const double inf_t[] = {1, 2, INFINITY, 4};
    const double neg_t[] = {1, 2, 3, -4};
    expect_refused("nimpl 0", 0, impls, names, 2, sizes, ok, "nimpl");
    expect_refused("nsizes 0", 2, impls, names, 0, sizes, ok, "nsizes");
    expect_refused("equal sizes", 2, impls, names, 2, same, ok, "strictly increasing");
    expect_refused("decreasing sizes", 2, impls, names, 2, down, ok, "strictly increasing");
    expect_refused("NaN time", 2, impls, names, 2, sizes, nan_t, "binomial at 0 bytes");
    expect_refused("inf time", 2, impls, names, 2, sizes, inf_t, "linear at 1024 bytes");
    expect_refused("negative time", 2, impls, names, 2, sizes, neg_t, ">= 0");
    expect_refused("NULL impl", 2, nullimpl, names, 2, sizes, ok, "implementation 1 is NULL");
    expect_refused("NULL name", 2, impls, nullname, 2, sizes, ok, "name of implementation 1");
    expect_refused("NULL impls", 2, NULL, names, 2, sizes, ok, "NULL");
    expect_refused("NULL times", 2, impls, names, 2, sizes, NULL, "NULL");
}

MPILAB_TEST_MAIN()
