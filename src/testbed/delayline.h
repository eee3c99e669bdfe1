/* The testbed's delay line: a TUN device whose packets are held for a fixed time and
 * released in arrival order (a stand-in for netem where the kernel lacks it).
 * Internal to the mpilab-delayline tool; not part of libmpilab. */
#ifndef MPILAB_SRC_TESTBED_DELAYLINE_H
#define MPILAB_SRC_TESTBED_DELAYLINE_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "testbed/delayline_sched.h"

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
    int64_t arr_ns;  /* arrival at the router's ingress leg (kernel stamp), -1 unknown */
    uint32_t len;    /* packet bytes following this header */
    uint32_t wrap;   /* 1: padding record, the next record starts at offset 0 */
    int32_t dir;     /* the ingress leg's interface index (its direction), 0 unknown */
    uint32_t spare;
} mpilab_dl_rec;

int mpilab_dl_ring_init(mpilab_dl_ring *r, size_t cap);
void mpilab_dl_ring_free(mpilab_dl_ring *r);
/* Space for a packet of up to `maxlen` bytes at the tail, or NULL when the ring lacks
 * room. The caller fills it and then calls mpilab_dl_ring_commit with the real length. */
unsigned char *mpilab_dl_ring_reserve(mpilab_dl_ring *r, size_t maxlen);
void mpilab_dl_ring_commit(mpilab_dl_ring *r, size_t len, int64_t due_ns);
/* The same, recording the packet's ingress stamp (arr_ns; -1: unknown). */
void mpilab_dl_ring_commit_at(mpilab_dl_ring *r, size_t len, int64_t due_ns, int64_t arr_ns);
/* The same, with the ingress leg's interface index (dir; 0: unknown). */
void mpilab_dl_ring_commit_dir(mpilab_dl_ring *r, size_t len, int64_t due_ns, int64_t arr_ns, int dir);
/* The oldest record (NULL when empty); its bytes follow the header. */
const mpilab_dl_rec *mpilab_dl_ring_peek(const mpilab_dl_ring *r);
void mpilab_dl_ring_pop(mpilab_dl_ring *r);

/* Statistics of a run. */
#define MPILAB_DL_LATE_BUCKETS 5 /* lateness < 10 us, < 100 us, < 1 ms, < 10 ms, more */

/* Fine lateness histogram for percentiles: bins of a quarter power of two of nanoseconds
 * (bin b holds lateness < 2^((b+1)/4) ns; 19% resolution), 1 ns .. about 4 s. */
#define MPILAB_DL_FINE_BUCKETS 128

#define MPILAB_DL_WAKE_N 16
#define MPILAB_DL_SPIN_GAP_NS 20000

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
    uint64_t ingress_stamped; /* arrivals dated at the router's ingress leg (leg tap) */
    /* router crossings seen whole (ingress leg to egress leg, kernel stamps on both) */
    uint64_t crossings, cross_early;
    uint64_t cross_fine[MPILAB_DL_FINE_BUCKETS]; /* crossing - hold, when not early */
    double cross_max_s, cross_early_max_s;
    /* forwarding out (the line's write to the egress leg) and the advance taken off holds */
    uint64_t out_fine[MPILAB_DL_FINE_BUCKETS];
    uint64_t out_n, advanced;
    double out_max_s, advance_sum_s, advance_max_s;
    int busy;              /* 1: busy polling (never sleeps) */
    int legs;              /* 1: the leg tap is open */
    int64_t trim_ns, hold_ns; /* the trim in force and the hold it leaves (delay - trim) */
    uint64_t trim_reads;   /* trim files read (at the start and on SIGHUP) */
    /* the cold crossing (--cold-crossing): undelayed router crossings learned, releases
     * that added one (and its size), releases that had none to add (default advance) */
    uint64_t cold_learned, cold_used, cold_fallback;
    double cold_sum_s, cold_max_s;
    /* the read lag: the line's read of a packet after the kernel handed it to the tun
     * device (for a sleeping line: its wake-up on the packet's arrival) */
    uint64_t read_fine[MPILAB_DL_FINE_BUCKETS];
    uint64_t read_n;
    double read_max_s;
    /* the last MPILAB_DL_WAKE_N timer wake-ups' lateness (ns), for --spin-last auto */
    int64_t wake_recent[MPILAB_DL_WAKE_N];
    int wake_n, wake_next;
    /* spinning before a release: turns of the loop that took longer than
     * MPILAB_DL_SPIN_GAP_NS (the line descheduled while it spun), and the longest */
    uint64_t spin_gaps;
    double spin_gap_max_s;
} mpilab_dl_stats;

