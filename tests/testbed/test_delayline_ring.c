/* The delay line's packet ring: FIFO order, wrap-around, refusal when full. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "kit.h"
#include "testbed/delayline.h"

/* An IPv4 header + 8 bytes of payload, with the given TTL, id and checksum. */
static void ipv4(unsigned char *p, unsigned ttl, unsigned id, unsigned csum)
{
    memset(p, 0, 28);
    p[0] = 0x45;
    p[3] = 28;
    p[4] = (unsigned char)(id >> 8);
    p[5] = (unsigned char)id;
    p[8] = (unsigned char)ttl;
    p[9] = 1;
    p[10] = (unsigned char)(csum >> 8);
    p[11] = (unsigned char)csum;
    for (int k = 20; k < 28; k++)
        p[k] = (unsigned char)(k * 7);
}

/* The same packet at two points of the router (TTL and checksum differ) matches; another
 * packet does not; the queue hands out the oldest match once and trims what is consumed. */
MPILAB_TEST(matching)
{
    unsigned char a[28], b[28], c[28];
    ipv4(a, 64, 1, 0x1234);
    ipv4(b, 63, 1, 0x1334);
    ipv4(c, 64, 2, 0x1234);
    CHECK(mpilab_dl_same_packet(a, 28, b, 28));
    CHECK(!mpilab_dl_same_packet(a, 28, c, 28));
    CHECK(!mpilab_dl_same_packet(a, 19, b, 19)); /* too short to tell */
    b[24] ^= 1;
    CHECK(!mpilab_dl_same_packet(a, 28, b, 28)); /* payload differs */
    unsigned char v6a[40] = {0x60}, v6b[40] = {0x60};
    v6a[7] = 64;
    v6b[7] = 63;
    CHECK(mpilab_dl_same_packet(v6a, 40, v6b, 40));
    CHECK(!mpilab_dl_same_packet(v6a, 40, a, 28)); /* versions differ */
    mpilab_dl_snapq *q = calloc(1, sizeof(*q)); /* large: not on the stack */
    REQUIRE(q);
    for (int k = 0; k < 3; k++) {
        mpilab_dl_snap e = {.t_ns = 100 + k, .arr_ns = -1, .bucket = 0, .len = 28};
        ipv4(e.snap, 64, (unsigned)k, 0);
        mpilab_dl_snapq_push(q, &e);
    }
    unsigned char want[28];
    ipv4(want, 63, 1, 0xffff);
    mpilab_dl_snap *got = mpilab_dl_snapq_take(q, want, 28);
    CHECK(got && got->t_ns == 101);
    CHECK(mpilab_dl_snapq_take(q, want, 28) == NULL); /* taken once */
    mpilab_dl_snapq_trim(q, 101); /* drops t=100 (old) and the consumed t=101 */
    CHECK(q->count == 1 && q->e[q->head].t_ns == 102);
    for (int k = 0; k < MPILAB_DL_PEND + 5; k++) { /* full: the oldest go */
        mpilab_dl_snap e = {.t_ns = 1000 + k, .arr_ns = -1, .bucket = 0, .len = 28};
        ipv4(e.snap, 64, (unsigned)(1000 + k), 0);
        mpilab_dl_snapq_push(q, &e);
    }
    CHECK(q->count == MPILAB_DL_PEND && q->e[q->head].t_ns == 1000 + 5);
    free(q);
}

/* Idle-gap buckets and the advance: the least recent cost of the bucket, less a quarter and
 * the safety; a bucket without enough samples borrows from a shorter gap (a warmer, cheaper
 * path), never from a longer one; capped. */
