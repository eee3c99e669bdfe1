/* Multilane and single-lane grid scatter/gather must produce exactly what MPI_Scatter and
 * MPI_Gather produce (byte for byte, including untouched gaps of non-contiguous types) for
 * every root, every P from 1 to P_sup, 2 and 3 sites, uneven and interleaved site maps
 * and several datatype pairs; bad arguments return an error on every rank without
 * communicating; the attached forms work through the tuned dispatcher; grid building over
 * the communicator agrees on failures.  Run with 4..7 ranks (site maps are explicit). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "coll/multilane_entry.h"
#include "coll_check.h"
#include "mpilab/coll.h"
#include "mpilab/multilane.h"


static unsigned char *pattern(size_t n, unsigned seed)
{
    unsigned char *b = malloc(n);
    for (size_t i = 0; i < n; i++)
        b[i] = (unsigned char)((i * 37u + seed * 101u + 5u) & 0xff);
    return b;
}

static void one_case(const tpair_t *tp, int count, int root, const mpilab_grid_t *g, int lanes,
                     const char *layout)
{
    const int sc = count * tp->smul, rc = count * tp->rmul;
    const size_t p = (size_t)nprocs;
    /* scatter */
    size_t sb = span(tp->stype, (size_t)sc * p), rb = span(tp->rtype, (size_t)rc);
    unsigned char *src = pattern(sb, (unsigned)(root * 3 + lanes));
    unsigned char *ref = malloc(rb), *out = malloc(rb);
    memset(ref, 0x5a, rb);
    memset(out, 0x5a, rb);
    int e1 = MPI_Scatter(src, sc, tp->stype, ref, rc, tp->rtype, root, MPI_COMM_WORLD);
    int e2 = mpilab_scatter_multilane(rank == root ? src : NULL, sc, tp->stype, out, rc, tp->rtype,
                                      root, MPI_COMM_WORLD, g, lanes);
    CHECKF(e1 == MPI_SUCCESS && e2 == MPI_SUCCESS, "scatter rc %d (%s)", e2,
          mpilab_multilane_last_error());
    CHECKF(memcmp(ref, out, rb) == 0, "scatter %s %s count=%d root=%d P=%d differs", layout,
          tp->name, count, root, lanes);
    free(src);
    free(ref);
    free(out);
    /* gather */
    size_t gs = span(tp->stype, (size_t)sc), gr = span(tp->rtype, (size_t)rc * p);
    unsigned char *mine = pattern(gs, (unsigned)(rank * 11 + 7));
    unsigned char *gref = malloc(gr), *gout = malloc(gr);
    memset(gref, 0xc3, gr);
    memset(gout, 0xc3, gr);
    e1 = MPI_Gather(mine, sc, tp->stype, gref, rc, tp->rtype, root, MPI_COMM_WORLD);
    e2 = mpilab_gather_multilane(mine, sc, tp->stype, rank == root ? gout : NULL, rc, tp->rtype,
                                 root, MPI_COMM_WORLD, g, lanes);
    CHECKF(e1 == MPI_SUCCESS && e2 == MPI_SUCCESS, "gather rc %d (%s)", e2,
          mpilab_multilane_last_error());
    if (rank == root)
        CHECKF(memcmp(gref, gout, gr) == 0, "gather %s %s count=%d root=%d P=%d differs", layout,
              tp->name, count, root, lanes);
    free(mine);
    free(gref);
    free(gout);
}

static void all_cases(const int *site, const char *layout, const tpair_t *pairs, size_t npairs)
{
    mpilab_grid_t *g = mpilab_grid_create(nprocs, site);
    CHECKF(g != NULL, "grid %s: %s", layout, mpilab_multilane_last_error());
    if (!g)
        return;
    const int counts[] = {0, 1, 7, 1001};
    for (int root = 0; root < nprocs; root++) {
        const int pmax = mpilab_grid_lanes_max(g, root);
        for (int lanes = 1; lanes <= pmax; lanes++)
            for (size_t t = 0; t < npairs; t++)
                for (size_t c = 0; c < sizeof counts / sizeof counts[0]; c++)
                    one_case(&pairs[t], counts[c], root, g, lanes, layout);
        /* a large block (rendezvous protocol) for the widest lane count */
        one_case(&pairs[0], 70000, root, g, pmax, layout);
    }
    mpilab_grid_free(g);
}