/* Fine bin of a lateness, and the upper bound (s) of the bin holding quantile q (0..1) of
 * the releases counted (0 when none). */
int mpilab_dl_fine_bucket(int64_t late_ns);
double mpilab_dl_late_quantile(const mpilab_dl_stats *st, double q);
/* The same for any fine histogram (max_s returned when q reaches past the last bin). */
double mpilab_dl_hist_quantile(const uint64_t *fine, double q, double max_s);

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

/* --warm-path: the line sends a warm-up frame (mpilab_dl_warm_frame) only when it has
 * released nothing for this long: a stream keeps the path warm by itself. */
#define MPILAB_DL_WARM_IDLE_NS 1000000
/* --warm-path's default with packet I/O: 200 us, longer than a cold warm-up frame's own
 * crossing (20-50 us here), so that it is out of the way before the packet follows. */
#define MPILAB_DL_WARM_DEFAULT_NS 200000
/* --keep-warm: the shortest gap between two keep-warm frames (mpilab_dl_pkt_keep_warm). */
#define MPILAB_DL_KEEP_WARM_MIN_NS 50000

typedef struct mpilab_dl_options {
    const char *dev;       /* tun device name */
    int64_t delay_ns;      /* hold time */
    size_t buffer;         /* ring bytes */
    const char *stats;     /* JSON statistics file, written at exit and on SIGUSR1 */
    const char *pidfile;   /* written once the device is attached */
    int vnet_hdr;          /* 1: IFF_VNET_HDR with TSO offloads (GSO super-packets) */
    int realtime;          /* MPILAB_DL_RT_AUTO / _OFF / _ON (see below) */
    int rt_adaptive;       /* 1: SCHED_FIFO only while a stream is held (delayline_sched.h) */
    int rt_priority;       /* SCHED_FIFO priority 1..99 when real-time */
    int busy_poll;         /* MPILAB_DL_BUSY_AUTO / _OFF / _ON (see below) */
    int leg_stamps;        /* 1: open the leg tap (router crossings, forwarding cost) */
    int arrival_ingress;   /* 1: date arrivals at the ingress leg (else at the tun device) */
    int advance;           /* 1: release early by the measured forwarding cost (needs legs) */
    double advance_q;      /* 0: the least recent cost less a margin; in (0,1]: that quantile
                            * of the recent costs, no margin (mpilab_dl_calib_quantile) */
    int idle_poll;         /* 1: hold /dev/cpu_dma_latency at 0 while running (mpilab_dl_idle_poll) */
    int cpu;               /* >= 0: run on this CPU only (sched_setaffinity); -1: anywhere */
    int64_t trim_ns;       /* taken off every hold (mpilab_dl_hold); 0: none */
    const char *trim_file; /* the trim, read at the start and again on SIGHUP; NULL: none */
    int cold;              /* 1: --cold-crossing (mpilab_dl_cold_cost) */
    int64_t spin_last_ns;  /* 0: the default wake margin; -1: auto (mpilab_dl_spin_margin);
                            * > 0: wake this long before each release and spin the rest */
    int64_t warm_ns;       /* > 0 (--warm-path, packet I/O; 0 off): a warm-up frame this long before
                            * the release of a packet held longer, after an idle leg */
    int64_t keep_ns;       /* > 0 (--keep-warm, packet I/O; 0 off): each peer's warm-up frame once per
                            * this long while nothing has been released for MPILAB_DL_WARM_IDLE_NS */
    int io_packet;         /* 1: --io packet (delayline_packet.h): packet sockets on the
                            * router's legs instead of a tun device (dev unused) */
    struct mpilab_dl_peer *peers; /* --io packet: the nodes delivered to */
    size_t npeers;
} mpilab_dl_options;

