/* Shared by the MPI tests of mpilab's scatter / gather implementations (on the test kit,
 * kit.h): the world (rank, nprocs, set by coll_world() at the start of each case), the
 * datatype pairs and the bytes a buffer of n elements spans. */
#ifndef COLL_CHECK_H
#define COLL_CHECK_H
#include <mpi.h>
#include <stdio.h>

#define MPILAB_KIT_MPI
#include "kit.h"

static int rank, nprocs;

static inline void coll_world(void)
{
    rank = kit_rank;
    nprocs = kit_size;
}

typedef struct {
    const char *name;
    MPI_Datatype stype, rtype;
    int smul, rmul; /* elements of stype / rtype per "count" unit */
} tpair_t;

/* Bytes spanned by n elements of t, plus slack so untouched gaps are compared too. */
static inline size_t span(MPI_Datatype t, size_t n)
{
    MPI_Aint lb, ext, tlb, text;
    MPI_Type_get_extent(t, &lb, &ext);
    MPI_Type_get_true_extent(t, &tlb, &text);
    if (n == 0)
        return 1;
    return (size_t)ext * (n - 1) + (size_t)text + (size_t)tlb + 16;
}
/* The derived types of the datatype pairs: 3 contiguous ints, 2 ints with a one-int gap
 * (resized to 4 ints: a non-contiguous type with an untouched hole) and 2 contiguous ints
 * (the same signature as the gapped one).  Free them with MPI_Type_free. */
static inline void coll_types(MPI_Datatype *contig3, MPI_Datatype *vec, MPI_Datatype *vec_contig)
{
    MPI_Datatype v0;
    MPI_Type_contiguous(3, MPI_INT, contig3);
    MPI_Type_commit(contig3);
    MPI_Type_vector(2, 1, 2, MPI_INT, &v0);
    MPI_Type_create_resized(v0, 0, (MPI_Aint)(4 * sizeof(int)), vec);
    MPI_Type_commit(vec);
    MPI_Type_free(&v0);
    MPI_Type_contiguous(2, MPI_INT, vec_contig);
    MPI_Type_commit(vec_contig);
}
#endif
