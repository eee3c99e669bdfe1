/* Point-to-point round trips between all pairs of a communicator, and the schedule that
 * runs non-overlapping pairs in parallel. */
#ifndef MPILAB_P2P_H
#define MPILAB_P2P_H

#include <mpi.h>
#include "mpilab/mpi_check.h"
#include <stddef.h>

#include "mpilab/stats.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct mpilab_pair {
    int i, j; /* i < j */
} mpilab_pair_t;

/* Round-robin tournament over n >= 2 ranks: n-1 rounds for even n, n rounds for odd n;
 * every pair i<j appears exactly once, no rank twice within a round.
 * Writes n*(n-1)/2 pairs to pairs[] grouped by round, round r occupying
 * pairs[round_start[r] .. round_start[r+1]); round_start has (rounds + 1) entries.
 * Returns the number of rounds, or 0 if n < 2. Sizes: pairs >= n(n-1)/2, round_start >= n+1. */
size_t mpilab_p2p_schedule(int n, mpilab_pair_t *pairs, size_t *round_start);

typedef enum mpilab_p2p_mode {
    MPILAB_P2P_PARALLEL = 0,   /* the rounds of mpilab_p2p_schedule, pairs of a round at once */
    MPILAB_P2P_SEQUENTIAL = 1  /* one pair at a time, the other ranks wait in a barrier */
} mpilab_p2p_mode_t;

/* Result for one pair: samples are round-trip times measured on rank i. */
typedef struct mpilab_p2p_result {
    mpilab_pair_t pair;
    size_t bytes, bytes_back;
    mpilab_stats_t stats;
    double *samples;        /* [stats.reps] */
    unsigned char *valid;   /* [stats.reps], all 1 */
} mpilab_p2p_result_t;

/* Collective over comm: round trips i -> j (bytes) and j -> i (bytes_back) for all C(n,2)
 * pairs, each with its own repetition control under prec. results must hold n(n-1)/2
 * entries, ordered as (0,1),(0,2)...(0,n-1),(1,2)...; filled on every rank.
 * Free each with mpilab_p2p_result_free. Returns 0 or an MPI error code. */
int mpilab_p2p_measure(MPI_Comm comm, size_t bytes, size_t bytes_back, mpilab_p2p_mode_t mode,
                       const mpilab_precision_t *prec, mpilab_p2p_result_t *results);
/* The same with `warmup` untimed round trips per pair before its repetitions (as the engine's
 * warm-up: connection set-up, first touch of the buffers and cold caches stay out of the
 * samples). mpilab_p2p_measure uses MPILAB_P2P_WARMUP. */
#define MPILAB_P2P_WARMUP 2
/* the parallel schedule reports its rounds on rank 0's stderr from this many ranks on */
#define MPILAB_P2P_PROGRESS_RANKS 16
int mpilab_p2p_measure_warm(MPI_Comm comm, size_t bytes, size_t bytes_back, mpilab_p2p_mode_t mode,
                       const mpilab_precision_t *prec, size_t warmup, mpilab_p2p_result_t *results);
void mpilab_p2p_result_free(mpilab_p2p_result_t *r);

/* Any set of pairs (a pair design, include/mpilab/pairs.h) measured in rounds of disjoint
 * pairs: round r is pairs[order[round_start[r]]] .. pairs[order[round_start[r+1] - 1]]
 * (mpilab_pairs_rounds). */
typedef struct mpilab_p2p_plan {
    const mpilab_pair_t *pairs;
    size_t npairs;
    const size_t *order;       /* [npairs] */
    const size_t *round_start; /* [rounds + 1] */
    size_t rounds;
    const char *label;         /* progress lines: "all pairs", "sampled pairs" */
} mpilab_p2p_plan_t;

/* Called on rank 0 with each pair's result (index into plan->pairs, the round it was
 * measured in) as soon as its round is over; r and its samples are valid during the call
 * only. Every pair is delivered exactly once, also when its measurement failed (reps 0). */
typedef void (*mpilab_p2p_sink_t)(void *ctx, size_t index, size_t round, const mpilab_p2p_result_t *r);

/* Collective over comm: the round trips of every pair of plan, each with its own repetition
 * control under prec after `warmup` untimed ones. Parallel mode: the rounds, the pairs of
 * a round at once, a barrier after each; rank 0 reports its progress on stderr from
 * MPILAB_P2P_PROGRESS_RANKS ranks on unless quiet. Sequential: one pair at a time in
 * plan->pairs order, a barrier after each. Results reach rank 0 only (sink), pair by pair
 * at the end of their round: no rank holds more than one round's samples. Returns 0 or an
 * MPI error code. */
int mpilab_p2p_measure_plan(MPI_Comm comm, size_t bytes, size_t bytes_back, mpilab_p2p_mode_t mode,
                            const mpilab_precision_t *prec, size_t warmup, const mpilab_p2p_plan_t *plan,
                            int quiet, mpilab_p2p_sink_t sink, void *ctx);

#ifdef __cplusplus
}
#endif
#endif
