/* The built-in self-test's measurement part: a real MPI run whose clocks carry a known,
 * injected offset and drift per rank (mpilab/wtime.h), synchronised by the library and
 * checked against the truth. `mpilab selftest` drives it through mpilab-selftest. */
#ifndef MPILAB_SELFTEST_H
#define MPILAB_SELFTEST_H

#include <mpi.h>
#include <stddef.h>

#include "mpilab/clocksync.h"
#include "mpilab/loggp.h"
#include "mpilab/p2p.h"
#include "mpilab/robust.h"
#include "mpilab/wtime.h"

#ifdef __cplusplus
extern "C" {
#endif

/* One rank after one synchronisation. Offsets and drifts in the model of clocksync.h
 * (local = offset + (1 + drift) ref, from the sync's origin t0). */
typedef struct mpilab_clock_check {
    int sync, rank;
    double true_offset, true_drift; /* from the injected errors of this rank and rank 0 */
    double est_offset, est_drift;   /* what the synchronisation found */
    /* At a moment right after the synchronisation: the rank's own reading converted to
     * rank 0's time base by the model, minus rank 0's true reading at that moment (known
     * exactly because all ranks share one physical clock on one node). Seconds. */
    double error;
    double uncertainty; /* the uncertainty the synchronisation reported for the rank */
    int attempts;       /* synchronisation attempts (mpilab_clocksync_run repeats preempted ones) */
    int precise;        /* the kept attempt stated <= MPILAB_SYNC_TARGET_S for every rank */
    double drift_uncertainty; /* the drift bound the synchronisation reported (s/s) */
    /* error one second after `error`'s moment (derived exactly: the injected clocks are
     * linear in the node's clock); its bound is uncertainty + drift_uncertainty * 1 s */
    double error_1s;
    int stopped; /* why the synchronisation made no further attempt (mpilab_sync_stop_t) */
} mpilab_clock_check_t;

/* Collective over comm (all ranks on one node: one physical clock). Injects plan's errors
 * (plan NULL: none, the synchronisation's own error on an ideal clock), runs nsyncs
 * synchronisations with `method`, a short random pause (0..2 ms) before each, checks
 * every rank > 0 after each, and restores this process's previous injection.
 * out (rank 0, may be NULL elsewhere) receives nsyncs * (size - 1) checks, sync-major.
 * Returns 0, or -1 with a one-line reason (same on every rank). */
int mpilab_selftest_clock(MPI_Comm comm, const mpilab_inject_plan_t *plan, mpilab_sync_method_t method,
                          size_t nsyncs, mpilab_clock_check_t *out, char *err, size_t errlen);

/* The model fits against synthetic samples of a link of known parameters: a one-way
 * time os + L + orr + max(0, m - burst) G (a shaper lets `burst` bytes through at once),
 * a gap g0 + G m, overheads os, orr; sizes 0, 64, 128, ..., 1 MiB, 30 samples per size
 * and quantity, of which a fraction `delayed` is delayed by an exponential with mean 20%
 * of the time (a busy machine) and the rest lies within 0.2% above the truth; with
 * `outliers`, one sample per size and quantity is 1000x its value. */
typedef struct mpilab_fit_truth {
    double L, G, burst, os, orr, g0;
} mpilab_fit_truth_t;

typedef struct mpilab_fit_check {
    mpilab_param_t alpha, beta; /* robust Hockney (truth: os + L + orr, G) */
    mpilab_param_t L, G;        /* robust LogGP */
    mpilab_loggp_t median_fit;  /* the former estimator (per-size medians, least squares) */
} mpilab_fit_check_t;

/* Returns 0, or -1 with a one-line reason. */
int mpilab_selftest_fit(const mpilab_fit_truth_t *t, unsigned long seed, double delayed, int outliers,
                        mpilab_fit_check_t *out, char *err, size_t errlen);

/* One real link measured and fitted both ways, for ground-truth checks (the testbed, with
 * a configured delay and rate): ping-pong round trips (mpilab_p2p_measure) and the LogGP
 * quantities (mpilab_loggp_measure) between the two ranks of comm at every size, then
 *   robust: mpilab_hockney_fit_samples (one-way = half the round trip) and
 *           mpilab_loggp_fit_samples, with intervals and flags;
 *   former: least squares on per-size means (Hockney, whole range) and the LogGP fit on
 *           per-size medians over the least-squares protocol split (what mpilab-bench used).
 * Collective over a 2-rank comm; results on every rank. Returns 0, or -1 with a reason. */
typedef struct mpilab_link_fit {
    int hockney_ok, loggp_ok, former_hockney_ok, former_loggp_ok;
    mpilab_hockney_robust_t hockney;
    mpilab_loggp_robust_t loggp;
    mpilab_hockney_t former_hockney;
    mpilab_loggp_t former_loggp;
    char hockney_err[128], loggp_err[128];
    /* per size (the first 64): the robust Hockney fit's one-way value (half the minimum round
     * trip) and its residual, and the median half round trip */
    double oneway_min[64], oneway_residual[64], oneway_median[64];
    /* per size: the ping-pong's repetitions (valid samples) and the mean of the lowest
     * (up to 8) spacings of its one-way samples, the scale of the minimum's interval */
    size_t reps[64];
    double oneway_low_spacing[64];
} mpilab_link_fit_t;

/* rounds: at most this many rounds of measurement (1 = one); after the first, the sizes
 * whose minimum is imprecise (the mean of its lowest spacings above 1% of it, ping-pong or
 * LogGP round trip) are measured again and their samples added. */
int mpilab_selftest_link(MPI_Comm comm, const size_t *sizes, size_t nsizes, const mpilab_precision_t *prec,
                         size_t burst, size_t rounds, mpilab_link_fit_t *out, char *err, size_t errlen);

#ifdef __cplusplus
}
#endif
#endif
