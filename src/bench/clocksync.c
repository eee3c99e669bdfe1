/* Clock synchronisation against rank 0 (see include/mpilab/clocksync.h).
 *
 * Every exchange is a probe: rank 0 stamps s1, sends a command to rank r, r stamps its
 * clock l on receipt and returns l, rank 0 stamps s2. The probe pairs the reference time
 * (s1 + s2) / 2 with the local time l; the shorter the round trip s2 - s1, the tighter
 * the pairing, so both methods keep minimum-round-trip probes only. */
#include "mpilab/clocksync.h"
#include "mpilab/wtime.h"

#include <gsl/gsl_sort.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define TAG_CMD 7101
#define TAG_REPLY 7102
#define TAG_MODEL 7103

/* SKaMPI-style: probes until no new minimum for SK_PATIENCE probes (bounded). */
#define SK_MIN_PROBES 10
#define SK_MAX_PROBES 200
#define SK_PATIENCE 8
#define SK_GAP_S 0.005 /* least time between the two offset estimates */
/* Regression: batches of probes, the minimum-round-trip probe of each batch kept. */
#define RG_BATCHES 24
#define RG_BATCH 6
#define RG_SPAN_S 0.02 /* batches spread over at least this long */
#define RG_DRIFT_Z 3.0 /* drift kept only if at least 3 standard errors from zero */
#define RG_RTT_KEEP 1.25    /* batches kept: best RTT <= 1.25 x the least one ... */
#define RG_RTT_SLACK_S 2e-7 /* ... + 0.2 us */
#define RG_MIN_KEPT 6
#define VERIFY_PROBES 10
/* Quartz oscillators drift by tens of ppm; a fitted drift beyond 1000 ppm is not a clock
 * but a run of delayed probes on a loaded machine (a spurious 1e-2 was seen with 4 ranks on
 * 2 busy cores): such a model is treated as unresolved (offset-only). */
#define MAX_PLAUSIBLE_DRIFT 1e-3
#define NM 6 /* doubles per rank in the model exchange */
/* slots: offset, drift, residual, uncertainty, drift uncertainty, anchor (ref time at which
 * the offset is known to within the uncertainty) */

typedef struct probe {
    double ref, local, rtt;
} probe_t;

static int do_probe(MPI_Comm comm, int r, double t0, probe_t *p)
{
    double cmd = 1.0, l = 0.0;
    double s1 = mpilab_wtime();
    int rc = MPI_Send(&cmd, 1, MPI_DOUBLE, r, TAG_CMD, comm);
    if (rc == MPI_SUCCESS)
        rc = MPI_Recv(&l, 1, MPI_DOUBLE, r, TAG_REPLY, comm, MPI_STATUS_IGNORE);
    double s2 = mpilab_wtime();
    p->ref = 0.5 * (s1 + s2) - t0;
    p->local = l - t0;
    p->rtt = s2 - s1;
    return rc;
}

static int end_phase(MPI_Comm comm, int r)
{
    double cmd = 0.0;
    return MPI_Send(&cmd, 1, MPI_DOUBLE, r, TAG_CMD, comm);
}

/* Probed side of one phase: answer the prober's probes until told to stop. */
static int serve(MPI_Comm comm, int prober)
{
    for (;;) {
        double cmd = 0.0;
        int rc = MPI_Recv(&cmd, 1, MPI_DOUBLE, prober, TAG_CMD, comm, MPI_STATUS_IGNORE);
        if (rc != MPI_SUCCESS)
            return rc;
        if (cmd == 0.0)
            return MPI_SUCCESS;
        double l = mpilab_wtime();
        rc = MPI_Send(&l, 1, MPI_DOUBLE, prober, TAG_REPLY, comm);
        if (rc != MPI_SUCCESS)
            return rc;
    }
}

/* SKaMPI-style minimum-round-trip probe: repeat until no new minimum for a while. */
static int min_rtt_probe(MPI_Comm comm, int r, double t0, int min_probes, int effort,
                         probe_t *best)
{
    best->rtt = INFINITY;
    int since = 0;
    for (int k = 0; k < SK_MAX_PROBES * effort; k++) {
        probe_t p;
        int rc = do_probe(comm, r, t0, &p);
        if (rc != MPI_SUCCESS)
            return rc;
        if (p.rtt < best->rtt) {
            *best = p;
            since = 0;
        } else {
            since++;
        }
        if (k + 1 >= min_probes * effort && since >= SK_PATIENCE * effort)
            break;
    }
    return MPI_SUCCESS;
}

static void sleep_until(double t)
{
    double now;
    while ((now = mpilab_wtime()) < t) {
        double d = t - now;
        struct timespec ts = {(time_t)d, (long)((d - floor(d)) * 1e9)};
        nanosleep(&ts, NULL);
    }
}

