/* Delay line engine: see delayline.h. One thread: read what the kernel routed into the
 * tun device, stamp it with its release time, write it back when that time comes. */
#include "mpilab/cpuidle.h"
#include "testbed/delayline.h"
#include "testbed/delayline_packet.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/if.h>
#include <linux/if_tun.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/sockios.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <netinet/in.h>
#include <sys/prctl.h>
#include <sched.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>
#include <math.h>

#include "common/common.h"

#define DL_ALIGN 8u
#define DL_HDR (sizeof(mpilab_dl_rec))
#define DL_VNET_HDR_LEN 10  /* struct virtio_net_hdr */
#define DL_MAX_PACKET (65536u + 256u)

static size_t dl_align(size_t n) { return (n + DL_ALIGN - 1) & ~(size_t)(DL_ALIGN - 1); }

int mpilab_dl_ring_init(mpilab_dl_ring *r, size_t cap)
{
    memset(r, 0, sizeof(*r));
    cap &= ~(size_t)(DL_ALIGN - 1);
    if (cap < 2 * DL_HDR)
        return -1;
    r->buf = malloc(cap);
    if (!r->buf)
        return -1;
    r->cap = cap;
    return 0;
}

void mpilab_dl_ring_free(mpilab_dl_ring *r)
{
    free(r->buf);
    memset(r, 0, sizeof(*r));
}

unsigned char *mpilab_dl_ring_reserve(mpilab_dl_ring *r, size_t maxlen)
{
    size_t need = dl_align(DL_HDR + maxlen);
    if (r->count == 0)
        r->head = r->tail = r->used = 0;
    r->pend_pad = 0;
    if (r->tail >= r->head) {
        if (r->cap - r->tail >= need) {
            r->pend_off = r->tail;
        } else if (r->head > need) {
            r->pend_pad = r->cap - r->tail;
            r->pend_off = 0;
        } else {
            return NULL;
        }
    } else if (r->head - r->tail > need) {
        r->pend_off = r->tail;
    } else {
        return NULL;
    }
    return r->buf + r->pend_off + DL_HDR;
}

void mpilab_dl_ring_commit(mpilab_dl_ring *r, size_t len, int64_t due_ns)
{
    mpilab_dl_ring_commit_at(r, len, due_ns, -1);
}

void mpilab_dl_ring_commit_at(mpilab_dl_ring *r, size_t len, int64_t due_ns, int64_t arr_ns)
{
    mpilab_dl_ring_commit_dir(r, len, due_ns, arr_ns, 0);
}

void mpilab_dl_ring_commit_dir(mpilab_dl_ring *r, size_t len, int64_t due_ns, int64_t arr_ns, int dir)
{
    if (r->pend_pad) {
        /* a padding record tells the reader to go back to offset 0; when fewer than a
         * header's bytes are left the reader wraps without one */
        if (r->pend_pad >= DL_HDR) {
            mpilab_dl_rec w = {.due_ns = 0, .arr_ns = -1, .len = 0, .wrap = 1, .dir = 0, .spare = 0};
            memcpy(r->buf + r->tail, &w, sizeof(w));
        }
        r->used += r->pend_pad;
    }
    mpilab_dl_rec h = {.due_ns = due_ns, .arr_ns = arr_ns, .len = (uint32_t)len, .wrap = 0,
                       .dir = dir, .spare = 0};
    memcpy(r->buf + r->pend_off, &h, sizeof(h));
    size_t sz = dl_align(DL_HDR + len);
    r->tail = r->pend_off + sz;
    r->used += sz;
    r->count++;
    r->pend_pad = 0;
}

const mpilab_dl_rec *mpilab_dl_ring_peek(const mpilab_dl_ring *r)
{
    if (r->count == 0)
        return NULL;
    return (const mpilab_dl_rec *)(const void *)(r->buf + r->head);
}

void mpilab_dl_ring_pop(mpilab_dl_ring *r)
{
    if (r->count == 0)
        return;
    const mpilab_dl_rec *h = mpilab_dl_ring_peek(r);
    size_t sz = dl_align(DL_HDR + h->len);
    r->head += sz;
    r->used -= sz;
    r->count--;
    if (r->count == 0) {
        r->head = r->tail = r->used = 0;
        return;
    }
    if (r->cap - r->head < DL_HDR) {
        r->used -= r->cap - r->head;
        r->head = 0;
    } else {
        mpilab_dl_rec next;
        memcpy(&next, r->buf + r->head, sizeof(next));
        if (next.wrap) {
            r->used -= r->cap - r->head;
            r->head = 0;
        }
    }
}

