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

#include "mpi_world.h"
#include "coll/multilane_entry.h"
#include "coll_check.h"
#include "mpilab/coll.h"
#include "mpilab/multilane.h"

static long cases;

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
    cases++;
    /* scatter */
    size_t sb = span(tp->stype, (size_t)sc * p), rb = span(tp->rtype, (size_t)rc);
    unsigned char *src = pattern(sb, (unsigned)(root * 3 + lanes));
    unsigned char *ref = malloc(rb), *out = malloc(rb);
    memset(ref, 0x5a, rb);
    memset(out, 0x5a, rb);
    int e1 = MPI_Scatter(src, sc, tp->stype, ref, rc, tp->rtype, root, MPI_COMM_WORLD);
    int e2 = mpilab_scatter_multilane(rank == root ? src : NULL, sc, tp->stype, out, rc, tp->rtype,
                                      root, MPI_COMM_WORLD, g, lanes);
    CHECK(e1 == MPI_SUCCESS && e2 == MPI_SUCCESS, "scatter rc %d (%s)", e2,
          mpilab_multilane_last_error());
    CHECK(memcmp(ref, out, rb) == 0, "scatter %s %s count=%d root=%d P=%d differs", layout,
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
    CHECK(e1 == MPI_SUCCESS && e2 == MPI_SUCCESS, "gather rc %d (%s)", e2,
          mpilab_multilane_last_error());
    if (rank == root)
        CHECK(memcmp(gref, gout, gr) == 0, "gather %s %s count=%d root=%d P=%d differs", layout,
              tp->name, count, root, lanes);
    free(mine);
    free(gref);
    free(gout);
}

