/* The operation table: every measurable operation is an entry (setup, run, validate,
 * teardown), so the same engine measures native MPI collectives, mpilab's own
 * implementations and user-defined ones registered at run time. */
#ifndef MPILAB_OPS_H
#define MPILAB_OPS_H

#include <mpi.h>
#include "mpilab/mpi_check.h"
#include "mpilab/coll.h"
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

/* What the time of one run of an entry is: the quantity its table row names, and how the table
 * shows it. Every entry declares it (mpilab_op_t.figure); the results carry its name. */
typedef enum mpilab_op_figure {
    MPILAB_FIGURE_CALL = 0,   /* one call of a collective operation (the default) */
    MPILAB_FIGURE_ROUND_TRIP, /* a message there and the reply back: shown one-way, the round
                               * trip / 2, as IMB and OSU print a ping-pong */
    MPILAB_FIGURE_EXCHANGE,   /* every rank taking part sends and receives at once: one exchange */
    MPILAB_FIGURE_BATCH,      /* a batch of messages (a streaming window, a COMB run): the
                               * results derive the message rate and bandwidth from it */
    MPILAB_FIGURE_OVERLAP     /* a non-blocking operation and computation around it, together */
} mpilab_op_figure_t;
#define MPILAB_FIGURE_LAST MPILAB_FIGURE_OVERLAP

/* Derived quantities of one measurement, by key: what an entry's derive sets, for the keys
 * it declares (mpilab_op_t.derived); the results carry them in declaration order. */
#define MPILAB_DERIVED_MAX 16
typedef struct mpilab_derived {
    size_t n;
    struct mpilab_derived_value {
        const char *key; /* a string that outlives the measurement (a literal) */
        double value;
        int count;       /* written as an integer */
    } v[MPILAB_DERIVED_MAX];
} mpilab_derived_t;

/* No value set. */
void mpilab_derived_clear(mpilab_derived_t *d);
/* Set `key` to `value` (a non-finite value leaves it unset): 0, or -1 if the set is full. */
int mpilab_derived_set(mpilab_derived_t *d, const char *key, double value);
/* Set `key` to the count n (0 leaves it unset): 0 or -1. */
int mpilab_derived_set_count(mpilab_derived_t *d, const char *key, int64_t n);
/* The value of `key`, NaN if unset. */
double mpilab_derived_get(const mpilab_derived_t *d, const char *key);

typedef struct mpilab_op mpilab_op_t;
/* 0 if every key d holds is one op declares (op->derived); else -1 with one line naming the
 * entry and the first undeclared key in err (the engine refuses such a measurement rather
 * than let the results drop the value). */
int mpilab_derived_check(const mpilab_op_t *op, const mpilab_derived_t *d, char *err, size_t errlen);

/* One measurement of one entry: what setup, run, validate, teardown and derive receive.
 * The engine fills it; setup puts its buffers in `state`, teardown frees them. */
typedef struct mpilab_op_run {
    const mpilab_op_t *op; /* the entry (with its own data: fn, param, data) */
    MPI_Comm comm;
    int rank, size;        /* in comm */
    int root;              /* of rooted operations */
    size_t bytes;          /* the size measured (what op->bytes_desc says it means) */
    void *state;           /* the entry's own, from setup */
} mpilab_op_run_t;

/* Fill r for one measurement of op (rank and size from comm, state NULL): what the engine and
 * mpilab_ops_check do before setup; for callers running an entry's functions themselves. */
void mpilab_op_run_init(mpilab_op_run_t *r, const mpilab_op_t *op, size_t bytes, int root, MPI_Comm comm);

/* Any function: the implementation a generic operation calls (cast back to its type). */
typedef void (*mpilab_op_fn)(void);

