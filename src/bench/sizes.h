/* Internal: the runner's size list syntax. */
#ifndef MPILAB_SRC_BENCH_SIZES_H
#define MPILAB_SRC_BENCH_SIZES_H

#include <stddef.h>

/* Parse a comma list of items: a size ("4K"), an inclusive linear range "A:B:STEP" or a
 * geometric range "A:B:xF" (F >= 2; A == 0 contributes 0 and continues from 1). Sizes take
 * K/M/G suffixes. The result is sorted and without duplicates; at most max_count sizes.
 * Returns 0 with a malloc'd array in *out, or -1 with a one-line reason in err. */
int mpilab_sizes_parse(const char *spec, size_t max_count, size_t **out, size_t *count,
                       char *err, size_t errlen);

#endif