/* SKaMPI, one rank's model from its two minimum-round-trip probes a (first) and b (after
 * the gap): mr = the rank's NM model slots. */
static void skampi_model(const probe_t *a, const probe_t *b, double *mr)
{
    double ref[2] = {a->ref, b->ref}, loc[2] = {a->local, b->local};
    mpilab_clock_model_t m;
    /* Each offset estimate is uncertain by up to half its round trip, so the drift
     * between them by up to (rtt_a + rtt_b) / 2 / gap: a drift below that bound is
     * not resolved and would only add an extrapolation error; use the offset of the
     * tighter probe instead. */
    double bound = 0.5 * (a->rtt + b->rtt) / fabs(b->ref - a->ref);
    int fitted = mpilab_clock_fit(ref, loc, 2, &m) == 0;
    if (!fitted || !(fabs(m.drift) > bound) || fabs(m.drift) > MAX_PLAUSIBLE_DRIFT) {
        const probe_t *t = a->rtt < b->rtt ? a : b;
        /* the unresolved drift may be as large as the estimate plus its bound */
        mr[4] = (fitted ? fmin(fabs(m.drift), MAX_PLAUSIBLE_DRIFT) : 0.0) + bound;
        mr[5] = t->ref;
        m.offset = t->local - t->ref;
        m.drift = 0.0;
        mr[3] = 0.5 * t->rtt;
    } else {
        mr[3] = 0.5 * fmax(a->rtt, b->rtt);
        mr[4] = bound;
        mr[5] = b->ref;
    }
    mr[0] = m.offset;
    mr[1] = m.drift;
}

/* SKaMPI, rank 0's two probing phases (a: the first probe of every rank, scratch).  rc: the
 * status so far; returns the new one. */
static int skampi_phases(MPI_Comm comm, int size, double t0, probe_t *a, double *model,
                         int effort, int rc)
{
    for (int r = 1; r < size && rc == MPI_SUCCESS; r++) {
        rc = min_rtt_probe(comm, r, t0, SK_MIN_PROBES, effort, &a[r]);
        if (rc == MPI_SUCCESS)
            rc = end_phase(comm, r);
    }
    sleep_until(mpilab_wtime() + SK_GAP_S);
    for (int r = 1; r < size && rc == MPI_SUCCESS; r++) {
        probe_t b;
        rc = min_rtt_probe(comm, r, t0, SK_MIN_PROBES, effort, &b);
        if (rc == MPI_SUCCESS)
            rc = end_phase(comm, r);
        skampi_model(&a[r], &b, &model[NM * r]);
    }
    return rc;
}

/* Regression, rank 0 probing rank r: RG_BATCHES batches spread over RG_SPAN_S, the
 * minimum-round-trip probe of each in pts[]; then the end of r's phase. */
static int regression_batches(MPI_Comm comm, int r, double t0, int effort, probe_t *pts)
{
    int rc = MPI_SUCCESS;
    double begin = mpilab_wtime();
    for (int bt = 0; bt < RG_BATCHES && rc == MPI_SUCCESS; bt++) {
        sleep_until(begin + RG_SPAN_S * bt / (RG_BATCHES - 1));
        pts[bt].rtt = INFINITY;
        for (int k = 0; k < RG_BATCH * effort && rc == MPI_SUCCESS; k++) {
            probe_t p;
            rc = do_probe(comm, r, t0, &p);
            if (p.rtt < pts[bt].rtt)
                pts[bt] = p;
        }
    }
    if (rc == MPI_SUCCESS)
        rc = end_phase(comm, r);
    return rc;
}

/* Regression: the batches used for the fit (ref, loc; returns how many) and the largest
 * round trip among them. */
static size_t regression_select(const probe_t *pts, double *ref, double *loc, double *maxrtt)
{
    /* Keep only batches whose best round trip is close to the least one: a
     * longer round trip means a delay on one leg, which shifts that point by up
     * to half the excess and, over a 5 ms span, tilts the drift (the same
     * minimum-RTT filtering JK/HCA apply). */
    double minrtt = INFINITY;
    for (int bt = 0; bt < RG_BATCHES; bt++)
        if (pts[bt].rtt < minrtt)
            minrtt = pts[bt].rtt;
    size_t kept = 0;
    *maxrtt = 0.0;
    for (int bt = 0; bt < RG_BATCHES; bt++) {
        if (pts[bt].rtt <= RG_RTT_KEEP * minrtt + RG_RTT_SLACK_S) {
            ref[kept] = pts[bt].ref;
            loc[kept] = pts[bt].local;
            *maxrtt = fmax(*maxrtt, pts[bt].rtt);
            kept++;
        }
    }
    if (kept < RG_MIN_KEPT) {
        /* Too few clean batches (a loaded machine delayed most of them): keep
         * the RG_MIN_KEPT with the least round trips, in time order. Taking all
         * of them instead let delayed legs decide the median (a 311 us offset
         * error seen under a CPU hog). */
        double rtts[RG_BATCHES];
        for (int bt = 0; bt < RG_BATCHES; bt++)
            rtts[bt] = pts[bt].rtt;
        gsl_sort(rtts, 1, RG_BATCHES);
        double cut = rtts[RG_MIN_KEPT - 1];
        kept = 0;
        *maxrtt = 0.0;
        for (int bt = 0; bt < RG_BATCHES && kept < RG_MIN_KEPT; bt++) {
            if (pts[bt].rtt <= cut) {
                ref[kept] = pts[bt].ref;
                loc[kept] = pts[bt].local;
                *maxrtt = fmax(*maxrtt, pts[bt].rtt);
                kept++;
            }
        }
    }
    return kept;
}