static void all_cases(const int *site, const char *layout, const tpair_t *pairs, size_t npairs)
{
    mpilab_grid_t *g = mpilab_grid_create(nprocs, site);
    CHECK(g != NULL, "grid %s: %s", layout, mpilab_multilane_last_error());
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
    CHECK(mpilab_scatter_multilane(x, 1, MPI_INT, y, 1, MPI_INT, 0, MPI_COMM_WORLD, g, 0) ==
              MPI_ERR_ARG, "P = 0 accepted");
    CHECK(strstr(mpilab_multilane_last_error(), "P = 0") != NULL, "message: %s",
          mpilab_multilane_last_error());
    CHECK(mpilab_gather_multilane(x, 1, MPI_INT, y, 1, MPI_INT, 0, MPI_COMM_WORLD, g, pmax + 1) ==
              MPI_ERR_ARG, "P > P_sup accepted");
    CHECK(mpilab_scatter_multilane(x, 1, MPI_INT, y, 1, MPI_INT, nprocs, MPI_COMM_WORLD, g, 1) ==
              MPI_ERR_ROOT, "bad root accepted");
    CHECK(mpilab_gather_multilane(MPI_IN_PLACE, 1, MPI_INT, y, 1, MPI_INT, 0, MPI_COMM_WORLD, g,
                                  1) == MPI_ERR_BUFFER, "MPI_IN_PLACE accepted");
    /* a grid of another size */
    mpilab_grid_t *small = mpilab_grid_create(2, (int[]){0, 1});
    CHECK(mpilab_scatter_multilane(x, 1, MPI_INT, y, 1, MPI_INT, 0, MPI_COMM_WORLD, small, 1) ==
              MPI_ERR_ARG, "grid of the wrong size accepted");
    mpilab_grid_free(small);
    /* one site only */
    int one[16] = {0};
    errno = 0;
    CHECK(mpilab_grid_create(nprocs, one) == NULL && errno == EINVAL, "one site accepted");
    /* not attached */
    CHECK(mpilab_scatter_multilane_attached(x, 1, MPI_INT, y, 1, MPI_INT, 0, MPI_COMM_WORLD) ==
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
    CHECK(mpilab_multilane_attach(comm, g, 0) == MPI_SUCCESS, "attach");
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
            CHECK(mpilab_tuned_scatter(ts, src, n, MPI_BYTE, b, n, MPI_BYTE, root, comm) ==
                      MPI_SUCCESS, "tuned scatter (%s)", mpilab_multilane_last_error());
            CHECK(memcmp(a, b, (size_t)n) == 0, "tuned scatter via %s differs",
                  mpilab_tuned_choice(ts, (size_t)n));
            unsigned char *ga = calloc((size_t)n * (size_t)nprocs, 1);
            unsigned char *gb = calloc((size_t)n * (size_t)nprocs, 1);
            MPI_Gather(a, n, MPI_BYTE, ga, n, MPI_BYTE, root, comm);
            CHECK(mpilab_tuned_gather(tg, a, n, MPI_BYTE, gb, n, MPI_BYTE, root, comm) ==
                      MPI_SUCCESS, "tuned gather");
            if (rank == root)
                CHECK(memcmp(ga, gb, (size_t)n * (size_t)nprocs) == 0,
                      "tuned gather via %s differs", mpilab_tuned_choice(tg, (size_t)n));
            free(src);
            free(a);
            free(b);
            free(ga);
            free(gb);
        }
    mpilab_tuned_free(ts);
    mpilab_tuned_free(tg);
    CHECK(mpilab_multilane_detach(comm) == MPI_SUCCESS, "detach");
    int x = 0, y = 0;
    CHECK(mpilab_gather_multilane_attached(&x, 1, MPI_INT, &y, 1, MPI_INT, 0, comm) ==
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
    CHECK(g != NULL, "map build: %s", mpilab_multilane_last_error());
    if (g) {
        CHECK(mpilab_grid_nsites(g) == 2, "map: %d sites", mpilab_grid_nsites(g));
        for (int r = 0; r < nprocs; r++)
            CHECK(mpilab_grid_site_of(g, r) == (r % 3 == 1 ? 1 : 0), "map: rank %d in site %d", r,
                  mpilab_grid_site_of(g, r));
    }
    mpilab_grid_free(g);
    /* the operation-table entries' functions: grid from the environment on first use */
    setenv("MPILAB_MULTILANE_SITES", how, 1);
    setenv("MPILAB_MULTILANE_LANES", "99", 1);
    MPI_Comm c2;
    MPI_Comm_dup(MPI_COMM_WORLD, &c2);
    int x[4] = {0}, y[4] = {0};
    CHECK(mpilab_multilane_entry_scatter(x, 1, MPI_INT, y, 1, MPI_INT, 0, c2) == MPI_ERR_ARG,
          "entry with P = 99 accepted");
    MPI_Comm_free(&c2);
    setenv("MPILAB_MULTILANE_LANES", "x", 1);
    MPI_Comm_dup(MPI_COMM_WORLD, &c2);
    CHECK(mpilab_single_lane_entry_gather(x, 1, MPI_INT, y, 1, MPI_INT, 0, c2) == MPI_ERR_ARG &&
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
            CHECK(efns[k](src, n, MPI_BYTE, b, n, MPI_BYTE, root, c2) == MPI_SUCCESS,
                  "entry scatter %d: %s", k, mpilab_multilane_last_error());
            CHECK(memcmp(a, b, (size_t)n) == 0, "entry scatter %d root %d differs", k, root);
            MPI_Gather(a, n, MPI_BYTE, ga, n, MPI_BYTE, root, c2);
            CHECK(gfns[k](a, n, MPI_BYTE, gb, n, MPI_BYTE, root, c2) == MPI_SUCCESS,
                  "entry gather %d", k);
            if (rank == root)
                CHECK(memcmp(ga, gb, (size_t)n * (size_t)nprocs) == 0,
                      "entry gather %d root %d differs", k, root);
            free(src);
            free(a);
            free(b);
            free(ga);
            free(gb);
        }
    const mpilab_grid_t *ag = mpilab_multilane_attached_grid(c2);
    CHECK(ag && mpilab_grid_site_of(ag, 1) == 1 && mpilab_grid_site_of(ag, 0) == 0,
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
        CHECK(b == NULL, "grid_build(%s) succeeded", bad[i]);
        CHECK(strstr(mpilab_multilane_last_error(), expect[i]) != NULL,
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
        CHECK(tb != NULL, "grid_build(testbed) on the testbed: %s", mpilab_multilane_last_error());
        if (tb)
            CHECK(mpilab_grid_site_of(tb, rank) == atoi(dash + 2), "testbed: rank %d (%s) in "
                  "site %d", rank, me, mpilab_grid_site_of(tb, rank));
    } else {
        CHECK(tb == NULL && strstr(mpilab_multilane_last_error(), "not a testbed node"),
              "grid_build(testbed) off the testbed: '%s'", mpilab_multilane_last_error());
    }
    mpilab_grid_free(tb);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    mpilab_test_check_world(1);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nprocs);
    if (nprocs < 2 || nprocs > 16) {
        if (rank == 0)
            fprintf(stderr, "coll_multilane: run with 2..16 ranks\n");
        MPI_Finalize();
        return 2;
    }
    MPI_Datatype contig3, vec, vec_contig;
    coll_types(&contig3, &vec, &vec_contig);
    const tpair_t pairs[] = {
        {"byte", MPI_BYTE, MPI_BYTE, 1, 1},
        {"int->contig3", MPI_INT, contig3, 3, 1},
        {"vector->int", vec, MPI_INT, 1, 2},
        {"int2->vector", vec_contig, vec, 1, 1},
    };
    const size_t np = sizeof pairs / sizeof pairs[0];

    int site[16];
    char name[64];
    /* two contiguous sites of every split: n0 > n1 and n0 < n1 depending on the root */
    for (int k = 1; k < nprocs; k++) {
        for (int r = 0; r < nprocs; r++)
            site[r] = r < k ? 0 : 1;
        snprintf(name, sizeof name, "2 sites %d+%d", k, nprocs - k);
        all_cases(site, name, pairs, k == nprocs / 2 ? np : 2);
    }
    /* interleaved: any rank order */
    for (int r = 0; r < nprocs; r++)
        site[r] = r % 2;
    all_cases(site, "2 sites interleaved", pairs, np);
    if (nprocs >= 3) {
        for (int r = 0; r < nprocs; r++)
            site[r] = (r * 2) % 3; /* 3 sites, interleaved, labels not in rank order */
        all_cases(site, "3 sites interleaved", pairs, np);
        for (int r = 0; r < nprocs; r++)
            site[r] = r == 0 ? 5 : (r < nprocs - 1 ? 9 : 7); /* 1 + (p-2) + 1 */
        all_cases(site, "3 sites uneven", pairs, 2);
    }
    bad_arguments();
    tuned_dispatch();
    build_over_comm();

    MPI_Type_free(&contig3);
    MPI_Type_free(&vec);
    MPI_Type_free(&vec_contig);
    long total = 0, ncases = 0;
    MPI_Allreduce(&failures, &total, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
    MPI_Reduce(&cases, &ncases, 1, MPI_LONG, MPI_MAX, 0, MPI_COMM_WORLD);
    if (rank == 0)
        printf("coll_multilane p=%d: %ld cases, %ld failure(s)\n", nprocs, ncases, total);
    MPI_Finalize();
    return total == 0 ? 0 : 1;
}
