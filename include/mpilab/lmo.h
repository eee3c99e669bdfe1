/* The heterogeneous communication model of Lastovetsky, Mkwawa and O'Flynn (ICPADS 2006) as
 * estimated by Lastovetsky and Rychkov (Cluster 2007), "LMO" below: every processor i has a
 * fixed delay C_i and a per-byte delay t_i (work its CPU does for each message, one message
 * after another), every link i-j a latency L_ij and a transmission rate beta_ij (work the
 * network does, in parallel over different links). docs/models-lmo.md
 * gives the equations; this header has the experiments' schedule, the fit and the
 * predictions (pure functions) and the measurement (collective, MPI).
 *
 * Experiments (M > 0 bytes, replies always empty):
 *   round trip i -> j:      rt_ij(M)  = 2 C_i + 2 C_j + 2 L_ij + M (t_i + t_j + 1/beta_ij)
 *   point-to-two i -> j,k:  i's CPU sends to j, then to k (s_i = C_i + M t_i each), the replies
 *                           are back at s_i + b_j and 2 s_i + b_k (b_x = 2 C_x + M t_x + 2 L_ix
 *                           + M/beta_ix) and i takes them as they come, C_i each, once its
 *                           sends are done (mpilab_lmo_p2t_events). When the two replies come
 *                           back together this is the model's textbook
 *                           4 C_i + 2 M t_i + max(b_j, b_k); when they come apart, taking the
 *                           first overlaps the wait for the second.
 * The point-to-two experiment separates the processor's own delays from the link's, which
 * round trips alone cannot. */
#ifndef MPILAB_LMO_H
#define MPILAB_LMO_H

#include <mpi.h>
#include "mpilab/mpi_check.h"
#include <stddef.h>

#include "mpilab/ops.h"
#include "mpilab/p2p.h"
#include "mpilab/robust.h"
#include "mpilab/stats.h"
#include "mpilab/wait.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Three distinct ranks, a < b < c. Experiment e (0, 1, 2) of a triplet has member e as its
 * root (the sender) and the other two, in increasing order, as its receivers. */
typedef struct mpilab_triplet {
    int a, b, c;
} mpilab_triplet_t;

/* The root and receivers of experiment e of t. */
void mpilab_triplet_roles(const mpilab_triplet_t *t, int e, int *root, int *x, int *y);

/* Every triplet of n ranks in lexicographic order into out (n(n-1)(n-2)/6 of them, the
 * number returned; 0 for n < 3). mpilab_lmo_ntriplets(n) is that count. */
size_t mpilab_lmo_ntriplets(int n);
size_t mpilab_lmo_triplets(int n, mpilab_triplet_t *out);

/* Rounds of disjoint triplets (no rank in two triplets of one round): order[] receives the
 * indices of t[] round by round, round r being order[round_start[r] .. round_start[r+1]);
 * round_start needs (number of rounds + 1) entries, at most nt + 1. Each round is filled
 * greedily (the first triplets in t[] order whose ranks are all free), so with the full list
 * a round holds floor(n/3) triplets as long as that many disjoint ones remain. Returns the
 * number of rounds, 0 on bad input (a rank outside 0..n-1, not a < b < c) or no memory. */
size_t mpilab_lmo_triplet_rounds(int n, const mpilab_triplet_t *t, size_t nt, size_t *order, size_t *round_start);

/* ---- the fit (pure) ---- */

/* One experiment's samples (seconds). */
typedef struct mpilab_lmo_series {
    const double *x;
    size_t n;
} mpilab_lmo_series_t;

/* What the fit reads: p ranks, the triplets measured and M. Round trips are indexed by pair
 * in the order (0,1), (0,2) .. (0,p-1), (1,2) ..; rt_0 with empty messages both ways, rt_m
 * with M bytes from the lower rank and an empty reply. Point-to-two experiments are indexed
 * 3 t + e (experiment e of triplet t). */