/* --spin-last: a sleeping line wakes this long before a release and spins the rest, so
 * that a timer wake-up that comes late (tens to hundreds of microseconds in this VM) does
 * not delay the packet. auto: the largest lateness of the last MPILAB_DL_WAKE_N timer
 * wake-ups plus MPILAB_DL_SPIN_SLACK_NS, within [MPILAB_DL_SPIN_MIN_NS,
 * MPILAB_DL_SPIN_MAX_NS] (the default margin is twice their moving average, which one
 * late wake-up among quick ones does not move). A line that spins is at SCHED_FIFO when
 * root (the sleeping line's default), so no ordinary process preempts the spin; turns of
 * the loop longer than MPILAB_DL_SPIN_GAP_NS (the vCPU taken away) are counted. */
#define MPILAB_DL_SPIN_SLACK_NS 10000
#define MPILAB_DL_SPIN_MIN_NS 20000
#define MPILAB_DL_SPIN_MAX_NS 1000000
int64_t mpilab_dl_spin_margin(const mpilab_dl_stats *st, int64_t spin_last_ns);
/* Note one timer wake-up's lateness (for the moving average and the recent maximum). */
void mpilab_dl_note_wake(mpilab_dl_stats *st, int64_t late_ns);

/* The trim: what the path itself adds to a lone packet beyond the undelayed route (the
 * detour through the tun device and the line, the far side's path that the line's write
 * runs cold), measured from outside (`mpilab testbed up` with wan.delay_trim = "auto",
 * python/mpilab/testbed/oneway.py) and taken off the hold, so that the one-way delay a
 * lone packet sees is the configured delay above the undelayed route. The hold is
 * delay - trim, never below 0: a trim larger than the delay means the path alone is
 * longer than asked (the statistics say so: trim_s > delay_s). A negative trim lengthens
 * the hold: the line's warmed path crossed faster than the undelayed route's cold one. */
int64_t mpilab_dl_hold(int64_t delay_ns, int64_t trim_ns);
/* Parse a trim: a duration of 0 to 1 s, with an optional leading '-' ("-6.5us"). 0, or -1
 * (nothing printed) with *trim_ns unchanged. */
int mpilab_dl_parse_trim(const char *text, int64_t *trim_ns);
/* Read a trim file (one trim, as mpilab_dl_parse_trim). 0, or -1 with a one-line
 * warning and *trim_ns unchanged. */
int mpilab_dl_read_trim(const char *path, int64_t *trim_ns);

/* Idle polling: in this virtual machine an idle vCPU halts (the haltpoll cpuidle driver with
 * guest_halt_poll_ns = 0), and waking it (a packet for a sleeping line, a release timer)
 * goes through the host: tens of microseconds. Holding the CPU latency request
 * (/dev/cpu_dma_latency) at 0 makes every idle CPU poll instead of halting, so a wake-up
 * is a flag the polling CPU sees at once; it costs the guest no CPU time (polling happens
 * only where nothing else would run), the host a vCPU that never sleeps. The request holds
 * while the returned descriptor is open: the kernel drops it when the line exits, however
 * it exits. Returns the descriptor, or -1 with a one-line message (an error when `strict`,
 * else a warning). */
int mpilab_dl_idle_poll(int strict);
/* Pin the calling process to `cpu`; 0, or -1 with a one-line error. */
int mpilab_dl_pin(int cpu);

/* Busy polling: the loop never sleeps (zero poll timeouts), so a packet is read the moment
 * it enters the tun device and no wake-up of an idle CPU comes between: the line owns a CPU
 * (two CPU-bound workers on this 2-core machine took 1.71x as long). AUTO: on for delays
 * below MPILAB_DL_BUSY_AUTO_NS, which a line woken by the packet (20-60 us after it here)
 * cannot honour; there (10 us) a lone packet's crossing came 28 us over D busy against
 * 110 us sleeping, in one bench slot (docs/testbed-delayline.md). The default (AUTO): delays that
 * short are chosen on purpose, and only then is the core spent. */
enum { MPILAB_DL_BUSY_AUTO = -1, MPILAB_DL_BUSY_OFF = 0, MPILAB_DL_BUSY_ON = 1 };
#define MPILAB_DL_BUSY_AUTO_NS 100000
/* 1 when opt asks for busy polling: on; or auto below MPILAB_DL_BUSY_AUTO_NS, or, with
 * packet I/O and --warm-path, below the warm-up lead (a sleeping line whose hold is
 * shorter than the lead never warms the path: at 100 us lone echoes crossed 20-70 us
 * late in 8 of 10 runs, a busy line that keeps the paths warm none; docs/testbed-delayline.md,
 * measured). A busy line
 * stays at normal scheduling unless --rt-priority demands SCHED_FIFO: a real-time task that
 * never sleeps is stopped by the kernel's real-time throttling (here: releases up to 28 ms
 * late, p99 of the router crossings, in a bench slot). */
