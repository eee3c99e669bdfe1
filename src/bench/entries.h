/* Internal: operation-table entries defined outside ops.c, listed in its table. */
#ifndef MPILAB_SRC_BENCH_ENTRIES_H
#define MPILAB_SRC_BENCH_ENTRIES_H

#include "mpilab/ops.h"

extern const mpilab_op_t mpilab_entry_p2p_roundtrip;

#endif