/* ---- the running delay line ---- */

static volatile sig_atomic_t g_stop;
static volatile sig_atomic_t g_dump;
static volatile sig_atomic_t g_reload;
static volatile sig_atomic_t g_standby; /* --io packet: SIGUSR2 toggles standby */

static void on_stop(int sig) { (void)sig; g_stop = 1; }
static void on_dump(int sig) { (void)sig; g_dump = 1; }
static void on_reload(int sig) { (void)sig; g_reload = 1; }
static void on_standby(int sig) { (void)sig; g_standby = !g_standby; }

static int64_t mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

int mpilab_dl_late_bucket(int64_t late_ns)
{
    int64_t bound = 10000; /* 10 us, then x10 per bucket */
    for (int b = 0; b < MPILAB_DL_LATE_BUCKETS - 1; b++, bound *= 10)
        if (late_ns < bound)
            return b;
    return MPILAB_DL_LATE_BUCKETS - 1;
}

int mpilab_dl_fine_bucket(int64_t late_ns)
{
    if (late_ns < 1)
        return 0;
    double b = floor(4.0 * log2((double)late_ns));
    return b >= MPILAB_DL_FINE_BUCKETS - 1 ? MPILAB_DL_FINE_BUCKETS - 1 : (int)b;
}

double mpilab_dl_hist_quantile(const uint64_t *fine, double q, double max_s)
{
    uint64_t n = 0;
    for (int b = 0; b < MPILAB_DL_FINE_BUCKETS; b++)
        n += fine[b];
    if (n == 0)
        return 0.0;
    double want = q * (double)n, seen = 0.0;
    for (int b = 0; b < MPILAB_DL_FINE_BUCKETS; b++) {
        seen += (double)fine[b];
        if (seen >= want && fine[b])
            return pow(2.0, (double)(b + 1) / 4.0) * 1e-9;
    }
    return max_s;
}

double mpilab_dl_late_quantile(const mpilab_dl_stats *st, double q)
{
    return mpilab_dl_hist_quantile(st->late_fine, q, st->late_max_s);
}

int64_t mpilab_dl_wake_margin(const mpilab_dl_stats *st)
{
    double m = 2.0 * st->wake_late_ns;
    if (m < MPILAB_DL_MARGIN_MIN_NS)
        m = MPILAB_DL_MARGIN_MIN_NS;
    if (m > MPILAB_DL_MARGIN_MAX_NS)
        m = MPILAB_DL_MARGIN_MAX_NS;
    return (int64_t)m;
}

int64_t mpilab_dl_arrival_comp(const mpilab_dl_stats *st)
{
    double c = st->wake_late_ns;
    if (c < 0.0)
        c = 0.0;
    if (c > MPILAB_DL_MARGIN_MAX_NS)
        c = MPILAB_DL_MARGIN_MAX_NS;
    return (int64_t)c;
}

int mpilab_dl_busy(const mpilab_dl_options *opt)
{
    return opt->busy_poll == MPILAB_DL_BUSY_ON
           || (opt->busy_poll == MPILAB_DL_BUSY_AUTO
               && (opt->delay_ns < MPILAB_DL_BUSY_AUTO_NS
                   || (opt->io_packet && opt->delay_ns < opt->warm_ns)));
}