struct mpilab_op {
    const char *name;       /* "scatter" */
    const char *impl;       /* "native", "linear", ... */
    const char *bytes_desc; /* what `bytes` means, e.g. "per-rank block" */
    unsigned flags;         /* MPILAB_OP_*: what the entry needs */
    /* Allocate buffers for r->bytes in r->state, fill send buffers with the validation
     * pattern and receive buffers with a sentinel. Called on every rank. 0 or non-zero. */
    int (*setup)(mpilab_op_run_t *r);
    /* One execution of the operation. Returns an MPI error code (MPI_SUCCESS). */
    int (*run)(mpilab_op_run_t *r);
    /* Check of the received data after a run: 0 if correct. Called on every rank or on
     * none (only when the run succeeded on every rank), so it may exchange messages in
     * the operation's communicator (the COMB entry collects its peer's work counters). */
    int (*validate)(mpilab_op_run_t *r);
    /* Free r->state (called once after a successful setup). */
    void (*teardown)(mpilab_op_run_t *r);
    /* ---- what the runner, the results and the report read (all optional) ---- */
    /* Family of results it belongs to: "collective", "p2p", "latency", "streaming",
     * "availability", "overlap", ... (NULL = "user"). */
    const char *family;
    /* Comma list of the derived keys `derive` yields, in the order the results carry them. */
    const char *derived;
    /* Derived values of this measurement (before teardown, r->state still set) from the
     * per-run time `seconds` (the engine passes the median): 0, or -1 if none. */
    int (*derive)(const mpilab_op_run_t *r, double seconds, mpilab_derived_t *out);
    /* The pattern a model predicts for it (MPILAB_MODEL_NONE: no prediction); it must fit
     * the operation (scatter patterns on "scatter", gather on "gather", fit on all-pairs). */
    mpilab_op_model_t model;
    /* Data moved by one call, in bytes: bytes * (volume[0] + volume[1] p + volume[2] p^2) for
     * p ranks (all 0: not known); the results carry it as "bytes_moved". */
    double volume[3];
    /* The entry's own data, for its functions: the implementation a generic operation calls
     * (MPILAB_COLL_ENTRY), an integer parameter (COMB's poll interval), anything else. */
    mpilab_op_fn fn;
    size_t param;
    const void *data;
    /* What one run's time is (MPILAB_FIGURE_*): the table names it under itself and shows
     * round trips one-way; the results carry it as "figure". */
    mpilab_op_figure_t figure;
};

/* A list of entries a file defines: MPILAB_ENTRIES(tag, {...}, {...}) defines
 * `mpilab_entries_<tag>`. Built-in: the file is named in the build with
 * mpilab_entries(<tag> FILE) (a missing definition fails the link, naming it); a plugin
 * (mpilab_ops_load) defines the tag `plugin`: MPILAB_PLUGIN_ENTRIES({...}). */
typedef struct mpilab_entry_list {
    const mpilab_op_t *entries;
    size_t n;
    const char *file;
} mpilab_entry_list_t;
#define MPILAB_ENTRIES(tag, ...)                                                                     \
    static const mpilab_op_t mpilab_entries_##tag##_v[] = {__VA_ARGS__};                             \
    extern const mpilab_entry_list_t mpilab_entries_##tag;                                           \
    const mpilab_entry_list_t mpilab_entries_##tag = {                                               \
        mpilab_entries_##tag##_v, sizeof mpilab_entries_##tag##_v / sizeof mpilab_entries_##tag##_v[0], __FILE__}
#define MPILAB_PLUGIN_ENTRIES(...) MPILAB_ENTRIES(plugin, __VA_ARGS__)

/* Generic collective operations, one descriptor per collective (src/bench/coll_entries.c):
 * each sizes, fills, runs and checks one MPI collective, calling the implementation function
 * the entry carries (fn, with the MPI call's own signature: mpilab_scatter_fn,
 * mpilab_bcast_fn, ... in mpilab/coll.h; NULL: the native MPI call). The entry's name
 * chooses the collective (scatter, gather, bcast, reduce, allreduce, allgather, alltoall,
 * barrier); setup fails for another name. */
int mpilab_coll_setup(mpilab_op_run_t *r);
int mpilab_coll_run(mpilab_op_run_t *r);
int mpilab_coll_validate(mpilab_op_run_t *r);
void mpilab_coll_teardown(mpilab_op_run_t *r);
/* Name of generic collective k (0, 1, ...), NULL past the last. */
const char *mpilab_coll_op_name(size_t k);
/* An entry for implementation `impl_` (a string) of collective `op_` calling `fn_` (NULL:
 * native; a function of another signature than the collective's is a compile error under
 * -Werror, a warning otherwise), with extra flags and a model pattern. The operation brings
 * its buffers, data check, bytes meaning, family and data volume. */
