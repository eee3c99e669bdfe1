/* The delay line's packet-socket I/O without sockets: --peer parsing and the routing of a
 * held frame (MACs, TTL, header checksum, egress interface). */
#include <stdint.h>
#include <string.h>

#include "kit.h"
#include "testbed/delayline_packet.h"

/* One's complement sum of an IPv4 header: 0xffff when its checksum is right. */
static unsigned header_sum(const unsigned char *h)
{
    uint32_t sum = 0;
    for (int k = 0; k < 20; k += 2)
        sum += (uint32_t)h[k] << 8 | h[k + 1];
    while (sum >> 16)
        sum = (sum & 0xffff) + (sum >> 16);
    return sum;
}

/* A held frame: 4 free bytes, a zero virtio header, Ethernet (type `etype`), an IPv4 header
 * to 10.77.1.2 with `ttl` and a correct checksum, 8 bytes of payload. */
static size_t frame(unsigned char *b, unsigned ttl, unsigned etype)
{
    memset(b, 0, 64);
    unsigned char *e = b + 4 + MPILAB_DL_PKT_VNET, *h = b + MPILAB_DL_PKT_IP_OFF;
    memset(e, 0xaa, 12);
    e[12] = (unsigned char)(etype >> 8);
    e[13] = (unsigned char)etype;
    const unsigned char ip[20] = {0x45, 0, 0, 28, 0x12, 0x34, 0, 0, (unsigned char)ttl, 17, 0, 0,
                                  10, 77, 0, 2, 10, 77, 1, 2};
    memcpy(h, ip, 20);
    unsigned s = header_sum(h);
    h[10] = (unsigned char)(~s >> 8);
    h[11] = (unsigned char)~s;
    for (int k = 0; k < 8; k++)
        h[20 + k] = (unsigned char)k;
    return MPILAB_DL_PKT_IP_OFF + 28;
}

MPILAB_TEST(peer_parsed)
{
    mpilab_dl_peer p;
    char err[256];
    REQUIRE(mpilab_dl_peer_parse("10.77.1.2,s1r0,0a:e3:29:AB:17:b8", &p, err, sizeof(err)) == 0);
    CHECK(p.ip == (uint32_t)(10 | 77 << 8 | 1 << 16 | 2u << 24)); /* network order in memory */
    CHECK(strcmp(p.ifname, "s1r0") == 0);
    const unsigned char mac[6] = {0x0a, 0xe3, 0x29, 0xab, 0x17, 0xb8};
    CHECK(memcmp(p.mac, mac, 6) == 0);
    const char *bad[] = {"10.77.1.2", "10.77.1.2,s1r0", ",s1r0,0a:e3:29:ab:17:b8",
                         "10.77.1.256,s1r0,0a:e3:29:ab:17:b8", "10.77.1.2,,0a:e3:29:ab:17:b8",
                         "10.77.1.2,s1r0,0a:e3:29:ab:17", "10.77.1.2,s1r0,0a:e3:29:ab:17:b8:",
                         "10.77.1.2,s1r0,0a-e3-29-ab-17-b8", "10.77.1.2,s1r0,0a:e3:29:ab:17:b8,x",
                         "10.77.1.2,0123456789abcdef,0a:e3:29:ab:17:b8"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        err[0] = '\0';
        CHECKF(mpilab_dl_peer_parse(bad[i], &p, err, sizeof(err)) != 0 && strstr(err, "--peer"),
               "'%s' accepted (err '%s')", bad[i], err);
    }
}

