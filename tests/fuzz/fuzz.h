/* Shared by the fuzz targets: an assertion that aborts (so libFuzzer and the deterministic
 * driver both report the input), and the entry point every target defines. */
#ifndef MPILAB_FUZZ_H
#define MPILAB_FUZZ_H
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#define FUZZ_ASSERT(c)                                                                   \
    do {                                                                                 \
        if (!(c)) {                                                                      \
            fprintf(stderr, "%s:%d: fuzz invariant failed: %s\n", __FILE__, __LINE__, #c); \
            abort();                                                                     \
        }                                                                                \
    } while (0)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
#endif
