/* The delay line's packet-socket I/O (delayline_packet.h). */
#include "testbed/delayline_packet.h"
#include "testbed/delayline.h"

#include <arpa/inet.h>
#include <errno.h>
#include <linux/if_ether.h>
#include <linux/if_packet.h>
#include <net/if.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

static int parse_mac(const char *s, unsigned char mac[6])
{
    unsigned v[6];
    char tail;
    if (sscanf(s, "%2x:%2x:%2x:%2x:%2x:%2x%c", &v[0], &v[1], &v[2], &v[3], &v[4], &v[5], &tail) != 6)
        return -1;
    for (int k = 0; k < 6; k++)
        mac[k] = (unsigned char)v[k];
    return strlen(s) == 17 ? 0 : -1;
}

int mpilab_dl_peer_parse(const char *arg, mpilab_dl_peer *out, char *err, size_t errlen)
{
    memset(out, 0, sizeof(*out));
    const char *c1 = strchr(arg, ','), *c2 = c1 ? strchr(c1 + 1, ',') : NULL;
    if (!c1 || !c2 || strchr(c2 + 1, ',')) {
        snprintf(err, errlen, "--peer %s: expected IP,IFNAME,MAC", arg);
        return -1;
    }
    char ip[INET_ADDRSTRLEN];
    size_t iplen = (size_t)(c1 - arg), iflen = (size_t)(c2 - c1 - 1);
    if (iplen == 0 || iplen >= sizeof(ip)) {
        snprintf(err, errlen, "--peer %s: not an IPv4 address before the first comma", arg);
        return -1;
    }
    memcpy(ip, arg, iplen);
    ip[iplen] = '\0';
    struct in_addr a;
    if (inet_pton(AF_INET, ip, &a) != 1) {
        snprintf(err, errlen, "--peer %s: '%s' is not an IPv4 address", arg, ip);
        return -1;
    }
    if (iflen == 0 || iflen >= MPILAB_DL_IFNAME) {
        snprintf(err, errlen, "--peer %s: the interface name must be 1 to %d characters", arg,
                 MPILAB_DL_IFNAME - 1);
        return -1;
    }
    if (parse_mac(c2 + 1, out->mac) != 0) {
        snprintf(err, errlen, "--peer %s: '%s' is not a MAC address (xx:xx:xx:xx:xx:xx)", arg, c2 + 1);
        return -1;
    }
    out->ip = a.s_addr;
    memcpy(out->ifname, c1 + 1, iflen);
    out->ifname[iflen] = '\0';
    out->ifindex = -1;
    return 0;
}

int mpilab_dl_frame_route(unsigned char *buf, size_t len, const mpilab_dl_peer *peers, size_t npeers)
{
    const size_t eth = 4 + MPILAB_DL_PKT_VNET, ip = MPILAB_DL_PKT_IP_OFF;
    if (len < ip + 20 || buf[eth + 12] != 0x08 || buf[eth + 13] != 0x00)
        return -1;
    unsigned char *h = buf + ip;
    if ((h[0] >> 4) != 4 || (h[0] & 15) < 5)
        return -1;
    uint32_t dst;
    memcpy(&dst, h + 16, 4);
    size_t k = 0;
    while (k < npeers && peers[k].ip != dst)
        k++;
    if (k == npeers)
        return -1;
    if (h[8] <= 1)
        return -2;
    /* TTL - 1: the header checksum goes up by 0x0100 (RFC 1624, one's complement) */
    h[8]--;
    uint32_t sum = ((uint32_t)h[10] << 8 | h[11]) + 0x0100;
    sum = (sum & 0xffff) + (sum >> 16);
    h[10] = (unsigned char)(sum >> 8);
    h[11] = (unsigned char)sum;
    memcpy(buf + eth, peers[k].mac, 6);
    memcpy(buf + eth + 6, peers[k].src, 6);
    int32_t out = peers[k].ifindex;
    memcpy(buf, &out, 4);
    return (int)k;
}

static int resolve_legs(mpilab_dl_peer *peers, size_t npeers, int fd)
{
    for (size_t k = 0; k < npeers; k++) {
        struct ifreq ifr;
        memset(&ifr, 0, sizeof(ifr));
        memcpy(ifr.ifr_name, peers[k].ifname, strlen(peers[k].ifname) + 1);
        if (ioctl(fd, SIOCGIFINDEX, &ifr) != 0) {
            fprintf(stderr, "mpilab-delayline: --peer ...,%s,...: no such interface here\n", peers[k].ifname);
            return -1;
        }
        peers[k].ifindex = ifr.ifr_ifindex;
        if (ioctl(fd, SIOCGIFHWADDR, &ifr) != 0) {
            fprintf(stderr, "mpilab-delayline: %s: no hardware address: %s\n", peers[k].ifname,
                    strerror(errno));
            return -1;
        }
        memcpy(peers[k].src, ifr.ifr_hwaddr.sa_data, 6);
    }
    return 0;
}

