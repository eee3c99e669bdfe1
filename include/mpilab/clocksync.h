/* Clock synchronisation: offset and linear drift of every rank's MPI_Wtime clock
 * relative to the clock of rank 0 of a communicator, with a quality figure. */
#ifndef MPILAB_CLOCKSYNC_H
#define MPILAB_CLOCKSYNC_H

#include <mpi.h>
#include "mpilab/mpi_check.h"
#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum mpilab_sync_method {
    /* SKaMPI-style: offset from the ping-pong with the minimum round trip, estimated at
     * two points in time; drift from the line through the two estimates. */
    MPILAB_SYNC_SKAMPI = 0,
    /* ReproMPI JK/HCA-style: many ping-pongs over a period, the minimum-round-trip
     * exchange of every batch kept, linear regression of local on reference time. */
    MPILAB_SYNC_REGRESSION = 1,
    /* Hierarchical (after ReproMPI's): node-aware k-nomial trees of radix
     * MPILAB_SYNC_TREE_RADIX (the ranks of a node, by processor name, under the node's lowest
     * rank; the nodes' leaders under rank 0), every parent synchronising its children
     * SKaMPI-style one after the other, all parents at once; rank 0 composes each rank's
     * model along its path to the root, adding the pairs' uncertainties. O((k - 1) log_k p)
     * time where the flat methods take O(p); a rank's path crosses the network only between
     * leaders. */
    MPILAB_SYNC_HIERARCHICAL = 2,
    /* Exact: every rank reads one global clock (the SMPI build, where MPI_Wtime is SimGrid's
     * simulated time, and no clock injection on any rank: mpilab_clock_is_global). Nothing is
     * probed: every rank's model is the identity with zero uncertainty and zero residual,
     * because it is exactly true. Anywhere else it would be false: refused (MPI_ERR_ARG). */
    MPILAB_SYNC_EXACT = 3,
    /* Leaders: the node-aware tree of MPILAB_SYNC_HIERARCHICAL inside every node, but rank 0
     * synchronises every node's leader itself (the leaders' tree is flat). Every rank's path
     * crosses the network once, from rank 0, as a flat method's probe does, so its bound is a
     * flat method's plus node-local hops; rank 0's work is O(nodes) instead of O(p). With one
     * rank per node it probes every rank from rank 0, as the flat methods do. */
    MPILAB_SYNC_LEADERS = 4,
    /* Auto: resolved once, collectively, by mpilab_sync_resolve (mpilab_sync_auto_choice):
     * the cheapest method measured to keep the flat method's precision. */
    MPILAB_SYNC_AUTO = 5
} mpilab_sync_method_t;

/* Clock model of one rank:  local = offset + (1 + drift) * ref,
 * where ref is rank 0's clock and both are measured from a common origin t0
 * (rank 0's MPI_Wtime at the start of the synchronisation). */
typedef struct mpilab_clock_model {
    double offset;   /* seconds */
    double drift;    /* dimensionless (s/s) */
    double residual; /* quality: seconds, see mpilab_clocksync_t */
    /* Bound on the offset error at the end of the synchronisation (seconds; 0 for rank 0
     * and for the pure fits): half the round trip of the exchanges the offset was taken
     * from (a message takes at least zero time each way, so an exchange cannot place the
     * remote reading more precisely; for the regression's line through many exchanges,
     * that times its worst-case factor, mpilab_clock_fit_bounds), plus drift_uncertainty
     * times the time from those exchanges to the end of the synchronisation. */
    double uncertainty;
    /* Bound on the drift error (s/s): the model's error grows by this much per second
     * after the synchronisation. For an offset-only model (drift not resolved), the drift
     * estimate's size plus its resolution; else the resolution (the largest round trip
     * over the sampled span for two exchanges; the least-squares line's worst-case slope
     * error, mpilab_clock_fit_bounds, for the regression). */
    double drift_uncertainty;
} mpilab_clock_model_t;

/* Pure fit: least squares of local[k] ~ offset + (1 + drift) * ref[k] over n >= 2 points
 * (at least two distinct ref values). residual = largest absolute deviation of a point
 * from the fitted line. Returns 0, or -1 if the data cannot determine a line. */
int mpilab_clock_fit(const double *ref, const double *local, size_t n, mpilab_clock_model_t *out);

/* The same fit, keeping the drift only where the data resolve it: if |drift| is less than z
 * standard errors of the slope (from the fit's residuals; needs n >= 3), the model is
 * offset-only: drift 0, offset = median of local[k] - ref[k] (robust to a delayed probe).
 * A short sampling span on a busy machine cannot tell drift from noise, and a spurious
 * drift, extrapolated, becomes a large offset error. Returns 0 or -1 as mpilab_clock_fit. */
int mpilab_clock_fit_significant(const double *ref, const double *local, size_t n, double z,
                                 mpilab_clock_model_t *out);

