/* Multilane scatter and gather for multi-site clusters (after Chiba, Endo and Matsuoka),
 * the single-lane grid baseline they are measured against, and the grid description that
 * drives both: which rank is in which site.  docs/multilane.md has the algorithm and the
 * measured numbers; include/mpilab/multilane_model.h the cost models.
 *
 * Errors: functions returning a pointer return NULL and set errno; functions returning int
 * return an MPI error class (collectives) or -1 (others); either way a one-line reason is
 * readable with mpilab_multilane_last_error() (per thread, until the next failing call). */
#ifndef MPILAB_MULTILANE_H
#define MPILAB_MULTILANE_H

#include <mpi.h>
#include <stddef.h>

#include "mpilab/clocksync.h"
#include "mpilab/multilane_model.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------------ grid description */
typedef struct mpilab_grid mpilab_grid_t;

/* From one site number per rank (any non-negative ints; sites are renumbered 0..S-1 in
 * order of their lowest rank).  Needs nranks >= 2 and at least two sites. */
mpilab_grid_t *mpilab_grid_create(int nranks, const int *site_of_rank);
/* From one site label per rank (equal strings = same site). */
mpilab_grid_t *mpilab_grid_from_labels(int nranks, const char *const *labels);
/* From host names as the testbed sets them ("<prefix>-s<S>n<J>": site S), or, when
 * `hostfile` is non-NULL, from a host file whose lines are `HOST [slots=N] site=LABEL`
 * or `HOST LABEL` (`#` comments; Open MPI hostfiles with a site= field work): rank r is in
 * the site of the line naming hosts[r]. */
mpilab_grid_t *mpilab_grid_from_hosts(int nranks, const char *const *hosts, const char *hostfile);
/* From a map file: lines `RANK SITE` (SITE a label), every rank 0..nranks-1 exactly once. */
mpilab_grid_t *mpilab_grid_read_map(const char *path, int nranks);
/* Sites from a measured latency matrix lat[i*n + j] (seconds, n >= 2; symmetrised by the
 * mean of both directions): every ratio gap of at least 2x between consecutive sorted pair
 * latencies is a candidate split, largest first; the first whose partition holds wins:
 * every pair inside a site below the split, every pair across sites above it, at least 2
 * ranks in every site (one rank held off its CPU makes all its pairs look remote), and the
 * pairs across any two sites within 2x of each other (one link between them).  Else NULL
 * (EINVAL) with the reason in one line; never a partition that fails these checks.
 * *split, if non-NULL, gets the threshold. */
mpilab_grid_t *mpilab_grid_from_latency(int n, const double *lat, double *split);
void mpilab_grid_free(mpilab_grid_t *g);

int mpilab_grid_nranks(const mpilab_grid_t *g);
int mpilab_grid_nsites(const mpilab_grid_t *g);
int mpilab_grid_site_of(const mpilab_grid_t *g, int rank);
int mpilab_grid_site_size(const mpilab_grid_t *g, int site);
/* The i-th rank (ascending) of a site. */
int mpilab_grid_site_rank(const mpilab_grid_t *g, int site, int i);
/* The largest number of lanes for `root`: min(size of root's site, size of every other
 * site) (P_sup). */
int mpilab_grid_lanes_max(const mpilab_grid_t *g, int root);

/* Collective over comm: build the grid the same way on every rank and agree on success.
 * `how`: "testbed" (processor names), "hostfile:PATH", "map:PATH", "detect" (measure the
 * latency matrix, 20 round trips a pair, and cluster it with mpilab_grid_from_latency; a
 * refused clustering is measured again, each pair keeping its smallest latency, up to 4
 * measurements).  NULL with the reason on every rank if any rank failed. */
mpilab_grid_t *mpilab_grid_build(MPI_Comm comm, const char *how);
/* Collective: the one-way latency of every pair (half the smallest round trip of `reps`
 * 1-byte ping-pongs: on a shared machine interference only adds time), lat[i*p + j] on every
 * rank (p*p doubles).  Returns 0 or -1. */
int mpilab_grid_measure_latency(MPI_Comm comm, int reps, double *lat);