/* Regression, one rank's model from its batches: mr = the rank's NM model slots. */
static void regression_model(const probe_t *pts, double *mr)
{
    double ref[RG_BATCHES], loc[RG_BATCHES], maxrtt = 0.0;
    size_t kept = regression_select(pts, ref, loc, &maxrtt);
    mr[3] = 0.5 * maxrtt;
    mpilab_clock_model_t m = {pts[0].local - pts[0].ref, 0.0, 0.0, 0.0, 0.0};
    mpilab_clock_model_t plain = m;
    (void)mpilab_clock_fit(ref, loc, kept, &plain);
    (void)mpilab_clock_fit_significant(ref, loc, kept, RG_DRIFT_Z, &m);
    /* As for SKaMPI: every point may be off by half its round trip, so across
     * the sampled span a drift smaller than maxrtt / span is not resolved, however
     * significant the fit says it is (the points' errors are not independent when
     * a loaded machine delays a run of probes: a spurious 2.5e-3 was seen). */
    double lo = ref[0], hi = ref[0];
    for (size_t k = 1; k < kept; k++) {
        lo = fmin(lo, ref[k]);
        hi = fmax(hi, ref[k]);
    }
    if (m.drift != 0.0 && (!(fabs(m.drift) * (hi - lo) > maxrtt) || fabs(m.drift) > MAX_PLAUSIBLE_DRIFT))
        (void)mpilab_clock_fit_significant(ref, loc, kept, INFINITY, &m);
    double resolution = hi > lo ? maxrtt / (hi - lo) : 0.0;
    if (m.drift != 0.0) {
        mr[4] = resolution;
        mr[5] = hi;
    } else { /* offset-only: the median over the span, drift unresolved */
        mr[4] = fmin(fabs(plain.drift), MAX_PLAUSIBLE_DRIFT) + resolution;
        mr[5] = 0.5 * (lo + hi);
    }
    mr[0] = m.offset;
    mr[1] = m.drift;
}

/* Regression, rank 0's probing phase (pts: RG_BATCHES probes, scratch). */
static int regression_phase(MPI_Comm comm, int size, double t0, probe_t *pts, double *model,
                            int effort, int rc)
{
    for (int r = 1; r < size && rc == MPI_SUCCESS; r++) {
        rc = regression_batches(comm, r, t0, effort, pts);
        regression_model(pts, &model[NM * r]);
    }
    return rc;
}

/* The check of one probed rank r: an independent minimum-round-trip probe after the fit
 * gives r's residual (mr[2]) and re-anchors the model when the probe is tighter than the
 * model extrapolated to it (drift kept). */
static int verify_one(MPI_Comm comm, int r, double t0, double *mr, int effort)
{
    probe_t v;
    int rc = min_rtt_probe(comm, r, t0, VERIFY_PROBES, effort, &v);
    if (rc == MPI_SUCCESS)
        rc = end_phase(comm, r);
    double predicted = mr[0] + (1.0 + mr[1]) * v.ref;
    mr[2] = fabs(v.local - predicted);
    double extrapolated = mr[3] + mr[4] * fabs(v.ref - mr[5]);
    if (0.5 * v.rtt < extrapolated) {
        mr[0] = v.local - (1.0 + mr[1]) * v.ref;
        mr[3] = 0.5 * v.rtt;
        mr[5] = v.ref;
    }
    return rc;
}

/* Rank 0's check phase (verify_one for every rank); then every uncertainty is carried to
 * the end of the synchronisation. */
static int verify_phase(MPI_Comm comm, int size, double t0, double *model, int effort, int rc)
{
    for (int r = 1; r < size && rc == MPI_SUCCESS; r++)
        rc = verify_one(comm, r, t0, &model[NM * r], effort);
    /* Every uncertainty is stated for the end of the synchronisation: an unresolved
     * (or imprecise) drift adds its bound times the time since the anchor. */
    double t_end = mpilab_wtime() - t0;
    for (int r = 1; r < size; r++) {
        double *mr = &model[NM * r];
        mr[3] += mr[4] * fabs(t_end - mr[5]);
    }
    return rc;
}