MPILAB_TEST(calibration)
{
    CHECK(mpilab_dl_gap_bucket(0) == 0 && mpilab_dl_gap_bucket(999) == 0);
    CHECK(mpilab_dl_gap_bucket(1000) == 1 && mpilab_dl_gap_bucket(2000) == 2);
    CHECK(mpilab_dl_gap_bucket(100000000) == 17); /* 100 ms: 2^16 <= 1e5 us < 2^17 */
    CHECK(mpilab_dl_gap_bucket(INT64_MAX) == MPILAB_DL_GAP_BUCKETS - 1);
    mpilab_dl_calib c;
    memset(&c, 0, sizeof(c));
    CHECK(mpilab_dl_calib_advance(&c, 10) == 0); /* nothing known: no advance */
    mpilab_dl_calib_add(&c, 10, 30000);
    mpilab_dl_calib_add(&c, 10, 26000);
    CHECK(mpilab_dl_calib_advance(&c, 10) == 0); /* too few samples */
    mpilab_dl_calib_add(&c, 10, 28000);
    CHECK(mpilab_dl_calib_advance(&c, 10) == 26000 - 26000 / 4 - MPILAB_DL_ADVANCE_SAFETY_NS);
    CHECK(mpilab_dl_calib_advance(&c, 15) == mpilab_dl_calib_advance(&c, 10)); /* borrowed */
    CHECK(mpilab_dl_calib_advance(&c, 9) == 0); /* never from a longer gap */
    for (int k = 0; k < MPILAB_DL_CAL_N; k++) /* the window forgets the old minimum */
        mpilab_dl_calib_add(&c, 10, 40000);
    CHECK(mpilab_dl_calib_advance(&c, 10) == 40000 - 10000 - MPILAB_DL_ADVANCE_SAFETY_NS);
    for (int k = 0; k < 3; k++)
        mpilab_dl_calib_add(&c, 3, 10000000);
    CHECK(mpilab_dl_calib_advance(&c, 3) == MPILAB_DL_ADVANCE_MAX_NS);
    for (int k = 0; k < 3; k++)
        mpilab_dl_calib_add(&c, 2, 1000);
    CHECK(mpilab_dl_calib_advance(&c, 2) == 0); /* never negative */
}

/* The quantile advance: nearest rank of the bucket's recent costs, no margin; the same
 * bucket choice as the least-cost advance (too few: borrowed from a shorter gap, else 0). */
MPILAB_TEST(calib_quantile_nearest_rank)
{
    mpilab_dl_calib c;
    memset(&c, 0, sizeof(c));
    CHECK(mpilab_dl_calib_quantile(&c, 10, 0.5) == 0); /* nothing known */
    const int64_t costs[] = {30000, 10000, 20000, 50000, 40000};
    for (int k = 0; k < 5; k++)
        mpilab_dl_calib_add(&c, 10, costs[k]);
    CHECK(mpilab_dl_calib_quantile(&c, 10, 0.5) == 30000); /* rank 3 of 5 */
    CHECK(mpilab_dl_calib_quantile(&c, 10, 0.2) == 10000); /* rank 1 */
    CHECK(mpilab_dl_calib_quantile(&c, 10, 0.21) == 20000); /* rank 2 */
    CHECK(mpilab_dl_calib_quantile(&c, 10, 1.0) == 50000);
    CHECK(mpilab_dl_calib_quantile(&c, 12, 0.5) == 30000); /* borrowed from a shorter gap */
    CHECK(mpilab_dl_calib_quantile(&c, 9, 0.5) == 0);      /* never from a longer one */
    CHECK(mpilab_dl_calib_quantile(&c, 10, 0.0) == 0);     /* no quantile: no advance */
    for (int k = 0; k < 3; k++)
        mpilab_dl_calib_add(&c, 3, 10000000);
    CHECK(mpilab_dl_calib_quantile(&c, 3, 0.5) == MPILAB_DL_ADVANCE_MAX_NS);
}

/* Variable-size records through a small ring: every record comes out in order with its
 * bytes intact, across many wrap-arounds; a full ring refuses, a request larger than the
 * ring is refused. */
