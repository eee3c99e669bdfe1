/* The operation table: every measurable operation is an entry (setup, run, validate,
 * teardown), so the same engine measures native MPI collectives, mpilab's own
 * implementations and user-defined ones registered at run time. */
#ifndef MPILAB_OPS_H
#define MPILAB_OPS_H

#include <mpi.h>
#include "mpilab/mpi_check.h"
#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

#define MPILAB_OP_ROOTED 1u   /* the operation has a root (scatter, gather, bcast, reduce) */
#define MPILAB_OP_OPSPEC 2u   /* operation-specific timing (root-to-rank tasks) applies */

typedef struct mpilab_op {
    const char *name;       /* "scatter" */
    const char *impl;       /* "native", "linear", ... */
    const char *bytes_desc; /* what `bytes` means, e.g. "per-rank block" */
    unsigned flags;
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
} mpilab_op_t;

/* Number of entries (built-in followed by registered) and entry k. */
size_t mpilab_ops_count(void);
const mpilab_op_t *mpilab_ops_get(size_t k);
/* Entry by name and implementation; NULL if none. */
const mpilab_op_t *mpilab_ops_find(const char *name, const char *impl);
/* Register a user-defined entry (copied; the strings must outlive its use).
 * Returns 0, or -1 if name/impl already exist or a function pointer is missing. */
int mpilab_ops_register(const mpilab_op_t *op);
/* Forget every registered entry. */
void mpilab_ops_clear_registered(void);

/* The validation pattern byte for (rank, index): what built-in entries send. */
unsigned char mpilab_ops_pattern(int rank, size_t index);

/* Run `op` once on fresh buffers and validate on every rank: collective; returns 0 if all
 * ranks received correct data, 1 if some rank did not, -1 if setup or the call failed. */
int mpilab_ops_check(const mpilab_op_t *op, size_t bytes, int root, MPI_Comm comm);

#ifdef __cplusplus
}
#endif
#endif