static void bad_arguments(void)
{
    int site[16];
    for (int r = 0; r < nprocs; r++)
        site[r] = r < nprocs / 2 ? 0 : 1;
    mpilab_grid_t *g = mpilab_grid_create(nprocs, site);
    int x[64] = {0}, y[64] = {0};
    const int pmax = mpilab_grid_lanes_max(g, 0);
    CHECKF(mpilab_scatter_multilane(x, 1, MPI_INT, y, 1, MPI_INT, 0, MPI_COMM_WORLD, g, 0) ==
              MPI_ERR_ARG, "P = 0 accepted");
    CHECKF(strstr(mpilab_multilane_last_error(), "P = 0") != NULL, "message: %s",
          mpilab_multilane_last_error());
    CHECKF(mpilab_gather_multilane(x, 1, MPI_INT, y, 1, MPI_INT, 0, MPI_COMM_WORLD, g, pmax + 1) ==
              MPI_ERR_ARG, "P > P_sup accepted");
    CHECKF(mpilab_scatter_multilane(x, 1, MPI_INT, y, 1, MPI_INT, nprocs, MPI_COMM_WORLD, g, 1) ==
              MPI_ERR_ROOT, "bad root accepted");
    CHECKF(mpilab_gather_multilane(MPI_IN_PLACE, 1, MPI_INT, y, 1, MPI_INT, 0, MPI_COMM_WORLD, g,
                                  1) == MPI_ERR_BUFFER, "MPI_IN_PLACE accepted");
    /* a grid of another size */
    mpilab_grid_t *small = mpilab_grid_create(2, (int[]){0, 1});
    CHECKF(mpilab_scatter_multilane(x, 1, MPI_INT, y, 1, MPI_INT, 0, MPI_COMM_WORLD, small, 1) ==
              MPI_ERR_ARG, "grid of the wrong size accepted");
    mpilab_grid_free(small);
    /* one site only */
    int one[16] = {0};
    errno = 0;
    CHECKF(mpilab_grid_create(nprocs, one) == NULL && errno == EINVAL, "one site accepted");
    /* not attached */
    CHECKF(mpilab_scatter_multilane_attached(x, 1, MPI_INT, y, 1, MPI_INT, 0, MPI_COMM_WORLD) ==
              MPI_ERR_ARG, "attached call without attachment accepted");
    mpilab_grid_free(g);
}

