/* MPICH's algorithm names from its CVAR descriptions (mpilab_forced_mpich_names): the texts
 * are MPICH 4.0.2's own, as MPI_T_cvar_get_info returns them (lines joined without a
 * separator); the expected lists are the lines of its source (coll_algorithms.txt). */
#include <string.h>

#include "kit.h"
#include "mpilab/forced.h"

#define AUTO "auto - Internal algorithm selection (can be overridden with MPIR_CVAR_COLL_SELECTION_TUNING_JSON_FILE)"

static int names_are(const char *desc, const char *const *want, int n)
{
    char names[32][64];
    int got = mpilab_forced_mpich_names(desc, names, 32);
    if (got != n)
        return 0;
    for (int k = 0; k < n; k++)
        if (strcmp(names[k], want[k]) != 0)
            return 0;
    return 1;
}

MPILAB_TEST(bcast_names_glued_to_descriptions)
{
    const char *d = "Variable to select bcast algorithm" AUTO
                    "binomial                                - Force Binomial Tree"
                    "nb                                      - Force nonblocking algorithm"
                    "smp                                     - Force smp algorithm"
                    "scatter_recursive_doubling_allgather    - Force Scatter Recursive-Doubling Allgather"
                    "scatter_ring_allgather                  - Force Scatter Ring";
    const char *want[] = {"auto", "binomial", "nb", "smp", "scatter_recursive_doubling_allgather",
                          "scatter_ring_allgather"};
    CHECK(names_are(d, want, 6));
}

MPILAB_TEST(short_lists)
{
    const char *g = "Variable to select gather algorithm" AUTO "binomial - Force binomial algorithm"
                    "nb       - Force nonblocking algorithm";
    const char *wg[] = {"auto", "binomial", "nb"};
    CHECK(names_are(g, wg, 3));
    const char *b = "Variable to select barrier algorithm" AUTO "nb            - Force nonblocking algorithm"
                    "smp           - Force smp algorithmdissemination - Force dissemination algorithm";
    const char *wb[] = {"auto", "nb", "smp", "dissemination"};
    CHECK(names_are(b, wb, 4));
}

MPILAB_TEST(other_text_is_refused)
{
    char names[4][64];
    CHECK(mpilab_forced_mpich_names("Maximum message size for SMP-aware broadcast", names, 4) == -1);
    CHECK(mpilab_forced_mpich_names("x auto - y", names, 4) == 1);
}

MPILAB_TEST_MAIN()
