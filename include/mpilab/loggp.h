/* LogGP per pair: measurement of the overheads, gap and round trip over a list of message
 * sizes, the least-squares fit of L, o_s, o_r, g, G, and the predictions they give.
 * Formulas and measurement method: docs/models-loggp.md. */
#ifndef MPILAB_LOGGP_H
#define MPILAB_LOGGP_H

#include <mpi.h>
#include "mpilab/mpi_check.h"
#include <stddef.h>

#include "mpilab/p2p.h"
#include "mpilab/stats.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------------ measurement */

/* Repetitions at most per LogGP series (four series per size and pair stay in memory). */
#define MPILAB_LOGGP_MAX_REPS 1000

typedef struct mpilab_loggp_opts {
    mpilab_precision_t prec;  /* repetition control of every quantity at every size */
    mpilab_p2p_mode_t mode;   /* parallel (round-robin rounds) or sequential pairs */
    size_t burst;             /* messages per gap stream, >= 2 (default 16) */
    double or_wait_factor;    /* the receiver waits this many round trips before the timed
                                 receive, > 1 (default 2) */
    int progress;             /* rank 0 prints "[loggp] round r/R" on stderr (about 20 lines
                                 in all) from MPILAB_P2P_PROGRESS_RANKS ranks on (default 0) */
} mpilab_loggp_opts_t;

void mpilab_loggp_opts_default(mpilab_loggp_opts_t *o);

/* One quantity at one size: statistics and every repetition's sample. */
typedef struct mpilab_loggp_series {
    mpilab_stats_t stats;
    double *samples; /* [stats.reps] */
} mpilab_loggp_series_t;

/* Everything measured at one message size for one pair (sender i, receiver j):
 *   rtt: round trip, m bytes i -> j and m bytes back, timed on i;
 *   os:  time of MPI_Send(m) on i (the receiver acknowledges each message);
 *   orr: time of MPI_Recv(m) on j, called or_wait_factor round trips after the message
 *        was sent, so it has already arrived;
 *   g:   per-message time of a stream of `burst` back-to-back sends i -> j: each
 *        repetition times one message and then a stream, both closed by an m-byte reply,
 *        and records (T_stream - T_single) / (burst - 1). */
typedef struct mpilab_loggp_point {
    size_t bytes;
    mpilab_loggp_series_t rtt, os, orr, g;
} mpilab_loggp_point_t;

typedef struct mpilab_loggp_pair_result {
    mpilab_pair_t pair;
    size_t round;    /* round of the schedule it ran in (sequential: its pair index) */
    size_t measured; /* how many times the pair was measured (1 after a successful call) */
    size_t nsizes;
    mpilab_loggp_point_t *points; /* [nsizes], in the order of sizes[] */
} mpilab_loggp_pair_result_t;

/* Collective over comm (>= 2 ranks): every pair i < j over sizes[0..nsizes) (strictly
 * increasing, each <= INT_MAX). results must hold n(n-1)/2 entries, ordered (0,1),(0,2),...
 * (1,2),...; filled on every rank. Free each with mpilab_loggp_pair_result_free.
 * Returns 0, MPI_ERR_ARG for bad arguments (same on every rank), or an MPI error code. */
int mpilab_loggp_measure(MPI_Comm comm, const size_t *sizes, size_t nsizes,
                         const mpilab_loggp_opts_t *opts, mpilab_loggp_pair_result_t *results);
/* Collective over comm (>= 2 ranks): the pairs of a design instead of every pair, for many
 * ranks. pairs[0..npairs) (i < j), measured as mpilab_loggp_measure measures each, the pairs
 * of round r (pairs[order[round_start[r] .. round_start[r+1])], no rank twice) at once; with
 * opts->mode sequential, one pair at a time in the order of pairs[]. After each round the
 * ranks that timed a series send it to rank 0, so a rank holds one pair's series at a time
 * and only rank 0 holds results: results[k] for pairs[k] (npairs entries on rank 0, may be
 * NULL elsewhere), each series exactly its repetitions long. Returns 0, MPI_ERR_ARG for bad
 * arguments (a bad design: a pair out of range or not i < j, rounds that do not cover
 * 0..npairs), or an MPI error code; on failure rank 0's results are freed. */