/* Worst-case error of the least-squares line through points whose local readings are each
 * off by at most e (any sign, not independent): its value at ref = at is off by at most
 * e * *value_factor, its slope (the drift) by at most e * *slope_factor. For two points
 * value_factor is 1 at either point and slope_factor 2 / span; for many evenly spaced
 * points about 1.67 at an end and 3 / span (2.88 / span for 24): the bound a delayed run of probes can reach.
 * Returns 0, or -1 without two distinct ref values. */
int mpilab_clock_fit_bounds(const double *ref, size_t n, double at, double *value_factor,
                            double *slope_factor);

/* Why mpilab_clocksync_run made no further attempt: every rank within the target; the
 * repeats' budget spent; the last attempt improved no rank (the uncertainty is the link's
 * round trip, not a preemption); MPILAB_SYNC_ATTEMPTS made. */
typedef enum mpilab_sync_stop {
    MPILAB_SYNC_STOP_PRECISE = 0,
    MPILAB_SYNC_STOP_BUDGET,
    MPILAB_SYNC_STOP_NO_GAIN,
    MPILAB_SYNC_STOP_ATTEMPTS,
} mpilab_sync_stop_t;

/* "precise", "budget", "no_gain", "attempts" */
const char *mpilab_sync_stop_name(int stop);

typedef struct mpilab_clocksync {
    mpilab_sync_method_t method;
    int nranks;
    double t0;                    /* origin on rank 0's clock */
    mpilab_clock_model_t *ranks;  /* [nranks], known on every rank; rank 0 = {0,0,0} */
    /* Per-rank residual = |offset predicted by the model - offset measured by an
     * independent minimum-round-trip check after the fit|; max over ranks. When the check
     * probe is tighter than the model extrapolated to it, the model's offset is then
     * re-anchored at the check (the residual is the disagreement before). */
    double max_residual;
    double duration;              /* seconds spent synchronising (all attempts) */
    /* Attempts made (see mpilab_clocksync_run), the largest per-rank uncertainty of the
     * models kept (per rank, the best attempt), and whether it is within
     * MPILAB_SYNC_TARGET_S. */
    int attempts;
    double max_uncertainty;
    int precise;
    /* why the attempts ended (mpilab_sync_stop_t; mpilab_sync_stop_name) */
    int stopped;
    double first_duration; /* seconds the first attempt took (duration: all attempts) */
    /* rank 0's clock at the moment every rank's uncertainty is stated for (the end) */
    double t_end;
    /* the method asked for (MPILAB_SYNC_AUTO, or method itself) and the nodes auto counted
     * (0 when it did not count) */
    mpilab_sync_method_t requested;
    int nodes;
} mpilab_clocksync_t;

/* A synchronisation stating more than MPILAB_SYNC_TARGET_S of uncertainty for some rank is
 * repeated, at most MPILAB_SYNC_ATTEMPTS times in all and while the repeats so far took less
 * than MPILAB_SYNC_BUDGET_S (the budget of the repeats: the first attempt, whose drift
 * window alone takes MPILAB_SYNC_DRIFT_WINDOW_S, is not counted against it, so an imprecise
 * first attempt is always repeated at least once), each attempt probing longer than the one
 * before (up to MPILAB_SYNC_MAX_EFFORT times the first's probes); per rank the model with
 * the least uncertainty (carried to the end of the last attempt) is kept, and `precise` says
 * whether every rank reached the target. */
#define MPILAB_SYNC_TARGET_S 5e-6
#define MPILAB_SYNC_ATTEMPTS 6
#define MPILAB_SYNC_BUDGET_S 1.0
#define MPILAB_SYNC_MAX_EFFORT 4
/* Drift: the first attempt probes every pair twice, the second pass this long after the
 * start; the drift is the line through the two passes' offset readings, known to within the
 * sum of their uncertainties over the time between them (1-2 us / 0.8 s, 2-5 ppm, on a
 * quiet node, where one pass alone resolves only round trip / span, hundreds of ppm). */
#define MPILAB_SYNC_DRIFT_WINDOW_S 0.8
/* Attempts are compared by their uncertainty this long after the synchronisation (a run
 * measures after it); an attempt that improves no rank ends the repetition. */
#define MPILAB_SYNC_HORIZON_S 1.0

/* Radix of the hierarchical method's trees. A rank's stated uncertainty is the sum of its
 * path's pair bounds (each about half a round trip, as a flat method's): with message delays
 * known only to be >= 0, the pairs' errors can all have one sign, so no composition can
 * state less for a rank that rank 0 never exchanged messages with. The depth (a rank's
 * number of non-zero base-k digits in its tree: at most 2 up to 1024 members, 3 up to 32768)
 * is what the radix buys, at k - 1 pair synchronisations per round; the node-aware trees
 * make every hop but the leaders' a node-local one, whose bound is small. */
#define MPILAB_SYNC_TREE_RADIX 32