int mpilab_dl_realtime(const mpilab_dl_options *opt, mpilab_dl_sched *out)
{
    memset(out, 0, sizeof(*out));
    int cls = mpilab_dl_start_class(opt, geteuid() == 0);
    if (cls == MPILAB_DL_CLASS_NORMAL)
        return 0;
    int adaptive = cls == MPILAB_DL_CLASS_ADAPTIVE;
    if (adaptive) { /* normal scheduling until a stream is held (mpilab_dl_adapt_step) */
        out->adapt.on = 1;
        out->adapt.priority = opt->rt_priority;
    }
    int strict = opt->realtime == MPILAB_DL_RT_ON || opt->rt_adaptive;
    struct sched_param sp;
    memset(&sp, 0, sizeof(sp));
    sp.sched_priority = opt->rt_priority;
    /* adaptive: tried once now (and left again), so that a refusal is an error at start */
    if (sched_setscheduler(0, SCHED_FIFO, &sp) != 0) {
        int e = errno;
        fprintf(stderr, "mpilab-delayline: %s: SCHED_FIFO priority %d refused: %s%s\n",
                strict ? "error" : "warning", opt->rt_priority, strerror(e),
                strict ? "" : " (running with normal scheduling)");
        out->adapt.on = 0;
        return strict ? -1 : 0;
    }
    if (adaptive) {
        sp.sched_priority = 0;
        sched_setscheduler(0, SCHED_OTHER, &sp);
    } else {
        out->fifo = 1;
        out->priority = opt->rt_priority;
    }
    /* lock pages as they are touched (not the whole ring up front), so neither the code
     * nor held packets are ever paged out under a real-time thread */
    int rc = mlockall(MCL_CURRENT | MCL_FUTURE | MCL_ONFAULT);
    if (rc != 0 && errno == EINVAL)
        rc = mlockall(MCL_CURRENT | MCL_FUTURE);
    if (rc != 0) {
        fprintf(stderr, "mpilab-delayline: warning: mlockall refused: %s (memory not locked)\n",
                strerror(errno));
        return 0;
    }
    out->mlocked = 1;
    return 0;
}

int mpilab_dl_idle_poll(int strict)
{
    int fd = mpilab_cpuidle_hold(0);
    if (fd >= 0)
        return fd;
    int e = errno;
    fprintf(stderr, "mpilab-delayline: %s: /dev/cpu_dma_latency: %s%s\n", strict ? "error" : "warning",
            strerror(e), strict ? "" : " (idle CPUs may halt)");
    return -1;
}

int mpilab_dl_pin(int cpu)
{
    cpu_set_t set;
    CPU_ZERO(&set);
    if (cpu < 0 || cpu >= CPU_SETSIZE) {
        fprintf(stderr, "mpilab-delayline: --cpu %d: no such CPU\n", cpu);
        return -1;
    }
    CPU_SET(cpu, &set);
    if (sched_setaffinity(0, sizeof set, &set) != 0) {
        fprintf(stderr, "mpilab-delayline: --cpu %d: %s\n", cpu, strerror(errno));
        return -1;
    }
    return 0;
}

static int open_tun(const mpilab_dl_options *opt)
{
    int fd = open("/dev/net/tun", O_RDWR | O_CLOEXEC);
    if (fd < 0) {
        fprintf(stderr, "mpilab-delayline: /dev/net/tun: %s\n", strerror(errno));
        return -1;
    }
    struct ifreq ifr;
    memset(&ifr, 0, sizeof(ifr));
    ifr.ifr_flags = IFF_TUN | IFF_NO_PI | (opt->vnet_hdr ? IFF_VNET_HDR : 0);
    if (strlen(opt->dev) >= sizeof(ifr.ifr_name)) {
        fprintf(stderr, "mpilab-delayline: --dev %s: name too long\n", opt->dev);
        close(fd);
        return -1;
    }
    memcpy(ifr.ifr_name, opt->dev, strlen(opt->dev) + 1);
    /* TUNSETIFF creates a missing device: a typo would delay nothing, forever. Attach only
     * to a device that exists in this network namespace. */
    int sk = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    struct ifreq probe = ifr;
    int exists = sk >= 0 && ioctl(sk, SIOCGIFINDEX, &probe) == 0;
    if (sk >= 0)
        close(sk);
    if (!exists) {
        fprintf(stderr, "mpilab-delayline: --dev %s: no such device (create it first: ip tuntap "
                        "add %s mode tun)\n", opt->dev, opt->dev);
        close(fd);
        return -1;
    }
    if (ioctl(fd, TUNSETIFF, &ifr) < 0) {
        fprintf(stderr, "mpilab-delayline: attach to tun device %s: %s\n", opt->dev, strerror(errno));
        close(fd);
        return -1;
    }
    /* A persistent device keeps the offloads of its previous user: set them explicitly. */
    unsigned long offload = 0;
    if (opt->vnet_hdr) {
        int hdrlen = DL_VNET_HDR_LEN;
        if (ioctl(fd, TUNSETVNETHDRSZ, &hdrlen) < 0) {
            fprintf(stderr, "mpilab-delayline: TUNSETVNETHDRSZ: %s\n", strerror(errno));
            close(fd);
            return -1;
        }
        offload = TUN_F_CSUM | TUN_F_TSO4 | TUN_F_TSO6 | TUN_F_TSO_ECN;
    }
    if (ioctl(fd, TUNSETOFFLOAD, offload) < 0) {
        fprintf(stderr, "mpilab-delayline: TUNSETOFFLOAD: %s\n", strerror(errno));
        close(fd);
        return -1;
    }
    int fl = fcntl(fd, F_GETFL);
    if (fl < 0 || fcntl(fd, F_SETFL, fl | O_NONBLOCK) < 0) {
        fprintf(stderr, "mpilab-delayline: O_NONBLOCK: %s\n", strerror(errno));
        close(fd);
        return -1;
    }
    return fd;
}