MPILAB_TEST(frame_routed_as_a_router_would)
{
    mpilab_dl_peer peers[2];
    char err[256];
    REQUIRE(mpilab_dl_peer_parse("10.77.0.2,s0r0,02:00:00:00:00:01", &peers[0], err, sizeof(err)) == 0);
    REQUIRE(mpilab_dl_peer_parse("10.77.1.2,s1r0,02:00:00:00:00:02", &peers[1], err, sizeof(err)) == 0);
    peers[1].ifindex = 7;
    memcpy(peers[1].src, "\x02\x00\x00\x00\x00\x99", 6);
    unsigned char b[64];
    size_t n = frame(b, 64, 0x0800);
    CHECK(header_sum(b + MPILAB_DL_PKT_IP_OFF) == 0xffff);
    CHECK(mpilab_dl_frame_route(b, n, peers, 2) == 1);
    const unsigned char *e = b + 4 + MPILAB_DL_PKT_VNET, *h = b + MPILAB_DL_PKT_IP_OFF;
    CHECK(memcmp(e, peers[1].mac, 6) == 0);     /* to the node */
    CHECK(memcmp(e + 6, peers[1].src, 6) == 0); /* from the leg */
    CHECK(h[8] == 63);
    CHECKF(header_sum(h) == 0xffff, "checksum after the TTL: sum %#x", header_sum(h));
    int32_t out;
    memcpy(&out, b, 4);
    CHECK(out == 7);
    for (int k = 0; k < 8; k++)
        CHECK(h[20 + k] == k); /* the payload untouched */
    /* a checksum that carries: 0xff.. in the high byte */
    n = frame(b, 200, 0x0800);
    h = b + MPILAB_DL_PKT_IP_OFF;
    for (int ttl = 200; ttl > 2; ttl--) {
        REQUIRE(mpilab_dl_frame_route(b, n, peers, 2) == 1);
        CHECKF(header_sum(h) == 0xffff, "TTL %d: sum %#x", ttl - 1, header_sum(h));
    }
}

MPILAB_TEST(frames_not_the_lines_are_left_alone)
{
    mpilab_dl_peer peers[1];
    char err[256];
    REQUIRE(mpilab_dl_peer_parse("10.77.0.2,s0r0,02:00:00:00:00:01", &peers[0], err, sizeof(err)) == 0);
    unsigned char b[64], before[64];
    size_t n = frame(b, 64, 0x0800);
    memcpy(before, b, sizeof(b));
    CHECK(mpilab_dl_frame_route(b, n, peers, 1) == -1); /* 10.77.1.2 is no peer */
    CHECK(memcmp(b, before, sizeof(b)) == 0);
    n = frame(b, 64, 0x86dd);
    CHECK(mpilab_dl_frame_route(b, n, peers, 1) == -1); /* not IPv4 */
    n = frame(b, 64, 0x0800);
    CHECK(mpilab_dl_frame_route(b, MPILAB_DL_PKT_IP_OFF + 19, peers, 1) == -1); /* too short */
    b[MPILAB_DL_PKT_IP_OFF] = 0x44; /* header length 16: not a header */
    CHECK(mpilab_dl_frame_route(b, n, peers, 1) == -1);
    REQUIRE(mpilab_dl_peer_parse("10.77.1.2,s1r0,02:00:00:00:00:02", &peers[0], err, sizeof(err)) == 0);
    n = frame(b, 1, 0x0800);
    CHECK(mpilab_dl_frame_route(b, n, peers, 1) == -2); /* TTL expired: dropped */
    n = frame(b, 0, 0x0800);
    CHECK(mpilab_dl_frame_route(b, n, peers, 1) == -2);
}

/* One's complement sum of an IPv4 header of hl bytes. */
static unsigned header_sum_n(const unsigned char *h, size_t hl)
{
    uint32_t sum = 0;
    for (size_t k = 0; k < hl; k += 2)
        sum += (uint32_t)h[k] << 8 | h[k + 1];
    while (sum >> 16)
        sum = (sum & 0xffff) + (sum >> 16);
    return sum;
}

/* 10.77.1.2 behind leg 9 (MAC ..:99), MAC ..:02, as mpilab_dl_pkt_open would resolve it:
 * 0, or -1 when the spec does not parse. */
static int resolved_peer(mpilab_dl_peer *peer)
{
    char err[256];
    if (mpilab_dl_peer_parse("10.77.1.2,s1r0,02:00:00:00:00:02", peer, err, sizeof(err)) != 0)
        return -1;
    peer->ifindex = 9;
    memcpy(peer->src, "\x02\x00\x00\x00\x00\x99", 6);
    return 0;
}