/* ------------------------------------------------------------------ collectives */
/* MPI_Scatter / MPI_Gather semantics for any root, any rank order and datatype pairs with
 * matching signatures (MPI_IN_PLACE not supported), over a grid of comm's size.
 * `lanes` (P) node pairs carry the inter-site traffic from the root's site to each other
 * site, 1 <= P <= mpilab_grid_lanes_max(g, root); else MPI_ERR_ARG (every rank checks
 * the same arguments, so all of them return without communicating).
 * Scatter: (1) prepare: the root sends to each of the P-1 other senders of its site (its
 * lowest non-root ranks) the blocks that sender carries across; (2) WAN: each sender sends
 * to each remote site s the blocks of its lane (site s's ranks split into P contiguous
 * runs of ceil or floor n_s/P, the run's first rank receiving); the root starts its own
 * lanes right after the prepare; (3) LAN: every receiver forwards its run's blocks, and
 * the root sends its own site's blocks.  Gather is the same with every message reversed.
 * Uses MPILAB_COLL_TAG (coll.h). */
int mpilab_scatter_multilane(const void *sendbuf, int sendcount, MPI_Datatype sendtype,
                             void *recvbuf, int recvcount, MPI_Datatype recvtype, int root,
                             MPI_Comm comm, const mpilab_grid_t *g, int lanes);
int mpilab_gather_multilane(const void *sendbuf, int sendcount, MPI_Datatype sendtype,
                            void *recvbuf, int recvcount, MPI_Datatype recvtype, int root,
                            MPI_Comm comm, const mpilab_grid_t *g, int lanes);
/* The single-lane grid baseline (MagPIe, MPICH-G2): one WAN transfer of all of a remote
 * site's blocks between the root and that site's lowest rank, then a flat scatter inside
 * each site (the root's own site overlapping the WAN); gather reversed.  It is the
 * multilane schedule with P = 1. */
int mpilab_scatter_single_lane(const void *sendbuf, int sendcount, MPI_Datatype sendtype,
                               void *recvbuf, int recvcount, MPI_Datatype recvtype, int root,
                               MPI_Comm comm, const mpilab_grid_t *g);
int mpilab_gather_single_lane(const void *sendbuf, int sendcount, MPI_Datatype sendtype,
                              void *recvbuf, int recvcount, MPI_Datatype recvtype, int root,
                              MPI_Comm comm, const mpilab_grid_t *g);

/* MPI_Scatter / MPI_Gather signatures (mpilab_scatter_fn, coll.h) for the operation table
 * and the tuned dispatcher: the grid and P come from an attribute of comm set by
 * mpilab_multilane_attach (a copy of g is kept until comm is freed or detached).  lanes = 0
 * means "the largest for each root" (P_sup).  Without an attachment: MPI_ERR_ARG. */
int mpilab_multilane_attach(MPI_Comm comm, const mpilab_grid_t *g, int lanes);
int mpilab_multilane_detach(MPI_Comm comm);
/* The grid attached to comm (owned by the attachment), or NULL. */
const mpilab_grid_t *mpilab_multilane_attached_grid(MPI_Comm comm);
int mpilab_scatter_multilane_attached(const void *sendbuf, int sendcount, MPI_Datatype sendtype,
                                      void *recvbuf, int recvcount, MPI_Datatype recvtype,
                                      int root, MPI_Comm comm);
int mpilab_gather_multilane_attached(const void *sendbuf, int sendcount, MPI_Datatype sendtype,
                                     void *recvbuf, int recvcount, MPI_Datatype recvtype,
                                     int root, MPI_Comm comm);
int mpilab_scatter_single_lane_attached(const void *sendbuf, int sendcount,
                                        MPI_Datatype sendtype, void *recvbuf, int recvcount,
                                        MPI_Datatype recvtype, int root, MPI_Comm comm);
int mpilab_gather_single_lane_attached(const void *sendbuf, int sendcount,
                                       MPI_Datatype sendtype, void *recvbuf, int recvcount,
                                       MPI_Datatype recvtype, int root, MPI_Comm comm);