MPILAB_TEST(ring_fifo_order_and_wraparound)
{
    mpilab_dl_ring r;
    REQUIRE(mpilab_dl_ring_init(&r, 4096) == 0);
    /* push/pop many variable-size records through a small ring: every record comes out
     * in order with its bytes intact, across many wrap-arounds */
    uint32_t next_in = 0, next_out = 0;
    unsigned seed = 12345;
    int refused = 0;
    for (int step = 0; step < 20000; step++) {
        seed = seed * 1103515245u + 12345u;
        size_t len = 1 + (seed >> 16) % 700;
        int push = ((seed >> 8) & 3) != 0;
        if (push) {
            unsigned char *p = mpilab_dl_ring_reserve(&r, 700);
            if (!p) {
                refused++;
                REQUIRE(r.count > 0);
                push = 0;
            } else {
                for (size_t k = 0; k < len; k++)
                    p[k] = (unsigned char)(next_in + k);
                mpilab_dl_ring_commit(&r, len, (int64_t)next_in);
                next_in++;
                REQUIRE(r.used <= r.cap);
            }
        }
        if (!push) {
            const mpilab_dl_rec *h = mpilab_dl_ring_peek(&r);
            if (!h) {
                REQUIRE(next_in == next_out);
                continue;
            }
            REQUIRE(h->due_ns == (int64_t)next_out);
            REQUIRE(h->wrap == 0);
            const unsigned char *d = (const unsigned char *)h + sizeof(*h);
            for (size_t k = 0; k < h->len; k++)
                REQUIRE(d[k] == (unsigned char)(next_out + k));
            mpilab_dl_ring_pop(&r);
            next_out++;
        }
    }
    REQUIRE(refused > 0);          /* the ring did fill up */
    REQUIRE(next_out > 1000);      /* and many records went through */
    while (mpilab_dl_ring_peek(&r)) {
        REQUIRE(mpilab_dl_ring_peek(&r)->due_ns == (int64_t)next_out);
        mpilab_dl_ring_pop(&r);
        next_out++;
    }
    REQUIRE(next_out == next_in);
    REQUIRE(r.used == 0 && r.count == 0);
    /* a ring too small for the request refuses it */
    REQUIRE(mpilab_dl_ring_reserve(&r, 8192) == NULL);
    mpilab_dl_ring_free(&r);
    printf("delayline ring: %u records\n", next_in);
}

MPILAB_TEST(lateness_buckets)
{
    /* lateness histogram buckets: < 10 us, < 100 us, < 1 ms, < 10 ms, more */
    CHECK(mpilab_dl_late_bucket(0) == 0 && mpilab_dl_late_bucket(9999) == 0);
    CHECK(mpilab_dl_late_bucket(10000) == 1 && mpilab_dl_late_bucket(99999) == 1);
    CHECK(mpilab_dl_late_bucket(100000) == 2 && mpilab_dl_late_bucket(999999) == 2);
    CHECK(mpilab_dl_late_bucket(1000000) == 3 && mpilab_dl_late_bucket(9999999) == 3);
    CHECK(mpilab_dl_late_bucket(10000000) == 4 && mpilab_dl_late_bucket(INT64_MAX) == 4);
}

MPILAB_TEST(realtime_off)
{
    /* real-time off does nothing and reports normal scheduling */
    mpilab_dl_options o = {.dev = "x", .delay_ns = 0, .buffer = 0, .stats = NULL, .pidfile = NULL,
                           .vnet_hdr = 1, .realtime = MPILAB_DL_RT_OFF, .rt_priority = 10};
    mpilab_dl_sched sc = {.fifo = 7, .priority = 7, .mlocked = 7};
    CHECK(mpilab_dl_realtime(&o, &sc) == 0 && sc.fifo == 0 && sc.priority == 0 && sc.mlocked == 0);
}

/* busy polling's auto: below 100 us, and with packet I/O below the warm-up lead (a sleeping
 * line would never warm the path); on and off as asked */
