/* The delay line's packet-socket I/O (--io packet): the line takes each IPv4 packet off the
 * router's site legs with one packet socket (kernel forwarding off in the router), holds it
 * and sends it out of the leg of its destination with a packet socket, as a router would
 * (next hop's MAC, the leg's own MAC, TTL less one). No routing into and out of a tun
 * device: on this VM that detour took a lone packet 20-70 us beyond the delay at 100 us
 * (docs/testbed-delayline.md). Internal to mpilab-delayline. */
#ifndef MPILAB_SRC_TESTBED_DELAYLINE_PACKET_H
#define MPILAB_SRC_TESTBED_DELAYLINE_PACKET_H

#include <stddef.h>
#include <stdint.h>

#define MPILAB_DL_PEERS_MAX 4096
#define MPILAB_DL_IFNAME 16

/* A node the line delivers to: its address, the router's leg it sits behind and its MAC. */
typedef struct mpilab_dl_peer {
    uint32_t ip;                    /* network byte order */
    char ifname[MPILAB_DL_IFNAME];  /* the router's leg towards it */
    unsigned char mac[6];           /* the node's own */
    int ifindex;                    /* the leg's, resolved when the socket opens */
    unsigned char src[6];           /* the leg's own MAC, resolved when the socket opens */
} mpilab_dl_peer;

/* "IP,IFNAME,MAC" (e.g. 10.77.1.2,s1r0,0a:e3:29:ab:17:b8), syntax only: 0, or -1 with a
 * one-line reason in err. */
int mpilab_dl_peer_parse(const char *arg, mpilab_dl_peer *out, char *err, size_t errlen);

/* A held frame: [egress ifindex, 4 bytes][struct virtio_net_hdr, 10][Ethernet, 14][IPv4 ...].
 * The virtio header carries a GSO super-packet's segmentation and a checksum left to the
 * device (veth offloads), so a frame goes out as it came in. */
#define MPILAB_DL_PKT_VNET 10
#define MPILAB_DL_PKT_IP_OFF (4 + MPILAB_DL_PKT_VNET + 14)

/* Route a frame of len bytes laid out as above (the first 4 bytes free): the peer of its
 * IPv4 destination is looked up, the Ethernet addresses rewritten (peer's MAC, the leg's
 * own), the TTL decremented (header checksum updated), the egress ifindex stored in the
 * first 4 bytes. Returns the peer's index; -1: not an IPv4 packet to a peer (not the
 * line's: the kernel handles it, or drops it with forwarding off); -2: TTL expired. */
int mpilab_dl_frame_route(unsigned char *buf, size_t len, const mpilab_dl_peer *peers,
                          size_t npeers);

typedef struct mpilab_dl_pkt {
    int fd;
    const mpilab_dl_peer *peers;
    size_t npeers;
    uint64_t ignored;      /* frames for no peer (the router's own traffic) */
    uint64_t ttl_expired;  /* frames dropped for their TTL */
    uint64_t send_errors;  /* sends that failed (not queue drops) */
    uint64_t queue_drops;  /* frames the egress leg's queue refused (ENOBUFS) */
    uint64_t drops;        /* frames the socket dropped (buffer full), so far */
    int last_errno;        /* the last failed send's (0: none) */
    uint64_t warm_frames;  /* --warm-path: warm-up frames sent */
    uint64_t warm_errors;  /* --warm-path: warm-up frames the socket refused */
    int64_t kept_warm;     /* --keep-warm: when the last keep-warm frame went (mono ns) */
    size_t keep_next;      /* --keep-warm: the peer warmed next */
    int standby;           /* 1: take nothing in (SIGUSR2; the router's kernel forwards) */
    uint64_t standby_passed; /* frames for a peer left to the kernel in standby */
} mpilab_dl_pkt;

/* Resolve each peer's leg (ifindex, MAC) in this namespace and open the socket (IPv4 on
 * every interface, incoming frames to this host only, kernel stamps, virtio headers,
 * non-blocking). 0, or -1 with a one-line message on stderr. */
int mpilab_dl_pkt_open(mpilab_dl_pkt *p, mpilab_dl_peer *peers, size_t npeers);
void mpilab_dl_pkt_close(mpilab_dl_pkt *p);
/* Take one frame into buf (cap bytes): 1, a frame to hold (*len bytes, routed; *rt_ns its
 * kernel stamp, CLOCK_REALTIME, -1 unknown); 2, a frame that is not the line's, or any
 * frame in standby (counted);
 * 0, none waiting; -1, a socket error (message on stderr). */
int mpilab_dl_pkt_take(mpilab_dl_pkt *p, unsigned char *buf, size_t cap, size_t *len, int64_t *rt_ns);
/* Send a held frame out of its leg (a full send buffer is waited on for up to 1 ms, once):
 * 0 (sent, or dropped by the leg's queue: counted in queue_drops), or -1 (counted in
 * send_errors). */
int mpilab_dl_pkt_send(mpilab_dl_pkt *p, const unsigned char *buf, size_t len);
/* --warm-path: a warm-up frame for the held frame of len bytes (laid out as above, routed)
 * into out (cap bytes, at least MPILAB_DL_WARM_MAX): the same egress, virtio header zero,
 * the same Ethernet header, the IPv4 header alone with its total length the header's and a
 * checksum made wrong (one added, one's complement). It crosses the leg and enters the far
 * site's bridge as the frame will, and is dropped at the checksum, counted as a header
 * error: by the bridge, whose netfilter checks IPv4 headers (br_netfilter, on in the
 * testbed's switches), or else by the node's IP input. Nothing is delivered, nothing
 * answers. Returns its length, 0 when len holds no IPv4 header. */
#define MPILAB_DL_WARM_MAX (MPILAB_DL_PKT_IP_OFF + 60)
size_t mpilab_dl_warm_frame(const unsigned char *frame, size_t len, unsigned char *out, size_t cap);
/* A routed frame for a peer with nothing held: laid out as above, its egress, the leg's and
 * the peer's MACs, a bare IPv4 header to the peer (no source, TTL 64, valid checksum), for
 * mpilab_dl_warm_frame. Returns its length, 0 when cap is too small. */
size_t mpilab_dl_peer_frame(const mpilab_dl_peer *peer, unsigned char *out, size_t cap);
/* The warm-up frame of peer k's path (nothing sent for k out of range). */
void mpilab_dl_pkt_warm_peer(mpilab_dl_pkt *p, size_t k);
/* --keep-warm: once the line has released nothing for MPILAB_DL_WARM_IDLE_NS (its last
 * release at last_write, held packets or not), the peers' warm-up frames in turn, each
 * peer's once per keep_ns (one frame per MPILAB_DL_KEEP_WARM_MIN_NS at most), so that the
 * next lone packet's send path and the far bridge are no colder than a stream's. Sends the
 * frame due at now (mono ns), if any; returns when the next is due (0: keep_ns off). */
int64_t mpilab_dl_pkt_keep_warm(mpilab_dl_pkt *p, int64_t keep_ns, int64_t last_write, int64_t now);
/* Send the warm-up frame of a held frame (counted in warm_frames or warm_errors). */
void mpilab_dl_pkt_warm(mpilab_dl_pkt *p, const unsigned char *frame, size_t len);
/* Frames the socket dropped for want of buffer space since it opened (PACKET_STATISTICS). */
uint64_t mpilab_dl_pkt_drops(mpilab_dl_pkt *p);

#endif
