/* Pair designs for the all-pairs point-to-point measurement: the full matrix or a sampled
 * design of O(p log p) pairs, the groups (nodes, switches, sites) whose boundaries a
 * sampled design crosses, and the rounds of disjoint pairs a design is measured in
 * (docs/pairs.md). python/mpilab/pairs.py's sample_pairs is a mirror of
 * mpilab_pairs_sample (the same generator, checked against it by tests/python/test_pairs.py). */
#ifndef MPILAB_PAIRS_H
#define MPILAB_PAIRS_H

#include <stddef.h>
#include <stdint.h>

#include "mpilab/p2p.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Above this many ranks the sampled design is the default (mpilab.pairs.FULL_MATRIX_LIMIT). */
#define MPILAB_PAIRS_FULL_LIMIT 64

typedef enum mpilab_pairs_design {
    MPILAB_PAIRS_AUTO = 0,    /* full up to MPILAB_PAIRS_FULL_LIMIT ranks, sampled above */
    MPILAB_PAIRS_FULL = 1,    /* every pair i < j */
    MPILAB_PAIRS_SAMPLED = 2  /* mpilab_pairs_sample */
} mpilab_pairs_design_t;

const char *mpilab_pairs_design_name(mpilab_pairs_design_t d);
/* The design used on n ranks for the requested one (AUTO resolved). */
mpilab_pairs_design_t mpilab_pairs_resolve(mpilab_pairs_design_t d, int n);

/* The random matchings of a sampled design on n ranks when none are asked: ceil(log2 n),
 * at least 1. */
int mpilab_pairs_default_matchings(int n);
/* An upper bound on the pairs mpilab_pairs_sample writes for n ranks in ngroups groups
 * with `matchings` matchings (size of its output array). */
size_t mpilab_pairs_sample_max(int n, int ngroups, int matchings);

/* The sampled design on n >= 3 ranks, written to out[] sorted by (i, j), distinct, i < j;
 * returns their number (0 if n < 3 or a group label is negative):
 * - a ring (k, k+1 mod n): every rank in at least two pairs, the design connected;
 * - the pair (0, 2): with the ring's (0, 1), (1, 2) a triangle, an odd cycle, so that
 *   t(i, j) = node[i] + node[j] has one solution;
 * - `matchings` random perfect matchings (Fisher-Yates shuffles of the ranks, paired in
 *   order; seeded splitmix64, so reproducible and mirrored in Python);
 * - with groups (groups[r] the label of rank r, NULL = none): for every two groups two
 *   pairs crossing their boundary (random members), when there are at most n pairs of
 *   groups; with more groups (e.g. nodes of a few ranks), two pairs between each group
 *   and the next in label order (a ring of groups), so the design stays O(n log n). */
size_t mpilab_pairs_sample(int n, const int *groups, int matchings, uint64_t seed, mpilab_pair_t *out);

/* One random perfect matching of n >= 2 ranks (n odd: one rank left out), sorted by (i, j):
 * floor(n / 2) disjoint pairs, one round; the first random matching of the sampled design
 * with the same seed, so a subset of it. Returns the number of pairs (0 if n < 2 or memory
 * ran out). LogGP's pairs in a sampled run (mpilab-bench --loggp-pairs). */
size_t mpilab_pairs_matching(int n, uint64_t seed, mpilab_pair_t *out);

/* Every pair i < j of n ranks, sorted; returns n(n-1)/2. */
size_t mpilab_pairs_full(int n, mpilab_pair_t *out);

/* Rounds of disjoint pairs for pairs[0..npairs) of n ranks (any design): order[] receives
 * the indices of pairs[] round by round, round r being order[round_start[r] ..
 * round_start[r+1]); returns the number of rounds (round_start needs rounds + 1 entries:
 * at most 2 * (largest degree) - 1 + 1, bounded by npairs + 1). A full design is given the
 * circle schedule's n-1 (n odd: n) rounds, any other a greedy colouring in pair order.
 * Returns 0 on bad input (a pair outside 0..n-1, i == j) or when memory runs out. */
size_t mpilab_pairs_rounds(int n, const mpilab_pair_t *pairs, size_t npairs, size_t *order, size_t *round_start);

/* Groups from one name per rank (host names): ranks with equal names share a group,
 * numbered by first appearance. With strip_digits, a name's trailing digits are ignored
 * first ("mlt-s1n3" and "mlt-s1n0" -> "mlt-s1n": the testbed's site). Returns the number of
 * groups (-1 when memory runs out); O(n x groups). */
int mpilab_pairs_groups_from_names(int n, const char *const *names, int strip_digits, int *groups);

#ifdef __cplusplus
}
#endif
#endif