/* ------------------------------------------------------------------ measurement */
/* The model's inputs, measured between the root's site (site 0 of the model) and the first
 * other site (site 1), collective over comm, result on every rank:
 *   l, L: half the smallest round trip of `reps` 1-byte ping-pongs (root and its lowest
 *         site-mate; root and site 1's lowest rank);
 *   b_lan: (m2 - m1) / (t(m2) - t(m1)) for one pair inside the root's site, m2 = bytes,
 *         m1 = bytes / 2, t = the smallest over reps of send + 1-byte acknowledgement (on a
 *         shared machine interference only adds time);
 *   b[j-1], j = 1..P_sup: the same with j cross-site pairs (sender k of the root's site to
 *         site 1's k-th rank) streaming at once, t the slowest pair's time;
 *   alpha: the constant part of one WAN transfer beyond the latencies:
 *         t(m1) - m1 / b[0] - 2 L (the data's L and the acknowledgement's), kept as
 *         alpha_q.raw; params.alpha = alpha_q.value = raw if > 0, else 0 with
 *         MPILAB_PARAM_CLAMPED and MPILAB_PARAM_NO_CI (one minimum: no interval).
 * bytes >= 2, reps >= 1.  Returns 0, or -1 with the reason (non-positive differences,
 * i.e. a measurement too noisy to use, are reported, not clamped). */
typedef struct mpilab_multilane_measured {
    mpilab_multilane_params_t params; /* params.b points to b */
    double *b;
    size_t n0, n1; /* sizes of the two sites measured */
    size_t bytes;
    int reps;
    mpilab_param_t alpha_q; /* alpha's raw estimate and flags (params.alpha = its value) */
} mpilab_multilane_measured_t;

int mpilab_multilane_measure(MPI_Comm comm, const mpilab_grid_t *g, int root, size_t bytes,
                             int reps, mpilab_multilane_measured_t *out);
void mpilab_multilane_measured_free(mpilab_multilane_measured_t *m);

/* alpha per operation (the paper's "non-transfer overhead"), calibrated on runs of its own,
 * collective over comm: op scatter then gather at P_sup lanes and `bytes` per rank, `reps`
 * timed repetitions (mpilab_multilane_run_timed with cs, which may be NULL), alpha = mean
 * measured - the schedule model (m's inputs, alpha = 0, every remote site of g) at that
 * size, with its 95% t interval (mpilab_multilane_alpha_estimate, multilane_model.h).  alpha[op] gets the value
 * the models should use (>= 0); *cal, if non-NULL, the JSON record (on every rank):
 * {"bytes", "lanes", "reps", "scatter"/"gather": {"times", "measured_mean",
 * "model_without_alpha", "alpha" (raw), "ci95" [lo, hi] of the raw estimate, "alpha_used",
 * "flags" (["clamped"] when raw <= 0, "no_ci" when reps < 2)}}.  bytes >= 1, reps >= 1.
 * Returns 0, or -1 with the reason (mpilab_multilane_last_error). */
struct json_t;
int mpilab_multilane_calibrate_alpha(MPI_Comm comm, const mpilab_grid_t *g, int root,
                                     const mpilab_multilane_measured_t *m, size_t bytes, int reps,
                                     const mpilab_clocksync_t *cs, double alpha[2],
                                     struct json_t **cal);

/* The measured model as JSON text (malloc'd; NULL on ENOMEM): {"n0", "n1", "L", "l",
 * "alpha", "quality": {"alpha": {"raw", "lo", "hi", "flags"}}, "b_lan", "b": [b(1)..b(P_sup)] (bytes/s), "measure_bytes", "measure_reps",
 * "sizes": [{"bytes", "T": [paper T(1)..T(P_sup)], "P_opt", "single_lane",
 * "sim_scatter": [...], "P_opt_sim_scatter", "sim_gather": [...], "P_opt_sim_gather"}]}
 * for each message size: what results files record as models.multilane. */
char *mpilab_multilane_model_json(const mpilab_multilane_measured_t *m, const size_t *sizes,
                                  size_t nsizes);

/* models.multilane of a results file (docs/results-schema.md): the model JSON above plus
 * "lanes" (the P the multilane entries used), "alpha_calibration" if cal is non-NULL (the
 * record of mpilab_multilane_calibrate_alpha; its alpha_used per operation then replaces
 * "alpha" in the predictions) and "predictions": one per measurement in the
 * `measurements` array (mpilab.results/1) of op scatter/gather and impl "multilane" or
 * "single-lane": {"op", "impl", "timing", "bytes", "lanes", "predicted_paper",
 * "predicted_sim", "measured"} (measured = stats.mean; predictions null where the model
 * has none, e.g. more than two sites).  NULL on ENOMEM.  Needs jansson. */
struct json_t *mpilab_models_multilane(const mpilab_multilane_measured_t *m, int nsites,
                                       int lanes, const size_t *sizes, size_t nsizes,
                                       struct json_t *measurements, struct json_t *cal);

