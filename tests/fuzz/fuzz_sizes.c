/* Fuzz target: the size-list parser (mpilab_parse_size_list: `mpilab-bench --sizes`) and the
 * other strict parsers of include/mpilab/parse.h. Invariants: a list is 1..max sizes,
 * strictly increasing; a failure gives a non-empty one-line reason; numbers are finite,
 * durations and rates not negative. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "mpilab/parse.h"
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
    if (mpilab_parse_size_list(s, max, &out, &n, err, sizeof err) == 0) {
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
    if (mpilab_parse_duration(s, &d) == 0)
        FUZZ_ASSERT(d >= 0 && d - d == 0);
    if (mpilab_parse_rate(s, &d) == 0)
        FUZZ_ASSERT(d >= 0 && d - d == 0);
    (void)mpilab_parse_i64(s, &i64);
    (void)mpilab_parse_size(s, &z);
    free(s);
    return 0;
}
