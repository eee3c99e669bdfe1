/* mpilab's linear and binomial scatter/gather must produce exactly what MPI_Scatter and
 * MPI_Gather produce (byte for byte, including untouched gaps of non-contiguous types),
 * for every root, several counts and several datatype pairs. Run with 1..5 ranks. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "coll_check.h"
#include "mpilab/coll.h"

static void fill(unsigned char *b, size_t n, unsigned seed)
{
    for (size_t i = 0; i < n; i++)
        b[i] = (unsigned char)((i * 131u + seed * 7u + 3u) & 0xff);
}

static void run_case(const tpair_t *tp, int count, int root, const char *impl,
                     mpilab_scatter_fn sc, mpilab_gather_fn ga)
{
    const int scount = count * tp->smul, rcount = count * tp->rmul;
    const size_t p = (size_t)nprocs;
    /* Scatter: root buffer holds p blocks of scount stype. */
    size_t sbytes = span(tp->stype, (size_t)scount * p);
    size_t rbytes = span(tp->rtype, (size_t)rcount);
    unsigned char *sbuf = malloc(sbytes);
    unsigned char *ref = malloc(rbytes), *out = malloc(rbytes);
    fill(sbuf, sbytes, (unsigned)root + 1u);
    memset(ref, 0xab, rbytes);
    memset(out, 0xab, rbytes);
    int rc1 = MPI_Scatter(sbuf, scount, tp->stype, ref, rcount, tp->rtype, root, MPI_COMM_WORLD);
    int rc2 = sc(rank == root ? sbuf : NULL, scount, tp->stype, out, rcount, tp->rtype, root,
                 MPI_COMM_WORLD);
    CHECKF(rc1 == MPI_SUCCESS && rc2 == MPI_SUCCESS, "scatter %s rc %d", impl, rc2);
    CHECKF(memcmp(ref, out, rbytes) == 0, "scatter_%s %s count=%d root=%d p=%d differs", impl,
          tp->name, count, root, nprocs);
    free(sbuf);
    free(ref);
    free(out);

    /* Gather: each rank sends scount stype, root receives p blocks of rcount rtype. */
    size_t gs = span(tp->stype, (size_t)scount);
    size_t gr = span(tp->rtype, (size_t)rcount * p);
    unsigned char *gsend = malloc(gs);
    unsigned char *gref = malloc(gr), *gout = malloc(gr);
    fill(gsend, gs, (unsigned)rank * 5u + 11u);
    memset(gref, 0xcd, gr);
    memset(gout, 0xcd, gr);
    rc1 = MPI_Gather(gsend, scount, tp->stype, gref, rcount, tp->rtype, root, MPI_COMM_WORLD);
    rc2 = ga(gsend, scount, tp->stype, rank == root ? gout : NULL, rcount, tp->rtype, root,
             MPI_COMM_WORLD);
    CHECKF(rc1 == MPI_SUCCESS && rc2 == MPI_SUCCESS, "gather %s rc %d", impl, rc2);
    if (rank == root)
        CHECKF(memcmp(gref, gout, gr) == 0, "gather_%s %s count=%d root=%d p=%d differs", impl,
              tp->name, count, root, nprocs);
    free(gsend);
    free(gref);
    free(gout);
}

/* Every datatype pair, count and root against MPI_Scatter / MPI_Gather. */
static void against_mpi(const char *impl, mpilab_scatter_fn sc, mpilab_gather_fn ga)
{
    coll_world();
    MPI_Datatype contig3, vec, vec_contig;
    coll_types(&contig3, &vec, &vec_contig);

    const tpair_t pairs[] = {
        {"byte", MPI_BYTE, MPI_BYTE, 1, 1},
        {"int", MPI_INT, MPI_INT, 1, 1},
        {"contig3", contig3, contig3, 1, 1},
        {"int->contig3", MPI_INT, contig3, 3, 1},
        {"vector->int", vec, MPI_INT, 1, 2},
        {"int2->vector", vec_contig, vec, 1, 1},
    };
    const int counts[] = {0, 1, 7, 1001, 65537};
    for (size_t t = 0; t < sizeof pairs / sizeof pairs[0]; t++)
        for (size_t c = 0; c < sizeof counts / sizeof counts[0]; c++)
            for (int root = 0; root < nprocs; root++) {
                /* the largest count only for two roots, to keep the test short */
                if (counts[c] > 10000 && root > 1)
                    continue;
                run_case(&pairs[t], counts[c], root, impl, sc, ga);
            }
    MPI_Type_free(&contig3);
    MPI_Type_free(&vec);
    MPI_Type_free(&vec_contig);
}

MPILAB_TEST(linear_matches_mpi)
{
    against_mpi("linear", mpilab_scatter_linear, mpilab_gather_linear);
}

MPILAB_TEST(binomial_matches_mpi)
{
    against_mpi("binomial", mpilab_scatter_binomial, mpilab_gather_binomial);
}

/* Invalid arguments are reported, not crashed on. */
MPILAB_TEST(invalid_arguments_refused)
{
    coll_world();
    int x = 0;
    CHECKF(mpilab_scatter_linear(&x, 1, MPI_INT, &x, 1, MPI_INT, nprocs, MPI_COMM_WORLD) ==
              MPI_ERR_ROOT, "bad root accepted");
    CHECKF(mpilab_gather_binomial(&x, 1, MPI_INT, &x, 1, MPI_INT, -1, MPI_COMM_WORLD) ==
              MPI_ERR_ROOT, "negative root accepted");
    CHECKF(mpilab_scatter_binomial(&x, 1, MPI_INT, MPI_IN_PLACE, 1, MPI_INT, 0, MPI_COMM_WORLD) ==
              MPI_ERR_BUFFER, "MPI_IN_PLACE accepted");
    CHECKF(mpilab_gather_linear(MPI_IN_PLACE, 1, MPI_INT, &x, 1, MPI_INT, 0, MPI_COMM_WORLD) ==
              MPI_ERR_BUFFER, "MPI_IN_PLACE accepted");
}

MPILAB_TEST_MAIN()