/* ------------------------------------------------------------------ timing */
/* Time one collective `reps` times, collective over comm: op MPILAB_ML_SCATTER or
 * MPILAB_ML_GATHER, lanes 0 = the native MPI_Scatter / MPI_Gather, else multilane with P =
 * lanes (1 = single-lane), `bytes` per rank (MPI_BYTE).  One untimed warm-up run whose data
 * is checked byte for byte first; a barrier before every repetition.
 * With cs (synchronised clocks, mpilab_clocksync_run): times[k] = latest end over all ranks
 * minus the root's start, on the common time base (the root starts a scatter and ends a
 * gather; ranks that leave the barrier early do not count their wait).  Without (NULL):
 * max over ranks of (own end - own start), which includes the barrier's exit skew.
 * wall, if non-NULL, gets the root's CLOCK_REALTIME at the start and end of the first timed
 * repetition (to line up with samples taken outside MPI).  phases, if non-NULL (needs cs),
 * gets the mean over the repetitions of the multilane phase marks, seconds after the root's
 * start, in the order of mpilab_multilane_sim_sites' phases: the first and the last lane's
 * WAN start, the first and the last lane's arrival across the WAN (NAN where no rank
 * passed the mark, e.g. native).  Returns 0, 1 if the data was wrong, -1 on errors (reason
 * in mpilab_multilane_last_error()). */
int mpilab_multilane_run_timed(MPI_Comm comm, const mpilab_grid_t *g, int op, int lanes, int root,
                               size_t bytes, int reps, const mpilab_clocksync_t *cs,
                               double *times, double wall[2], double *phases);

/* ------------------------------------------------------------------ experiments */
/* The whole multilane experiment of mpilab-multilane (docs/multilane.md), collective over
 * comm with the same arguments on every rank: with `model`, the model's inputs
 * (mpilab_multilane_measure with model_bytes, model_reps); the clocks synchronised
 * (SKaMPI); then for each operation in `ops`, each size and each chosen implementation,
 * mpilab_multilane_run_timed with `reps` repetitions.  `lanes` is the multilane P: a
 * number 1..P_sup, MPILAB_ML_LANES_OPT (the schedule model's P_opt per operation and size;
 * needs the model) or MPILAB_ML_LANES_ALL (1..P_sup).  The caller checks the arguments
 * (lanes range, sizes * ranks within int).  `progress`, if set, is called after each run
 * on every rank; `checkpoint`, if set, is called on every rank before it with the document
 * so far (every completed run in "runs"; borrowed, not to be kept), so that a caller can
 * keep the completed measurements of a run that is stopped.  Returns the mpilab.multilane/1 document (jansson; the caller decrefs),
 * or NULL with a one-line reason in err (the same on every rank). */
enum { MPILAB_ML_LANES_OPT = 0, MPILAB_ML_LANES_ALL = -1 };
typedef struct mpilab_multilane_experiment {
    const char *sites;           /* how the grid was built: recorded as grid.source */
    int root;
    unsigned ops;                /* bits 1 << MPILAB_ML_SCATTER, 1 << MPILAB_ML_GATHER */
    int native, single, multilane; /* which implementations to time */
    int lanes;
    const size_t *sizes;         /* bytes per rank */
    size_t nsizes;
    int reps;
    int model;
    size_t model_bytes;
    int model_reps;
    size_t alpha_bytes;          /* with model: calibrate alpha per operation at this size
                                    (0: do not; alpha then stays the measure's value) */
    /* after each run: its median over the repetitions (the figure mpilab multilane report
     * shows) */
    void (*progress)(void *arg, const char *op, const char *impl, int lanes, size_t bytes,
                     double median);
    void *progress_arg;
    void (*checkpoint)(void *arg, struct json_t *doc_so_far);
    void *checkpoint_arg;
} mpilab_multilane_experiment_t;

struct json_t *mpilab_multilane_experiment_run(MPI_Comm comm, const mpilab_grid_t *g,
                                               const mpilab_multilane_experiment_t *x,
                                               char *err, size_t errlen);
/* The implementation's name in the document: code 0 "native", > 0 "single", < 0
 * "multilane". */
const char *mpilab_multilane_impl_name(int code);

const char *mpilab_multilane_last_error(void);

#ifdef __cplusplus
}
#endif
#endif