/* The release loop's state. */
typedef struct dl_state {
    const mpilab_dl_options *opt;
    int fd, tap;
    mpilab_dl_pkt *pk;         /* --io packet: the packet socket (fd is its); NULL: tun */
    size_t vh;                 /* virtio header bytes before each packet */
    mpilab_dl_ring *ring;
    unsigned char *scratch;
    mpilab_dl_legs *legs;      /* NULL: no leg tap (no CAP_NET_RAW, or --no-leg-stamps) */
    mpilab_dl_stats st;
    mpilab_dl_rtclock clk;     /* for the tun tap's stamps */
    int64_t comp;              /* the next read's estimated correction (after an idle wait) */
    int64_t last_due, last_write;
    int64_t warmed_due;        /* --warm-path: the due time of the last packet warmed for */
} dl_state;

/* How much earlier than due packet h may be written at time t: the forwarding cost out of
 * the tun device; with --cold-crossing, that cost's median less the undelayed crossing the
 * router would have had in h's direction after the same idle gap (negative: held longer),
 * *cold set to that crossing (-1 when none is known: the default advance). */
static int64_t advance_at(const dl_state *s, const mpilab_dl_rec *h, int64_t t, int64_t *cold)
{
    *cold = -1;
    if (!s->legs || !s->opt->advance)
        return 0;
    int b = mpilab_dl_gap_bucket(t - s->last_write);
    if (s->opt->cold) {
        int64_t last = s->legs->cold.last_egress_ns > s->last_write ? s->legs->cold.last_egress_ns
                                                                     : s->last_write;
        *cold = mpilab_dl_cold_cost(&s->legs->cold, h->dir, mpilab_dl_gap_bucket(t - last));
        if (*cold >= 0)
            return mpilab_dl_calib_quantile(&s->legs->cal, b, 0.5) - *cold;
    }
    return s->opt->advance_q > 0.0 ? mpilab_dl_calib_quantile(&s->legs->cal, b, s->opt->advance_q)
                                   : mpilab_dl_calib_advance(&s->legs->cal, b);
}

static void count_release(mpilab_dl_stats *st, size_t len, int64_t late, int64_t adv, int64_t cold,
                          int cold_on)
{
    if (cold >= 0) {
        st->cold_used++;
        st->cold_sum_s += (double)cold * 1e-9;
        if ((double)cold * 1e-9 > st->cold_max_s)
            st->cold_max_s = (double)cold * 1e-9;
    } else if (cold_on) {
        st->cold_fallback++;
    }
    st->packets++;
    st->bytes += len;
    st->late_sum_s += (double)late * 1e-9;
    st->late_hist[mpilab_dl_late_bucket(late)]++;
    st->late_fine[mpilab_dl_fine_bucket(late)]++;
    if ((double)late * 1e-9 > st->late_max_s)
        st->late_max_s = (double)late * 1e-9;
    if (adv > 0) {
        st->advanced++;
        st->advance_sum_s += (double)adv * 1e-9;
        if ((double)adv * 1e-9 > st->advance_max_s)
            st->advance_max_s = (double)adv * 1e-9;
    }
}

/* Write every packet whose release time (due less the advance) has come; returns the time
 * after the last write. */
