/* The delay line's view of the kernel (see delayline.h): packet taps with kernel timestamps
 * on its tun device and on the router's site legs, the matching of packets seen at two
 * points, and the forwarding-cost calibration. */
#include "testbed/delayline.h"

#include <linux/filter.h>
#include <linux/if.h>
#include <linux/if_ether.h>
#include <linux/if_packet.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define MPILAB_DL_LEG_MAX_AGE_NS 30000000000LL

static int64_t ts_ns(clockid_t c)
{
    struct timespec ts;
    clock_gettime(c, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static int ifindex_of(const char *dev)
{
    struct ifreq ifr;
    memset(&ifr, 0, sizeof(ifr));
    if (strlen(dev) >= sizeof(ifr.ifr_name))
        return -1;
    memcpy(ifr.ifr_name, dev, strlen(dev) + 1);
    int s = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (s < 0)
        return -1;
    int rc = ioctl(s, SIOCGIFINDEX, &ifr);
    close(s);
    return rc == 0 ? ifr.ifr_ifindex : -1;
}

/* A packet socket (all interfaces when ifindex is 0) with the given filter, kernel stamps on. */
static int open_packet_socket(int ifindex, struct sock_filter *code, unsigned short len)
{
    int s = socket(AF_PACKET, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, htons(ETH_P_ALL));
    if (s < 0)
        return -1;
    struct sock_fprog prog = {.len = len, .filter = code};
    struct sockaddr_ll sll;
    memset(&sll, 0, sizeof(sll));
    sll.sll_family = AF_PACKET;
    sll.sll_protocol = htons(ETH_P_ALL);
    sll.sll_ifindex = ifindex;
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

/* One record: its first bytes into buf, the kernel stamp (CLOCK_REALTIME ns), the packet
 * type and the interface's index. Returns the bytes read, or -1 (nothing waiting). */
ssize_t mpilab_dl_read_record(int s, unsigned char *buf, size_t cap, int64_t *rt_ns, int *pkttype,
                              int *ifindex)
{
    union { char b[CMSG_SPACE(sizeof(struct timespec))]; struct cmsghdr align; } ctl;
    struct sockaddr_ll from;
    struct iovec iov = {.iov_base = buf, .iov_len = cap};
    struct msghdr mh;
    memset(&mh, 0, sizeof(mh));
    memset(&from, 0, sizeof(from));
    mh.msg_name = &from;
    mh.msg_namelen = sizeof(from);
    mh.msg_iov = &iov;
    mh.msg_iovlen = 1;
    mh.msg_control = ctl.b;
    mh.msg_controllen = sizeof(ctl.b);
    ssize_t n = recvmsg(s, &mh, MSG_DONTWAIT);
    if (n < 0)
        return -1;
    *rt_ns = -1;
    *pkttype = from.sll_pkttype;
    *ifindex = from.sll_ifindex;
    for (struct cmsghdr *c = CMSG_FIRSTHDR(&mh); c; c = CMSG_NXTHDR(&mh, c)) {
        if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SO_TIMESTAMPNS) {
            struct timespec ts;
            memcpy(&ts, CMSG_DATA(c), sizeof(ts));
            *rt_ns = (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
        }
    }
    return (size_t)n > cap ? (ssize_t)cap : n;
}

/* A realtime stamp as CLOCK_MONOTONIC, or -1 for a record older than max_age_ns. The offset between the two
 * clocks is read with both clocks within a microsecond (a vCPU descheduled between two
 * readings would shift every stamp by the time it lost: stamps then looked up to 1.3 us
 * later than they were) and kept for 100 ms (it only moves with clock adjustments). */
int64_t mpilab_dl_rt_to_mono(mpilab_dl_rtclock *c, int64_t rt_ns, int64_t max_age_ns)
{
    if (rt_ns < 0)
        return -1;
    int64_t mono = ts_ns(CLOCK_MONOTONIC);
    for (int k = 0; k < 8 && (c->at_ns == 0 || mono - c->at_ns > 100000000); k++) {
        int64_t rt = ts_ns(CLOCK_REALTIME), m2 = ts_ns(CLOCK_MONOTONIC);
        if (m2 - mono < 1000) {
            c->off_ns = rt - mono / 2 - m2 / 2;
            c->at_ns = m2;
        }
        mono = m2;
    }
    if (c->at_ns == 0)
        return -1;
    int64_t t = rt_ns - c->off_ns;
    return t <= mono + 1000 && mono - t < max_age_ns ? t : -1;
}

/* ---- the tun device's tap ----
 * It sees each packet the kernel hands to the tun device (the packet tap in the transmit
 * path, just before the tun queue) with a kernel timestamp. Records arrive in the tun
 * queue's order; each read packet takes the first record whose first bytes match it
 * (records of packets the tap lost are skipped). */
int mpilab_dl_tap_open(const char *dev)
{
    int ifindex = ifindex_of(dev);
    if (ifindex < 0)
        return -1;
    /* keep only outgoing packets (into the tun device), their first MPILAB_DL_SNAP bytes */
    struct sock_filter code[] = {
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, (uint32_t)(SKF_AD_OFF + SKF_AD_PKTTYPE)),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, PACKET_OUTGOING, 0, 1),
        BPF_STMT(BPF_RET | BPF_K, MPILAB_DL_SNAP),
        BPF_STMT(BPF_RET | BPF_K, 0)};
    return open_packet_socket(ifindex, code, sizeof(code) / sizeof(code[0]));
}

int64_t mpilab_dl_tap_arrival(int tap, mpilab_dl_rtclock *clk, const unsigned char *pkt, size_t len)
{
    if (tap < 0)
        return -1;
    size_t cmp = len < MPILAB_DL_SNAP ? len : MPILAB_DL_SNAP;
    for (int tries = 0; tries < 16; tries++) {
        unsigned char buf[MPILAB_DL_SNAP];
        int64_t rt;
        int type, ifx;
        ssize_t n = mpilab_dl_read_record(tap, buf, sizeof(buf), &rt, &type, &ifx);
        if (n < 0)
            return -1;
        if ((size_t)n < cmp || memcmp(buf, pkt, cmp) != 0)
            continue;
        return mpilab_dl_rt_to_mono(clk, rt, 1000000000);
    }
    return -1;
}

/* ---- matching ---- */

int mpilab_dl_same_packet(const unsigned char *a, size_t alen, const unsigned char *b, size_t blen)
{
    size_t n = alen < blen ? alen : blen;
    if (n > MPILAB_DL_SNAP)
        n = MPILAB_DL_SNAP;
    if (n < 20 || (a[0] >> 4) != (b[0] >> 4))
        return 0;
    int v4 = (a[0] >> 4) == 4;
    for (size_t k = 0; k < n; k++) {
        if (v4 ? (k == 8 || k == 10 || k == 11) : k == 7)
            continue; /* TTL and header checksum / hop limit: forwarding changes them */
        if (a[k] != b[k])
            return 0;
    }
    return 1;
}

void mpilab_dl_snapq_push(mpilab_dl_snapq *q, const mpilab_dl_snap *s)
{
    if (q->count == MPILAB_DL_PEND) { /* full: the oldest is given up */
        q->head = (q->head + 1) % MPILAB_DL_PEND;
        q->count--;
    }
    q->e[(q->head + q->count) % MPILAB_DL_PEND] = *s;
    q->count++;
}

mpilab_dl_snap *mpilab_dl_snapq_take(mpilab_dl_snapq *q, const unsigned char *pkt, size_t len)
{
    for (size_t k = 0; k < q->count; k++) {
        mpilab_dl_snap *e = &q->e[(q->head + k) % MPILAB_DL_PEND];
        if (e->len && mpilab_dl_same_packet(e->snap, e->len, pkt, len)) {
            e->len = 0;
            return e;
        }
    }
    return NULL;
}

void mpilab_dl_snapq_trim(mpilab_dl_snapq *q, int64_t before)
{
    while (q->count) {
        mpilab_dl_snap *e = &q->e[q->head];
        if (e->len && e->t_ns >= before)
            break;
        q->head = (q->head + 1) % MPILAB_DL_PEND;
        q->count--;
    }
}

/* ---- calibration ---- */

int mpilab_dl_gap_bucket(int64_t gap_ns)
{
    int b = 0;
    for (int64_t us = gap_ns / 1000; us > 0 && b < MPILAB_DL_GAP_BUCKETS - 1; us >>= 1)
        b++;
    return b;
}

void mpilab_dl_calib_add(mpilab_dl_calib *c, int bucket, int64_t cost_ns)
{
    if (bucket < 0 || bucket >= MPILAB_DL_GAP_BUCKETS || cost_ns < 0)
        return;
    c->cost[bucket][c->next[bucket]] = cost_ns;
    c->next[bucket] = (c->next[bucket] + 1) % MPILAB_DL_CAL_N;
    if (c->n[bucket] < MPILAB_DL_CAL_N)
        c->n[bucket]++;
}

int64_t mpilab_dl_calib_advance(const mpilab_dl_calib *c, int bucket)
{
    if (bucket >= MPILAB_DL_GAP_BUCKETS)
        bucket = MPILAB_DL_GAP_BUCKETS - 1;
    for (int b = bucket; b >= 0; b--) {
        if (c->n[b] < MPILAB_DL_CAL_MIN)
            continue;
        int64_t m = c->cost[b][0];
        for (int k = 1; k < c->n[b]; k++)
            m = c->cost[b][k] < m ? c->cost[b][k] : m;
        m -= MPILAB_DL_ADVANCE_SAFETY_NS + m / 4;
        return m < 0 ? 0 : m < MPILAB_DL_ADVANCE_MAX_NS ? m : MPILAB_DL_ADVANCE_MAX_NS;
    }
    return 0;
}

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

int64_t mpilab_dl_calib_quantile(const mpilab_dl_calib *c, int bucket, double q)
{
    if (bucket >= MPILAB_DL_GAP_BUCKETS)
        bucket = MPILAB_DL_GAP_BUCKETS - 1;
    if (!(q > 0.0))
        return 0;
    q = q > 1.0 ? 1.0 : q;
    for (int b = bucket; b >= 0; b--) {
        if (c->n[b] < MPILAB_DL_CAL_MIN)
            continue;
        int64_t v[MPILAB_DL_CAL_N];
        memcpy(v, c->cost[b], sizeof(int64_t) * (size_t)c->n[b]);
        qsort(v, (size_t)c->n[b], sizeof(int64_t), cmp_i64);
        int k = (int)(q * c->n[b] + 0.999999) - 1; /* nearest rank */
        int64_t m = v[k < 0 ? 0 : k];
        return m < MPILAB_DL_ADVANCE_MAX_NS ? m : MPILAB_DL_ADVANCE_MAX_NS;
    }
    return 0;
}

/* ---- the router's legs ---- */

int mpilab_dl_legs_open(mpilab_dl_legs *L, const char *tun_dev)
{
    memset(L, 0, sizeof(*L));
    L->fd = -1;
    int tun = tun_dev ? ifindex_of(tun_dev) : 0; /* 0: no tun device to leave out */
    if (tun < 0)
        return -1;
    /* every interface but the tun device, IPv4 and IPv6 only, first MPILAB_DL_SNAP bytes */
    struct sock_filter code[] = {
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, (uint32_t)(SKF_AD_OFF + SKF_AD_IFINDEX)),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (uint32_t)tun, 4, 0),
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, (uint32_t)(SKF_AD_OFF + SKF_AD_PROTOCOL)),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, ETH_P_IP, 1, 0),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, ETH_P_IPV6, 0, 1),
        BPF_STMT(BPF_RET | BPF_K, MPILAB_DL_SNAP),
        BPF_STMT(BPF_RET | BPF_K, 0)};
    L->fd = open_packet_socket(0, code, sizeof(code) / sizeof(code[0]));
    return L->fd >= 0 ? 0 : -1;
}

