/* Pair designs (include/mpilab/pairs.h). */
#include "mpilab/pairs.h"

#include <stdlib.h>
#include <string.h>

const char *mpilab_pairs_design_name(mpilab_pairs_design_t d)
{
    return d == MPILAB_PAIRS_FULL ? "full" : d == MPILAB_PAIRS_SAMPLED ? "sampled" : "auto";
}

mpilab_pairs_design_t mpilab_pairs_resolve(mpilab_pairs_design_t d, int n)
{
    if (d != MPILAB_PAIRS_AUTO)
        return d;
    return n > MPILAB_PAIRS_FULL_LIMIT ? MPILAB_PAIRS_SAMPLED : MPILAB_PAIRS_FULL;
}

int mpilab_pairs_default_matchings(int n)
{
    int k = 0;
    while (k < 31 && (1L << k) < (long)n)
        k++;
    return k < 1 ? 1 : k;
}

/* splitmix64 (Steele, Lea, Flood 2014): the generator python/mpilab/pairs.py mirrors */
static uint64_t next_u64(uint64_t *s)
{
    uint64_t z = (*s += 0x9E3779B97F4A7C15ULL);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
}

/* a value in 0..m-1 (m >= 1); the modulo bias is below 2^-32 for m < 2^32 and the same
 * in the mirror */
static size_t below(uint64_t *s, size_t m)
{
    return (size_t)(next_u64(s) % (uint64_t)m);
}

static size_t ngroups_of(int n, const int *groups)
{
    if (!groups)
        return 0;
    int mx = -1;
    for (int r = 0; r < n; r++)
        mx = groups[r] > mx ? groups[r] : mx;
    return (size_t)mx + 1;
}

size_t mpilab_pairs_sample_max(int n, int ngroups, int matchings)
{
    /* crossing pairs: 2 per pair of groups when those are at most n, else 2 per group */
    size_t g = ngroups > 0 ? (size_t)ngroups : 0, cross = 2 * (g > (size_t)n ? g : (size_t)n);
    return (size_t)n + 1 + (size_t)matchings * (size_t)(n / 2) + cross;
}

static int cmp_pair(const void *a, const void *b)
{
    const mpilab_pair_t *x = a, *y = b;
    if (x->i != y->i)
        return x->i < y->i ? -1 : 1;
    return (x->j > y->j) - (x->j < y->j);
}

static void put(mpilab_pair_t *out, size_t *k, int a, int b)
{
    out[*k].i = a < b ? a : b;
    out[*k].j = a < b ? b : a;
    (*k)++;
}

/* The crossing pairs between groups: labels 0..g-1 that occur, in label order (the
 * members of each in rank order). */
static int cross_groups(int n, const int *groups, uint64_t *s, mpilab_pair_t *out, size_t *k)
{
    size_t g = ngroups_of(n, groups);
    size_t *count = calloc(g + 1, sizeof *count), *start = calloc(g + 2, sizeof *start);
    int *members = malloc((size_t)n * sizeof *members), *labels = malloc((g + 1) * sizeof *labels);
    int rc = count && start && members && labels ? 0 : -1;
    size_t nl = 0;
    if (rc == 0) {
        for (int r = 0; r < n; r++)
            count[groups[r]]++;
        for (size_t x = 0; x < g; x++) {
            start[x + 1] = start[x] + count[x];
            if (count[x])
                labels[nl++] = (int)x;
        }
        memset(count, 0, (g + 1) * sizeof *count);
        for (int r = 0; r < n; r++)
            members[start[groups[r]] + count[groups[r]]++] = r;
        int all = nl * (nl - (nl > 0)) / 2 <= (size_t)n;
        for (size_t a = 0; a < nl && nl > 1; a++)
            for (size_t b = a + 1; b < (all ? nl : a + 2); b++) {
                size_t ga = (size_t)labels[a], gb = (size_t)labels[b % nl];
                for (int t = 0; t < 2; t++) {
                    int x = members[start[ga] + below(s, count[ga])];
                    int y = members[start[gb] + below(s, count[gb])];
                    put(out, k, x, y);
                }
            }
    }
    free(count);
    free(start);
    free(members);
    free(labels);
    return rc;
}

/* One random perfect matching (a Fisher-Yates shuffle of the ranks, paired in order) into
 * out[*k ..]; perm: n ints of scratch. */
static void random_matching(int n, uint64_t *s, int *perm, mpilab_pair_t *out, size_t *k)
{
    for (int r = 0; r < n; r++)
        perm[r] = r;
    for (int a = n - 1; a > 0; a--) {
        int b = (int)below(s, (size_t)a + 1), t = perm[a];
        perm[a] = perm[b];
        perm[b] = t;
    }
    for (int a = 0; a + 1 < n; a += 2)
        put(out, k, perm[a], perm[a + 1]);
}

size_t mpilab_pairs_sample(int n, const int *groups, int matchings, uint64_t seed, mpilab_pair_t *out)
{
    if (n < 3 || matchings < 0)
        return 0;
    for (int r = 0; groups && r < n; r++)
        if (groups[r] < 0)
            return 0;
    uint64_t s = seed;
    size_t k = 0;
    for (int r = 0; r < n; r++)
        put(out, &k, r, (r + 1) % n);
    put(out, &k, 0, 2);
    int *perm = malloc((size_t)n * sizeof *perm);
    if (!perm)
        return 0;
    for (int m = 0; m < matchings; m++)
        random_matching(n, &s, perm, out, &k);
    free(perm);
    if (groups && cross_groups(n, groups, &s, out, &k) != 0)
        return 0;
    /* sorted, duplicates and (never produced) i == j pairs dropped */
    qsort(out, k, sizeof *out, cmp_pair);
    size_t w = 0;
    for (size_t r = 0; r < k; r++)
        if (out[r].i != out[r].j && (w == 0 || cmp_pair(&out[w - 1], &out[r]) != 0))
            out[w++] = out[r];
    return w;
}