typedef struct mpilab_lmo_input {
    int p;
    const mpilab_triplet_t *trip;
    size_t ntrip;
    double bytes; /* M > 0 */
    const mpilab_lmo_series_t *rt_0, *rt_m;   /* [p(p-1)/2] */
    const mpilab_lmo_series_t *p2t_0, *p2t_m; /* [3 ntrip] */
    /* optional ([3 ntrip] each, or NULL): the round trips root -> x and root -> y of each
     * empty point-to-two experiment, timed beside its repetitions; C_i is then solved from
     * them instead of from rt_0 (measured at another time, so a level that moved between
     * the two is not taken for C) */
    const mpilab_lmo_series_t *p2t_rtx_0, *p2t_rty_0;
} mpilab_lmo_input_t;

typedef struct mpilab_lmo_opts {
    double cl;          /* interval level (default 0.95) */
    double eps;         /* relative half width asked of an interval (default 0.05) */
    size_t boot;        /* bootstrap replicates, >= 50 (default 200) */
    unsigned long seed; /* bootstrap seed (default 1): the fit is deterministic */
} mpilab_lmo_opts_t;
void mpilab_lmo_opts_default(mpilab_lmo_opts_t *o);

/* A per-node parameter estimated in several triplets: its parameter (value = the median of
 * the per-triplet estimates, interval, flags) plus the largest distance of one triplet's
 * estimate from that median (`spread`) and the flag MPILAB_LMO_DISAGREE when it exceeds
 * max(twice the interval's width, eps * value): some triplet tells another story than the
 * model (a disturbed experiment, or a node the model does not describe). */
#define MPILAB_LMO_DISAGREE 8u
typedef struct mpilab_lmo_node {
    mpilab_param_t C, t;       /* seconds, seconds per byte */
    double C_spread, t_spread; /* largest distance of a triplet's estimate from the value */
    size_t ntrip;              /* triplets in which it was the root */
    size_t C_solved;           /* of its experiments as the root, those that fixed C (their
                                  p2t_0 above the slower round trip by more than the medians'
                                  noise); 0: C is the plain median of (p2t_0 - max rt_0) / 2 */
} mpilab_lmo_node_t;

typedef struct mpilab_lmo_link {
    int i, j;
    mpilab_param_t L, inv_beta; /* seconds, seconds per byte (beta = 1 / inv_beta) */
} mpilab_lmo_link_t;

typedef struct mpilab_lmo_fit {
    int p;
    double bytes;
    mpilab_lmo_node_t *node; /* [p] */
    mpilab_lmo_link_t *link; /* [p(p-1)/2], pair order */
} mpilab_lmo_fit_t;

/* The point-to-two time event by event from the root's round trips to its first (rx) and
 * second (ry) receiver, its fixed delay c and its cost per send s = C + M t (see above). */
double mpilab_lmo_p2t_events(double rx, double ry, double c, double s);

/* Point values from one value per experiment (e.g. medians): per node, the median over its
 * triplets of the C and t for which mpilab_lmo_p2t_events gives the measured point-to-two
 * times with 0 and M bytes (bisection; where the measured time is not above the slower
 * round trip, the experiment does not fix them and the plain (p2t_0 - max rt_0) / 2 and
 * ((p2t_m - max rt_m) - (p2t_0 - max rt_0)) / M are used, <= 0); per link L = rt_0 / 2 - C_i - C_j and
 * 1/beta = (rt_m - rt_0) / M - t_i - t_j. Arrays as in mpilab_lmo_input_t; C, t [p],
 * L, inv_beta [p(p-1)/2]; C_spread, t_spread may be NULL. Values may be negative (not
 * clamped). Returns 0, or -1 if a node is the root of no triplet or a value is not finite. */
int mpilab_lmo_fit_values(int p, const mpilab_triplet_t *trip, size_t ntrip, double bytes, const double *rt_0,
                          const double *rt_m, const double *p2t_0, const double *p2t_m, double *C, double *t,
                          double *L, double *inv_beta, double *C_spread, double *t_spread);