MPILAB_TEST(warm_frame_is_the_header_with_a_checksum_one_off)
{
    mpilab_dl_peer peers[1];
    REQUIRE(resolved_peer(&peers[0]) == 0);
    unsigned char b[64], w[MPILAB_DL_WARM_MAX], before[64];
    for (unsigned ttl = 3; ttl < 256; ttl += 7) { /* checksums of every shape */
        size_t n = frame(b, ttl, 0x0800);
        REQUIRE(mpilab_dl_frame_route(b, n, peers, 1) == 0);
        b[4] = 1; /* a virtio header that asks for offloads: not copied */
        memcpy(before, b, sizeof(b));
        size_t m = mpilab_dl_warm_frame(b, n, w, sizeof(w));
        REQUIRE(m == MPILAB_DL_PKT_IP_OFF + 20);
        CHECK(memcmp(b, before, sizeof(b)) == 0); /* the held frame untouched */
        CHECK(memcmp(w, b, 4) == 0);              /* the same egress */
        for (int k = 4; k < 4 + MPILAB_DL_PKT_VNET; k++)
            CHECK(w[k] == 0);
        CHECK(memcmp(w + 4 + MPILAB_DL_PKT_VNET, b + 4 + MPILAB_DL_PKT_VNET, 14) == 0);
        const unsigned char *h = w + MPILAB_DL_PKT_IP_OFF;
        CHECK(h[2] == 0 && h[3] == 20); /* the header alone */
        CHECK(memcmp(h + 4, b + MPILAB_DL_PKT_IP_OFF + 4, 6) == 0);
        CHECK(memcmp(h + 12, b + MPILAB_DL_PKT_IP_OFF + 12, 8) == 0);
        /* wrong, and by exactly one: right but for the one added */
        CHECKF(header_sum(h) == 1, "TTL %u: sum %#x", ttl, header_sum(h));
    }
    /* a header with options: copied whole, still one off */
    size_t n = frame(b, 64, 0x0800);
    unsigned char *h = b + MPILAB_DL_PKT_IP_OFF;
    h[0] = 0x46; /* 24 bytes: the first 4 of the payload are its option bytes */
    h[10] = h[11] = 0;
    unsigned s = header_sum_n(h, 24);
    h[10] = (unsigned char)(~s >> 8);
    h[11] = (unsigned char)~s;
    REQUIRE(mpilab_dl_warm_frame(b, n, w, sizeof(w)) == MPILAB_DL_PKT_IP_OFF + 24);
    CHECK(w[MPILAB_DL_PKT_IP_OFF + 3] == 24);
    CHECK(header_sum_n(w + MPILAB_DL_PKT_IP_OFF, 24) == 1);
    /* nothing to warm with */
    CHECK(mpilab_dl_warm_frame(b, MPILAB_DL_PKT_IP_OFF + 19, w, sizeof(w)) == 0);
    CHECK(mpilab_dl_warm_frame(b, MPILAB_DL_PKT_IP_OFF + 23, w, sizeof(w)) == 0);
    CHECK(mpilab_dl_warm_frame(b, n, w, MPILAB_DL_WARM_MAX - 1) == 0);
    h[0] = 0x65;
    CHECK(mpilab_dl_warm_frame(b, n, w, sizeof(w)) == 0);
}

MPILAB_TEST(peer_frame_warms_a_peer_with_nothing_held)
{
    mpilab_dl_peer peers[1];
    REQUIRE(resolved_peer(&peers[0]) == 0);
    unsigned char f[MPILAB_DL_PKT_IP_OFF + 20], w[MPILAB_DL_WARM_MAX];
    CHECK(mpilab_dl_peer_frame(&peers[0], f, sizeof(f) - 1) == 0);
    REQUIRE(mpilab_dl_peer_frame(&peers[0], f, sizeof(f)) == sizeof(f));
    int32_t ifindex;
    memcpy(&ifindex, f, 4);
    CHECK(ifindex == 9);
    const unsigned char *eth = f + 4 + MPILAB_DL_PKT_VNET;
    CHECK(memcmp(eth, "\x02\x00\x00\x00\x00\x02", 6) == 0);  /* to the peer */
    CHECK(memcmp(eth + 6, "\x02\x00\x00\x00\x00\x99", 6) == 0); /* from the leg */
    CHECK(eth[12] == 0x08 && eth[13] == 0x00);
    const unsigned char *h = f + MPILAB_DL_PKT_IP_OFF;
    CHECK(h[0] == 0x45 && h[2] == 0 && h[3] == 20 && h[8] > 1);
    CHECK(h[16] == 10 && h[17] == 77 && h[18] == 1 && h[19] == 2);
    /* a frame mpilab_dl_frame_route would pass as routed: its warm-up is one off */
    REQUIRE(mpilab_dl_warm_frame(f, sizeof(f), w, sizeof(w)) == MPILAB_DL_PKT_IP_OFF + 20);
    CHECK(memcmp(w, f, MPILAB_DL_PKT_IP_OFF + 10) == 0);
    CHECK(header_sum(w + MPILAB_DL_PKT_IP_OFF) == 1);
}

MPILAB_TEST_MAIN()
