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
typedef struct mpilab_dl_stats {
    uint64_t packets, bytes, dropped, dropped_bytes, write_errors;
    double late_sum_s, late_max_s;
    uint64_t max_held_bytes;
} mpilab_dl_stats;

typedef struct mpilab_dl_options {
    const char *dev;       /* tun device name */
    int64_t delay_ns;      /* hold time */
    size_t buffer;         /* ring bytes */
    const char *stats;     /* JSON statistics file, written at exit and on SIGUSR1 */
    const char *pidfile;   /* written once the device is attached */
    int vnet_hdr;          /* 1: IFF_VNET_HDR with TSO offloads (GSO super-packets) */
} mpilab_dl_options;

/* Attach to the tun device and run until SIGTERM/SIGINT. Returns a process exit code;
 * errors are printed as one line on stderr. */
int mpilab_dl_run(const mpilab_dl_options *opt);

#endif