/* The fit on the samples: each experiment's median, then mpilab_lmo_fit_values, except
 * that an experiment fixes its root's C only when its p2t_0 is above the slower round trip
 * by more than the two medians' noise (the half widths of their distribution-free
 * intervals at o->cl, in quadrature; C_solved counts them); intervals
 * by bootstrap (every experiment's samples resampled, the replicate's medians fitted again;
 * percentile interval at o->cl); impossible values (negative) reported as 0 with
 * MPILAB_PARAM_CLAMPED (raw keeps the fit's value), MPILAB_PARAM_WIDE beyond eps,
 * MPILAB_LMO_DISAGREE as above. out is allocated (free with mpilab_lmo_fit_free). Returns 0,
 * or -1 with one line in err (p < 3, M <= 0, an empty series, a non-finite sample, a node
 * that is the root of no triplet, bad options). */
int mpilab_lmo_fit(const mpilab_lmo_input_t *in, const mpilab_lmo_opts_t *o, mpilab_lmo_fit_t *out, char *err,
                   size_t errlen);
void mpilab_lmo_fit_free(mpilab_lmo_fit_t *f);

/* ---- the star view (pure) ----
 * On a star (every node on its own access link to a non-blocking switch, a message crossing
 * the sender's and the receiver's links, pipelined; docs/models-lmo.md "What the model identifies
 * on a star") a node's per-byte cost and its access link's are the same serial resource and
 * the pair's own 1/beta_ij is a residual with no meaning; what the round trips do fix is per
 * pair the fixed time y_ij = C_i + C_j + L_ij (= rt_0 / 2) and the time per byte
 * path_ij = t_i + t_j + 1/beta_ij (raw), which on a star are a_i + a_j and max(u_i, u_j).
 * From a fit: a_i, the least-squares solution of y_ij = a_i + a_j over the pairs (unique for
 * p >= 3), and u_i = min over j of path_ij (exact when another node's link is at least as
 * fast, i.e. unless node i is the one fastest node), each with the largest relative misfit
 * over the pairs of a_i + a_j against y_ij and of max(u_i, u_j) against path_ij: near 0 on a
 * star; large where pairs have links of their own, and then the star view does not hold.
 * slowest: the node whose access link costs most for an M-byte message, a_i + M u_i, and
 * that cost's ratio to the median node's. */
typedef struct mpilab_lmo_star {
    int p;
    double *a, *u;              /* [p]: seconds, seconds per byte */
    double misfit_a, misfit_u;  /* largest |model - measured| / measured over the pairs */
    int slowest;                /* node whose access link is slowest at M */
    double slowest_cost, slowest_vs_median;
} mpilab_lmo_star_t;
/* 0, or -1 (p < 3, no memory); free with mpilab_lmo_star_free. */
int mpilab_lmo_star(const mpilab_lmo_fit_t *f, mpilab_lmo_star_t *out);
void mpilab_lmo_star_free(mpilab_lmo_star_t *s);

/* The node slowest at messaging: the largest fixed delay per message C_i (its processor's
 * work per message sent or received, whatever its links; on a star the per-byte t_i of a
 * node is its access link's, so the slowest node by C_i + M t_i names the slow link's node,
 * docs/models-lmo.md), and in *vs_median that C_i over the median node's (NaN when the median is
 * 0). Returns the node, or -1 (no node, no memory). */
int mpilab_lmo_slowest_cpu(const mpilab_lmo_fit_t *f, double *vs_median);

/* A fit whose star view misses its pairs by at most this (misfit_a and misfit_u) is taken
 * for a star: one access link per node explains every pair. */
#define MPILAB_LMO_STAR_FITS 0.05

/* A star's node headline needs its processing part above the median node's by more than this
 * fraction of the median pair's fixed time C_i + C_j + L_ij. */
#define MPILAB_LMO_NODE_STANDS_OUT 0.01

