/* Internal to the clock synchronisation (src/bench/clocksync.c, the flat methods and the
 * shared probing; src/bench/clocktree.c, the hierarchical method): not part of the API. */
#ifndef MPILAB_CLOCKSYNC_INT_H
#define MPILAB_CLOCKSYNC_INT_H

#include "mpilab/clocksync.h"

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


/* The probed side of one phase: answer the prober's probes until told to stop. */
int mpilab_cs_serve(MPI_Comm comm, int prober);
/* The prober's end of r's phase. */
int mpilab_cs_end_phase(MPI_Comm comm, int r);
/* SKaMPI-style minimum-round-trip probe of r: repeat until no new minimum for a while. */
int mpilab_cs_min_rtt_probe(MPI_Comm comm, int r, double t0, int min_probes, int effort, probe_t *best);
/* Sleep until this rank's mpilab_wtime() reaches t. */
void mpilab_cs_sleep_until(double t);
/* One pair's NM model slots from its two minimum-round-trip probes a (first) and b. */
void mpilab_cs_skampi_model(const probe_t *a, const probe_t *b, double *mr);
/* The check of r's model mr (residual, re-anchoring when the check probe is tighter). */
int mpilab_cs_verify_one(MPI_Comm comm, int r, double t0, double *mr, int effort);
/* The drift of the line through a's and b's offset readings, into b when tighter. */
void mpilab_cs_combine_drift(const double *a, double *b);

/* Every rank's side of the hierarchical synchronisation (src/bench/clocktree.c); on rank 0
 * model receives every rank's composed model (NM doubles per rank). flat_leaders: rank 0
 * synchronises every node's leader itself (MPILAB_SYNC_LEADERS). */
int mpilab_cs_tree_side(MPI_Comm comm, int rank, int size, double t0, double *model, int effort, double window,
                        int flat_leaders);
/* Collective: the number of distinct processor names in comm (counted on rank 0, broadcast). */
int mpilab_cs_count_nodes(MPI_Comm comm, int *nodes);

#endif