static int64_t release_due(dl_state *s, int64_t now)
{
    const mpilab_dl_rec *h;
    while ((h = mpilab_dl_ring_peek(s->ring))) {
        int64_t cold;
        int64_t adv = advance_at(s, h, now, &cold);
        int64_t at = h->due_ns - adv;
        if (at > now)
            break;
        const unsigned char *pkt = (const unsigned char *)h + DL_HDR;
        int64_t tw = mono_ns();
        if (s->legs && h->len > s->vh) /* before the write: its egress comes during it */
            mpilab_dl_legs_written(s->legs, pkt + s->vh, h->len - s->vh, tw, h->arr_ns,
                                   mpilab_dl_gap_bucket(tw - s->last_write));
        if (s->pk ? mpilab_dl_pkt_send(s->pk, pkt, h->len) != 0 : write(s->fd, pkt, h->len) < 0)
            s->st.write_errors++;
        count_release(&s->st, h->len, tw - at, adv, cold, s->opt->cold && s->legs);
        mpilab_dl_ring_pop(s->ring);
        now = mono_ns();
        s->last_write = now;
    }
    return now;
}

/* --io packet: one frame off the legs into buf; its length, 0 (none waiting), -1 (error)
 * or -2 (a frame that is not the line's); *own: its kernel stamp (CLOCK_MONOTONIC, -1). */
static ssize_t take_packet(dl_state *s, unsigned char *buf, int64_t *own)
{
    size_t len = 0;
    int64_t rt = -1;
    int r = mpilab_dl_pkt_take(s->pk, buf, DL_MAX_PACKET, &len, &rt);
    if (r != 1)
        return r == 2 ? -2 : r;
    *own = mpilab_dl_rt_to_mono(&s->clk, rt, 1000000000);
    return (ssize_t)len;
}

/* The statistics' "io" object: the I/O mode and, for packet sockets, their counters. */
static json_t *io_json(dl_state *s)
{
    if (!s->pk)
        return json_pack("{s:s}", "mode", "tun");
    return json_pack("{s:s, s:I, s:I, s:I, s:I, s:I, s:s, s:I, s:f, s:I, s:I, s:b, s:I}",
                     "mode", "packet",
                     "peers", (json_int_t)s->pk->npeers, "ignored", (json_int_t)s->pk->ignored,
                     "ttl_expired", (json_int_t)s->pk->ttl_expired,
                     "send_errors", (json_int_t)s->pk->send_errors,
                     "queue_drops", (json_int_t)s->pk->queue_drops,
                     "last_send_error", s->pk->last_errno ? strerror(s->pk->last_errno) : "",
                     "socket_drops", (json_int_t)mpilab_dl_pkt_drops(s->pk),
                     "warm_path_s", (double)s->opt->warm_ns * 1e-9,
                     "warm_frames", (json_int_t)s->pk->warm_frames,
                     "warm_errors", (json_int_t)s->pk->warm_errors, "standby", s->pk->standby,
                     "standby_passed", (json_int_t)s->pk->standby_passed);
}

/* Take in at most one packet, dated by the kernel where it can be: at the router's ingress
 * leg, else at the tun device, else the estimated correction. 1: a packet was read (or
 * dropped), 0: none waits, -1: error. */
