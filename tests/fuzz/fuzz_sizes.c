/* Fuzz target: the runner's size-list parser (mpilab_sizes_parse, `--sizes`) and the strict
 * number parsers of src/common. Invariants: success gives 1..max sizes, strictly increasing;
 * failure gives a non-empty one-line reason and no allocation. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "bench/sizes.h"
#include "common/common.h"
#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size > 4096)
        return 0;
    char *s = malloc(size + 1);
    if (!s)
        return 0;
    memcpy(s, data, size);
    s[size] = '\0';
    size_t *out = NULL, n = 0;
    char err[256] = "";
    const size_t max = 4096;
    if (mpilab_sizes_parse(s, max, &out, &n, err, sizeof err) == 0) {
        FUZZ_ASSERT(out != NULL && n >= 1 && n <= max);
        for (size_t i = 1; i < n; i++)
            FUZZ_ASSERT(out[i - 1] < out[i]);
        free(out);
    } else {
        FUZZ_ASSERT(err[0] != '\0' && strchr(err, '\n') == NULL);
    }
    long long i64;
    double d;
    size_t z;
    if (mpilab_parse_double(s, &d) == 0)
        FUZZ_ASSERT(d == d && d - d == 0); /* finite */
    (void)mpilab_parse_i64(s, &i64);
    (void)mpilab_parse_size(s, &z);
    free(s);
    return 0;
}