MPILAB_TEST(busy_auto_follows_the_warm_lead)
{
    mpilab_dl_options o = {.dev = "x", .delay_ns = 50000, .busy_poll = MPILAB_DL_BUSY_AUTO};
    CHECK(mpilab_dl_busy(&o) == 1);
    o.delay_ns = 150000;
    CHECK(mpilab_dl_busy(&o) == 0); /* tun: a 150 us line sleeps */
    o.io_packet = 1;
    CHECK(mpilab_dl_busy(&o) == 0); /* packet I/O without a warm-up */
    o.warm_ns = 200000;
    CHECK(mpilab_dl_busy(&o) == 1);
    o.delay_ns = 200000;
    CHECK(mpilab_dl_busy(&o) == 0); /* the hold reaches the lead: warmed while sleeping */
    o.busy_poll = MPILAB_DL_BUSY_ON;
    CHECK(mpilab_dl_busy(&o) == 1);
    o.busy_poll = MPILAB_DL_BUSY_OFF;
    o.delay_ns = 10000;
    CHECK(mpilab_dl_busy(&o) == 0);
}

/* the class a line starts in: what is asked for wins; auto is real-time only as root for a
 * sleeping line, SCHED_FIFO on the tun device and adaptive on packet sockets */
MPILAB_TEST(start_class_by_io_and_polling)
{
    mpilab_dl_options o = {.dev = "x", .delay_ns = 5000000, .busy_poll = MPILAB_DL_BUSY_AUTO,
                           .realtime = MPILAB_DL_RT_AUTO};
    CHECK(mpilab_dl_start_class(&o, 1) == MPILAB_DL_CLASS_FIFO);
    CHECK(mpilab_dl_start_class(&o, 0) == MPILAB_DL_CLASS_NORMAL);
    o.io_packet = 1;
    o.warm_ns = 200000;
    CHECK(mpilab_dl_start_class(&o, 1) == MPILAB_DL_CLASS_ADAPTIVE);
    CHECK(mpilab_dl_start_class(&o, 0) == MPILAB_DL_CLASS_NORMAL);
    o.delay_ns = 100000; /* below the warm-up lead: busy-polls, never real-time */
    CHECK(mpilab_dl_start_class(&o, 1) == MPILAB_DL_CLASS_NORMAL);
    o.realtime = MPILAB_DL_RT_ON;
    CHECK(mpilab_dl_start_class(&o, 1) == MPILAB_DL_CLASS_FIFO);
    o.rt_adaptive = 1;
    CHECK(mpilab_dl_start_class(&o, 0) == MPILAB_DL_CLASS_ADAPTIVE);
    o.rt_adaptive = 0;
    o.realtime = MPILAB_DL_RT_OFF;
    o.delay_ns = 5000000;
    CHECK(mpilab_dl_start_class(&o, 1) == MPILAB_DL_CLASS_NORMAL);
}

/* the trim comes off the hold, never below 0, and a negative one lengthens it; a trim file
 * is read or refused with the trim unchanged */
