/* The point-to-point payloads are written before they are timed: a block never written reads
 * the kernel's shared zero page, and a send from it copies one cache-resident 4 KiB page over
 * and over (docs/bench.md, "Buffers"). Every 4 KiB page of a payload holds written, non-zero
 * bytes (calloc's untouched pages are all zero). */
#include <stddef.h>

#include "kit.h"
#include "bench/payload.h"

static void check_written(size_t n)
{
    unsigned char *p = mpilab_payload_alloc(n);
    CHECKF(p != NULL, "%zu bytes", n);
    if (!p)
        return;
    size_t len = n ? n : 1, bad = 0;
    for (size_t page = 0; page < len; page += 4096) {
        size_t end = page + 4096 < len ? page + 4096 : len, nonzero = 0;
        for (size_t k = page; k < end; k++)
            nonzero += p[k] != 0;
        bad += nonzero == 0;
    }
    CHECKF(bad == 0, "%zu bytes: %zu page(s) hold only zero bytes (never written)", n, bad);
    mpilab_payload_free(p);
}

MPILAB_TEST(payload_pages_are_written)
{
    check_written(0);
    check_written(1);
    check_written(4096);
    check_written((size_t)1 << 20);
    check_written(((size_t)4 << 20) + 3); /* large enough for a fresh mapping of its own */
}

MPILAB_TEST(payload_free_accepts_null)
{
    mpilab_payload_free(NULL);
    CHECK(1);
}

MPILAB_TEST_MAIN()