/* Drift over the window (clocksync.h, MPILAB_SYNC_DRIFT_WINDOW_S): a is a pair's model from
 * the first probing pass, b from the second; both know the offset local - ref at their
 * anchor to within their uncertainty there, so the line through the two readings has a
 * drift known to within (u_a + u_b) / (anchor_b - anchor_a). b becomes that model (anchored
 * at b's reading) when this bound is tighter than b's own. */
static void combine_drift(const double *a, double *b)
{
    double span = b[5] - a[5];
    if (!(span > 0.0))
        return;
    double ea = a[0] + a[1] * a[5], eb = b[0] + b[1] * b[5];
    double drift = (eb - ea) / span, du = (a[3] + b[3]) / span;
    if (!(du < b[4]) || !(fabs(drift) <= MAX_PLAUSIBLE_DRIFT)) /* see MAX_PLAUSIBLE_DRIFT */
        return;
    b[1] = drift;
    b[0] = eb - drift * b[5];
    b[4] = du;
}

/* Rank 0's probing of every rank with the flat methods (a: scratch per rank, pts: RG_BATCHES). */
static int flat_pass(MPI_Comm comm, mpilab_sync_method_t method, int size, double t0, probe_t *a, probe_t *pts,
                     double *model, int effort, int rc)
{
    if (method == MPILAB_SYNC_SKAMPI)
        return skampi_phases(comm, size, t0, a, model, effort, rc);
    return regression_phase(comm, size, t0, pts, model, effort, rc);
}

/* Rank 0's side of the flat synchronisation: probe every rank with the method (twice,
 * `window` seconds apart from t0, when window > 0: the drift over the window), check. */
static int root_side(MPI_Comm comm, mpilab_sync_method_t method, int size, double t0,
                     double *model, int effort, double window)
{
    int rc = MPI_SUCCESS;
    probe_t *a = calloc((size_t)size, sizeof *a);
    probe_t *pts = calloc(RG_BATCHES, sizeof *pts);
    double *second = window > 0.0 ? calloc((size_t)size * NM, sizeof *second) : NULL;
    if (!a || !pts || (window > 0.0 && !second))
        rc = MPI_ERR_NO_MEM;
    rc = flat_pass(comm, method, size, t0, a, pts, model, effort, rc);
    if (window > 0.0 && rc == MPI_SUCCESS) {
        sleep_until(t0 + window);
        rc = flat_pass(comm, method, size, t0, a, pts, second, effort, rc);
        for (int r = 1; r < size; r++) {
            combine_drift(&model[NM * r], &second[NM * r]);
            memcpy(&model[NM * r], &second[NM * r], NM * sizeof *model);
        }
    }
    rc = verify_phase(comm, size, t0, model, effort, rc);
    free(a);
    free(pts);
    free(second);
    return rc;
}

/* Hierarchical (a k-nomial tree of radix TREE_RADIX, after ReproMPI's hierarchical
 * synchronisation): in round j (j = 0, 1, ... while TREE_RADIX^j < size) every rank that is a
 * multiple of TREE_RADIX^(j+1) synchronises its children rank + i TREE_RADIX^j (i = 1 ..
 * TREE_RADIX - 1) against its own clock, one after the other, all parents at once. A rank's
 * parent is the rank with its lowest non-zero base-TREE_RADIX digit cleared, so its depth is
 * its number of such digits. Three sweeps of the rounds: a minimum-round-trip probe of every
 * pair, one shared gap (the drift window, or SK_GAP_S), a second probe of every pair (the
 * pair's SKaMPI model from the two), then the check of every pair (verify_one: residual and
 * re-anchoring), which also hands each child its pair model. Every pair's anchor is thus in
 * the last sweep, close to the end, and every pair's drift is resolved over at least the gap.
 * Rank 0 gathers the pair models and composes every rank's model along its path
 * (clocksync.h). */
#define TREE_RADIX MPILAB_SYNC_TREE_RADIX

/* The rank's slots (round j, child i: j (TREE_RADIX - 1) + i - 1) for size ranks. */
static int tree_slots(int size)
{
    int rounds = 0;
    for (long step = 1; step < size; step *= TREE_RADIX)
        rounds++;
    return rounds > 0 ? rounds * (TREE_RADIX - 1) : 1;
}

/* r's parent (r >= 1): r with its lowest non-zero base-TREE_RADIX digit cleared. */
static int tree_parent(int r)
{
    long step = 1;
    while ((r / step) % TREE_RADIX == 0)
        step *= TREE_RADIX;
    return (int)(r - ((r / step) % TREE_RADIX) * step);
}

