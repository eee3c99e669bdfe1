/* Every MPI test program checks that it runs in the world it was started for: the test
 * launcher (build/mpilab-test-launch NP ...) exports MPILAB_TEST_NP=NP. A launcher of the
 * other MPI implementation starts NP singletons, each of which would pass alone. */
#ifndef MPILAB_TESTS_MPI_WORLD_H
#define MPILAB_TESTS_MPI_WORLD_H

#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

/* Call right after MPI_Init. `required`: fail when MPILAB_TEST_NP is unset (test
 * programs); 0 for tools that also run outside the test launcher. */
static inline void mpilab_test_check_world(int required)
{
    const char *s = getenv("MPILAB_TEST_NP");
    if (!s || !*s) {
        if (!required)
            return;
        fprintf(stderr, "MPILAB_TEST_NP is not set: run this test through mpilab-test-launch NP\n");
        MPI_Abort(MPI_COMM_WORLD, 3);
    }
    char *end = NULL;
    long want = strtol(s, &end, 10);
    int size = 0;
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (*end != '\0' || want != size) {
        fprintf(stderr, "world size %d, but the test was started for %s ranks "
                        "(launcher of another MPI?)\n", size, s);
        MPI_Abort(MPI_COMM_WORLD, 3);
    }
}

#endif
