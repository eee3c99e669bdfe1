/* Internal: operation-table entries defined outside ops.c, listed in its table. */
#ifndef MPILAB_SRC_BENCH_ENTRIES_H
#define MPILAB_SRC_BENCH_ENTRIES_H

#include "mpilab/ops.h"

/* Free an entry context and its two buffers (any may be NULL): the teardown of contexts
 * that own exactly a send and a receive buffer. */
void mpilab_entry_free_bufs(void *ctx, void *sbuf, void *rbuf);

extern const mpilab_op_t mpilab_entry_p2p_roundtrip;

#endif