int mpilab_loggp_measure_pairs(MPI_Comm comm, const mpilab_pair_t *pairs, size_t npairs, const size_t *order,
                               const size_t *round_start, size_t rounds, const size_t *sizes, size_t nsizes,
                               const mpilab_loggp_opts_t *opts, mpilab_loggp_pair_result_t *results);
void mpilab_loggp_pair_result_free(mpilab_loggp_pair_result_t *r);

/* Checks options and sizes without communicating; 0 or -1 with a one-line reason. */
int mpilab_loggp_check(const size_t *sizes, size_t nsizes, const mpilab_loggp_opts_t *opts,
                       char *err, size_t errlen);

/* ------------------------------------------------------------------------- fit */

/* Parameters of one pair (seconds, seconds per byte):
 *   os_per_byte, or_per_byte, G: least-squares slopes of o_s(m), o_r(m), g(m);
 *   os, orr, g: the values at m = 0, i.e. the values measured at the smallest size m0
 *   carried back along the slope (at m0 = 0 the measured zero-byte values themselves);
 *   g is clamped at 0 (MPILAB_LOGGP_GAP_CLAMPED);
 *   L = rtt(m0)/2 - os - orr - max(m0 - 1, 0) G (so that the one-way time below gives
 *   half the measured round trip at m0; at m0 = 0: rtt(0)/2 - o_s(0) - o_r(0)), clamped
 *   at 0 (L_raw keeps the unclamped value, flags has MPILAB_LOGGP_L_CLAMPED).
 * So o_s(m) = os + os_per_byte m, o_r(m) = orr + or_per_byte m, g(m) = g + G m.
 * Per-range fits (mpilab_loggp_fit_ranges' out[]) are plain least-squares lines instead:
 * there os, orr, g are the intercepts, meant for predictions within the range. */
typedef struct mpilab_loggp {
    double L, L_raw;
    double os, os_per_byte;
    double orr, or_per_byte;
    double g, G;
    unsigned flags;
} mpilab_loggp_t;

#define MPILAB_LOGGP_L_CLAMPED 1u /* L came out negative and was set to 0 */
#define MPILAB_LOGGP_G_CLAMPED 2u /* the fitted G was negative and was set to 0 */
#define MPILAB_LOGGP_GAP_CLAMPED 4u /* g came out negative (noise) and was set to 0 */

/* Fit from per-size values (means): bytes strictly increasing, n >= 2, all values finite
 * (times >= 0 not required: noise may make a small overhead negative). GSL least squares.
 * Returns 0, or -1 with a one-line reason in err (err may be NULL). */
int mpilab_loggp_fit(const double *bytes, const double *rtt, const double *os, const double *orr,
                     const double *g, size_t n, mpilab_loggp_t *out, char *err, size_t errlen);

/* The same fit per size range (protocol ranges, e.g. from mpilab_hockney_fit_ranges on
 * half the round trip): ranges [from_r, to_r], r < nr, ascending and disjoint. A range with
 * fewer than 2 sizes inside gets the whole-size fit. L is computed once, with the
 * overheads and G of the range that holds the smallest size, and copied to every range.
 * summary (may be NULL) gets the parameters an expert quotes: slopes from the smallest
 * size's range, os, orr, g anchored at the smallest size and L as for mpilab_loggp_fit,
 * G from the last (largest-size) range.
 * Returns 0 or -1 with a one-line reason. */
int mpilab_loggp_fit_ranges(const double *bytes, const double *rtt, const double *os,
                            const double *orr, const double *g, size_t n, const double *from,
                            const double *to, size_t nr, mpilab_loggp_t *out,
                            mpilab_loggp_t *summary, char *err, size_t errlen);

/* ------------------------------------------------------------------ predictions */

/* Index of the range that holds `bytes` (ranges ascending as for mpilab_loggp_fit_ranges);
 * outside all ranges the nearest one. Predictions with per-protocol parameters charge a
 * message of m bytes with the range of m. Returns 0 when nr == 0. */
size_t mpilab_loggp_pick_range(const double *from, const double *to, size_t nr, double bytes);

double mpilab_loggp_os(const mpilab_loggp_t *p, double bytes);  /* os + os_per_byte m */
double mpilab_loggp_or(const mpilab_loggp_t *p, double bytes);  /* orr + or_per_byte m */
double mpilab_loggp_gap(const mpilab_loggp_t *p, double bytes); /* g + G m */