int mpilab_dl_busy(const mpilab_dl_options *opt);

/* ---- the router's legs (delayline_tap.c) ----
 * One packet socket on every interface of the namespace but the tun device sees each IP
 * packet arrive on a site leg (ingress) and leave on one (egress), with kernel timestamps.
 * The ingress stamp dates a packet's arrival at the router (before the routing into the tun
 * device and the line's read); the egress stamp, matched to the line's write, measures the
 * forwarding out of the tun device to the leg, the cost the release can be advanced by. */
#define MPILAB_DL_SNAP 64
#define MPILAB_DL_PEND 256
typedef struct mpilab_dl_snap {
    int64_t t_ns;    /* ingress: the kernel's stamp; written: the write's start */
    int64_t arr_ns;  /* written: the packet's ingress stamp (-1 unknown) */
    int bucket;      /* written: the idle-gap bucket it was released in */
    int ifindex;     /* the interface it was seen on (ingress: its direction) */
    uint32_t len;    /* bytes in snap (0: slot consumed) */
    unsigned char snap[MPILAB_DL_SNAP];
} mpilab_dl_snap;
typedef struct mpilab_dl_snapq {
    mpilab_dl_snap e[MPILAB_DL_PEND];
    size_t head, count;
} mpilab_dl_snapq;

/* Forwarding-cost calibration: the write-to-egress cost grows with the time the path was
 * idle (caches go cold: 7 us after 10 us, 27 us after 100 ms, docs/testbed-delayline.md), so it is
 * kept per bucket of the idle gap since the previous write (bucket b: gap < 2^b us), the
 * last MPILAB_DL_CAL_N costs each. */
#define MPILAB_DL_GAP_BUCKETS 24
#define MPILAB_DL_CAL_N 32
#define MPILAB_DL_CAL_MIN 3           /* samples before a bucket's minimum is used */
#define MPILAB_DL_ADVANCE_MAX_NS 100000
/* less this much and a quarter: the least of a bucket's last costs is no bound on the next
 * one (with the least alone, 2 of 19 crossings came out up to 1 us short in a first check;
 * with 2 us off it, 5 of 14 up to 1.3 us, at load 4.5) */
#define MPILAB_DL_ADVANCE_SAFETY_NS 2000
typedef struct mpilab_dl_calib {
    int64_t cost[MPILAB_DL_GAP_BUCKETS][MPILAB_DL_CAL_N];
    int n[MPILAB_DL_GAP_BUCKETS], next[MPILAB_DL_GAP_BUCKETS];
} mpilab_dl_calib;

int mpilab_dl_gap_bucket(int64_t gap_ns);
void mpilab_dl_calib_add(mpilab_dl_calib *c, int bucket, int64_t cost_ns);
/* How much earlier than due a packet released after an idle gap in `bucket` may be
 * written: the least cost among the bucket's last samples (the cost of a packet that went
 * out fastest under the same conditions), else the nearest shorter-gap bucket's (a warmer
 * path: cheaper, so never too much), else 0; less a quarter of it and
 * MPILAB_DL_ADVANCE_SAFETY_NS, at most MPILAB_DL_ADVANCE_MAX_NS. */
int64_t mpilab_dl_calib_advance(const mpilab_dl_calib *c, int bucket);
/* The same bucket choice, but the q-quantile (0 < q <= 1, nearest rank) of the bucket's
 * last costs with no margin: an advance that centres the crossing on the delay instead of
 * keeping it at or above (q = 0.5: half the crossings a little early); at most
 * MPILAB_DL_ADVANCE_MAX_NS, 0 when nothing is known. */
int64_t mpilab_dl_calib_quantile(const mpilab_dl_calib *c, int bucket, double q);

/* 1 when a and b are the same IP packet at two points of the router: equal in their first
 * MPILAB_DL_SNAP bytes except what forwarding changes (IPv4 TTL and header checksum, IPv6
 * hop limit). */
