/* Cost models of the multilane and single-lane grid scatter / gather (two sites: the
 * root's site with n0 ranks, the remote site with n1; M bytes per rank).  Times in
 * seconds, bandwidths in bytes per second.  docs/multilane.md derives them.
 *
 * The paper's model (Chiba, Endo, Matsuoka), 1 <= P <= P_sup = min(n0, n1):
 *   T(P) = L + X(P) M / b(P) + Y(P) M / b_LAN + alpha
 *   X(P) = ceil(n1 / P);  Y(P) = n0 + n1 - 1 - X(P) if n0 >= n1, else n1 + P - 2
 *   single lane: T = L + n1 M / b_WAN + (max(n0, n1) - 1) (l + M / b_LAN), b_WAN = b(1).
 * The schedule model (mpilab's, "sim"): the same measured quantities, but the steps are
 * played out as the implementation runs them: the root's prepare messages one after the
 * other on its LAN link, each lane starting the moment its data is there, the lanes that
 * are in flight at the same time sharing the WAN as the measured curve b(j) says (j = lanes
 * active at that moment, not P), each receiver's forwarding after its lane arrives, and the
 * root's own site overlapping all of it; gather reversed, with the root's LAN link taking
 * the senders' relays in arrival order.  Its time is the latest finish + alpha. */
#ifndef MPILAB_MULTILANE_MODEL_H
#define MPILAB_MULTILANE_MODEL_H

#include <stddef.h>

#include "mpilab/robust.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct mpilab_multilane_params {
    double L;        /* one-way WAN latency */
    double l;        /* one-way LAN latency */
    double alpha;    /* non-transfer overhead of a collective */
    double b_lan;    /* LAN bandwidth of one pair */
    const double *b; /* b[j-1]: per-pair WAN bandwidth while j pairs stream at once */
    size_t nb;       /* j = 1..nb measured */
} mpilab_multilane_params_t;

enum { MPILAB_ML_SCATTER = 0, MPILAB_ML_GATHER = 1 };

/* X(P) and Y(P); 0 for P = 0 or P > min(n0, n1). */
size_t mpilab_multilane_x(size_t n0, size_t n1, size_t P);
size_t mpilab_multilane_y(size_t n0, size_t n1, size_t P);
/* The paper's T(P); NAN for bad arguments (P out of 1..min(n0, n1, nb), non-positive or
 * non-finite bandwidths, negative latencies or M). */
double mpilab_multilane_time(const mpilab_multilane_params_t *m, size_t n0, size_t n1, size_t P,
                             double M);
/* The paper's single-lane prediction (b_WAN = b[0]); NAN for bad arguments. */
double mpilab_single_lane_time(const mpilab_multilane_params_t *m, size_t n0, size_t n1,
                               double M);
/* The schedule model's time of scatter (op = MPILAB_ML_SCATTER) or gather; P = 1 is the
 * single-lane baseline.  NAN for bad arguments. */
double mpilab_multilane_sim_time(const mpilab_multilane_params_t *m, int op, size_t n0,
                                 size_t n1, size_t P, double M);
/* argmin over P = 1..min(n0, n1, nb) of the paper's T(P) (op < 0) or of the schedule model
 * for op; the smallest P on ties.  0 for bad arguments.  *t gets the minimum if non-NULL. */
/* The schedule model for S - 1 >= 1 remote sites of nrem[0..nsr-1] ranks (the root's
 * site feeds every remote site over its own P lanes, sender k carrying lane k of each, as
 * the implementation does; all flows share the root's uplink as the curve b(j) says, j =
 * flows in flight, and a node with several flows in flight splits b(1) among them).
 * phases (may be NULL) gets the predicted phase marks on the root's time axis (start of
 * the call = 0), as the experiment records them (docs/multilane.md):
 *   [0], [1]  the first and the last lane's WAN start (scatter: its data at the sender;
 *             gather: its run collected at the remote receiver),
 *   [2], [3]  the first and the last lane's arrival across the WAN (gather: lanes k >= 1
 *             only, the root's own lanes' arrival is not observable; NAN if P = 1).
 * mpilab_multilane_sim_time is this with one remote site.  NAN for bad arguments. */
enum { MPILAB_ML_NPHASES = 4 };
double mpilab_multilane_sim_sites(const mpilab_multilane_params_t *m, int op, size_t n0,
                                  const size_t *nrem, size_t nsr, size_t P, double M,
                                  double phases[MPILAB_ML_NPHASES]);
size_t mpilab_multilane_popt(const mpilab_multilane_params_t *m, int op, size_t n0, size_t n1,
                             double M, double *t);

/* alpha from n timed runs t[] of a collective whose model time without alpha is base
 * (mpilab_multilane_calibrate_alpha): raw = mean(t) - base, lo/hi = raw -/+ t(0.975, n-1)
 * s / sqrt(n) (NAN and MPILAB_PARAM_NO_CI when n < 2), value = raw if raw > 0, else 0 with
 * MPILAB_PARAM_CLAMPED (also when raw is not finite): an impossible overhead is never
 * reported as a fitted value. */
void mpilab_multilane_alpha_estimate(const double *t, int n, double base, mpilab_param_t *out);

#ifdef __cplusplus
}
#endif
#endif