int mpilab_dl_pkt_open(mpilab_dl_pkt *p, mpilab_dl_peer *peers, size_t npeers)
{
    memset(p, 0, sizeof(*p));
    p->fd = socket(AF_PACKET, SOCK_RAW | SOCK_NONBLOCK | SOCK_CLOEXEC, htons(ETH_P_IP));
    if (p->fd < 0) {
        fprintf(stderr, "mpilab-delayline: packet socket: %s (needs CAP_NET_RAW)\n", strerror(errno));
        return -1;
    }
    int one = 1, buf = 16 << 20;
    if (resolve_legs(peers, npeers, p->fd) != 0) {
        mpilab_dl_pkt_close(p);
        return -1;
    }
    if (setsockopt(p->fd, SOL_PACKET, PACKET_IGNORE_OUTGOING, &one, sizeof(one)) != 0
        || setsockopt(p->fd, SOL_PACKET, PACKET_VNET_HDR, &one, sizeof(one)) != 0
        || setsockopt(p->fd, SOL_SOCKET, SO_TIMESTAMPNS, &one, sizeof(one)) != 0) {
        fprintf(stderr, "mpilab-delayline: packet socket options: %s\n", strerror(errno));
        mpilab_dl_pkt_close(p);
        return -1;
    }
    if (setsockopt(p->fd, SOL_SOCKET, SO_RCVBUFFORCE, &buf, sizeof(buf)) != 0)
        setsockopt(p->fd, SOL_SOCKET, SO_RCVBUF, &buf, sizeof(buf));
    /* a sent frame is charged to the socket until the leg's peer takes it: with the
     * default 208 KiB, three GSO super-packets fill it while a busy CPU holds the veth
     * backlog back, and sends fail with EAGAIN (a drop no router would make) */
    if (setsockopt(p->fd, SOL_SOCKET, SO_SNDBUFFORCE, &buf, sizeof(buf)) != 0)
        setsockopt(p->fd, SOL_SOCKET, SO_SNDBUF, &buf, sizeof(buf));
    p->peers = peers;
    p->npeers = npeers;
    return 0;
}

void mpilab_dl_pkt_close(mpilab_dl_pkt *p)
{
    if (p->fd >= 0)
        close(p->fd);
    p->fd = -1;
}

int mpilab_dl_pkt_take(mpilab_dl_pkt *p, unsigned char *buf, size_t cap, size_t *len, int64_t *rt_ns)
{
    int pkttype = 0, ifindex = 0;
    ssize_t n = mpilab_dl_read_record(p->fd, buf + 4, cap - 4, rt_ns, &pkttype, &ifindex);
    if (n < 0) {
        if (errno == EAGAIN || errno == EINTR)
            return 0;
        fprintf(stderr, "mpilab-delayline: packet socket: %s\n", strerror(errno));
        return -1;
    }
    if (pkttype != PACKET_HOST) {
        p->ignored++;
        return 2;
    }
    if (p->standby) {
        p->standby_passed++;
        return 2;
    }
    *len = (size_t)n + 4;
    int r = mpilab_dl_frame_route(buf, *len, p->peers, p->npeers);
    if (r < 0) {
        if (r == -2)
            p->ttl_expired++;
        else
            p->ignored++;
        return 2;
    }
    return 1;
}

/* Send a frame laid out as above out of the leg in its first 4 bytes. */
static ssize_t frame_send(int fd, const unsigned char *buf, size_t len)
{
    int32_t ifindex;
    memcpy(&ifindex, buf, 4);
    struct sockaddr_ll to;
    memset(&to, 0, sizeof(to));
    to.sll_family = AF_PACKET;
    to.sll_protocol = htons(ETH_P_IP);
    to.sll_ifindex = ifindex;
    to.sll_halen = 6;
    memcpy(to.sll_addr, buf + 4 + MPILAB_DL_PKT_VNET, 6);
    return sendto(fd, buf + 4, len - 4, 0, (const struct sockaddr *)&to, sizeof(to));
}

int mpilab_dl_pkt_send(mpilab_dl_pkt *p, const unsigned char *buf, size_t len)
{
    ssize_t r = frame_send(p->fd, buf, len);
    if (r < 0 && errno == EAGAIN) {
        /* the send buffer is full of frames the legs have not yet taken: wait for room
         * (at most a millisecond), once */
        struct pollfd pfd = {.fd = p->fd, .events = POLLOUT};
        if (poll(&pfd, 1, 1) > 0)
            r = frame_send(p->fd, buf, len);
        else
            errno = EAGAIN;
    }
    if (r < 0) {
        /* ENOBUFS: the leg's queue (its htb/bfifo qdisc) dropped it, as it would have a
         * packet the kernel forwarded: a queue drop, not a failure of the line */
        if (errno == ENOBUFS)
            p->queue_drops++;
        else
            p->send_errors++;
        p->last_errno = errno;
        return errno == ENOBUFS ? 0 : -1;
    }
    return 0;
}