MPILAB_TEST(trim_hold_and_file)
{
    CHECK(mpilab_dl_hold(1000000, 0) == 1000000);
    CHECK(mpilab_dl_hold(1000000, 12500) == 987500);
    CHECK(mpilab_dl_hold(10000, 30000) == 0); /* the path alone is longer than the delay */
    CHECK(mpilab_dl_hold(10000, -6500) == 16500);
    int64_t t = 7;
    CHECK(mpilab_dl_parse_trim("-6.5us", &t) == 0 && t == -6500);
    CHECK(mpilab_dl_parse_trim("1s", &t) == 0 && t == 1000000000);
    CHECK(mpilab_dl_parse_trim("-1s", &t) == 0 && t == -1000000000);
    CHECK(mpilab_dl_parse_trim("-1.5s", &t) == -1 && t == -1000000000);
    CHECK(mpilab_dl_parse_trim("--5us", &t) == -1 && t == -1000000000);
    CHECK(mpilab_dl_parse_trim("-", &t) == -1 && t == -1000000000);
    char path[] = "/tmp/mpilab-trim-XXXXXX";
    int fd = mkstemp(path);
    REQUIRE(fd >= 0);
    FILE *f = fdopen(fd, "w");
    REQUIRE(f);
    fputs("-3us\n", f);
    fclose(f);
    CHECK(mpilab_dl_read_trim(path, &t) == 0 && t == -3000);
    f = fopen(path, "w");
    REQUIRE(f);
    fputs("12.5us\n", f);
    fclose(f);
    CHECK(mpilab_dl_read_trim(path, &t) == 0 && t == 12500);
    f = fopen(path, "w");
    REQUIRE(f);
    fputs("a while\n", f);
    fclose(f);
    CHECK(mpilab_dl_read_trim(path, &t) == -1 && t == 12500); /* one warning line, unchanged */
    f = fopen(path, "w");
    REQUIRE(f);
    fputs("2s", f); /* beyond 1 s */
    fclose(f);
    CHECK(mpilab_dl_read_trim(path, &t) == -1 && t == 12500);
    unlink(path);
    CHECK(mpilab_dl_read_trim(path, &t) == -1 && t == 12500); /* gone */
    /* a FIFO with no writer: refused at once (it used to block in open for ever), a
     * directory and a device likewise */
    REQUIRE(mkfifo(path, 0600) == 0);
    CHECK(mpilab_dl_read_trim(path, &t) == -1 && t == 12500);
    unlink(path);
    CHECK(mpilab_dl_read_trim("/tmp", &t) == -1 && t == 12500);
    CHECK(mpilab_dl_read_trim("/dev/zero", &t) == -1 && t == 12500);
}

/* The cold crossing: learned per direction and idle-gap bucket, the median of the nearest
 * buckets (either side) that hold enough samples, bounded; unknown directions and too few
 * samples give -1 (the default advance). */
MPILAB_TEST(cold_crossing_learned_bounded)
{
    mpilab_dl_cold *c = calloc(1, sizeof(*c)); /* large: not on the stack */
    REQUIRE(c);
    CHECK(mpilab_dl_cold_cost(c, 5, 17) == -1); /* nothing known */
    mpilab_dl_cold_learn(c, 5, 17, 30000);
    mpilab_dl_cold_learn(c, 5, 17, 10000);
    CHECK(mpilab_dl_cold_cost(c, 5, 17) == -1); /* too few */
    mpilab_dl_cold_learn(c, 5, 17, 20000);
    CHECK(mpilab_dl_cold_cost(c, 5, 17) == 20000); /* the median */
    CHECK(mpilab_dl_cold_cost(c, 6, 17) == -1);    /* another direction knows nothing */
    CHECK(mpilab_dl_cold_cost(c, 0, 17) == -1);    /* an unknown direction */
    CHECK(mpilab_dl_cold_cost(c, 5, 20) == 20000); /* borrowed from a shorter gap */
    CHECK(mpilab_dl_cold_cost(c, 5, 12) == 20000); /* and from a longer one */
    for (int k = 0; k < 3; k++)
        mpilab_dl_cold_learn(c, 5, 10, 5000 + k);
    CHECK(mpilab_dl_cold_cost(c, 5, 12) == 5001);  /* the nearer bucket wins */
    for (int k = 0; k < 3; k++)
        mpilab_dl_cold_learn(c, 5, 16, 7000);
    CHECK(mpilab_dl_cold_cost(c, 5, 13) == 7000);  /* at equal distance, pooled: 5000..5002, 7000 x3 */
    CHECK(mpilab_dl_cold_cost(c, 5, 15) == 7000);
    mpilab_dl_cold_learn(c, 7, 11, 9000); /* two buckets of too few each are pooled */
    mpilab_dl_cold_learn(c, 7, 12, 8000);
    CHECK(mpilab_dl_cold_cost(c, 7, 12) == -1);
    mpilab_dl_cold_learn(c, 7, 12, 1000);
    CHECK(mpilab_dl_cold_cost(c, 7, 12) == 8000);
    CHECK(mpilab_dl_cold_cost(c, 7, 11) == 8000);
    for (int k = 0; k < 3; k++)
        mpilab_dl_cold_learn(c, 6, 8, 10000000);
    CHECK(mpilab_dl_cold_cost(c, 6, 8) == MPILAB_DL_COLD_MAX_NS); /* bounded */
    CHECK(mpilab_dl_cold_cost(c, 5, 17) == 20000); /* directions apart */
    mpilab_dl_cold_learn(c, 5, 17, -4);            /* nonsense is not learned */
    mpilab_dl_cold_learn(c, -1, 17, 4000);
    CHECK(c->cal[0].n[17] == 3 && c->ndirs == 3);
    for (int d = 0; d < MPILAB_DL_COLD_DIRS + 3; d++) /* only so many directions kept */
        mpilab_dl_cold_learn(c, 100 + d, 3, 1000);
    CHECK(c->ndirs == MPILAB_DL_COLD_DIRS);
    for (int k = 0; k < 2 * MPILAB_DL_CAL_N; k++) /* the last MPILAB_DL_CAL_N only */
        mpilab_dl_cold_learn(c, 5, 17, k < MPILAB_DL_CAL_N ? 90000 : 40000);
    CHECK(mpilab_dl_cold_cost(c, 5, 17) == 40000);
    free(c);
}