void mpilab_dl_legs_close(mpilab_dl_legs *L)
{
    if (L->fd >= 0)
        close(L->fd);
    L->fd = -1;
}

static void count_fine(uint64_t *fine, int64_t ns) { fine[mpilab_dl_fine_bucket(ns)]++; }

/* A written packet seen leaving on a leg at t_e: its forwarding cost and, when its ingress
 * stamp is known, the whole crossing against the delay. */
static void egress_seen(mpilab_dl_legs *L, mpilab_dl_stats *st, const mpilab_dl_snap *w, int64_t t_e,
                        int64_t delay_ns)
{
    int64_t cost = t_e - w->t_ns;
    if (cost < 0)
        return;
    mpilab_dl_calib_add(&L->cal, w->bucket, cost);
    st->out_n++;
    count_fine(st->out_fine, cost);
    if ((double)cost * 1e-9 > st->out_max_s)
        st->out_max_s = (double)cost * 1e-9;
    if (w->arr_ns < 0)
        return;
    int64_t late = t_e - w->arr_ns - delay_ns;
    st->crossings++;
    if (late < 0) {
        st->cross_early++;
        if ((double)-late * 1e-9 > st->cross_early_max_s)
            st->cross_early_max_s = (double)-late * 1e-9;
        return;
    }
    count_fine(st->cross_fine, late);
    if ((double)late * 1e-9 > st->cross_max_s)
        st->cross_max_s = (double)late * 1e-9;
}