size_t mpilab_pairs_matching(int n, uint64_t seed, mpilab_pair_t *out)
{
    if (n < 2)
        return 0;
    int *perm = malloc((size_t)n * sizeof *perm);
    if (!perm)
        return 0;
    uint64_t s = seed;
    size_t k = 0;
    random_matching(n, &s, perm, out, &k);
    free(perm);
    qsort(out, k, sizeof *out, cmp_pair);
    return k;
}

size_t mpilab_pairs_full(int n, mpilab_pair_t *out)
{
    size_t k = 0;
    for (int i = 0; i < n; i++)
        for (int j = i + 1; j < n; j++)
            put(out, &k, i, j);
    return k;
}

/* Index of (i, j), i < j, in the sorted full design. */
static size_t full_index(int n, int i, int j)
{
    return (size_t)i * (size_t)(2 * n - i - 1) / 2 + (size_t)(j - i - 1);
}

static size_t circle_rounds(int n, size_t npairs, size_t *order, size_t *round_start)
{
    mpilab_pair_t *sched = malloc(npairs * sizeof *sched);
    size_t *st = malloc(((size_t)n + 2) * sizeof *st);
    size_t rounds = 0;
    if (sched && st) {
        rounds = mpilab_p2p_schedule(n, sched, st);
        for (size_t r = 0; r <= rounds; r++)
            round_start[r] = st[r];
        for (size_t k = 0; k < npairs; k++)
            order[k] = full_index(n, sched[k].i, sched[k].j);
    }
    free(sched);
    free(st);
    return rounds;
}

size_t mpilab_pairs_rounds(int n, const mpilab_pair_t *pairs, size_t npairs, size_t *order, size_t *round_start)
{
    for (size_t k = 0; k < npairs; k++)
        if (pairs[k].i < 0 || pairs[k].j >= n || pairs[k].i >= pairs[k].j)
            return 0;
    size_t full = n >= 2 ? (size_t)n * (size_t)(n - 1) / 2 : 0;
    int is_full = npairs == full && npairs > 0;
    for (size_t k = 0; is_full && k < npairs; k++)
        is_full = full_index(n, pairs[k].i, pairs[k].j) == k;
    if (is_full)
        return circle_rounds(n, npairs, order, round_start);
    /* greedy edge colouring: each pair in the first round where neither rank is busy yet
     * (a bitmap of busy ranks per round) */
    size_t *round_of = malloc((npairs + 1) * sizeof *round_of), cap = 8, rounds = 0;
    unsigned char *busy = calloc(cap * (size_t)n, 1);
    size_t *count = NULL;
    int ok = round_of && busy;
    for (size_t k = 0; ok && k < npairs; k++) {
        size_t r = 0;
        while (r < rounds && (busy[r * (size_t)n + (size_t)pairs[k].i] || busy[r * (size_t)n + (size_t)pairs[k].j]))
            r++;
        if (r == cap) {
            unsigned char *nb = realloc(busy, 2 * cap * (size_t)n);
            ok = nb != NULL;
            if (!ok)
                break;
            memset(nb + cap * (size_t)n, 0, cap * (size_t)n);
            busy = nb;
            cap *= 2;
        }
        rounds += r == rounds;
        busy[r * (size_t)n + (size_t)pairs[k].i] = busy[r * (size_t)n + (size_t)pairs[k].j] = 1;
        round_of[k] = r;
    }
    count = ok ? calloc(rounds + 1, sizeof *count) : NULL;
    if (count) {
        for (size_t k = 0; k < npairs; k++)
            count[round_of[k]]++;
        round_start[0] = 0;
        for (size_t r = 0; r < rounds; r++)
            round_start[r + 1] = round_start[r] + count[r];
        memset(count, 0, (rounds + 1) * sizeof *count);
        for (size_t k = 0; k < npairs; k++)
            order[round_start[round_of[k]] + count[round_of[k]]++] = k;
    }
    free(round_of);
    free(busy);
    int done = count != NULL;
    free(count);
    return done ? rounds : 0;
}

int mpilab_pairs_groups_from_names(int n, const char *const *names, int strip_digits, int *groups)
{
    /* one representative (its first rank) per group: O(n x groups), not O(n^2) */
    int *first = malloc((size_t)(n > 0 ? n : 1) * sizeof *first);
    size_t *len = malloc((size_t)(n > 0 ? n : 1) * sizeof *len);
    if (!first || !len) {
        free(first);
        free(len);
        return -1;
    }
    int ng = 0;
    for (int r = 0; r < n; r++) {
        size_t lr = strlen(names[r]);
        while (strip_digits && lr > 0 && names[r][lr - 1] >= '0' && names[r][lr - 1] <= '9')
            lr--;
        len[r] = lr;
        groups[r] = -1;
        for (int g = 0; g < ng && groups[r] < 0; g++)
            if (len[first[g]] == lr && strncmp(names[first[g]], names[r], lr) == 0)
                groups[r] = g;
        if (groups[r] < 0) {
            first[ng] = r;
            groups[r] = ng++;
        }
    }
    free(first);
    free(len);
    return ng;
}