/* One sweep of the rounds. check 0: every child probed once (minimum round trip, into
 * probe[slot]); check 1: every pair checked (verify_one on pair[NM * slot]; the drift of the
 * line from probe[slot], the first sweep's, to the check when tighter) and the model sent to
 * the child. A child answers its parent in its own round (and, check 1, receives
 * its pair model into mine), then sits out the later rounds. */
static int tree_sweep(MPI_Comm comm, int rank, int size, double t0, int effort, int check, probe_t *probe,
                      double *pair, double *mine)
{
    int rc = MPI_SUCCESS, j = 0;
    for (long step = 1; step < size && rc == MPI_SUCCESS; step *= TREE_RADIX, j++) {
        if (rank % (step * TREE_RADIX) != 0) { /* its lowest non-zero digit: its own round */
            int parent = (int)(rank - ((rank / step) % TREE_RADIX) * step);
            rc = serve(comm, parent);
            if (check && rc == MPI_SUCCESS)
                rc = MPI_Recv(mine, NM, MPI_DOUBLE, parent, TAG_MODEL, comm, MPI_STATUS_IGNORE);
            break;
        }
        for (int i = 1; i < TREE_RADIX && rank + i * step < size && rc == MPI_SUCCESS; i++) {
            int child = (int)(rank + i * step), s = j * (TREE_RADIX - 1) + i - 1;
            if (!check) {
                rc = min_rtt_probe(comm, child, t0, SK_MIN_PROBES, effort, &probe[s]);
                if (rc == MPI_SUCCESS)
                    rc = end_phase(comm, child);
                continue;
            }
            rc = verify_one(comm, child, t0, &pair[NM * s], effort);
            /* the drift over the longer span from the first sweep's probe to the check */
            double first[NM] = {probe[s].local - probe[s].ref, 0.0, 0.0, 0.5 * probe[s].rtt, 0.0, probe[s].ref};
            combine_drift(first, &pair[NM * s]);
            if (rc == MPI_SUCCESS)
                rc = MPI_Send(&pair[NM * s], NM, MPI_DOUBLE, child, TAG_MODEL, comm);
        }
    }
    return rc;
}

/* Rank 0: every rank's model from the pair models (all: NM per rank, r's model against its
 * parent), in rank order (a parent is below its children). Composition of
 * local_r = o + (1 + d) local_p and local_p = O + (1 + D) ref: offset o + (1 + d) O, drift
 * (1 + d)(1 + D) - 1. The uncertainties add: the pair's, carried from its anchor to t_end
 * at its drift uncertainty (both on the parent's clock, which reads O + (1 + D) t_end at
 * t_end to within the parent's uncertainty U), and the parent's U, scaled by the pair's
 * slope (1 + d, known to within the pair's drift uncertainty). */
static void tree_compose(const double *all, int size, double t_end, double *model)
{
    memset(model, 0, NM * sizeof *model);
    for (int r = 1; r < size; r++) {
        const double *c = &all[NM * r];
        const double *P = &model[NM * tree_parent(r)];
        double *m = &model[NM * r];
        double elapsed = fabs(P[0] + (1.0 + P[1]) * t_end - c[5]) + P[3];
        m[0] = c[0] + (1.0 + c[1]) * P[0];
        m[1] = (1.0 + c[1]) * (1.0 + P[1]) - 1.0;
        m[2] = c[2] + P[2];
        m[3] = c[3] + c[4] * elapsed + (1.0 + fabs(c[1]) + c[4]) * P[3];
        m[4] = (1.0 + fabs(c[1])) * P[4] + c[4] * (1.0 + fabs(P[1])) + c[4] * P[4];
        m[5] = t_end;
        /* each pair's drift is plausible, but a chain of them may add up past the bound
         * (-1029 ppm seen at depth 2 under ASan on a loaded machine): the composed model is
         * then offset-only at t_end, its drift unresolved (as a pair's is, see
         * MAX_PLAUSIBLE_DRIFT) */
        if (fabs(m[1]) > MAX_PLAUSIBLE_DRIFT) {
            m[0] += m[1] * t_end;
            m[4] += fmin(fabs(m[1]), MAX_PLAUSIBLE_DRIFT);
            m[1] = 0.0;
        }
    }
}