void mpilab_dl_legs_drain(mpilab_dl_legs *L, mpilab_dl_stats *st, int64_t delay_ns)
{
    if (L->fd < 0)
        return;
    for (int k = 0; k < 4 * MPILAB_DL_PEND; k++) {
        mpilab_dl_snap s;
        int64_t rt;
        int type;
        ssize_t n = mpilab_dl_read_record(L->fd, s.snap, sizeof(s.snap), &rt, &type, &s.ifindex);
        if (n < 0)
            break;
        /* a sleeping line drains the leg tap only when a packet for it wakes it: records
         * of packets the router forwarded without it (the undelayed crossings the cold
         * crossing learns from) may wait seconds */
        s.t_ns = mpilab_dl_rt_to_mono(&L->clk, rt, MPILAB_DL_LEG_MAX_AGE_NS);
        s.len = (uint32_t)n;
        s.arr_ns = -1;
        s.bucket = 0;
        if (s.t_ns < 0 || n < 20)
            continue;
        if (type != PACKET_OUTGOING) {
            mpilab_dl_snapq_push(&L->in, &s);
            continue;
        }
        mpilab_dl_snap *w = mpilab_dl_snapq_take(&L->out, s.snap, s.len);
        if (w) {
            egress_seen(L, st, w, s.t_ns, delay_ns);
        } else if ((w = mpilab_dl_snapq_take(&L->in, s.snap, s.len)) && s.t_ns - w->t_ns <= MPILAB_DL_COLD_MAX_NS) {
            /* a packet the router forwarded without the line (its policy rules off): the
             * router's own crossing, after the idle gap since the last packet out (longer
             * ones are not kept: rather a packet whose read the tap missed) */
            mpilab_dl_cold_learn(&L->cold, w->ifindex,
                                 mpilab_dl_gap_bucket(s.t_ns - L->cold.last_egress_ns), s.t_ns - w->t_ns);
            st->cold_learned++;
        }
        if (s.t_ns > L->cold.last_egress_ns)
            L->cold.last_egress_ns = s.t_ns;
    }
    int64_t old = ts_ns(CLOCK_MONOTONIC) - 1000000000; /* unmatched after 1 s: lost */
    mpilab_dl_snapq_trim(&L->in, old);
    mpilab_dl_snapq_trim(&L->out, old);
}