/* Auto's rule (pure): MPILAB_SYNC_SKAMPI below MPILAB_SYNC_AUTO_MIN_RANKS ranks, else
 * MPILAB_SYNC_LEADERS, whatever the number of nodes. Why (docs/scale-clocksync.md, "Leaders
 * and auto"): in simulation, at 128 and 256 ranks with 1 to 32 ranks
 * per node, symmetric and asymmetric networks, leaders' stated bounds (mean and largest) were
 * 0.62-1.003x skampi's (39 of 40 at or below), its real errors equal to 1 ns and its cost
 * lower; at 64 ranks the trees' were up to 1.05x skampi's. A rank's bound can only be as
 * tight as a flat method's if rank 0 exchanged messages with its node (the shift argument,
 * MPILAB_SYNC_TREE_RADIX), so with one rank per node no O(log p) scheme keeps the flat
 * precision: there leaders probes every rank from rank 0, O(p), and
 * MPILAB_SYNC_HIERARCHICAL is the O(log p) choice with about twice the bound. */
#define MPILAB_SYNC_AUTO_MIN_RANKS 128
mpilab_sync_method_t mpilab_sync_auto_choice(int size);
/* Collective over comm: *resolved = method, or for MPILAB_SYNC_AUTO the rule's choice; from
 * MPILAB_SYNC_AUTO_MIN_RANKS ranks on *nodes = the number of nodes (distinct processor names,
 * counted on rank 0 and broadcast; for the record), else 0. Returns 0 or an MPI error code. */
int mpilab_sync_resolve(MPI_Comm comm, mpilab_sync_method_t method, mpilab_sync_method_t *resolved,
                        int *nodes);

/* Collective over comm: synchronise every rank's clock with rank 0's (repeated when
 * preempted, see MPILAB_SYNC_ATTEMPTS; MPILAB_SYNC_AUTO resolved first, every call: a caller
 * that synchronises often resolves once). Returns 0 or an MPI error code. Free with mpilab_clocksync_free. */
int mpilab_clocksync_run(MPI_Comm comm, mpilab_sync_method_t method, mpilab_clocksync_t *out);
/* The same with the drift window in seconds (0: one probing pass, drift resolved only as far
 * as that pass's span allows). mpilab_clocksync_run uses MPILAB_SYNC_DRIFT_WINDOW_S. */
int mpilab_clocksync_run_window(MPI_Comm comm, mpilab_sync_method_t method, double window,
                                mpilab_clocksync_t *out);
/* The same with every knob: the first attempt's drift window, the uncertainty target below
 * which no repeat is made, and the budget of the repeats (seconds after the first attempt's
 * end; a repeat started within it runs to its end). mpilab_clocksync_run_window uses
 * MPILAB_SYNC_TARGET_S and MPILAB_SYNC_BUDGET_S. */
typedef struct mpilab_sync_opts {
    double window;
    double target;
    double budget;
} mpilab_sync_opts_t;
int mpilab_clocksync_run_opts(MPI_Comm comm, mpilab_sync_method_t method, const mpilab_sync_opts_t *o,
                              mpilab_clocksync_t *out);
void mpilab_clocksync_free(mpilab_clocksync_t *cs);

/* Keep, per rank r >= 1, the better of out's and cur's model (the lesser uncertainty
 * MPILAB_SYNC_HORIZON_S after the moment both are stated for: uncertainty + drift_uncertainty
 * * horizon; both must have the same nranks): cur's model is re-expressed
 * from its origin cur->t0 to out->t0 first (offset - drift * (cur->t0 - out->t0)), so that
 * mpilab_clock_to_global(out, r, .) gives what cur's model gave. Updates out->max_residual;
 * returns how many ranks took cur's model. Used between the attempts of
 * mpilab_clocksync_run. */
int mpilab_clocksync_keep_better(mpilab_clocksync_t *out, const mpilab_clocksync_t *cur);

/* Resynchronisation during long runs: cur (a later synchronisation, same nranks) takes, per
 * rank, the drift of the line through prev's and cur's offsets at their ends, known to within
 * (u_prev + u_cur) / (cur->t_end - prev->t_end), or prev's own drift and drift uncertainty
 * (a clock's drift does not change between the two), whichever bound is tighter, when it is
 * tighter than cur's own (the offset stays cur's). Returns how many ranks took one. Pure: no
 * communication. */
int mpilab_clocksync_refine_drift(mpilab_clocksync_t *cur, const mpilab_clocksync_t *prev);

/* Convert a local MPI_Wtime value of `rank` to the global (rank 0) time base, and back. */
double mpilab_clock_to_global(const mpilab_clocksync_t *cs, int rank, double local);
double mpilab_clock_to_local(const mpilab_clocksync_t *cs, int rank, double global);

/* 1 when every rank's MPI_Wtime reads one global clock: the SMPI build (SimGrid's simulated
 * time, the same for every simulated rank) without a clock injected on this rank
 * (mpilab/wtime.h); else 0. MPILAB_SYNC_EXACT needs it on every rank. */
int mpilab_clock_is_global(void);
/* 1 in the SMPI build (whatever is injected), else 0. */
int mpilab_clock_global_build(void);

const char *mpilab_sync_method_name(mpilab_sync_method_t m);
/* "skampi", "regression", "hierarchical", "exact", "leaders" or "auto" -> method; returns 0, or
 * -1 if unknown. */
int mpilab_sync_method_parse(const char *s, mpilab_sync_method_t *out);

#ifdef __cplusplus
}
#endif
#endif