int mpilab_dl_same_packet(const unsigned char *a, size_t alen, const unsigned char *b, size_t blen);
void mpilab_dl_snapq_push(mpilab_dl_snapq *q, const mpilab_dl_snap *s);
/* Take out (mark consumed) the oldest entry that is the same packet as pkt; returns it or NULL. */
mpilab_dl_snap *mpilab_dl_snapq_take(mpilab_dl_snapq *q, const unsigned char *pkt, size_t len);
/* Drop consumed entries and entries older than `before` from the head. */
void mpilab_dl_snapq_trim(mpilab_dl_snapq *q, int64_t before);

/* The offset of CLOCK_REALTIME (the kernel's packet stamps) from CLOCK_MONOTONIC. */
typedef struct mpilab_dl_rtclock {
    int64_t off_ns, at_ns; /* at_ns: when it was read (0: not yet) */
} mpilab_dl_rtclock;

/* The cold crossing (--cold-crossing, delayline_cold.c): what the router itself takes to
 * forward a packet that does not go through the line (ingress leg to egress leg), per
 * direction (ingress interface) and per bucket of the idle gap since the router last sent
 * a packet out on a leg: a lone packet after a long idle gap crosses a cold path (15-45 us
 * here), an echo right behind its request a warm one. Learned from every such undelayed
 * crossing the leg tap sees (`testbed up` with wan.delay_trim = "auto" sends some; so does
 * bench/testbed_hop_capture.py), so that a delayed packet can leave the router at its
 * ingress + delay + the crossing an undelayed packet would have had, i.e. the delay comes
 * on top of the router, as on a real link. */
#define MPILAB_DL_COLD_DIRS 8
#define MPILAB_DL_COLD_MAX_NS 200000
typedef struct mpilab_dl_cold {
    int ifindex[MPILAB_DL_COLD_DIRS];
    int ndirs;
    mpilab_dl_calib cal[MPILAB_DL_COLD_DIRS];
    int64_t last_egress_ns; /* the latest packet seen leaving on a leg (kernel stamp) */
} mpilab_dl_cold;
/* Learn one undelayed crossing of `cost_ns` in direction `ifindex` after an idle gap in
 * `bucket` (directions beyond MPILAB_DL_COLD_DIRS are not kept). */
void mpilab_dl_cold_learn(mpilab_dl_cold *c, int ifindex, int bucket, int64_t cost_ns);
/* The undelayed crossing expected in direction `ifindex` after an idle gap in `bucket`:
 * the median (upper middle) of the last costs of the buckets within r of `bucket`, for the
 * least r that gives at least MPILAB_DL_CAL_MIN of them, within [0, MPILAB_DL_COLD_MAX_NS];
 * -1 when the direction has fewer. */
int64_t mpilab_dl_cold_cost(const mpilab_dl_cold *c, int ifindex, int bucket);

typedef struct mpilab_dl_legs {
    int fd;
    mpilab_dl_rtclock clk;
    mpilab_dl_snapq in;      /* ingress records not yet matched to a read */
    mpilab_dl_snapq out;     /* written packets not yet seen leaving */
    mpilab_dl_calib cal;
    mpilab_dl_cold cold;     /* undelayed crossings (ingress record matched by an egress) */
} mpilab_dl_legs;

/* The tun device's own tap (outgoing into `dev`), or -1. */
int mpilab_dl_tap_open(const char *dev);
/* The kernel's arrival time (CLOCK_MONOTONIC ns) at the tun device of the packet just read, or -1. */
int64_t mpilab_dl_tap_arrival(int tap, mpilab_dl_rtclock *clk, const unsigned char *pkt, size_t len);
/* One record off packet socket s (non-blocking): its first cap bytes into buf, the kernel
 * stamp (CLOCK_REALTIME ns, -1 none), the packet type and the interface's index. Returns
 * the bytes read (at most cap), or -1 (nothing waiting, or an error: errno). */
ssize_t mpilab_dl_read_record(int s, unsigned char *buf, size_t cap, int64_t *rt_ns, int *pkttype,
                              int *ifindex);
