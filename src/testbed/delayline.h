/* The testbed's delay line: a TUN device whose packets are held for a fixed time and
 * released in arrival order (a stand-in for netem where the kernel lacks it).
 * Internal to the mpilab-delayline tool; not part of libmpilab. */
#ifndef MPILAB_SRC_TESTBED_DELAYLINE_H
#define MPILAB_SRC_TESTBED_DELAYLINE_H

#include <stddef.h>
#include <stdint.h>

/* Byte ring holding packets in arrival order. Each record: header + packet bytes. */
typedef struct mpilab_dl_ring {
    unsigned char *buf;
    size_t cap;      /* bytes */
    size_t head;     /* offset of the oldest record */
    size_t tail;     /* offset where the next record goes */
    size_t used;     /* bytes in use (including headers and wrap padding) */
    size_t count;    /* records held */
    size_t pend_off; /* reserved record's offset (valid between reserve and commit) */
    size_t pend_pad; /* wrap padding the reserved record needs */
} mpilab_dl_ring;

typedef struct mpilab_dl_rec {
    int64_t due_ns;  /* release time, CLOCK_MONOTONIC nanoseconds */
    uint32_t len;    /* packet bytes following this header */
    uint32_t wrap;   /* 1: padding record, the next record starts at offset 0 */
} mpilab_dl_rec;

int mpilab_dl_ring_init(mpilab_dl_ring *r, size_t cap);
void mpilab_dl_ring_free(mpilab_dl_ring *r);
/* Space for a packet of up to `maxlen` bytes at the tail, or NULL when the ring lacks
 * room. The caller fills it and then calls mpilab_dl_ring_commit with the real length. */
unsigned char *mpilab_dl_ring_reserve(mpilab_dl_ring *r, size_t maxlen);
void mpilab_dl_ring_commit(mpilab_dl_ring *r, size_t len, int64_t due_ns);
/* The oldest record (NULL when empty); its bytes follow the header. */
const mpilab_dl_rec *mpilab_dl_ring_peek(const mpilab_dl_ring *r);
void mpilab_dl_ring_pop(mpilab_dl_ring *r);

/* Statistics of a run. */
#define MPILAB_DL_LATE_BUCKETS 5 /* lateness < 10 us, < 100 us, < 1 ms, < 10 ms, more */

/* Fine lateness histogram for percentiles: bins of a quarter power of two of nanoseconds
 * (bin b holds lateness < 2^((b+1)/4) ns; 19% resolution), 1 ns .. about 4 s. */
#define MPILAB_DL_FINE_BUCKETS 128

typedef struct mpilab_dl_stats {
    uint64_t packets, bytes, dropped, dropped_bytes, write_errors;
    uint64_t late_hist[MPILAB_DL_LATE_BUCKETS];
    uint64_t late_fine[MPILAB_DL_FINE_BUCKETS];
    double late_sum_s, late_max_s;
    uint64_t max_held_bytes;
    uint64_t spins;        /* releases reached by spinning after an early wake-up */
    double wake_late_ns;   /* moving average of the timer wake-ups' lateness */
    uint64_t compensated;  /* arrivals dated back by the wake-up lateness (after idling) */
    double comp_sum_s;     /* their total correction */
    uint64_t kstamped;     /* arrivals dated by the kernel's timestamp (packet tap on the tun) */
} mpilab_dl_stats;

/* Fine bin of a lateness, and the upper bound (s) of the bin holding quantile q (0..1) of
 * the releases counted (0 when none). */
int mpilab_dl_fine_bucket(int64_t late_ns);
double mpilab_dl_late_quantile(const mpilab_dl_stats *st, double q);

/* The early wake-up before a release: the timer wakes the loop this long before the
 * packet is due and it spins the rest, so a lone packet leaves on time although a
 * sleeping thread wakes tens of microseconds late in a virtual machine. Twice the moving
 * average of the observed wake-up lateness, within these bounds. */
#define MPILAB_DL_MARGIN_MIN_NS 5000
#define MPILAB_DL_MARGIN_MAX_NS 300000
int64_t mpilab_dl_wake_margin(const mpilab_dl_stats *st);

/* A packet that wakes the line from an idle wait (blocked at least
 * MPILAB_DL_IDLE_NS) arrived before the line could read it, by about as long as a timer
 * wake-up comes late on this machine (the same path out of an idle CPU): its hold starts
 * that much earlier, the moving average of the timer wake-ups' lateness, at most
 * MPILAB_DL_MARGIN_MAX_NS. Only the first packet read after such a wake-up. */
#define MPILAB_DL_IDLE_NS 20000
int64_t mpilab_dl_arrival_comp(const mpilab_dl_stats *st);

typedef struct mpilab_dl_options {
    const char *dev;       /* tun device name */
    int64_t delay_ns;      /* hold time */
    size_t buffer;         /* ring bytes */
    const char *stats;     /* JSON statistics file, written at exit and on SIGUSR1 */
    const char *pidfile;   /* written once the device is attached */
    int vnet_hdr;          /* 1: IFF_VNET_HDR with TSO offloads (GSO super-packets) */
    int realtime;          /* MPILAB_DL_RT_AUTO / _OFF / _ON (see below) */
    int rt_priority;       /* SCHED_FIFO priority 1..99 when real-time */
} mpilab_dl_options;

/* Histogram bucket (0 .. MPILAB_DL_LATE_BUCKETS-1) of a release `late_ns` after its time. */
int mpilab_dl_late_bucket(int64_t late_ns);

/* Real-time scheduling of the release loop: SCHED_FIFO at rt_priority plus mlockall.
 * AUTO: try when running as root, fall back to normal scheduling with a one-line warning
 * if refused; ON: refusal is an error; OFF: normal scheduling. */
enum { MPILAB_DL_RT_AUTO = 0, MPILAB_DL_RT_OFF = 1, MPILAB_DL_RT_ON = 2 };
#define MPILAB_DL_DEFAULT_RT_PRIORITY 10

/* What mpilab_dl_realtime achieved. */
typedef struct mpilab_dl_sched {
    int fifo;        /* 1: SCHED_FIFO is in effect */
    int priority;    /* its priority (0 when not real-time) */
    int mlocked;     /* 1: memory is locked (mlockall) */
} mpilab_dl_sched;

/* Apply opt->realtime / rt_priority to the calling process. Returns 0 (warnings, if any,
 * printed as one line), or -1 with a one-line error when MPILAB_DL_RT_ON was refused. */
int mpilab_dl_realtime(const mpilab_dl_options *opt, mpilab_dl_sched *out);

/* Attach to the tun device and run until SIGTERM/SIGINT. Returns a process exit code;
 * errors are printed as one line on stderr. */
int mpilab_dl_run(const mpilab_dl_options *opt);

#endif