#define MPILAB_COLL_ENTRY(op_, impl_, fn_, flags_, model_) MPILAB_COLL_##op_(impl_, fn_, flags_, model_)
#define MPILAB_COLL_DESC_(n_, bd_, fl_, v0_, v1_, v2_, impl_, fn_, flags_, model_)                  \
    {.name = #n_, .impl = impl_, .bytes_desc = bd_, .flags = (fl_) | (flags_),                       \
     .setup = mpilab_coll_setup, .run = mpilab_coll_run, .validate = mpilab_coll_validate,           \
     .teardown = mpilab_coll_teardown, .family = "collective", .model = model_,                      \
     .volume = {v0_, v1_, v2_}, .fn = (mpilab_op_fn)(1 ? (fn_) : (mpilab_##n_##_fn)0)}
#define MPILAB_COLL_scatter(i, f, fl, m) \
    MPILAB_COLL_DESC_(scatter, "per-rank block", MPILAB_OP_ROOTED, -1, 1, 0, i, f, fl, m)
#define MPILAB_COLL_gather(i, f, fl, m) \
    MPILAB_COLL_DESC_(gather, "per-rank block", MPILAB_OP_ROOTED, -1, 1, 0, i, f, fl, m)
#define MPILAB_COLL_bcast(i, f, fl, m) \
    MPILAB_COLL_DESC_(bcast, "message", MPILAB_OP_ROOTED, -1, 1, 0, i, f, fl, m)
#define MPILAB_COLL_reduce(i, f, fl, m) \
    MPILAB_COLL_DESC_(reduce, "message (unsigned char sum)", MPILAB_OP_ROOTED, -1, 1, 0, i, f, fl, m)
#define MPILAB_COLL_allreduce(i, f, fl, m) \
    MPILAB_COLL_DESC_(allreduce, "message (unsigned char sum)", 0, -2, 2, 0, i, f, fl, m)
#define MPILAB_COLL_allgather(i, f, fl, m) \
    MPILAB_COLL_DESC_(allgather, "per-rank block", 0, 0, -1, 1, i, f, fl, m)
#define MPILAB_COLL_alltoall(i, f, fl, m) \
    MPILAB_COLL_DESC_(alltoall, "per-pair block", 0, 0, -1, 1, i, f, fl, m)
#define MPILAB_COLL_barrier(i, f, fl, m) \
    MPILAB_COLL_DESC_(barrier, "none (bytes ignored)", 0, 0, 0, 0, i, f, fl, m)

/* Number of entries (built-in, then registered and loaded ones) and entry k. Built-in: every
 * list the build names (MPILAB_ENTRIES); the interconnect suite registers its own. */
size_t mpilab_ops_count(void);
const mpilab_op_t *mpilab_ops_get(size_t k);
/* Entry by name and implementation; NULL if none. */
const mpilab_op_t *mpilab_ops_find(const char *name, const char *impl);
/* Check the built-in entries through the same checks as registration: 0, or -1 with one line
 * naming the entry and the problem in err. Tools call it first; the getters call it too (an
 * entry refused there is left out). */
int mpilab_ops_init(char *err, size_t errlen);
/* Register a user-defined entry (copied, with its name and impl strings). Write it with
 * designated initializers, e.g. {.name = "ring", .impl = "mine", .setup = ..., .run = ...,
 * .validate = ..., .teardown = ..., .family = "latency", .derived = "latency_s",
 * .derive = ...}; unset knowledge fields mean "none". Returns 0, or -1 and the reason (one
 * line naming the entry: a duplicate name, a missing function, derived keys without derive,
 * a model pattern that does not fit the operation) in mpilab_ops_error(). */
int mpilab_ops_register(const mpilab_op_t *op);
/* The same, recording where the entry comes from (mpilab_ops_origin), e.g. "suite". */
int mpilab_ops_register_as(const mpilab_op_t *op, const char *origin);
/* Where entry op comes from: "builtin", "registered", the plugin's path, or what
 * mpilab_ops_register_as said; NULL if op is not in the table. */
const char *mpilab_ops_origin(const mpilab_op_t *op);
/* The reason of the latest refusal ("" if none). */
const char *mpilab_ops_error(void);
/* Load a plugin: a shared object defining MPILAB_PLUGIN_ENTRIES(...); each entry is
 * registered. 0, or -1 with one line in err (the file, or the refused entry). */
int mpilab_ops_load(const char *path, char *err, size_t errlen);
/* Forget every registered and loaded entry. */
void mpilab_ops_clear_registered(void);

/* The model pattern's name in the entry list ("scatter_linear", "fit", ...; NULL for none). */
const char *mpilab_op_model_name(mpilab_op_model_t m);

/* The figure's name in the results and the entry list ("call", "round_trip", "exchange",
 * "batch", "overlap"; NULL for a value out of range). */
const char *mpilab_op_figure_name(mpilab_op_figure_t f);
/* What the table says the figure is, one line without a newline (NULL out of range). */
const char *mpilab_op_figure_text(mpilab_op_figure_t f);
/* What the table multiplies the figure by: 0.5 for a round trip (shown one-way), else 1. */
double mpilab_op_figure_scale(mpilab_op_figure_t f);

/* The comma list of timing methods an entry accepts ("max,root,global[,opspec]" or "p2p"). */
const char *mpilab_op_timings(const mpilab_op_t *op);

/* The validation pattern byte for (rank, index): what built-in entries send. */
unsigned char mpilab_ops_pattern(int rank, size_t index);

/* Bytes moved by one call of op at `bytes` on p ranks (op->volume); -1 if not known. */
double mpilab_op_volume(const mpilab_op_t *op, size_t bytes, int p);

/* Run `op` once on fresh buffers and validate on every rank: collective; returns 0 if all
 * ranks received correct data, 1 if some rank did not, -1 if setup or the call failed. */
int mpilab_ops_check(const mpilab_op_t *op, size_t bytes, int root, MPI_Comm comm);

#ifdef __cplusplus
}
#endif
#endif
