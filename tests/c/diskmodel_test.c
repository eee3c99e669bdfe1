/* The position-aware disk model on synthetic request sequences: sequential requests cost
 * only their transfer; a seek costs seek_min + (seek_max - seek_min) sqrt(d / size) plus
 * the rotational delay; the head follows the requests; the elevator's C-LOOK order. */
#include <math.h>
#include <stdio.h>

#include "kit.h"

#include "mpilab/diskmodel.h"

static int close_to(double a, double b) { return fabs(a - b) <= 1e-12 * (fabs(b) + 1e-9); }

static const int64_t G = (int64_t)1 << 30;
static const mpilab_disk_model m = {0.0005, 0.008, 30.0 / 7200, 150e6, 4 * ((int64_t)1 << 30)};

MPILAB_TEST(sequential_stream_does_not_seek)
{
    mpilab_disk_state s = {0};
    /* a sequential stream: 8 requests of 1 MiB from position 0, head at 0: no seek */
    double t = 0;
    for (int i = 0; i < 8; i++)
        t += mpilab_disk_serve(&m, &s, (int64_t)i << 20, 1 << 20, 0);
    CHECKF(close_to(t, 8.0 * (1 << 20) / 150e6) && s.seeks == 0 && s.head == 8 << 20,
          "sequential: %g s, %lld seeks", t, (long long)s.seeks);
}

MPILAB_TEST(seek_cost_follows_the_distance)
{
    /* a full-stroke jump and back */
    double c1 = mpilab_disk_cost(&m, 0, 4 * G, 4096);
    CHECKF(close_to(c1, 0.008 + 30.0 / 7200 + 4096 / 150e6), "full stroke %g", c1);
    /* a quarter of the disk: sqrt(1/4) = 1/2 of the seek range */
    double c2 = mpilab_disk_cost(&m, G, 2 * G, 0);
    CHECKF(close_to(c2, 0.0005 + 0.0075 * 0.5 + 30.0 / 7200), "quarter %g", c2);
    /* backwards costs the same as forwards */
    CHECKF(close_to(mpilab_disk_cost(&m, 2 * G, G, 0), c2), "direction matters");
}

MPILAB_TEST(halo_gather_seeks_where_the_folded_request_does_not)
{
    /* the block layout's east-halo gather after its block (h small reads with stride w*8)
     * against the optimized layout's folded request: a seek per element vs none */
    mpilab_disk_state a = {0}, b = {0};
    const int64_t h = 256, w = 256, blk = h * w * 8;
    double tb = mpilab_disk_serve(&m, &a, 0, blk, 0);
    for (int64_t i = 0; i < h; i++)
        tb += mpilab_disk_serve(&m, &a, blk + i * w * 8, 8, 0);
    double to = mpilab_disk_serve(&m, &b, 0, blk + (w + h) * 8, 0);
    CHECKF(a.seeks == h - 1 && b.seeks == 0, "seeks %lld / %lld", (long long)a.seeks,
          (long long)b.seeks);
    CHECKF(tb > to && close_to(to, (double)(blk + (w + h) * 8) / 150e6), "gather %g folded %g",
          tb, to);
}

MPILAB_TEST(interleaved_streams_seek_at_every_switch)
{
    /* interleaving two far-apart streams (two waves on one disk) seeks at every switch */
    mpilab_disk_state d = {0};
    for (int i = 0; i < 10; i++)
        mpilab_disk_serve(&m, &d, (i % 2 ? 2 * G : 0) + (int64_t)(i / 2) * 4096, 4096, 0);
    CHECKF(d.seeks == 9, "interleaved: %lld seeks", (long long)d.seeks);
    CHECKF(d.reads == 10 && d.bytes_read == 10 * 4096 && d.writes == 0, "counters");
    CHECKF(d.busy_s > 9 * (0.0005 + 30.0 / 7200), "busy %g", d.busy_s);
}

MPILAB_TEST(rotation_off)
{
    /* rotation off */
    mpilab_disk_model m0 = m;
    m0.rot_s = 0;
    CHECKF(close_to(mpilab_disk_cost(&m0, 0, 4 * G, 0), 0.008), "no rotation");
}

MPILAB_TEST(elevator_is_c_look)
{
    /* elevator: C-LOOK */
    int64_t q[] = {500, 100, 900, 300};
    CHECKF(mpilab_disk_elevator_pick(q, 4, 400) == 0, "next up from 400");
    CHECKF(mpilab_disk_elevator_pick(q, 4, 950) == 1, "wrap to the lowest");
    CHECKF(mpilab_disk_elevator_pick(q, 4, 300) == 3, "equal position first");
    CHECKF(mpilab_disk_elevator_pick(q, 0, 0) == -1, "empty queue");
}

MPILAB_TEST_MAIN()