/* The attached forms through the tuned dispatcher: native for small, multilane for large. */
static void tuned_dispatch(void)
{
    int site[16];
    for (int r = 0; r < nprocs; r++)
        site[r] = r % 2;
    mpilab_grid_t *g = mpilab_grid_create(nprocs, site);
    MPI_Comm comm;
    MPI_Comm_dup(MPI_COMM_WORLD, &comm);
    CHECKF(mpilab_multilane_attach(comm, g, 0) == MPI_SUCCESS, "attach");
    mpilab_grid_free(g); /* the attachment keeps its own copy */
    mpilab_scatter_fn sfns[] = {mpilab_scatter_linear, mpilab_scatter_single_lane_attached,
                                mpilab_scatter_multilane_attached};
    mpilab_gather_fn gfns[] = {mpilab_gather_linear, mpilab_gather_single_lane_attached,
                               mpilab_gather_multilane_attached};
    const char *names[] = {"linear", "single-lane", "multilane"};
    size_t sizes[] = {16, 4096, 65536};
    double times[] = {1, 2, 3, /* 16 B: linear */ 3, 1, 2, /* 4 KiB: single */ 3, 2, 1};
    mpilab_tuned_t *ts = mpilab_tuned_scatter_create(3, sfns, names, 3, sizes, times);
    mpilab_tuned_t *tg = mpilab_tuned_gather_create(3, gfns, names, 3, sizes, times);
    for (int root = 0; root < nprocs; root++)
        for (size_t k = 0; k < 3; k++) {
            const int n = (int)sizes[k];
            unsigned char *src = pattern((size_t)n * (size_t)nprocs, (unsigned)root);
            unsigned char *a = calloc((size_t)n, 1), *b = calloc((size_t)n, 1);
            MPI_Scatter(src, n, MPI_BYTE, a, n, MPI_BYTE, root, comm);
            CHECKF(mpilab_tuned_scatter(ts, src, n, MPI_BYTE, b, n, MPI_BYTE, root, comm) ==
                      MPI_SUCCESS, "tuned scatter (%s)", mpilab_multilane_last_error());
            CHECKF(memcmp(a, b, (size_t)n) == 0, "tuned scatter via %s differs",
                  mpilab_tuned_choice(ts, (size_t)n));
            unsigned char *ga = calloc((size_t)n * (size_t)nprocs, 1);
            unsigned char *gb = calloc((size_t)n * (size_t)nprocs, 1);
            MPI_Gather(a, n, MPI_BYTE, ga, n, MPI_BYTE, root, comm);
            CHECKF(mpilab_tuned_gather(tg, a, n, MPI_BYTE, gb, n, MPI_BYTE, root, comm) ==
                      MPI_SUCCESS, "tuned gather");
            if (rank == root)
                CHECKF(memcmp(ga, gb, (size_t)n * (size_t)nprocs) == 0,
                      "tuned gather via %s differs", mpilab_tuned_choice(tg, (size_t)n));
            free(src);
            free(a);
            free(b);
            free(ga);
            free(gb);
        }
    mpilab_tuned_free(ts);
    mpilab_tuned_free(tg);
    CHECKF(mpilab_multilane_detach(comm) == MPI_SUCCESS, "detach");
    int x = 0, y = 0;
    CHECKF(mpilab_gather_multilane_attached(&x, 1, MPI_INT, &y, 1, MPI_INT, 0, comm) ==
              MPI_ERR_ARG, "attached call after detach accepted");
    MPI_Comm_free(&comm);
}

