/* The delay line's packet ring: FIFO order, wrap-around, refusal when full. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testbed/delayline.h"

#define CHECK(c) do { if (!(c)) { fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #c); return 1; } } while (0)

int main(void)
{
    mpilab_dl_ring r;
    CHECK(mpilab_dl_ring_init(&r, 4096) == 0);
    /* push/pop many variable-size records through a small ring: every record comes out
     * in order with its bytes intact, across many wrap-arounds */
    uint32_t next_in = 0, next_out = 0;
    unsigned seed = 12345;
    int refused = 0;
    for (int step = 0; step < 20000; step++) {
        seed = seed * 1103515245u + 12345u;
        size_t len = 1 + (seed >> 16) % 700;
        int push = ((seed >> 8) & 3) != 0;
        if (push) {
            unsigned char *p = mpilab_dl_ring_reserve(&r, 700);
            if (!p) {
                refused++;
                CHECK(r.count > 0);
                push = 0;
            } else {
                for (size_t k = 0; k < len; k++)
                    p[k] = (unsigned char)(next_in + k);
                mpilab_dl_ring_commit(&r, len, (int64_t)next_in);
                next_in++;
                CHECK(r.used <= r.cap);
            }
        }
        if (!push) {
            const mpilab_dl_rec *h = mpilab_dl_ring_peek(&r);
            if (!h) {
                CHECK(next_in == next_out);
                continue;
            }
            CHECK(h->due_ns == (int64_t)next_out);
            CHECK(h->wrap == 0);
            const unsigned char *d = (const unsigned char *)h + sizeof(*h);
            for (size_t k = 0; k < h->len; k++)
                CHECK(d[k] == (unsigned char)(next_out + k));
            mpilab_dl_ring_pop(&r);
            next_out++;
        }
    }
    CHECK(refused > 0);          /* the ring did fill up */
    CHECK(next_out > 1000);      /* and many records went through */
    while (mpilab_dl_ring_peek(&r)) {
        CHECK(mpilab_dl_ring_peek(&r)->due_ns == (int64_t)next_out);
        mpilab_dl_ring_pop(&r);
        next_out++;
    }
    CHECK(next_out == next_in);
    CHECK(r.used == 0 && r.count == 0);
    /* a ring too small for the request refuses it */
    CHECK(mpilab_dl_ring_reserve(&r, 8192) == NULL);
    mpilab_dl_ring_free(&r);
    /* lateness histogram buckets: < 10 us, < 100 us, < 1 ms, < 10 ms, more */
    CHECK(mpilab_dl_late_bucket(0) == 0 && mpilab_dl_late_bucket(9999) == 0);
    CHECK(mpilab_dl_late_bucket(10000) == 1 && mpilab_dl_late_bucket(99999) == 1);
    CHECK(mpilab_dl_late_bucket(100000) == 2 && mpilab_dl_late_bucket(999999) == 2);
    CHECK(mpilab_dl_late_bucket(1000000) == 3 && mpilab_dl_late_bucket(9999999) == 3);
    CHECK(mpilab_dl_late_bucket(10000000) == 4 && mpilab_dl_late_bucket(INT64_MAX) == 4);
    /* real-time off does nothing and reports normal scheduling */
    mpilab_dl_options o = {.dev = "x", .delay_ns = 0, .buffer = 0, .stats = NULL, .pidfile = NULL,
                           .vnet_hdr = 1, .realtime = MPILAB_DL_RT_OFF, .rt_priority = 10};
    mpilab_dl_sched sc = {.fifo = 7, .priority = 7, .mlocked = 7};
    CHECK(mpilab_dl_realtime(&o, &sc) == 0 && sc.fifo == 0 && sc.priority == 0 && sc.mlocked == 0);
    printf("delayline ring ok (%u records)\n", next_in);
    return 0;
}