int64_t mpilab_dl_legs_ingress(mpilab_dl_legs *L, mpilab_dl_stats *st, int64_t delay_ns,
                               const unsigned char *pkt, size_t len, int64_t now, int *dir)
{
    *dir = 0;
    if (L->fd < 0)
        return -1;
    mpilab_dl_snap *e = mpilab_dl_snapq_take(&L->in, pkt, len);
    if (!e) { /* its record may have come in since the last drain */
        mpilab_dl_legs_drain(L, st, delay_ns);
        e = mpilab_dl_snapq_take(&L->in, pkt, len);
    }
    /* none, a stamp from the future, or one long before (a stale duplicate): not trusted */
    if (!(e && e->t_ns <= now && now - e->t_ns < 1000000000))
        return -1;
    *dir = e->ifindex;
    return e->t_ns;
}

void mpilab_dl_legs_written(mpilab_dl_legs *L, const unsigned char *pkt, size_t len, int64_t t_ns,
                            int64_t arr_ns, int bucket)
{
    if (L->fd < 0)
        return;
    mpilab_dl_snap s;
    s.t_ns = t_ns;
    s.arr_ns = arr_ns;
    s.bucket = bucket;
    s.ifindex = 0;
    s.len = (uint32_t)(len < MPILAB_DL_SNAP ? len : MPILAB_DL_SNAP);
    if (s.len < 20)
        return;
    memcpy(s.snap, pkt, s.len);
    mpilab_dl_snapq_push(&L->out, &s);
}