/* Every rank's side of the hierarchical synchronisation (model: rank 0's result). */
static int tree_side(MPI_Comm comm, int rank, int size, double t0, double *model, int effort, double window)
{
    double start = mpilab_wtime(); /* own clock: the ranks' clocks may be far apart */
    int slots = tree_slots(size);
    probe_t *a = calloc((size_t)slots, sizeof *a), *b = calloc((size_t)slots, sizeof *b);
    double *pair = calloc((size_t)slots * NM, sizeof *pair);
    double *all = rank == 0 ? calloc((size_t)size * NM, sizeof *all) : NULL;
    double mine[NM] = {0};
    int rc = (!a || !b || !pair || (rank == 0 && !all)) ? MPI_ERR_NO_MEM : MPI_SUCCESS;
    for (int s = 0; s < slots && rc == MPI_SUCCESS; s++)
        a[s].rtt = -1.0; /* slots without a child stay unprobed */
    if (rc == MPI_SUCCESS)
        rc = tree_sweep(comm, rank, size, t0, effort, 0, a, pair, mine);
    /* the shared gap, each rank on its own clock from its own start (t0 is rank 0's clock,
     * which another rank's may trail by far more than the window) */
    if (rc == MPI_SUCCESS)
        sleep_until(window > 0.0 ? start + window : mpilab_wtime() + SK_GAP_S);
    if (rc == MPI_SUCCESS)
        rc = tree_sweep(comm, rank, size, t0, effort, 0, b, pair, mine);
    for (int s = 0; s < slots && rc == MPI_SUCCESS; s++)
        if (a[s].rtt >= 0.0)
            skampi_model(&a[s], &b[s], &pair[NM * s]);
    if (rc == MPI_SUCCESS)
        rc = tree_sweep(comm, rank, size, t0, effort, 1, a, pair, mine);
    /* every rank reaches the gather (a failed rank contributes zeros; publish fails them all) */
    int rc2 = MPI_Gather(mine, NM, MPI_DOUBLE, all, NM, MPI_DOUBLE, 0, comm);
    if (rc == MPI_SUCCESS)
        rc = rc2;
    if (rank == 0 && rc == MPI_SUCCESS)
        tree_compose(all, size, mpilab_wtime() - t0, model);
    free(a);
    free(b);
    free(pair);
    free(all);
    return rc;
}

/* Everyone learns every model (and whether rank 0 failed): fill out from rank 0's model. */
static int publish(MPI_Comm comm, int size, double *model, int rc, mpilab_clocksync_t *out)
{
    int ok = (rc == MPI_SUCCESS), all_ok = 0;
    MPI_Allreduce(&ok, &all_ok, 1, MPI_INT, MPI_LAND, comm);
    if (!all_ok) {
        free(model);
        mpilab_clocksync_free(out);
        return rc != MPI_SUCCESS ? rc : MPI_ERR_OTHER;
    }
    MPI_Bcast(model, NM * size, MPI_DOUBLE, 0, comm);
    out->max_residual = 0.0;
    for (int r = 0; r < size; r++) {
        out->ranks[r].offset = model[NM * r];
        out->ranks[r].drift = model[NM * r + 1];
        out->ranks[r].residual = model[NM * r + 2];
        out->ranks[r].uncertainty = model[NM * r + 3];
        out->ranks[r].drift_uncertainty = model[NM * r + 4];
        if (model[NM * r + 2] > out->max_residual)
            out->max_residual = model[NM * r + 2];
    }
    free(model);
    return MPI_SUCCESS;
}

/* One synchronisation; effort (>= 1) multiplies the probes of every minimum-round-trip
 * search and regression batch (flat: only rank 0 probes, the others answer until told to
 * stop; hierarchical: tree_side); window > 0: a second probing pass that long after the
 * start, for the drift. */
int mpilab_clock_global_build(void)
{
#ifdef MPILAB_MPI_IS_SMPI
    return 1;
#else
    return 0;
#endif
}

int mpilab_clock_is_global(void)
{
    mpilab_clock_inject_t e;
    mpilab_clock_inject_get(&e);
    return mpilab_clock_global_build() && e.offset == 0.0 && e.drift == 0.0;
}

/* MPILAB_SYNC_EXACT: no probing. Every rank confirms that it reads the one global clock
 * (else MPI_ERR_ARG everywhere, nothing kept); the models stay the identity (calloc: offset,
 * drift, residual and uncertainty 0); the origin is rank 0's reading, the same everywhere. */
static int exact_once(MPI_Comm comm, mpilab_clocksync_t *out)
{
    double start = mpilab_wtime(), t0 = start;
    int ok = mpilab_clock_is_global(), all_ok = 0;
    int rc = MPI_Allreduce(&ok, &all_ok, 1, MPI_INT, MPI_LAND, comm);
    if (rc == MPI_SUCCESS)
        rc = MPI_Bcast(&t0, 1, MPI_DOUBLE, 0, comm);
    if (rc == MPI_SUCCESS && !all_ok)
        rc = MPI_ERR_ARG;
    if (rc != MPI_SUCCESS) {
        mpilab_clocksync_free(out);
        return rc;
    }
    out->t0 = t0;
    out->duration = mpilab_wtime() - start;
    return MPI_SUCCESS;
}

