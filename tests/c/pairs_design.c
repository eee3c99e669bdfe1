/* The pair designs of include/mpilab/pairs.h: the sampled design's properties at several
 * sizes (every rank in at least two pairs, connected with an odd cycle, O(p log p) pairs,
 * every group boundary crossed, reproducible) and the rounds of disjoint pairs.
 * With arguments "print P SEED [BLOCK]" the case print_design writes the design of P ranks
 * (groups: blocks of BLOCK ranks) as "i j" lines, for tests/python/test_pairs.py's
 * comparison with the Python mirror. */
#include <stdlib.h>
#include <string.h>

#include "kit.h"
#include "mpilab/pairs.h"

/* union-find root */
static int root_of(int *up, int x)
{
    while (up[x] != x)
        x = up[x] = up[up[x]];
    return x;
}

/* 1 if the design on n ranks is connected and not bipartite (2-colouring fails) */
static int connected_odd(int n, const mpilab_pair_t *p, size_t np)
{
    int *up = malloc((size_t)n * sizeof *up), *col = malloc((size_t)n * sizeof *col);
    for (int r = 0; r < n; r++) {
        up[r] = r;
        col[r] = -1;
    }
    for (size_t k = 0; k < np; k++)
        up[root_of(up, p[k].i)] = root_of(up, p[k].j);
    int conn = 1;
    for (int r = 1; r < n; r++)
        conn &= root_of(up, r) == root_of(up, 0);
    /* bipartite check by repeated relaxation (the design is small) */
    col[0] = 0;
    int changed = 1, odd = 0;
    while (changed && !odd) {
        changed = 0;
        for (size_t k = 0; k < np; k++) {
            int a = p[k].i, b = p[k].j;
            if (col[a] >= 0 && col[b] < 0) {
                col[b] = 1 - col[a];
                changed = 1;
            } else if (col[b] >= 0 && col[a] < 0) {
                col[a] = 1 - col[b];
                changed = 1;
            } else if (col[a] >= 0 && col[a] == col[b]) {
                odd = 1;
            }
        }
    }
    free(up);
    free(col);
    return conn && odd;
}

static void check_design(int n, int block, uint64_t seed)
{
    int *groups = NULL, ng = 0;
    if (block > 0) {
        groups = malloc((size_t)n * sizeof *groups);
        for (int r = 0; r < n; r++)
            groups[r] = r / block;
        ng = (n + block - 1) / block;
    }
    int m = mpilab_pairs_default_matchings(n);
    size_t cap = mpilab_pairs_sample_max(n, ng, m);
    mpilab_pair_t *p = calloc(cap, sizeof *p);
    size_t np = mpilab_pairs_sample(n, groups, m, seed, p);
    CHECK(np > 0 && np <= cap);
    /* O(p log p): at most p + 1 + m p/2 + the crossings; far below the full matrix above 64 */
    CHECK(np <= (size_t)n + 1 + (size_t)m * (size_t)(n / 2) + 2 * (size_t)(ng > n ? ng : n));
    if (n > 64)
        CHECK(np * 4 < (size_t)n * (size_t)(n - 1) / 2);
    int *deg = calloc((size_t)n, sizeof *deg);
    for (size_t k = 0; k < np; k++) {
        CHECK(p[k].i >= 0 && p[k].i < p[k].j && p[k].j < n);
        if (k)
            CHECK(p[k - 1].i < p[k].i || (p[k - 1].i == p[k].i && p[k - 1].j < p[k].j));
        deg[p[k].i]++;
        deg[p[k].j]++;
    }
    for (int r = 0; r < n; r++)
        CHECK(deg[r] >= 2);
    CHECK(connected_odd(n, p, np));
    if (groups && ng * (ng - 1) / 2 <= n) /* every boundary crossed */
        for (int a = 0; a < ng; a++)
            for (int b = a + 1; b < ng; b++) {
                int crossed = 0;
                for (size_t k = 0; k < np; k++)
                    crossed += (groups[p[k].i] == a && groups[p[k].j] == b) || (groups[p[k].i] == b && groups[p[k].j] == a);
                CHECK(crossed >= 1);
            }
    /* the same seed gives the same design */
    mpilab_pair_t *q = calloc(cap, sizeof *q);
    CHECK(mpilab_pairs_sample(n, groups, m, seed, q) == np && memcmp(p, q, np * sizeof *p) == 0);
    /* rounds: every pair once, no rank twice in a round, at most 2 * max degree - 1 */
    size_t *order = calloc(np, sizeof *order), *start = calloc(np + 2, sizeof *start);
    size_t rounds = mpilab_pairs_rounds(n, p, np, order, start);
    int maxdeg = 0;
    for (int r = 0; r < n; r++)
        maxdeg = deg[r] > maxdeg ? deg[r] : maxdeg;
    CHECK(rounds >= (size_t)maxdeg && rounds <= (size_t)(2 * maxdeg - 1));
    CHECK(start[0] == 0 && start[rounds] == np);
    unsigned char *seen = calloc(np, 1);
    for (size_t r = 0; r < rounds; r++) {
        unsigned char *busy = calloc((size_t)n, 1);
        for (size_t k = start[r]; k < start[r + 1]; k++) {
            const mpilab_pair_t *pq = &p[order[k]];
            CHECK(!busy[pq->i] && !busy[pq->j] && !seen[order[k]]);
            busy[pq->i] = busy[pq->j] = 1;
            seen[order[k]] = 1;
        }
        free(busy);
    }
    for (size_t k = 0; k < np; k++)
        CHECK(seen[k]);
    free(seen);
    free(order);
    free(start);
    free(q);
    free(deg);
    free(p);
    free(groups);
}

