/* Shared by the MPI tests of mpilab's scatter / gather implementations: a failure counter
 * and CHECK naming the rank, the datatype pairs and the bytes a buffer of n elements spans. */
#ifndef COLL_CHECK_H
#define COLL_CHECK_H
#include <mpi.h>
#include <stdio.h>

static int rank, nprocs;
static long failures;

#define CHECK(cond, ...)                                                         \
    do {                                                                         \
        if (!(cond)) {                                                           \
            failures++;                                                          \
            if (failures < 20) {                                                 \
                fprintf(stderr, "rank %d: %s:%d: ", rank, __FILE__, __LINE__);   \
                fprintf(stderr, __VA_ARGS__);                                    \
                fputc('\n', stderr);                                             \
            }                                                                    \
        }                                                                        \
    } while (0)

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
#endif
