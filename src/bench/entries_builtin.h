/* Internal: the built-in entry lists, one per file the build names with
 * mpilab_entries(TAG FILE) (cmake/entries.cmake generates the table, NULL-terminated). */
#ifndef MPILAB_SRC_BENCH_ENTRIES_BUILTIN_H
#define MPILAB_SRC_BENCH_ENTRIES_BUILTIN_H

#include "mpilab/ops.h"

extern const mpilab_entry_list_t *const mpilab_builtin_entry_lists[];

#endif