MPILAB_TEST(sampled_design_properties_at_several_sizes)
{
    static const int sizes[] = {3, 4, 5, 8, 16, 63, 64, 65, 100, 256, 1024};
    for (size_t s = 0; s < sizeof sizes / sizeof *sizes; s++) {
        check_design(sizes[s], 0, 0);
        check_design(sizes[s], 0, 7);
        if (sizes[s] >= 8)
            check_design(sizes[s], sizes[s] / 4, 1); /* 4 groups (switches) */
        if (sizes[s] >= 16)
            check_design(sizes[s], 2, 3); /* nodes of 2 ranks: a ring of groups above sqrt(2p) */
    }
}

MPILAB_TEST(full_design_gets_the_circle_rounds)
{
    for (int n = 2; n <= 9; n++) {
        size_t np = (size_t)n * (size_t)(n - 1) / 2;
        mpilab_pair_t *p = calloc(np, sizeof *p);
        size_t *order = calloc(np, sizeof *order), *start = calloc(np + 2, sizeof *start);
        CHECK(mpilab_pairs_full(n, p) == np);
        CHECK(mpilab_pairs_rounds(n, p, np, order, start) == (size_t)(n % 2 ? n : n - 1));
        free(p);
        free(order);
        free(start);
    }
}

/* One random perfect matching (LogGP's pairs at scale): floor(n/2) pairs, sorted, no rank
 * twice, one round; the first matching of the sampled design with the same seed, so a subset
 * of it; another seed, another matching; n < 2 refused. */