/* --spin-last: a fixed margin as given; auto from the recent wake-ups' largest lateness
 * plus the slack, within bounds; one late wake-up among quick ones sets it (the default
 * margin, twice a moving average, hardly moves) */
MPILAB_TEST(spin_margin)
{
    mpilab_dl_stats *st = calloc(1, sizeof(*st));
    REQUIRE(st);
    CHECK(mpilab_dl_spin_margin(st, 150000) == 150000);
    CHECK(mpilab_dl_spin_margin(st, -1) == MPILAB_DL_SPIN_MIN_NS); /* nothing seen yet */
    for (int k = 0; k < 10; k++)
        mpilab_dl_note_wake(st, 3000);
    mpilab_dl_note_wake(st, 180000);
    CHECK(mpilab_dl_spin_margin(st, -1) == 180000 + MPILAB_DL_SPIN_SLACK_NS);
    CHECK(mpilab_dl_wake_margin(st) < 180000);
    for (int k = 0; k < MPILAB_DL_WAKE_N; k++) /* it ages out */
        mpilab_dl_note_wake(st, 2000);
    CHECK(mpilab_dl_spin_margin(st, -1) == MPILAB_DL_SPIN_MIN_NS);
    mpilab_dl_note_wake(st, 50000000);
    CHECK(mpilab_dl_spin_margin(st, -1) == MPILAB_DL_SPIN_MAX_NS);
    free(st);
}

/* a record keeps its direction */
MPILAB_TEST(ring_keeps_direction)
{
    mpilab_dl_ring r;
    REQUIRE(mpilab_dl_ring_init(&r, 4096) == 0);
    unsigned char *p = mpilab_dl_ring_reserve(&r, 100);
    REQUIRE(p);
    mpilab_dl_ring_commit_dir(&r, 100, 7, 3, 42);
    p = mpilab_dl_ring_reserve(&r, 100);
    REQUIRE(p);
    mpilab_dl_ring_commit_at(&r, 100, 8, 4);
    const mpilab_dl_rec *h = mpilab_dl_ring_peek(&r);
    CHECK(h && h->dir == 42 && h->due_ns == 7 && h->arr_ns == 3);
    mpilab_dl_ring_pop(&r);
    h = mpilab_dl_ring_peek(&r);
    CHECK(h && h->dir == 0 && h->due_ns == 8);
    mpilab_dl_ring_free(&r);
}

MPILAB_TEST_MAIN()