/* A kernel stamp (CLOCK_REALTIME ns) as CLOCK_MONOTONIC, or -1 (unknown, or older than max_age_ns). */
int64_t mpilab_dl_rt_to_mono(mpilab_dl_rtclock *c, int64_t rt_ns, int64_t max_age_ns);
/* Open the leg tap (every interface but `tun_dev`; NULL: every interface); 0, or -1 (no
 * CAP_NET_RAW: not used). */
int mpilab_dl_legs_open(mpilab_dl_legs *L, const char *tun_dev);
void mpilab_dl_legs_close(mpilab_dl_legs *L);
/* Read every record waiting: ingress ones are queued, egress ones matched to written
 * packets (calibration and crossing statistics for a delay of delay_ns). */
void mpilab_dl_legs_drain(mpilab_dl_legs *L, mpilab_dl_stats *st, int64_t delay_ns);
/* The ingress stamp of the packet just read (CLOCK_MONOTONIC ns), or -1; *dir: the
 * ingress interface's index (0 unknown). */
int64_t mpilab_dl_legs_ingress(mpilab_dl_legs *L, mpilab_dl_stats *st, int64_t delay_ns,
                               const unsigned char *pkt, size_t len, int64_t now, int *dir);
/* Note a packet about to be written (its first bytes, the time, its ingress stamp, bucket). */
void mpilab_dl_legs_written(mpilab_dl_legs *L, const unsigned char *pkt, size_t len, int64_t t_ns,
                            int64_t arr_ns, int bucket);

/* The statistics' "router" object (crossings, forwarding, advance) and "cold_crossing"
 * object (the learned undelayed crossings, per direction and bucket); NULL when out of
 * memory. */
struct json_t;
struct json_t *mpilab_dl_router_json(const mpilab_dl_stats *st);
struct json_t *mpilab_dl_cold_json(const mpilab_dl_stats *st, const mpilab_dl_legs *legs, int enabled);
/* {"read_lag": {reads, p50_s, p90_s, p99_s, max_s}, "spin_last": {mode, margin_s,
 * wake_late_recent_max_s, spin_gaps, spin_gap_max_s}} to merge into the statistics. */
struct json_t *mpilab_dl_wait_json(const mpilab_dl_stats *st, int64_t spin_last_ns);

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
    int idle_poll;   /* 1: the CPU latency request is held at 0 (idle CPUs poll) */
    int cpu;         /* the CPU the line is pinned to, -1: none */
    mpilab_dl_adapt adapt; /* --rt-adaptive: the class follows the held packets */
} mpilab_dl_sched;

/* Apply opt->realtime / rt_priority to the calling process. Returns 0 (warnings, if any,
 * printed as one line), or -1 with a one-line error when MPILAB_DL_RT_ON was refused. */
int mpilab_dl_realtime(const mpilab_dl_options *opt, mpilab_dl_sched *out);
/* The class mpilab_dl_realtime starts a line in (`root`: 1 when running as root). Asked
 * for: --rt-adaptive, then --rt-priority (FIFO), --no-realtime (normal). AUTO: normal
 * unless root and sleeping (a busy-polling line stays normal); then SCHED_FIFO on the tun
 * device and adaptive on packet sockets, where a real-time sleeper made lone packets 45-250
 * us late at 100 us and normal scheduling released a stream beside two busy
 * CPUs 57 us late on average where adaptive did 4.4 (docs/testbed-delayline.md). */
enum { MPILAB_DL_CLASS_NORMAL = 0, MPILAB_DL_CLASS_FIFO = 1, MPILAB_DL_CLASS_ADAPTIVE = 2 };
int mpilab_dl_start_class(const mpilab_dl_options *opt, int root);
/* Write the statistics file (opt->stats; nothing when NULL): 0, or -1 with a one-line
 * message. `io` (taken over, may be NULL): the I/O mode's object ("io"). */
int mpilab_dl_write_stats(const mpilab_dl_options *opt, const mpilab_dl_stats *st,
                          const mpilab_dl_sched *sc, int running, const struct mpilab_dl_legs *legs,
                          struct json_t *io);

/* Attach to the tun device and run until SIGTERM/SIGINT. Returns a process exit code;
 * errors are printed as one line on stderr. */
/* The smallest --buffer a line runs with (bytes): two of the largest packets. */
size_t mpilab_dl_buffer_min(void);

int mpilab_dl_run(const mpilab_dl_options *opt);

#endif