static int read_one(dl_state *s)
{
    unsigned char *dst = mpilab_dl_ring_reserve(s->ring, DL_MAX_PACKET);
    int64_t own = -1; /* --io packet: the packet socket's own kernel stamp */
    ssize_t n = s->pk ? take_packet(s, dst ? dst : s->scratch, &own)
                      : read(s->fd, dst ? dst : s->scratch, DL_MAX_PACKET);
    if (s->pk && n <= 0)
        return (int)n == -2 ? 1 : (int)n;
    if (n < 0) {
        if (errno == EAGAIN || errno == EINTR)
            return 0;
        fprintf(stderr, "mpilab-delayline: read %s: %s\n", s->opt->dev, strerror(errno));
        return -1;
    }
    int64_t now = mono_ns();
    if (!dst) { /* full: tail drop, like a real queue */
        s->st.dropped++;
        s->st.dropped_bytes += (uint64_t)n;
        return 1;
    }
    size_t off = (size_t)n > s->vh ? s->vh : 0;
    const unsigned char *pkt = dst + off;
    size_t plen = (size_t)n - off;
    int64_t tun = s->pk ? own : mpilab_dl_tap_arrival(s->tap, &s->clk, pkt, plen);
    int dir = 0;
    int64_t leg = s->legs ? mpilab_dl_legs_ingress(s->legs, &s->st, s->st.hold_ns, pkt, plen, now, &dir) : -1;
    if (tun > now)
        tun = -1;
    if (tun >= 0) { /* how long after the tun device had it the line read it */
        s->st.read_n++;
        s->st.read_fine[mpilab_dl_fine_bucket(now - tun)]++;
        if ((double)(now - tun) * 1e-9 > s->st.read_max_s)
            s->st.read_max_s = (double)(now - tun) * 1e-9;
    }
    /* the ingress leg comes before the tun device, by the routing into it (8-10 us here):
     * a leg record that does not is some other packet's */
    if (leg >= 0 && tun >= 0 && (leg > tun || tun - leg > 1000000))
        leg = -1;
    /* dated at the ingress leg, or (--arrival tun) at the tun device, keeping the router's
     * own forwarding into it; the leg stamp still dates the crossing in the statistics */
    int64_t arr = leg >= 0 && (s->opt->arrival_ingress || tun < 0) ? leg : tun, due;
    if (arr >= 0) {
        due = arr + s->st.hold_ns;
        s->st.kstamped++;
        s->st.ingress_stamped += arr == leg;
    } else {
        due = now + s->st.hold_ns - s->comp;
        if (s->comp) {
            s->st.compensated++;
            s->st.comp_sum_s += (double)s->comp * 1e-9;
        }
    }
    s->comp = 0;
    due = due < s->last_due ? s->last_due : due; /* released in arrival order */
    s->last_due = due;
    mpilab_dl_ring_commit_dir(s->ring, (size_t)n, due, leg, leg >= 0 ? dir : 0);
    if (s->ring->used > s->st.max_held_bytes)
        s->st.max_held_bytes = s->ring->used;
    return 1;
}

/* --warm-path: when the head packet h's release (at, as wait_once aims at it) is due within
 * opt->warm_ns, it has been held longer than that and the line has released nothing for
 * MPILAB_DL_WARM_IDLE_NS, its warm-up frame goes out now, once. Returns when the next
 * warm-up is due (0: none). */
static int64_t warm_head(dl_state *s, const mpilab_dl_rec *h, int64_t at, int64_t now)
{
    if (!s->pk || s->opt->warm_ns <= 0 || h->due_ns == s->warmed_due
        || s->st.hold_ns <= s->opt->warm_ns || now - s->last_write < MPILAB_DL_WARM_IDLE_NS)
        return 0;
    if (now < at - s->opt->warm_ns)
        return at - s->opt->warm_ns;
    s->warmed_due = h->due_ns;
    if (now < at)
        mpilab_dl_pkt_warm(s->pk, (const unsigned char *)h + DL_HDR, h->len);
    return 0;
}

/* Wait for a packet or the next release: busy polling never sleeps (zero timeouts);
 * otherwise wake a margin early (--spin-last: its own margin) and spin the rest (zero
 * timeouts: reads still served). Returns 0, or -1 after a poll error. */
static int wait_once(dl_state *s, const sigset_t *orig)
{
    struct pollfd pfd = {.fd = s->fd, .events = POLLIN, .revents = 0};
    const mpilab_dl_rec *h = mpilab_dl_ring_peek(s->ring);
    struct timespec ts = {0, 0}, *tsp = s->st.busy ? &ts : NULL;
    int64_t target = 0, at = 0, cold;
    int warm_wake = 0;
    int64_t keep = s->st.busy || !s->pk ? 0
                   : mpilab_dl_pkt_keep_warm(s->pk, s->opt->keep_ns, s->last_write, mono_ns());
    if (!s->st.busy && (h || keep > 0)) {
        if (h) {
            at = h->due_ns - advance_at(s, h, h->due_ns, &cold);
            target = at - (s->opt->spin_last_ns ? mpilab_dl_spin_margin(&s->st, s->opt->spin_last_ns)
                                                : mpilab_dl_wake_margin(&s->st));
            int64_t warm = warm_head(s, h, at, mono_ns());
            warm_wake = warm > 0 && warm < target;
            target = warm_wake ? warm : target;
        }
        if (keep > 0 && (!h || keep < target)) {
            target = keep;
            warm_wake = 1;
        }
        int64_t wait = target - mono_ns();
        if (wait < 0) {
            wait = 0;
            target = 0; /* spinning: not a timer wake-up */
        }
        ts.tv_sec = (time_t)(wait / 1000000000);
        ts.tv_nsec = (long)(wait % 1000000000);
        tsp = &ts;
    }
    int64_t before = mono_ns();
    int pr = ppoll(&pfd, 1, tsp, orig);
    int64_t after = mono_ns();
    if (pr > 0 && (pfd.revents & POLLIN) && after - before >= MPILAB_DL_IDLE_NS)
        s->comp = mpilab_dl_arrival_comp(&s->st);
    if (pr < 0 && errno != EINTR) {
        fprintf(stderr, "mpilab-delayline: poll: %s\n", strerror(errno));
        return -1;
    }
    if (h && tsp && ts.tv_sec == 0 && ts.tv_nsec == 0 && after - before > MPILAB_DL_SPIN_GAP_NS) {
        /* a turn of the spin took this long: the line was descheduled; the loop re-checks
         * what is due at once */
        s->st.spin_gaps++;
        if ((double)(after - before) * 1e-9 > s->st.spin_gap_max_s)
            s->st.spin_gap_max_s = (double)(after - before) * 1e-9;
    }
    if (pr == 0 && target > 0) {
        /* a timer wake-up: how late it came, for the next margin */
        mpilab_dl_note_wake(&s->st, after - target);
        if (at > mono_ns() && !warm_wake)
            s->st.spins++;
    }
    return 0;
}