/* mpilab_grid_build: a map file written by rank 0; failures reported on every rank. */
static void build_over_comm(void)
{
    char path[256] = {0};
    if (rank == 0) {
        const char *tmp = getenv("TMPDIR");
        snprintf(path, sizeof path, "%s/mlmap.%d", tmp && *tmp ? tmp : "/tmp", (int)getpid());
        FILE *f = fopen(path, "w");
        fprintf(f, "# rank site\n");
        for (int r = nprocs - 1; r >= 0; r--)
            fprintf(f, "%d %s\n", r, r % 3 == 1 ? "far" : "near");
        fclose(f);
    }
    MPI_Bcast(path, sizeof path, MPI_CHAR, 0, MPI_COMM_WORLD);
    char how[300];
    snprintf(how, sizeof how, "map:%s", path);
    mpilab_grid_t *g = mpilab_grid_build(MPI_COMM_WORLD, how);
    CHECKF(g != NULL, "map build: %s", mpilab_multilane_last_error());
    if (g) {
        CHECKF(mpilab_grid_nsites(g) == 2, "map: %d sites", mpilab_grid_nsites(g));
        for (int r = 0; r < nprocs; r++)
            CHECKF(mpilab_grid_site_of(g, r) == (r % 3 == 1 ? 1 : 0), "map: rank %d in site %d", r,
                  mpilab_grid_site_of(g, r));
    }
    mpilab_grid_free(g);
    /* the operation-table entries' functions: grid from the environment on first use */
    setenv("MPILAB_MULTILANE_SITES", how, 1);
    setenv("MPILAB_MULTILANE_LANES", "99", 1);
    MPI_Comm c2;
    MPI_Comm_dup(MPI_COMM_WORLD, &c2);
    int x[4] = {0}, y[4] = {0};
    CHECKF(mpilab_multilane_entry_scatter(x, 1, MPI_INT, y, 1, MPI_INT, 0, c2) == MPI_ERR_ARG,
          "entry with P = 99 accepted");
    MPI_Comm_free(&c2);
    setenv("MPILAB_MULTILANE_LANES", "x", 1);
    MPI_Comm_dup(MPI_COMM_WORLD, &c2);
    CHECKF(mpilab_single_lane_entry_gather(x, 1, MPI_INT, y, 1, MPI_INT, 0, c2) == MPI_ERR_ARG &&
              strstr(mpilab_multilane_last_error(), "MPILAB_MULTILANE_LANES"),
          "entry with a bad MPILAB_MULTILANE_LANES: %s", mpilab_multilane_last_error());
    MPI_Comm_free(&c2);
    unsetenv("MPILAB_MULTILANE_LANES");
    MPI_Comm_dup(MPI_COMM_WORLD, &c2);
    mpilab_scatter_fn efns[] = {mpilab_multilane_entry_scatter, mpilab_single_lane_entry_scatter};
    mpilab_gather_fn gfns[] = {mpilab_multilane_entry_gather, mpilab_single_lane_entry_gather};
    for (int k = 0; k < 2; k++)
        for (int root = 0; root < nprocs; root++) {
            const int n = 3000;
            unsigned char *src = pattern((size_t)n * (size_t)nprocs, (unsigned)(root + k));
            unsigned char *a = calloc((size_t)n, 1), *b = calloc((size_t)n, 1);
            unsigned char *ga = calloc((size_t)n * (size_t)nprocs, 1);
            unsigned char *gb = calloc((size_t)n * (size_t)nprocs, 1);
            MPI_Scatter(src, n, MPI_BYTE, a, n, MPI_BYTE, root, c2);
            CHECKF(efns[k](src, n, MPI_BYTE, b, n, MPI_BYTE, root, c2) == MPI_SUCCESS,
                  "entry scatter %d: %s", k, mpilab_multilane_last_error());
            CHECKF(memcmp(a, b, (size_t)n) == 0, "entry scatter %d root %d differs", k, root);
            MPI_Gather(a, n, MPI_BYTE, ga, n, MPI_BYTE, root, c2);
            CHECKF(gfns[k](a, n, MPI_BYTE, gb, n, MPI_BYTE, root, c2) == MPI_SUCCESS,
                  "entry gather %d", k);
            if (rank == root)
                CHECKF(memcmp(ga, gb, (size_t)n * (size_t)nprocs) == 0,
                      "entry gather %d root %d differs", k, root);
            free(src);
            free(a);
            free(b);
            free(ga);
            free(gb);
        }
    const mpilab_grid_t *ag = mpilab_multilane_attached_grid(c2);
    CHECKF(ag && mpilab_grid_site_of(ag, 1) == 1 && mpilab_grid_site_of(ag, 0) == 0,
          "the entries attached the map's grid");
    MPI_Comm_free(&c2);
    unsetenv("MPILAB_MULTILANE_SITES");
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0)
        unlink(path);
    /* unreadable file, unknown method ("detect" is tested on synthetic matrices and on the
     * testbed: on an oversubscribed machine one descheduled rank can look like a site of
     * its own) */
    const char *bad[] = {"map:/nonexistent/mlmap", "bogus"};
    const char *expect[] = {"/nonexistent/mlmap", "unknown site source"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        mpilab_grid_t *b = mpilab_grid_build(MPI_COMM_WORLD, bad[i]);
        CHECKF(b == NULL, "grid_build(%s) succeeded", bad[i]);
        CHECKF(strstr(mpilab_multilane_last_error(), expect[i]) != NULL,
              "grid_build(%s): message '%s'", bad[i], mpilab_multilane_last_error());
        mpilab_grid_free(b);
    }
    /* host names: testbed nodes (PREFIX-sSnJ) give their sites, other names an error */
    char me[MPI_MAX_PROCESSOR_NAME + 1] = {0};
    int len = 0, mine_tb = 0, all_tb = 0;
    MPI_Get_processor_name(me, &len);
    const char *dash = strrchr(me, '-');
    mine_tb = dash && dash[1] == 's' && strchr(dash, 'n') != NULL;
    MPI_Allreduce(&mine_tb, &all_tb, 1, MPI_INT, MPI_LAND, MPI_COMM_WORLD);
    mpilab_grid_t *tb = mpilab_grid_build(MPI_COMM_WORLD, "testbed");
    if (all_tb) {
        CHECKF(tb != NULL, "grid_build(testbed) on the testbed: %s", mpilab_multilane_last_error());
        if (tb)
            CHECKF(mpilab_grid_site_of(tb, rank) == atoi(dash + 2), "testbed: rank %d (%s) in "
                  "site %d", rank, me, mpilab_grid_site_of(tb, rank));
    } else {
        CHECKF(tb == NULL && strstr(mpilab_multilane_last_error(), "not a testbed node"),
              "grid_build(testbed) off the testbed: '%s'", mpilab_multilane_last_error());
    }
    mpilab_grid_free(tb);
}

