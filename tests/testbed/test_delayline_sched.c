/* The delay line's adaptive scheduling class (--rt-adaptive): which class it wants for the
 * packets it holds, and the switches it makes (real ones need CAP_SYS_NICE: as root the
 * process's class is read back from the kernel; otherwise a refused switch must stop the
 * adaptation and be counted). */
#include <sched.h>
#include <string.h>
#include <unistd.h>

#include "kit.h"
#include "testbed/delayline_sched.h"

#define MS 1000000LL

MPILAB_TEST(lone_packets_want_normal_a_stream_wants_fifo)
{
    mpilab_dl_adapt a;
    memset(&a, 0, sizeof(a));
    CHECK(mpilab_dl_adapt_want(&a, 0, 0) == 0);
    CHECK(mpilab_dl_adapt_want(&a, MPILAB_DL_ADAPT_HELD - 1, 0) == 0);
    CHECK(mpilab_dl_adapt_want(&a, MPILAB_DL_ADAPT_HELD, 0) == 1);
    /* under FIFO, a pause in the stream keeps it for the cooling time, not longer */
    a.fifo = 1;
    a.stream_ns = 100 * MS;
    CHECK(mpilab_dl_adapt_want(&a, 1, 100 * MS + MPILAB_DL_ADAPT_COOL_NS - 1) == 1);
    CHECK(mpilab_dl_adapt_want(&a, 1, 100 * MS + MPILAB_DL_ADAPT_COOL_NS) == 0);
    /* a line at normal scheduling does not go real-time for lone packets after a stream */
    a.fifo = 0;
    CHECK(mpilab_dl_adapt_want(&a, 1, 100 * MS + 1) == 0);
}

MPILAB_TEST(off_does_nothing)
{
    mpilab_dl_adapt a;
    memset(&a, 0, sizeof(a));
    CHECK(mpilab_dl_adapt_step(&a, 1000, 5 * MS) == 0);
    CHECK(a.fifo == 0 && a.to_fifo == 0 && a.stream_ns == 0);
}

MPILAB_TEST(switches_into_fifo_and_back)
{
    mpilab_dl_adapt a;
    memset(&a, 0, sizeof(a));
    a.on = 1;
    a.priority = 1;
    int r = mpilab_dl_adapt_step(&a, MPILAB_DL_ADAPT_HELD, 10 * MS);
    if (r < 0) {
        /* refused (not root, or no CAP_SYS_NICE): counted, and it stops trying */
        CHECK(geteuid() != 0);
        CHECK(a.refused == 1 && a.on == 0 && a.fifo == 0);
        CHECK(mpilab_dl_adapt_step(&a, MPILAB_DL_ADAPT_HELD, 11 * MS) == 0);
        return;
    }
    CHECK(r == 1 && a.fifo == 1 && a.to_fifo == 1);
    CHECK(sched_getscheduler(0) == SCHED_FIFO);
    /* still a stream, and a pause inside the cooling time: no switch */
    CHECK(mpilab_dl_adapt_step(&a, MPILAB_DL_ADAPT_HELD + 5, 20 * MS) == 0);
    CHECK(mpilab_dl_adapt_step(&a, 0, 20 * MS + MPILAB_DL_ADAPT_COOL_NS / 2) == 0);
    CHECK(mpilab_dl_adapt_fifo_ns(&a, 30 * MS) == 20 * MS);
    /* the cooling time after the last stream: back to normal, the time under FIFO kept */
    CHECK(mpilab_dl_adapt_step(&a, 0, 20 * MS + MPILAB_DL_ADAPT_COOL_NS) == 1);
    CHECK(a.fifo == 0 && sched_getscheduler(0) == SCHED_OTHER);
    CHECK(mpilab_dl_adapt_fifo_ns(&a, 500 * MS) == 10 * MS + MPILAB_DL_ADAPT_COOL_NS);
    CHECK(a.to_fifo == 1 && a.refused == 0);
}

MPILAB_TEST_MAIN()