/* The fit's headlines (models.lmo.slowest), each from the parameters that identify it.
 * On a star (mpilab_lmo_star's misfits both at most MPILAB_LMO_STAR_FITS) a node's t_i is
 * its access link's time per byte and 1/beta_ij a residual, and the MPI's header bytes h of
 * every message cross the sender's access link, so C_i = c_i + h u_i: the slowest node is the
 * one with the largest processing part c_i = C_i - h u_i (h: the median slope of C_i against
 * u_i over pairs of nodes whose links differ by at least 25%, within [0, min C_i / u_i];
 * header_bytes), none (node = -1) when that is not above the median node's by more than
 * MPILAB_LMO_NODE_STANDS_OUT of the median pair's fixed time; the slowest link is the access
 * link of the star's slowest node (link_of; link_i = link_j = -1). Otherwise t_i and
 * 1/beta_ij are the node's and the pair link's own: the node with the largest C_i + M t_i,
 * none (node = -1) when that is not above the median node's by more than
 * MPILAB_LMO_NODE_STANDS_OUT of the median pair's time at M, and the pair with the largest
 * L_ij + M/beta_ij (link_of = -1). Costs in seconds at M with
 * their ratio to the median of their kind (NaN when that median is not above 0). */
typedef struct mpilab_lmo_headlines {
    int star;                   /* 1: the star view explains the pairs */
    int node;                   /* -1: no node stands out */
    double node_cost, node_vs_median;
    double header_bytes;        /* on a star: h (bytes), else 0 */
    int link_of, link_i, link_j;
    double link_cost, link_vs_median;
} mpilab_lmo_headlines_t;
/* 0, or -1 (p < 3, no memory). */
int mpilab_lmo_headlines(const mpilab_lmo_fit_t *f, mpilab_lmo_headlines_t *out);

/* ---- predictions (pure) ---- */

/* Plain parameters of p nodes: C[p], t[p]; L, inv_beta as p*p matrices (symmetric, the
 * diagonal unused). rendezvous_bytes: messages of at least this many bytes are sent
 * synchronously (the sender's MPI_Send returns once the receiver has matched it: Open MPI's
 * rendezvous above a BTL's eager limit, SMPI's sends at or above smpi/send-is-detached-thresh),
 * so the linear patterns' messages follow one another; 0: every message is eager (the
 * model's original formulas below). Fitted parameters are best passed raw (unclamped): the
 * experiments determine the sums C_i + C_j + L_ij and t_i + t_j + 1/beta_ij, which clamping
 * one term changes. */
typedef struct mpilab_lmo_params {
    int p;
    const double *C, *t, *L, *inv_beta;
    double rendezvous_bytes;
} mpilab_lmo_params_t;

/* What mpilab's models use for rendezvous_bytes: 64 KiB, Open MPI's btl_tcp_eager_limit
 * (the limit counts the header, so a 64 KiB payload goes by rendezvous) and SMPI's default
 * smpi/send-is-detached-thresh. */
#define MPILAB_LMO_RENDEZVOUS_DEFAULT 65536.0

/* One message of m bytes i -> j: C_i + m t_i + L_ij + m / beta_ij + C_j + m t_j. */
double mpilab_lmo_oneway(const mpilab_lmo_params_t *q, int i, int j, double m);
/* Linear scatter (mpilab_scatter_linear's order root+1, root+2, ...), eager messages
 * (m < rendezvous_bytes or rendezvous_bytes = 0): the root's CPU handles
 * one send after another, C_r + m t_r each, and the network carries them in parallel:
 * max over k = 1..p-1 of k (C_r + m t_r) + L_rj + m/beta_rj + C_j + m t_j, j the k-th
 * destination. Linear gather: every sender starts at 0, the message of j is there at
 * C_j + m t_j + L_jr + m/beta_jr, the root's CPU handles them one after another in the same
 * order (c_k = max(arrival_k, c_{k-1}) + C_r + m t_r); the time is the last c. Synchronous
 * messages (m >= rendezvous_bytes > 0): each of the root's blocking sends (receives) ends
 * when its message is through, so both linear patterns take the sum over j of the one-way
 * times r -> j (j -> r). Binomial
 * (mpilab's tree, coll.h): the sum over stages of the stage's slowest message, each message
 * carrying its subtree's blocks. NaN for bad input (NULL, p < 1, root outside, m < 0). */
double mpilab_lmo_predict(mpilab_op_model_t pattern, const mpilab_lmo_params_t *q, int root, double m);

/* ---- measurement (collective over comm) ---- */

/* Result of one point-to-two experiment: root sends `bytes` to x and to y (non-blocking, at
 * once), then receives their empty replies; samples are the root's times for the whole.
 * y = -1: a round trip root -> x (the same calls with one receiver). */