static int sync_once(MPI_Comm comm, mpilab_sync_method_t method, int effort, double window,
                     mpilab_clocksync_t *out)
{
    memset(out, 0, sizeof *out);
    int rank, size;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    out->method = method;
    out->nranks = size;
    out->ranks = calloc((size_t)size, sizeof *out->ranks);
    if (!out->ranks)
        return MPI_ERR_NO_MEM;
    if (method == MPILAB_SYNC_EXACT)
        return exact_once(comm, out);
    int rc = MPI_Barrier(comm);
    double start = mpilab_wtime();
    double t0 = start;
    if (rc == MPI_SUCCESS)
        rc = MPI_Bcast(&t0, 1, MPI_DOUBLE, 0, comm);
    out->t0 = t0;
    /* probing passes, then the check */
    int phases = (method == MPILAB_SYNC_SKAMPI) ? 2 : 1;
    phases = (window > 0.0 ? 2 * phases : phases) + 1;
    /* per rank, NM doubles: offset, drift, residual, uncertainty */
    double *model = calloc((size_t)size * NM, sizeof *model);
    if (!model)
        rc = MPI_ERR_NO_MEM;
    if (method == MPILAB_SYNC_HIERARCHICAL) {
        if (rc == MPI_SUCCESS)
            rc = tree_side(comm, rank, size, t0, model, effort, window);
    } else if (rank != 0) {
        for (int ph = 0; ph < phases && rc == MPI_SUCCESS; ph++)
            rc = serve(comm, 0);
    } else if (rc == MPI_SUCCESS) {
        rc = root_side(comm, method, size, t0, model, effort, window);
    }
    rc = publish(comm, size, model, rc, out);
    if (rc == MPI_SUCCESS)
        out->duration = mpilab_wtime() - start;
    return rc;
}

static double max_uncertainty(const mpilab_clocksync_t *cs)
{
    double u = 0.0;
    for (int r = 0; r < cs->nranks; r++)
        u = fmax(u, cs->ranks[r].uncertainty);
    return u;
}

/* Carry every rank's uncertainty forward by `age` seconds: an older model's offset error
 * grows by at most its drift uncertainty per second. */
static void age_models(mpilab_clocksync_t *cs, double age)
{
    for (int r = 0; r < cs->nranks; r++)
        cs->ranks[r].uncertainty += cs->ranks[r].drift_uncertainty * age;
}

/* Per rank, the better of out's model and cur's (clocksync.h). t0 differs between attempts:
 * global = t0 + ((local - t0) - offset) / (1 + drift), so offset' = offset - drift *
 * (t0_cur - t0_out) gives the same mapping from out's origin. Every rank holds the same
 * published models and ages, so all take the same decisions. */
int mpilab_clocksync_keep_better(mpilab_clocksync_t *out, const mpilab_clocksync_t *cur)
{
    int taken = 0;
    for (int r = 1; r < out->nranks && r < cur->nranks; r++) {
        /* at the horizon: a model with a resolved drift (the window) is not traded for a
         * later one that is tighter now but unresolved, and worse a second later */
        double ucur = cur->ranks[r].uncertainty + cur->ranks[r].drift_uncertainty * MPILAB_SYNC_HORIZON_S;
        double uout = out->ranks[r].uncertainty + out->ranks[r].drift_uncertainty * MPILAB_SYNC_HORIZON_S;
        if (!(ucur < uout))
            continue;
        out->ranks[r] = cur->ranks[r];
        out->ranks[r].offset = cur->ranks[r].offset - cur->ranks[r].drift * (cur->t0 - out->t0);
        taken++;
    }
    out->max_residual = 0.0;
    for (int r = 0; r < out->nranks; r++)
        out->max_residual = fmax(out->max_residual, out->ranks[r].residual);
    return taken;
}

/* A synchronisation whose stated uncertainty exceeds MPILAB_SYNC_TARGET_S for some rank
 * was preempted somewhere (a quiet node gives 1-2 us): it is run again, up to
 * MPILAB_SYNC_ATTEMPTS in all while the attempts took less than MPILAB_SYNC_BUDGET_S, each
 * probing longer (attempt a: min(a, MPILAB_SYNC_MAX_EFFORT) times the probes), and per rank
 * the model with the least uncertainty *now* is kept: the models kept so far are first
 * aged to the end of the latest attempt (their drift uncertainty times the time since;
 * under load an attempt can take a second, and a stale offset-only model was 200-300 us
 * off at 65 ppm). Per rank, because one preempted rank need not cost the others their
 * clean models (with 4 ranks and two hogs, whole attempts rarely came out clean for all
 * three at once). The times come from rank 0's clock, broadcast, so every rank computes
 * the same numbers and takes the same decision. */
int mpilab_clocksync_run(MPI_Comm comm, mpilab_sync_method_t method, mpilab_clocksync_t *out)
{
    return mpilab_clocksync_run_window(comm, method, MPILAB_SYNC_DRIFT_WINDOW_S, out);
}