/* The trim in force, and the hold it leaves. Held packets keep their release times. */
static void set_trim(dl_state *s, int64_t trim_ns)
{
    s->st.trim_ns = trim_ns;
    s->st.hold_ns = mpilab_dl_hold(s->opt->delay_ns, s->st.trim_ns);
}

/* The release loop: until SIGTERM/SIGINT; statistics written on SIGUSR1 and at the end;
 * SIGUSR2 puts a packet-socket line in standby and back (it keeps polling and warming).
 * Returns 0, or 1 after a read/poll error or a failed final statistics write. */
static int dl_loop(const mpilab_dl_options *opt, int fd, mpilab_dl_pkt *pk, mpilab_dl_ring *ring,
                   unsigned char *scratch, const sigset_t *orig, mpilab_dl_sched *sched)
{
    dl_state *s = calloc(1, sizeof(*s));
    if (!s) {
        fprintf(stderr, "mpilab-delayline: out of memory\n");
        return 1;
    }
    s->opt = opt;
    s->fd = pk ? pk->fd : fd;
    s->pk = pk;
    s->ring = ring;
    s->scratch = scratch;
    s->vh = pk ? MPILAB_DL_PKT_IP_OFF : opt->vnet_hdr ? DL_VNET_HDR_LEN : 0;
    /* -1 (no CAP_NET_RAW, or packet sockets): the estimated correction */
    s->tap = pk ? -1 : mpilab_dl_tap_open(opt->dev);
    if (opt->leg_stamps && (s->legs = calloc(1, sizeof(*s->legs)))
        && mpilab_dl_legs_open(s->legs, pk ? NULL : opt->dev) != 0) {
        free(s->legs);
        s->legs = NULL;
    }
    s->st.legs = s->legs != NULL;
    s->st.busy = mpilab_dl_busy(opt);
    set_trim(s, opt->trim_ns);
    g_reload = opt->trim_file != NULL; /* read it before the first packet */
    s->last_write = mono_ns();
    int rc = 0;
    while (!g_stop) {
        int64_t now = mono_ns();
        for (;;) {
            /* release everything that is due, then take in at most one packet, so a burst
             * of arrivals never delays a release by more than one read */
            if (s->legs)
                mpilab_dl_legs_drain(s->legs, &s->st, s->st.hold_ns);
            now = release_due(s, now);
            int r = read_one(s);
            if (r < 0) {
                rc = 1;
                g_stop = 1;
            }
            if (r <= 0)
                break;
            now = mono_ns();
        }
        mpilab_dl_adapt_step(&sched->adapt, ring->count, now);
        if (pk)
            pk->standby = g_standby;
        if (g_reload) {
            g_reload = 0;
            int64_t t = s->st.trim_ns;
            if (opt->trim_file && mpilab_dl_read_trim(opt->trim_file, &t) == 0) {
                set_trim(s, t);
                s->st.trim_reads++;
            }
        }
        if (g_dump) {
            g_dump = 0;
            mpilab_dl_write_stats(opt, &s->st, sched, 1, s->legs, io_json(s));
        }
        if (g_stop)
            break;
        if (s->st.busy && pk)
            mpilab_dl_pkt_keep_warm(pk, opt->keep_ns, s->last_write, now);
        if (wait_once(s, orig) != 0) {
            rc = 1;
            break;
        }
    }
    /* packets still held are dropped, as on a link that goes away */
    if (mpilab_dl_write_stats(opt, &s->st, sched, 0, s->legs, io_json(s)) != 0 && rc == 0)
        rc = 1;
    if (s->tap >= 0)
        close(s->tap);
    if (s->legs) {
        mpilab_dl_legs_close(s->legs);
        free(s->legs);
    }
    free(s);
    return rc;
}