/* One-way time of one m-byte message: os + L + max(m - 1, 0) G + orr. */
double mpilab_loggp_time(const mpilab_loggp_t *p, double bytes);

/* Linear scatter / gather of mpilab_scatter_linear / mpilab_gather_linear (root handles
 * ranks root+1, root+2, ... mod p in order), from a p*p matrix pairs[src*p + dst]:
 *   scatter: send k (k = 1..p-1) leaves the root at s_k = s_{k-1} + max(gap(m), o_s(m)) of
 *            the previous destination, s_1 = 0; time = max_k (s_k + T_k(m));
 *   gather:  message from the k-th source arrives at A_k = os + L + max(m-1,0) G, the root
 *            finishes it at c_k = max(A_k, c_{k-1} + max(gap(m) - o_r(m), 0)) + o_r(m)
 *            (c_0 = -inf); time = c_{p-1}.
 * NaN for bad arguments. */
double mpilab_loggp_predict_scatter_linear(const mpilab_loggp_t *pairs, size_t p, size_t root,
                                           double bytes);
double mpilab_loggp_predict_gather_linear(const mpilab_loggp_t *pairs, size_t p, size_t root,
                                          double bytes);

/* Binomial scatter / gather of mpilab_scatter_binomial / mpilab_gather_binomial (tree of
 * src/coll/scatter_gather.c: vr = (rank - root) mod p, a node vr > 0 owns the blocks of
 * [vr, vr + min(lowbit(vr), p - vr)), the root all p; the children of vr are vr + mask for
 * every power of two mask below lowbit(vr) (for the root: below the next power of two >= p)
 * with vr + mask < p). A message to or from child c carries all c's blocks: m_c =
 * blocks(c) * bytes, and is charged with the parameters of its own pair and size.
 *   scatter: vr holds its blocks at R_vr (R_0 = 0) and sends to its children from the
 *            largest mask down: the k-th send starts at s_k = s_{k-1} + max(gap(m_{k-1}),
 *            o_s(m_{k-1})) of the previous message, s_1 = R_vr; child c holds its blocks at
 *            R_c = s_k + T(m_c) and only then forwards; time = max over all vr of R_vr.
 *   gather:  a leaf is ready at S = 0; vr receives its children from the smallest mask up:
 *            child k's message arrives at A_k = S_k + o_s + L + max(m_k - 1, 0) G and is
 *            complete at c_k = max(A_k, c_{k-1} + max(gap(m_k) - o_r(m_k), 0)) + o_r(m_k)
 *            (c_0 = -inf); vr is ready (sends up) at S_vr = c_last; time = S_0.
 * For p = 2 both equal the linear predictions; p = 1 gives 0. NaN for bad arguments. */
double mpilab_loggp_predict_scatter_binomial(const mpilab_loggp_t *pairs, size_t p, size_t root,
                                             double bytes);
double mpilab_loggp_predict_gather_binomial(const mpilab_loggp_t *pairs, size_t p, size_t root,
                                            double bytes);

/* A pair's parameters for predictions with protocol ranges: ranges[r] holds for sizes in
 * [from[r], to[r]] (as for mpilab_loggp_fit_ranges; a size outside all ranges gets the
 * nearest, see mpilab_loggp_pick_range); with nranges == 0 (or a NULL array) `whole`. */
typedef struct mpilab_loggp_pair_model {
    mpilab_loggp_t whole;
    const mpilab_loggp_t *ranges; /* [nranges] */
    const double *from, *to;      /* [nranges] */
    size_t nranges;
} mpilab_loggp_pair_model_t;

/* The parameters a message of `bytes` bytes is charged with (NULL for m == NULL). */
const mpilab_loggp_t *mpilab_loggp_pair_params(const mpilab_loggp_pair_model_t *m, double bytes);

/* The binomial predictions from a p*p matrix of pair models pairs[src*p + dst]: every message
 * (whose size depends on the subtree it carries) with the range of its own size. */
double mpilab_loggp_predict_scatter_binomial_ranges(const mpilab_loggp_pair_model_t *pairs, size_t p,
                                                    size_t root, double bytes);
double mpilab_loggp_predict_gather_binomial_ranges(const mpilab_loggp_pair_model_t *pairs, size_t p,
                                                   size_t root, double bytes);

#ifdef __cplusplus
}
#endif
#endif
