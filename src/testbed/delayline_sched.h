/* The delay line's adaptive scheduling class (--rt-adaptive, and the default of a sleeping
 * line on packet sockets as root): normal scheduling while it holds lone packets,
 * SCHED_FIFO while it holds a stream.
 *
 * Measured (docs/testbed-delayline.md): a sleeping line under SCHED_FIFO made lone
 * packets on a quiet machine 45-252 us late at a 100 us delay, where normal scheduling
 * kept them within 0.4 us; with a TCP stream next to two busy CPUs, normal scheduling made
 * the releases 2-25 times later on average than SCHED_FIFO (up to 14193 of 56000 over
 * 1 ms). The adaptive line takes the class each case wants. */
#ifndef MPILAB_TESTBED_DELAYLINE_SCHED_H
#define MPILAB_TESTBED_DELAYLINE_SCHED_H

#include <stddef.h>
#include <stdint.h>

/* a stream: at least this many packets held at once */
#define MPILAB_DL_ADAPT_HELD 8
/* back to normal scheduling this long after the line last held a stream */
#define MPILAB_DL_ADAPT_COOL_NS 50000000LL

typedef struct mpilab_dl_adapt {
    int on;             /* 1: adaptive (the class follows the held packets) */
    int fifo;           /* 1: SCHED_FIFO now */
    int priority;       /* the SCHED_FIFO priority it takes for a stream */
    int64_t stream_ns;  /* when it last held a stream (monotonic) */
    int64_t since_ns;   /* when the current class began */
    int64_t fifo_ns;    /* time spent under SCHED_FIFO in finished intervals */
    uint64_t to_fifo;   /* switches to SCHED_FIFO */
    uint64_t refused;   /* switches the kernel refused (then the line stays as it is) */
} mpilab_dl_adapt;

/* The class wanted with `held` packets held at time now (ns): 1, SCHED_FIFO; 0, normal. */
int mpilab_dl_adapt_want(const mpilab_dl_adapt *a, size_t held, int64_t now);

/* Note the held packets at time now and switch the calling process's class when the wanted
 * one differs (sched_setscheduler). Returns 1 when it switched, 0 when not, -1 when the
 * kernel refused (counted; adaptation then stops). Does nothing unless a->on. */
int mpilab_dl_adapt_step(mpilab_dl_adapt *a, size_t held, int64_t now);

/* Time spent under SCHED_FIFO up to now (ns). */
int64_t mpilab_dl_adapt_fifo_ns(const mpilab_dl_adapt *a, int64_t now);

#endif