MPILAB_TEST(matching_is_one_round_inside_the_design)
{
    for (int n = 2; n <= 257; n += (n < 12 ? 1 : 61)) {
        for (uint64_t seed = 0; seed < 3; seed++) {
            int m = mpilab_pairs_default_matchings(n);
            mpilab_pair_t *mp = calloc((size_t)n, sizeof *mp);
            mpilab_pair_t *d = calloc(mpilab_pairs_sample_max(n, 0, m) + 1, sizeof *d);
            size_t *order = calloc((size_t)n, sizeof *order), *start = calloc((size_t)n + 1, sizeof *start);
            int *seen = calloc((size_t)n, sizeof *seen);
            CHECK(mp && d && order && start && seen);
            size_t k = mpilab_pairs_matching(n, seed, mp);
            CHECK(k == (size_t)n / 2);
            for (size_t a = 0; a < k; a++) {
                CHECK(0 <= mp[a].i && mp[a].i < mp[a].j && mp[a].j < n);
                CHECK(a == 0 || mp[a - 1].i < mp[a].i || (mp[a - 1].i == mp[a].i && mp[a - 1].j < mp[a].j));
                seen[mp[a].i]++;
                seen[mp[a].j]++;
            }
            int twice = 0;
            for (int r = 0; r < n; r++)
                twice += seen[r] > 1;
            CHECK(twice == 0);
            CHECK(mpilab_pairs_rounds(n, mp, k, order, start) == 1 && start[1] == k);
            size_t nd = n >= 3 ? mpilab_pairs_sample(n, NULL, m, seed, d) : 0;
            for (size_t a = 0; n >= 3 && a < k; a++) {
                int found = 0;
                for (size_t b = 0; b < nd && !found; b++)
                    found = d[b].i == mp[a].i && d[b].j == mp[a].j;
                CHECK(found);
            }
            free(mp);
            free(d);
            free(order);
            free(start);
            free(seen);
        }
    }
    mpilab_pair_t a[64], b[64];
    CHECK(mpilab_pairs_matching(64, 1, a) == 32 && mpilab_pairs_matching(64, 2, b) == 32);
    CHECK(memcmp(a, b, sizeof a / 2) != 0);
    CHECK(mpilab_pairs_matching(1, 0, a) == 0 && mpilab_pairs_matching(0, 0, a) == 0);
}

MPILAB_TEST(bad_input_is_refused)
{
    mpilab_pair_t p[8];
    size_t order[8], start[9];
    int neg[3] = {0, -1, 0};
    CHECK(mpilab_pairs_sample(2, NULL, 1, 0, p) == 0);
    CHECK(mpilab_pairs_sample(3, neg, 1, 0, p) == 0);
    p[0].i = 1;
    p[0].j = 1;
    CHECK(mpilab_pairs_rounds(3, p, 1, order, start) == 0);
    p[0].j = 5;
    CHECK(mpilab_pairs_rounds(3, p, 1, order, start) == 0);
    CHECK(mpilab_pairs_resolve(MPILAB_PAIRS_AUTO, 64) == MPILAB_PAIRS_FULL);
    CHECK(mpilab_pairs_resolve(MPILAB_PAIRS_AUTO, 65) == MPILAB_PAIRS_SAMPLED);
    CHECK(mpilab_pairs_resolve(MPILAB_PAIRS_FULL, 1024) == MPILAB_PAIRS_FULL);
}

MPILAB_TEST(groups_from_host_names)
{
    const char *names[] = {"mlt-s0n0", "mlt-s0n1", "mlt-s1n0", "mlt-s1n1", "mlt-s0n0"};
    int g[5];
    CHECK(mpilab_pairs_groups_from_names(5, names, 0, g) == 4);
    CHECK(g[0] == 0 && g[4] == 0 && g[3] == 3);
    CHECK(mpilab_pairs_groups_from_names(5, names, 1, g) == 2);
    CHECK(g[0] == 0 && g[1] == 0 && g[2] == 1 && g[3] == 1 && g[4] == 0);
}

/* helper for the Python mirror's test: prints only when given "print P SEED [BLOCK]" */
MPILAB_TEST(print_design)
{
    if (kit_nargs < 3 || strcmp(kit_args[0], "print") != 0)
        return;
    int n = atoi(kit_args[1]), block = kit_nargs > 3 ? atoi(kit_args[3]) : 0;
    uint64_t seed = strtoull(kit_args[2], NULL, 10);
    int *groups = NULL;
    if (block > 0) {
        groups = malloc((size_t)n * sizeof *groups);
        for (int r = 0; r < n; r++)
            groups[r] = r / block;
    }
    int m = mpilab_pairs_default_matchings(n);
    size_t cap = mpilab_pairs_sample_max(n, block > 0 ? (n + block - 1) / block : 0, m);
    mpilab_pair_t *p = calloc(cap + 1, sizeof *p);
    size_t np = mpilab_pairs_sample(n, groups, m, seed, p);
    CHECK(np > 0);
    for (size_t k = 0; k < np; k++)
        printf("pair %d %d\n", p[k].i, p[k].j);
    free(p);
    free(groups);
}

MPILAB_TEST_MAIN()