size_t mpilab_dl_buffer_min(void) { return 2 * dl_align(DL_HDR + DL_MAX_PACKET); }

int mpilab_dl_run(const mpilab_dl_options *opt)
{
    mpilab_dl_ring ring;
    if (mpilab_dl_ring_init(&ring, opt->buffer) != 0) {
        fprintf(stderr, "mpilab-delayline: cannot allocate a %zu-byte buffer\n", opt->buffer);
        return 1;
    }
    if (opt->buffer < mpilab_dl_buffer_min()) {
        fprintf(stderr, "mpilab-delayline: --buffer %zu: must hold at least two 64 KiB packets\n",
                opt->buffer);
        mpilab_dl_ring_free(&ring);
        return 2;
    }
    unsigned char *scratch = malloc(DL_MAX_PACKET);
    if (!scratch) {
        mpilab_dl_ring_free(&ring);
        fprintf(stderr, "mpilab-delayline: out of memory\n");
        return 1;
    }
    mpilab_dl_pkt pks, *pk = opt->io_packet ? &pks : NULL;
    int fd = pk ? (mpilab_dl_pkt_open(pk, opt->peers, opt->npeers) == 0 ? pk->fd : -1) : open_tun(opt);
    if (fd < 0) {
        free(scratch);
        mpilab_dl_ring_free(&ring);
        return 1;
    }
    /* wake up when asked, not up to 50 us later (real-time threads have no slack anyway) */
    prctl(PR_SET_TIMERSLACK, 1UL, 0UL, 0UL, 0UL);
    mpilab_dl_sched sched;
    int qos = -1;
    if (mpilab_dl_realtime(opt, &sched) != 0 || (opt->cpu >= 0 && mpilab_dl_pin(opt->cpu) != 0)
        || (opt->idle_poll && (qos = mpilab_dl_idle_poll(1)) < 0)) {
        close(fd);
        free(scratch);
        mpilab_dl_ring_free(&ring);
        return 1;
    }
    sched.idle_poll = qos >= 0;
    sched.cpu = opt->cpu;

    sigset_t block, orig;
    sigemptyset(&block);
    sigaddset(&block, SIGTERM);
    sigaddset(&block, SIGINT);
    sigaddset(&block, SIGUSR1);
    sigaddset(&block, SIGHUP);
    sigaddset(&block, SIGUSR2);
    sigprocmask(SIG_BLOCK, &block, &orig);
    struct sigaction sa;
    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = on_stop;
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);
    sa.sa_handler = on_dump;
    sigaction(SIGUSR1, &sa, NULL);
    sa.sa_handler = on_reload;
    sigaction(SIGHUP, &sa, NULL);
    sa.sa_handler = on_standby;
    sigaction(SIGUSR2, &sa, NULL);
    signal(SIGPIPE, SIG_IGN);

    if (opt->pidfile) {
        char txt[32], err[512];
        int n = snprintf(txt, sizeof(txt), "%ld\n", (long)getpid());
        if (mpilab_write_atomic(opt->pidfile, txt, (size_t)n, err, sizeof(err)) != 0) {
            fprintf(stderr, "mpilab-delayline: %s\n", err);
            close(fd);
            free(scratch);
            mpilab_dl_ring_free(&ring);
            return 1;
        }
    }

    int rc = dl_loop(opt, fd, pk, &ring, scratch, &orig, &sched);
    if (qos >= 0)
        close(qos); /* the latency request ends with it */
    close(fd);
    free(scratch);
    mpilab_dl_ring_free(&ring);
    return rc;
}
