/* Delay line engine: see delayline.h. One thread: read what the kernel routed into the
 * tun device, stamp it with its release time, write it back when that time comes. */
#include "testbed/delayline.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/if.h>
#include <linux/if_tun.h>
#include <linux/filter.h>
#include <linux/if_packet.h>
#include <linux/if_ether.h>
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
    if (r->pend_pad) {
        /* a padding record tells the reader to go back to offset 0; when fewer than a
         * header's bytes are left the reader wraps without one */
        if (r->pend_pad >= DL_HDR) {
            mpilab_dl_rec w = {.due_ns = 0, .len = 0, .wrap = 1};
            memcpy(r->buf + r->tail, &w, sizeof(w));
        }
        r->used += r->pend_pad;
    }
    mpilab_dl_rec h = {.due_ns = due_ns, .len = (uint32_t)len, .wrap = 0};
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

static void on_stop(int sig) { (void)sig; g_stop = 1; }
static void on_dump(int sig) { (void)sig; g_dump = 1; }

static int64_t mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static double tv_s(struct timeval tv) { return (double)tv.tv_sec + (double)tv.tv_usec * 1e-6; }

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

double mpilab_dl_late_quantile(const mpilab_dl_stats *st, double q)
{
    uint64_t n = 0;
    for (int b = 0; b < MPILAB_DL_FINE_BUCKETS; b++)
        n += st->late_fine[b];
    if (n == 0)
        return 0.0;
    double want = q * (double)n, seen = 0.0;
    for (int b = 0; b < MPILAB_DL_FINE_BUCKETS; b++) {
        seen += (double)st->late_fine[b];
        if (seen >= want && st->late_fine[b])
            return pow(2.0, (double)(b + 1) / 4.0) * 1e-9;
    }
    return st->late_max_s;
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

int mpilab_dl_realtime(const mpilab_dl_options *opt, mpilab_dl_sched *out)
{
    memset(out, 0, sizeof(*out));
    if (opt->realtime == MPILAB_DL_RT_OFF || (opt->realtime == MPILAB_DL_RT_AUTO && geteuid() != 0))
        return 0;
    int strict = opt->realtime == MPILAB_DL_RT_ON;
    struct sched_param sp;
    memset(&sp, 0, sizeof(sp));
    sp.sched_priority = opt->rt_priority;
    if (sched_setscheduler(0, SCHED_FIFO, &sp) != 0) {
        int e = errno;
        fprintf(stderr, "mpilab-delayline: %s: SCHED_FIFO priority %d refused: %s%s\n",
                strict ? "error" : "warning", opt->rt_priority, strerror(e),
                strict ? "" : " (running with normal scheduling)");
        return strict ? -1 : 0;
    }
    out->fifo = 1;
    out->priority = opt->rt_priority;
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

static int write_stats(const mpilab_dl_options *opt, const mpilab_dl_stats *st,
                       const mpilab_dl_sched *sc, int running)
{
    if (!opt->stats)
        return 0;
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    json_t *o = json_pack("{s:s, s:f, s:I, s:I, s:I, s:I, s:I, s:I, s:f, s:f, s:I, s:f, s:f, s:b, "
                          "s:s, s:i, s:b}",
        "dev", opt->dev, "delay_s", (double)opt->delay_ns * 1e-9,
        "buffer_bytes", (json_int_t)opt->buffer,
        "packets", (json_int_t)st->packets, "bytes", (json_int_t)st->bytes,
        "dropped", (json_int_t)st->dropped, "dropped_bytes", (json_int_t)st->dropped_bytes,
        "write_errors", (json_int_t)st->write_errors,
        "late_mean_s", st->packets ? st->late_sum_s / (double)st->packets : 0.0,
        "late_max_s", st->late_max_s, "max_held_bytes", (json_int_t)st->max_held_bytes,
        "cpu_user_s", tv_s(ru.ru_utime), "cpu_sys_s", tv_s(ru.ru_stime),
        "running", running, "sched", sc->fifo ? "fifo" : "other", "rt_priority", sc->priority,
        "mlocked", sc->mlocked);
    json_t *hist = json_array();
    for (int b = 0; o && hist && b < MPILAB_DL_LATE_BUCKETS; b++)
        json_array_append_new(hist, json_integer((json_int_t)st->late_hist[b]));
    if (o && hist) {
        json_object_set_new(o, "late_hist", hist);
        json_object_set_new(o, "late_hist_bounds_s", json_pack("[f,f,f,f]", 1e-5, 1e-4, 1e-3, 1e-2));
        /* per-packet lateness percentiles (upper bounds of 19%-wide bins): what a lone
         * packet sees is the low end, what a busy line does the high end */
        json_object_set_new(o, "late_percentiles_s",
                            json_pack("{s:f,s:f,s:f,s:f}", "p50", mpilab_dl_late_quantile(st, 0.5), "p90",
                                      mpilab_dl_late_quantile(st, 0.9), "p99", mpilab_dl_late_quantile(st, 0.99),
                                      "max", st->late_max_s));
        json_object_set_new(o, "wake_margin_s", json_real((double)mpilab_dl_wake_margin(st) * 1e-9));
        json_object_set_new(o, "spun_releases", json_integer((json_int_t)st->spins));
        json_object_set_new(o, "arrivals_kernel_stamped", json_integer((json_int_t)st->kstamped));
        json_object_set_new(o, "arrivals_compensated", json_integer((json_int_t)st->compensated));
        json_object_set_new(o, "arrival_comp_mean_s",
                            json_real(st->compensated ? st->comp_sum_s / (double)st->compensated : 0.0));
    } else {
        json_decref(hist);
    }
    if (!o) {
        fprintf(stderr, "mpilab-delayline: out of memory\n");
        return -1;
    }
    char err[512];
    int rc = mpilab_json_write_atomic(opt->stats, o, err, sizeof(err));
    json_decref(o);
    if (rc != 0)
        fprintf(stderr, "mpilab-delayline: %s\n", err);
    return rc;
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

/* ---- arrival times from the kernel ----
 * A packet socket on the tun device sees each packet the kernel hands to it (the packet
 * tap in the transmit path, just before the tun queue) with a kernel timestamp: the
 * packet's true arrival, which the line's own read comes after by however long its
 * wake-up took. Records arrive in the tun queue's order; each read packet takes the first
 * record whose first bytes match it (records of packets the tap lost are skipped). */
#define DL_TAP_SNAP 64

static int open_tap(const char *dev)
{
    struct ifreq ifr;
    memset(&ifr, 0, sizeof(ifr));
    if (strlen(dev) >= sizeof(ifr.ifr_name))
        return -1;
    memcpy(ifr.ifr_name, dev, strlen(dev) + 1);
    int s = socket(AF_PACKET, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, htons(ETH_P_ALL));
    if (s < 0)
        return -1;
    if (ioctl(s, SIOCGIFINDEX, &ifr) != 0) {
        close(s);
        return -1;
    }
    /* keep only outgoing packets (into the tun device), their first DL_TAP_SNAP bytes */
    struct sock_filter code[] = {
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, (uint32_t)(SKF_AD_OFF + SKF_AD_PKTTYPE)),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, PACKET_OUTGOING, 0, 1),
        BPF_STMT(BPF_RET | BPF_K, DL_TAP_SNAP),
        BPF_STMT(BPF_RET | BPF_K, 0)};
    struct sock_fprog prog = {.len = sizeof(code) / sizeof(code[0]), .filter = code};
    struct sockaddr_ll sll;
    memset(&sll, 0, sizeof(sll));
    sll.sll_family = AF_PACKET;
    sll.sll_protocol = htons(ETH_P_ALL);
    sll.sll_ifindex = ifr.ifr_ifindex;
    int one = 1, rcvbuf = 1 << 20;
    if (setsockopt(s, SOL_SOCKET, SO_ATTACH_FILTER, &prog, sizeof(prog)) != 0
        || setsockopt(s, SOL_SOCKET, SO_TIMESTAMPNS, &one, sizeof(one)) != 0
        || bind(s, (struct sockaddr *)&sll, sizeof(sll)) != 0) {
        close(s);
        return -1;
    }
    setsockopt(s, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof(rcvbuf));
    return s;
}

/* The kernel's arrival time (CLOCK_MONOTONIC ns) of the packet `pkt` just read, or -1. */
static int64_t tap_arrival(int tap, const unsigned char *pkt, size_t len)
{
    if (tap < 0)
        return -1;
    size_t cmp = len < DL_TAP_SNAP ? len : DL_TAP_SNAP;
    for (int tries = 0; tries < 16; tries++) {
        unsigned char buf[DL_TAP_SNAP];
        union { char b[CMSG_SPACE(sizeof(struct timespec))]; struct cmsghdr align; } ctl;
        struct iovec iov = {.iov_base = buf, .iov_len = sizeof(buf)};
        struct msghdr mh;
        memset(&mh, 0, sizeof(mh));
        mh.msg_iov = &iov;
        mh.msg_iovlen = 1;
        mh.msg_control = ctl.b;
        mh.msg_controllen = sizeof(ctl.b);
        ssize_t n = recvmsg(tap, &mh, MSG_DONTWAIT);
        if (n < 0)
            return -1;
        if ((size_t)n < cmp || memcmp(buf, pkt, cmp) != 0)
            continue;
        for (struct cmsghdr *c = CMSG_FIRSTHDR(&mh); c; c = CMSG_NXTHDR(&mh, c)) {
            if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SO_TIMESTAMPNS)
                continue;
            struct timespec ts, rt;
            memcpy(&ts, CMSG_DATA(c), sizeof(ts));
            clock_gettime(CLOCK_REALTIME, &rt);
            int64_t ago = ((int64_t)rt.tv_sec - ts.tv_sec) * 1000000000 + (rt.tv_nsec - ts.tv_nsec);
            /* a clock step or a stale record: not trusted */
            return ago >= 0 && ago < 1000000000 ? mono_ns() - ago : -1;
        }
        return -1;
    }
    return -1;
}

