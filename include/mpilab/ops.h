/* The operation table: every measurable operation is an entry (setup, run, validate,
 * teardown), so the same engine measures native MPI collectives, mpilab's own
 * implementations and user-defined ones registered at run time. */
#ifndef MPILAB_OPS_H
#define MPILAB_OPS_H

#include <mpi.h>
#include "mpilab/mpi_check.h"
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define MPILAB_OP_ROOTED 1u   /* the operation has a root (scatter, gather, bcast, reduce) */
#define MPILAB_OP_OPSPEC 2u   /* operation-specific timing (root-to-rank tasks) applies */
#define MPILAB_OP_PAIR 4u     /* only ranks 0 and 1 take part (needs >= 2 ranks) */
#define MPILAB_OP_ALLPAIRS 8u /* measured per pair of ranks (every pair, own statistics each) with
                               * mpilab_p2p_measure instead of the engine: timing "p2p" */
#define MPILAB_OP_GRID 16u    /* needs a multi-site grid description (docs/multilane.md):
                               * selected only when named as name:impl, not by its name alone */

/* Which communication pattern a model (mpilab/models.h) can predict for an entry. */
typedef enum mpilab_op_model {
    MPILAB_MODEL_NONE = 0,
    MPILAB_MODEL_P2P_FIT,          /* models are fitted on this entry's measurements */
    MPILAB_MODEL_SCATTER_LINEAR,   /* root sends one block to every rank in turn */
    MPILAB_MODEL_SCATTER_BINOMIAL, /* mpilab's binomial tree (coll.h) */
    MPILAB_MODEL_GATHER_LINEAR,
    MPILAB_MODEL_GATHER_BINOMIAL
} mpilab_op_model_t;

/* Derived quantities of one measurement; NaN (counts: 0) where not applicable. */
typedef struct mpilab_derived {
    double bandwidth_Bps, msg_rate, latency_s;
    double cpu_avail, poll_interval, poll_interval_s, work_rate;
    double overlap_pct, t_comm, t_comp, t_total;
    int64_t window, pairs, msgs;
    double cpu_avail_peer;
} mpilab_derived_t;

/* Every derived value NaN, counts 0. */
void mpilab_derived_clear(mpilab_derived_t *d);

typedef struct mpilab_op mpilab_op_t;
struct mpilab_op {
    const char *name;       /* "scatter" */
    const char *impl;       /* "native", "linear", ... */
    const char *bytes_desc; /* what `bytes` means, e.g. "per-rank block" */
    unsigned flags;         /* MPILAB_OP_*: what the entry needs */
    /* Allocate buffers for `bytes`, fill send buffers with the validation pattern and
     * receive buffers with a sentinel. Called on every rank. Returns 0 or non-zero. */
    int (*setup)(size_t bytes, int root, MPI_Comm comm, void **ctx);
    /* One execution of the operation. Returns an MPI error code (MPI_SUCCESS). */
    int (*run)(void *ctx);
    /* Check of the received data after a run: 0 if correct. Called on every rank or on
     * none (only when the run succeeded on every rank), so it may exchange messages in
     * the operation's communicator (the COMB entry collects its peer's work counters). */
    int (*validate)(void *ctx);
    void (*teardown)(void *ctx);
    /* ---- what the runner, the results and the report read (all optional) ---- */
    /* Family of results it belongs to: "collective", "p2p", "latency", "streaming",
     * "availability", "overlap", ... (NULL = "user"). */
    const char *family;
    /* Comma list of the derived keys `derive` yields (mpilab_derived_t field names). */
    const char *derived;
    /* Derived values of the latest measurement at `bytes` on this process from the per-run
     * time `seconds` (the runner passes the median): 0, or -1 if not measured here. */
    int (*derive)(const mpilab_op_t *op, size_t bytes, double seconds, mpilab_derived_t *out);
    /* The pattern a model predicts for it (MPILAB_MODEL_NONE: no prediction). */
    mpilab_op_model_t model;
};

/* Number of entries (built-in followed by registered) and entry k. Built-in: the collectives
 * and "p2p:roundtrip" (MPILAB_OP_ALLPAIRS); the interconnect suite registers its own. */
size_t mpilab_ops_count(void);
const mpilab_op_t *mpilab_ops_get(size_t k);
/* Entry by name and implementation; NULL if none. */
const mpilab_op_t *mpilab_ops_find(const char *name, const char *impl);
/* Register a user-defined entry (copied; the strings must outlive its use). Write it with
 * designated initializers, e.g. {.name = "ring", .impl = "mine", .setup = ..., .run = ...,
 * .validate = ..., .teardown = ..., .family = "latency", .derived = "latency_s",
 * .derive = ...}; unset knowledge fields mean "none". Returns 0, or -1 if name/impl already
 * exist, a function pointer is missing, or derived keys are declared without derive. */
int mpilab_ops_register(const mpilab_op_t *op);
/* Forget every registered entry. */
void mpilab_ops_clear_registered(void);

/* The comma list of timing methods an entry accepts ("max,root,global[,opspec]" or "p2p"). */
const char *mpilab_op_timings(const mpilab_op_t *op);

/* The validation pattern byte for (rank, index): what built-in entries send. */
unsigned char mpilab_ops_pattern(int rank, size_t index);

/* Run `op` once on fresh buffers and validate on every rank: collective; returns 0 if all
 * ranks received correct data, 1 if some rank did not, -1 if setup or the call failed. */
int mpilab_ops_check(const mpilab_op_t *op, size_t bytes, int root, MPI_Comm comm);

#ifdef __cplusplus
}
#endif
#endif