/* The world for a case: 2..16 ranks (the site maps are arrays of 16); 0 if outside. */
static int world_ok(void)
{
    coll_world();
    return nprocs >= 2 && nprocs <= 16;
}

/* The datatype pairs of the grid cases (free with types_free). */
static size_t types(tpair_t *pairs, MPI_Datatype *t)
{
    coll_types(&t[0], &t[1], &t[2]);
    const tpair_t p[] = {
        {"byte", MPI_BYTE, MPI_BYTE, 1, 1},
        {"int->contig3", MPI_INT, t[0], 3, 1},
        {"vector->int", t[1], MPI_INT, 1, 2},
        {"int2->vector", t[2], t[1], 1, 1},
    };
    memcpy(pairs, p, sizeof p);
    return sizeof p / sizeof p[0];
}

static void types_free(MPI_Datatype *t)
{
    for (int k = 0; k < 3; k++)
        MPI_Type_free(&t[k]);
}

/* two contiguous sites of every split: n0 > n1 and n0 < n1 depending on the root */
MPILAB_TEST(two_contiguous_sites_every_split)
{
    if (!world_ok())
        return;
    tpair_t pairs[4];
    MPI_Datatype t[3];
    size_t np = types(pairs, t);
    int site[16];
    char name[64];
    for (int k = 1; k < nprocs; k++) {
        for (int r = 0; r < nprocs; r++)
            site[r] = r < k ? 0 : 1;
        snprintf(name, sizeof name, "2 sites %d+%d", k, nprocs - k);
        all_cases(site, name, pairs, k == nprocs / 2 ? np : 2);
    }
    types_free(t);
}

/* interleaved: any rank order; 3 sites, labels not in rank order; uneven 1 + (p-2) + 1 */
MPILAB_TEST(interleaved_and_uneven_sites)
{
    if (!world_ok())
        return;
    tpair_t pairs[4];
    MPI_Datatype t[3];
    size_t np = types(pairs, t);
    int site[16];
    for (int r = 0; r < nprocs; r++)
        site[r] = r % 2;
    all_cases(site, "2 sites interleaved", pairs, np);
    if (nprocs >= 3) {
        for (int r = 0; r < nprocs; r++)
            site[r] = (r * 2) % 3;
        all_cases(site, "3 sites interleaved", pairs, np);
        for (int r = 0; r < nprocs; r++)
            site[r] = r == 0 ? 5 : (r < nprocs - 1 ? 9 : 7);
        all_cases(site, "3 sites uneven", pairs, 2);
    }
    types_free(t);
}

MPILAB_TEST(bad_arguments_refused_without_communicating)
{
    if (world_ok())
        bad_arguments();
}

MPILAB_TEST(attached_forms_through_the_tuned_dispatcher)
{
    if (world_ok())
        tuned_dispatch();
}

MPILAB_TEST(grid_building_over_the_communicator)
{
    if (world_ok())
        build_over_comm();
}

MPILAB_TEST(world_size_in_range)
{
    CHECKF(world_ok(), "coll_multilane: run with 2..16 ranks, not %d", nprocs);
}

MPILAB_TEST_MAIN()
