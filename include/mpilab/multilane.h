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
 * mean of both directions): the largest ratio gap between consecutive sorted pair
 * latencies separates intra-site from inter-site pairs; the gap must be at least 2x and
 * the partition consistent (every pair inside a site below the gap, every pair across
 * sites above it), else NULL (EINVAL).  *split, if non-NULL, gets the threshold. */
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
 * latency matrix and cluster it).  NULL with the reason on every rank if any rank failed. */
mpilab_grid_t *mpilab_grid_build(MPI_Comm comm, const char *how);
/* Collective: the one-way latency of every pair (half the mean round trip of `reps` 1-byte
 * ping-pongs), lat[i*p + j] on every rank (p*p doubles).  Returns 0 or -1. */
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

const char *mpilab_multilane_last_error(void);

#ifdef __cplusplus
}
#endif
#endif