typedef struct mpilab_p2t_result {
    int root, x, y;
    size_t bytes;
    size_t round;         /* the round of disjoint triplets it ran in (sequential: its index) */
    mpilab_stats_t stats;
    double *samples;      /* [stats.reps] */
    /* paired (mpilab_lmo_measure's empty point-to-two experiments): per repetition, the
     * round trips root -> x and root -> y timed right beside it ([stats.reps]; NULL when
     * not paired) */
    double *rt_x, *rt_y;
} mpilab_p2t_result_t;
void mpilab_p2t_result_free(mpilab_p2t_result_t *r);

/* The point-to-two experiments of every triplet in trip[0..ntrip) (the three roots of each),
 * each with its own repetition control under prec after `warmup` untimed repetitions;
 * repetitions are isolated (the next starts when both replies are in). Parallel mode: the
 * rounds of mpilab_lmo_triplet_rounds, the triplets of a round at once, a barrier after each
 * round; sequential: one triplet at a time, the others wait in a barrier; every wait (the
 * repetitions' requests, the receivers' messages, the barriers) as `wait` says (NULL: spin,
 * mpilab/wait.h). res[3 t + e] is
 * filled on rank 0 only (samples allocated there). Built on the public API only (an example
 * of a user entry: mpilab_stats_should_stop, mpilab_wtime). Returns 0 or an MPI error code
 * (MPI_ERR_ARG: fewer than 3 ranks, a triplet outside the communicator, bytes > INT_MAX). */
int mpilab_p2t_measure(MPI_Comm comm, size_t bytes, mpilab_p2p_mode_t mode, const mpilab_precision_t *prec,
                       size_t warmup, const mpilab_wait_t *wait, const mpilab_triplet_t *trip, size_t ntrip,
                       mpilab_p2t_result_t *res);

/* The round trips of every pair i < j of comm, i -> j with `bytes` and an empty reply, made
 * with the same calls as the point-to-two experiment (so that the two differ only by the
 * second message): pairs in the circle method's rounds (mpilab_p2p_schedule) or one at a
 * time; res[pair index] on rank 0 (y = -1). Returns 0 or an MPI error code. */
int mpilab_lmo_rt_measure(MPI_Comm comm, size_t bytes, mpilab_p2p_mode_t mode, const mpilab_precision_t *prec,
                          size_t warmup, const mpilab_wait_t *wait, mpilab_p2t_result_t *res);

/* Everything the LMO fit needs (rank 0 holds it): all pairs' round trips with empty messages
 * and with M bytes (empty reply), and every triplet's point-to-two experiments with both. */
typedef struct mpilab_lmo_measured {
    int p;
    size_t bytes;
    mpilab_p2p_mode_t mode;
    mpilab_wait_t wait; /* how the ranks waited (spin unless asked) */
    mpilab_triplet_t *trip;
    size_t ntrip, rounds;
    mpilab_p2t_result_t *rt_0, *rt_m;   /* [p(p-1)/2] (y = -1) */
    mpilab_p2t_result_t *p2t_0, *p2t_m; /* [3 ntrip] */
    double wall_s;                      /* seconds the four series took */
} mpilab_lmo_measured_t;

/* Collective: measure all of it (every triplet of comm's ranks). Returns 0 or an MPI error
 * code; *m is valid on rank 0 (free with mpilab_lmo_measured_free on every rank). */
int mpilab_lmo_measure(MPI_Comm comm, size_t bytes, mpilab_p2p_mode_t mode, const mpilab_precision_t *prec,
                       const mpilab_wait_t *wait, mpilab_lmo_measured_t *m);
void mpilab_lmo_measured_free(mpilab_lmo_measured_t *m);
/* The fit's input pointing into m's samples (series arrays allocated in *in; free them with
 * mpilab_lmo_input_free). 0 or -1 (no memory). */
int mpilab_lmo_input_from(const mpilab_lmo_measured_t *m, mpilab_lmo_input_t *in);
void mpilab_lmo_input_free(mpilab_lmo_input_t *in);

#ifdef __cplusplus
}
#endif
#endif