size_t mpilab_dl_warm_frame(const unsigned char *frame, size_t len, unsigned char *out, size_t cap)
{
    const size_t ip = MPILAB_DL_PKT_IP_OFF;
    if (len < ip + 20 || cap < MPILAB_DL_WARM_MAX)
        return 0;
    size_t hl = (size_t)(frame[ip] & 15) * 4;
    if ((frame[ip] >> 4) != 4 || hl < 20 || len < ip + hl)
        return 0;
    memcpy(out, frame, 4);                          /* egress ifindex */
    memset(out + 4, 0, MPILAB_DL_PKT_VNET);         /* no offloads */
    memcpy(out + 4 + MPILAB_DL_PKT_VNET, frame + 4 + MPILAB_DL_PKT_VNET, 14 + hl);
    unsigned char *h = out + ip;
    h[2] = (unsigned char)(hl >> 8);
    h[3] = (unsigned char)hl;
    h[10] = h[11] = 0;
    uint32_t sum = 0;
    for (size_t k = 0; k < hl; k += 2)
        sum += (uint32_t)h[k] << 8 | h[k + 1];
    while (sum >> 16)
        sum = (sum & 0xffff) + (sum >> 16);
    /* the right checksum (~sum), then one more (one's complement): a sum that no longer
     * checks, whatever the header */
    uint32_t c = (~sum & 0xffff) + 1;
    c = (c & 0xffff) + (c >> 16);
    h[10] = (unsigned char)(c >> 8);
    h[11] = (unsigned char)c;
    return ip + hl;
}

void mpilab_dl_pkt_warm(mpilab_dl_pkt *p, const unsigned char *frame, size_t len)
{
    unsigned char w[MPILAB_DL_WARM_MAX];
    size_t n = mpilab_dl_warm_frame(frame, len, w, sizeof(w));
    if (n == 0)
        return;
    if (frame_send(p->fd, w, n) < 0)
        p->warm_errors++;
    else
        p->warm_frames++;
}

size_t mpilab_dl_peer_frame(const mpilab_dl_peer *peer, unsigned char *out, size_t cap)
{
    if (cap < MPILAB_DL_PKT_IP_OFF + 20)
        return 0;
    memset(out, 0, MPILAB_DL_PKT_IP_OFF + 20);
    int32_t ifindex = peer->ifindex;
    memcpy(out, &ifindex, 4);
    unsigned char *eth = out + 4 + MPILAB_DL_PKT_VNET;
    memcpy(eth, peer->mac, 6);
    memcpy(eth + 6, peer->src, 6);
    eth[12] = 0x08; /* IPv4 */
    unsigned char *h = out + MPILAB_DL_PKT_IP_OFF;
    h[0] = 0x45;
    h[3] = 20;
    h[8] = 64;      /* TTL */
    h[9] = 17;      /* UDP, for what it is worth: it never gets past the header */
    memcpy(h + 16, &peer->ip, 4);
    return MPILAB_DL_PKT_IP_OFF + 20;
}

void mpilab_dl_pkt_warm_peer(mpilab_dl_pkt *p, size_t k)
{
    unsigned char f[MPILAB_DL_PKT_IP_OFF + 20];
    if (k < p->npeers && mpilab_dl_peer_frame(&p->peers[k], f, sizeof(f)) > 0)
        mpilab_dl_pkt_warm(p, f, sizeof(f));
}

int64_t mpilab_dl_pkt_keep_warm(mpilab_dl_pkt *p, int64_t keep_ns, int64_t last_write, int64_t now)
{
    if (keep_ns <= 0 || p->npeers == 0)
        return 0;
    if (now - last_write < MPILAB_DL_WARM_IDLE_NS)
        return last_write + MPILAB_DL_WARM_IDLE_NS;
    int64_t every = keep_ns / (int64_t)p->npeers;
    if (every < MPILAB_DL_KEEP_WARM_MIN_NS)
        every = MPILAB_DL_KEEP_WARM_MIN_NS;
    if (now - p->kept_warm < every)
        return p->kept_warm + every;
    p->kept_warm = now;
    mpilab_dl_pkt_warm_peer(p, p->keep_next);
    p->keep_next = (p->keep_next + 1) % p->npeers;
    return now + every;
}

uint64_t mpilab_dl_pkt_drops(mpilab_dl_pkt *p)
{
    struct tpacket_stats s;
    socklen_t sl = sizeof(s);
    /* reading resets the kernel's counters: they are added up here */
    if (p->fd >= 0 && getsockopt(p->fd, SOL_PACKET, PACKET_STATISTICS, &s, &sl) == 0)
        p->drops += s.tp_drops;
    return p->drops;
}