int mpilab_clocksync_run_window(MPI_Comm comm, mpilab_sync_method_t method, double window,
                                mpilab_clocksync_t *out)
{
    double spent = 0.0, prev_end = 0.0;
    for (int a = 1; a <= MPILAB_SYNC_ATTEMPTS; a++) {
        mpilab_clocksync_t cur;
        int effort = a < MPILAB_SYNC_MAX_EFFORT ? a : MPILAB_SYNC_MAX_EFFORT;
        /* the drift pass in the first attempt only (the budget allows one window) */
        int rc = sync_once(comm, method, effort, a == 1 ? window : 0.0, &cur);
        double now = mpilab_wtime();
        if (rc == MPI_SUCCESS)
            rc = MPI_Bcast(&now, 1, MPI_DOUBLE, 0, comm);
        if (rc != MPI_SUCCESS) {
            mpilab_clocksync_free(&cur);
            if (a > 1)
                mpilab_clocksync_free(out);
            return rc;
        }
        spent += cur.duration;
        int taken = 1; /* the first attempt always counts */
        if (a == 1) {
            *out = cur;
            out->first_duration = cur.duration;
        } else {
            age_models(out, now - prev_end);
            taken = mpilab_clocksync_keep_better(out, &cur);
            mpilab_clocksync_free(&cur);
        }
        prev_end = now;
        out->attempts = a;
        /* rank 0's times only (t0 and now are broadcast): the same on every rank */
        /* an attempt that improved no rank says the uncertainty is the link's round trip,
         * not a preemption: repeating it would not help */
        if (max_uncertainty(out) <= MPILAB_SYNC_TARGET_S || now - out->t0 >= MPILAB_SYNC_BUDGET_S || taken == 0)
            break;
    }
    out->duration = spent;
    out->t_end = prev_end;
    out->max_uncertainty = max_uncertainty(out);
    out->precise = out->max_uncertainty <= MPILAB_SYNC_TARGET_S;
    return MPI_SUCCESS;
}

int mpilab_clocksync_refine_drift(mpilab_clocksync_t *cur, const mpilab_clocksync_t *prev)
{
    double span = cur->t_end - prev->t_end;
    if (!(span > 0.0) || cur->nranks != prev->nranks)
        return 0;
    int taken = 0;
    for (int r = 1; r < cur->nranks; r++) {
        mpilab_clock_model_t *c = &cur->ranks[r];
        const mpilab_clock_model_t *p = &prev->ranks[r];
        /* e = local - ref at each end, from each model (clocksync.h's model, origin t0) */
        double ep = p->offset + p->drift * (prev->t_end - prev->t0);
        double ec = c->offset + c->drift * (cur->t_end - cur->t0);
        double drift = (ec - ep) / span, du = (p->uncertainty + c->uncertainty) / span;
        if (!(fabs(drift) <= MAX_PLAUSIBLE_DRIFT))
            du = INFINITY;
        /* a clock's drift does not change between two synchronisations: prev's own drift
         * (e.g. from the window, inherited along every resynchronisation) when tighter */
        if (p->drift_uncertainty < du) {
            drift = p->drift;
            du = p->drift_uncertainty;
        }
        if (!(du < c->drift_uncertainty))
            continue;
        c->drift = drift;
        c->offset = ec - drift * (cur->t_end - cur->t0);
        c->drift_uncertainty = du;
        taken++;
    }
    return taken;
}

void mpilab_clocksync_free(mpilab_clocksync_t *cs)
{
    if (!cs)
        return;
    free(cs->ranks);
    cs->ranks = NULL;
    cs->nranks = 0;
}

double mpilab_clock_to_global(const mpilab_clocksync_t *cs, int rank, double local)
{
    const mpilab_clock_model_t *m = &cs->ranks[rank];
    return cs->t0 + ((local - cs->t0) - m->offset) / (1.0 + m->drift);
}

double mpilab_clock_to_local(const mpilab_clocksync_t *cs, int rank, double global)
{
    const mpilab_clock_model_t *m = &cs->ranks[rank];
    return cs->t0 + m->offset + (1.0 + m->drift) * (global - cs->t0);
}

const char *mpilab_sync_method_name(mpilab_sync_method_t m)
{
    if (m == MPILAB_SYNC_EXACT)
        return "exact";
    if (m == MPILAB_SYNC_HIERARCHICAL)
        return "hierarchical";
    return m == MPILAB_SYNC_REGRESSION ? "regression" : "skampi";
}

int mpilab_sync_method_parse(const char *s, mpilab_sync_method_t *out)
{
    if (strcmp(s, "skampi") == 0)
        *out = MPILAB_SYNC_SKAMPI;
    else if (strcmp(s, "regression") == 0)
        *out = MPILAB_SYNC_REGRESSION;
    else if (strcmp(s, "hierarchical") == 0)
        *out = MPILAB_SYNC_HIERARCHICAL;
    else if (strcmp(s, "exact") == 0)
        *out = MPILAB_SYNC_EXACT;
    else
        return -1;
    return 0;
}