/* The release loop: until SIGTERM/SIGINT; statistics written on SIGUSR1 and at the end.
 * Returns 0, or 1 after a read/poll error or a failed final statistics write. */
static int dl_loop(const mpilab_dl_options *opt, int fd, mpilab_dl_ring *ring,
                   unsigned char *scratch, const sigset_t *orig, const mpilab_dl_sched *sched)
{
    mpilab_dl_stats st;
    memset(&st, 0, sizeof(st));
    int tap = open_tap(opt->dev); /* -1 (no CAP_NET_RAW): the estimated correction instead */
    int rc = 0;
    int64_t comp = 0, last_due = 0; /* the next read's correction (after an idle wait) */
    while (!g_stop) {
        int64_t now = mono_ns();
        for (;;) {
            /* release everything that is due, then take in at most one packet, so a burst
             * of arrivals never delays a release by more than one read */
            const mpilab_dl_rec *h;
            while ((h = mpilab_dl_ring_peek(ring)) && h->due_ns <= now) {
                ssize_t w = write(fd, (const unsigned char *)h + DL_HDR, h->len);
                int64_t late = now - h->due_ns;
                if (w < 0)
                    st.write_errors++;
                st.packets++;
                st.bytes += h->len;
                st.late_sum_s += (double)late * 1e-9;
                st.late_hist[mpilab_dl_late_bucket(late)]++;
                st.late_fine[mpilab_dl_fine_bucket(late)]++;
                if ((double)late * 1e-9 > st.late_max_s)
                    st.late_max_s = (double)late * 1e-9;
                mpilab_dl_ring_pop(ring);
                now = mono_ns();
            }
            unsigned char *dst = mpilab_dl_ring_reserve(ring, DL_MAX_PACKET);
            ssize_t n = read(fd, dst ? dst : scratch, DL_MAX_PACKET);
            if (n < 0) {
                if (errno == EAGAIN || errno == EINTR)
                    break;
                fprintf(stderr, "mpilab-delayline: read %s: %s\n", opt->dev, strerror(errno));
                rc = 1;
                g_stop = 1;
                break;
            }
            now = mono_ns();
            if (!dst) { /* full: tail drop, like a real queue */
                st.dropped++;
                st.dropped_bytes += (uint64_t)n;
                continue;
            }
            int64_t arr = tap_arrival(tap, dst + (opt->vnet_hdr ? DL_VNET_HDR_LEN : 0),
                                      (size_t)n - (opt->vnet_hdr ? DL_VNET_HDR_LEN : 0));
            int64_t due = arr >= 0 && arr <= now ? arr + opt->delay_ns : now + opt->delay_ns - comp;
            if (arr >= 0 && arr <= now) {
                st.kstamped++;
                comp = 0;
            } else if (comp) {
                st.compensated++;
                st.comp_sum_s += (double)comp * 1e-9;
                comp = 0;
            }
            due = due < last_due ? last_due : due; /* released in arrival order */
            last_due = due;
            mpilab_dl_ring_commit(ring, (size_t)n, due);
            if (ring->used > st.max_held_bytes)
                st.max_held_bytes = ring->used;
        }
        if (g_dump) {
            g_dump = 0;
            write_stats(opt, &st, sched, 1);
        }
        if (g_stop)
            break;
        struct pollfd pfd = {.fd = fd, .events = POLLIN, .revents = 0};
        const mpilab_dl_rec *h = mpilab_dl_ring_peek(ring);
        struct timespec ts, *tsp = NULL;
        int64_t target = 0;
        if (h) {
            /* wake a margin early and spin the rest (zero timeouts: reads still served) */
            target = h->due_ns - mpilab_dl_wake_margin(&st);
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
        if (pr > 0 && (pfd.revents & POLLIN) && mono_ns() - before >= MPILAB_DL_IDLE_NS)
            comp = mpilab_dl_arrival_comp(&st);
        if (pr < 0 && errno != EINTR) {
            fprintf(stderr, "mpilab-delayline: poll: %s\n", strerror(errno));
            rc = 1;
            break;
        }
        if (pr == 0 && target > 0) {
            /* a timer wake-up: how late it came, for the next margin */
            int64_t late = mono_ns() - target;
            st.wake_late_ns = st.wake_late_ns == 0.0 ? (double)late
                                                     : 0.9 * st.wake_late_ns + 0.1 * (double)late;
            if (h && h->due_ns > mono_ns())
                st.spins++;
        }
    }
    /* packets still held are dropped, as on a link that goes away */
    if (write_stats(opt, &st, sched, 0) != 0 && rc == 0)
        rc = 1;
    if (tap >= 0)
        close(tap);
    return rc;
}

int mpilab_dl_run(const mpilab_dl_options *opt)
{
    mpilab_dl_ring ring;
    if (mpilab_dl_ring_init(&ring, opt->buffer) != 0) {
        fprintf(stderr, "mpilab-delayline: cannot allocate a %zu-byte buffer\n", opt->buffer);
        return 1;
    }
    if (opt->buffer < 2 * dl_align(DL_HDR + DL_MAX_PACKET)) {
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
    int fd = open_tun(opt);
    if (fd < 0) {
        free(scratch);
        mpilab_dl_ring_free(&ring);
        return 1;
    }
    /* wake up when asked, not up to 50 us later (real-time threads have no slack anyway) */
    prctl(PR_SET_TIMERSLACK, 1UL, 0UL, 0UL, 0UL);
    mpilab_dl_sched sched;
    if (mpilab_dl_realtime(opt, &sched) != 0) {
        close(fd);
        free(scratch);
        mpilab_dl_ring_free(&ring);
        return 1;
    }

    sigset_t block, orig;
    sigemptyset(&block);
    sigaddset(&block, SIGTERM);
    sigaddset(&block, SIGINT);
    sigaddset(&block, SIGUSR1);
    sigprocmask(SIG_BLOCK, &block, &orig);
    struct sigaction sa;
    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = on_stop;
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);
    sa.sa_handler = on_dump;
    sigaction(SIGUSR1, &sa, NULL);
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

    int rc = dl_loop(opt, fd, &ring, scratch, &orig, &sched);
    close(fd);
    free(scratch);
    mpilab_dl_ring_free(&ring);
    return rc;
}
