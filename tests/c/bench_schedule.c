/* The all-pairs round-robin schedule: every pair once, no rank twice in a round,
 * n-1 rounds for even n and n rounds for odd n. */
#include <stdlib.h>
#include <string.h>

#include "kit.h"
#include "mpilab/p2p.h"

MPILAB_TEST(one_rank_has_no_rounds)
{
    mpilab_pair_t dummy[1];
    size_t ds[2];
    CHECK(mpilab_p2p_schedule(1, dummy, ds) == 0);
}

MPILAB_TEST(every_pair_once_no_rank_twice_in_a_round)
{
    for (int n = 2; n <= 17; n++) {
        size_t np = (size_t)n * (size_t)(n - 1) / 2;
        mpilab_pair_t *pairs = calloc(np, sizeof *pairs);
        size_t *starts = calloc((size_t)n + 1, sizeof *starts);
        int *seen = calloc((size_t)n * (size_t)n, sizeof *seen);
        size_t rounds = mpilab_p2p_schedule(n, pairs, starts);
        CHECK(rounds == (size_t)(n % 2 == 0 ? n - 1 : n));
        CHECK(starts[0] == 0 && starts[rounds] == np);
        for (size_t r = 0; r < rounds; r++) {
            int *busy = calloc((size_t)n, sizeof *busy);
            CHECK(starts[r] <= starts[r + 1]);
            /* a full round: n/2 pairs (even n) or (n-1)/2 (odd n) */
            CHECK(starts[r + 1] - starts[r] == (size_t)(n / 2));
            for (size_t k = starts[r]; k < starts[r + 1]; k++) {
                int i = pairs[k].i, j = pairs[k].j;
                CHECK(0 <= i && i < j && j < n);
                if (!(0 <= i && i < j && j < n))
                    continue;
                CHECK(!busy[i] && !busy[j]);
                busy[i] = busy[j] = 1;
                seen[i * n + j]++;
            }
            free(busy);
        }
        for (int i = 0; i < n; i++)
            for (int j = i + 1; j < n; j++)
                CHECKF(seen[i * n + j] == 1, "n=%d pair (%d,%d) seen %d times", n, i, j, seen[i * n + j]);
        free(pairs);
        free(starts);
        free(seen);
    }
}

MPILAB_TEST_MAIN()
