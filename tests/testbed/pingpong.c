/* mpilab-tb-pingpong: ranks 0 and 1 exchange COUNT messages of BYTES bytes, each filled
 * with a pattern that depends on the iteration and the direction; every byte received is
 * checked. Progress lines carry CLOCK_REALTIME stamps so they can be lined up with the
 * testbed's fault log. Exit codes: 0 all bytes verified, 1 data error, 2 usage,
 * 3 stalled (no progress for --stall seconds: the watchdog reports a hung link).
 * --until FILE ends the run early, after the progress line at which rank 0 sees FILE. */
#include <getopt.h>
#include <limits.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <mpi.h>
#include "../mpi/mpi_world.h"
#include "common/stream.h"
#include "mpilab/version.h"

static volatile sig_atomic_t g_iter;

static unsigned char pattern(int64_t iter, int dir, int64_t k)
{
    return (unsigned char)((iter * 131 + k * 7 + dir * 29 + (k >> 8)) & 0xff);
}

static double now_real(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void on_alarm(int sig)
{
    (void)sig;
    char msg[96] = "mpilab-tb-pingpong: stalled: no progress at iteration ";
    char num[24];
    int n = 0;
    long v = (long)g_iter;
    do { num[n++] = (char)('0' + v % 10); v /= 10; } while (v && n < 20);
    size_t len = strlen(msg);
    while (n > 0 && len + 2 < sizeof(msg))
        msg[len++] = num[--n];
    msg[len++] = '\n';
    ssize_t w = write(2, msg, len);
    (void)w;
    _exit(3);
}

static int parse_i64(const char *s, int64_t lo, int64_t hi, int64_t *out)
{
    char *end;
    long long v = strtoll(s, &end, 10);
    if (!*s || *end || v < lo || v > hi)
        return -1;
    *out = v;
    return 0;
}

static void usage(void)
{
    printf("usage: mpilab-tb-pingpong [--count N] [--bytes B] [--progress K] "
           "[--stall S] [--corrupt-at I] [--rtt-log FILE] [--until FILE]\n"
           "Ping-pong between rank pairs with a byte check (testbed fault tests).\n"
           "  --count N       round trips (default 1000)\n"
           "  --bytes B       message size in bytes (default 65536)\n"
           "  --progress K    print progress every K round trips (0: never)\n"
           "  --stall S       exit 3 when no round trip completes for S seconds\n"
           "  --corrupt-at I  corrupt the message of round trip I (tests the check)\n"
           "  --rtt-log FILE  rank 0 writes 'ITERATION END DURATION' per round trip\n"
           "                  (END: CLOCK_REALTIME s, DURATION: s)\n"
           "  --until FILE    end after the progress line at which FILE exists (seen by\n"
           "                  rank 0; needs --progress; at most --count round trips)\n"
           "  -h, --help      this text;  --version  print the version\n");
}

/* Round trip i between ranks 0 and 1 (rank is this one's): each direction's message is
 * filled with its pattern (its middle byte flipped at round trip corrupt_at) and every byte
 * received is checked; the number of data errors seen here (0 or 1). */
static int64_t round_trip(unsigned char *buf, int64_t bytes, int64_t i, int rank, int64_t corrupt_at)
{
    int64_t errors = 0;
    int peer = 1 - rank;
    for (int dir = 0; dir < 2; dir++) {
        if (rank == dir) {
            for (int64_t k = 0; k < bytes; k++)
                buf[k] = pattern(i, dir, k);
            if (i == corrupt_at)
                buf[bytes / 2] ^= 0x40;
            MPI_Send(buf, (int)bytes, MPI_UNSIGNED_CHAR, peer, (int)(i & 0x7fff),
                     MPI_COMM_WORLD);
        } else {
            memset(buf, 0, (size_t)bytes);
            MPI_Recv(buf, (int)bytes, MPI_UNSIGNED_CHAR, peer, (int)(i & 0x7fff),
                     MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            for (int64_t k = 0; k < bytes; k++) {
                if (buf[k] != pattern(i, dir, k)) {
                    fprintf(stderr, "mpilab-tb-pingpong: rank %d: data error at "
                            "iteration %lld byte %lld\n", rank, (long long)i, (long long)k);
                    errors++;
                    break;
                }
            }
        }
    }
    return errors;
}

int main(int argc, char **argv)
{
    mpilab_stdout_guard();
    static const struct option opts[] = {
        {"count", required_argument, NULL, 'c'}, {"bytes", required_argument, NULL, 'b'},
        {"progress", required_argument, NULL, 'p'}, {"stall", required_argument, NULL, 's'},
        {"corrupt-at", required_argument, NULL, 'x'}, {"rtt-log", required_argument, NULL, 'r'},
        {"until", required_argument, NULL, 'u'},
        {"help", no_argument, NULL, 'h'},
        {"version", no_argument, NULL, 'V'}, {NULL, 0, NULL, 0}};
    int64_t count = 1000, bytes = 65536, progress = 0, stall = 0, corrupt_at = -1;
    const char *rtt_log = NULL, *until = NULL;
    int c, bad = 0;
    opterr = 0;
    while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
        switch (c) {
        case 'c': bad |= parse_i64(optarg, 1, INT64_MAX, &count); break;
        case 'b': bad |= parse_i64(optarg, 1, INT_MAX, &bytes); break;
        case 'p': bad |= parse_i64(optarg, 0, INT64_MAX, &progress); break;
        case 's': bad |= parse_i64(optarg, 0, 3600, &stall); break;
        case 'x': bad |= parse_i64(optarg, 0, INT64_MAX, &corrupt_at); break;
        case 'r': rtt_log = optarg; break;
        case 'u': until = optarg; break;
        case 'h':
            usage();
            return 0;
        case 'V': printf("mpilab-tb-pingpong %s\n", MPILAB_VERSION_STRING); return 0;
        default: bad = 1; break;
        }
        if (bad) {
            fprintf(stderr, "mpilab-tb-pingpong: bad option or value '%s'\n", argv[optind - 1]);
            return 2;
        }
    }
    if (until && progress <= 0) {
        fprintf(stderr, "mpilab-tb-pingpong: --until needs --progress K (checked every K)\n");
        return 2;
    }
    if (optind < argc) {
        fprintf(stderr, "mpilab-tb-pingpong: unexpected argument '%s'\n", argv[optind]);
        return 2;
    }
    MPI_Init(&argc, &argv);
    mpilab_test_check_world(0);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (size < 2) {
        if (rank == 0)
            fprintf(stderr, "mpilab-tb-pingpong: needs at least 2 ranks\n");
        MPI_Finalize();
        return 2;
    }
    unsigned char *buf = malloc((size_t)bytes);
    if (!buf) {
        fprintf(stderr, "mpilab-tb-pingpong: out of memory\n");
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    FILE *rl = NULL;
    if (rank == 0 && rtt_log && !(rl = fopen(rtt_log, "w"))) {
        fprintf(stderr, "mpilab-tb-pingpong: --rtt-log %s: cannot open\n", rtt_log);
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    if (stall > 0) {
        signal(SIGALRM, on_alarm);
        alarm((unsigned)stall);
    }
    int64_t errors = 0, done = 0;
    /* --until: rank 0 tells rank 1 at every progress line whether to go on, on a
     * communicator of its own (never mixed with the round trips' messages) */
    MPI_Comm ctl = MPI_COMM_NULL;
    if (until)
        MPI_Comm_dup(MPI_COMM_WORLD, &ctl);
    double t0 = now_real();
    if (rank <= 1) {
        for (int64_t i = 0; i < count && errors == 0; i++) {
            g_iter = (sig_atomic_t)i;
            double t_it = MPI_Wtime();
            errors += round_trip(buf, bytes, i, rank, corrupt_at);
            if (rl)
                fprintf(rl, "%lld %.6f %.9f\n", (long long)i, now_real(), MPI_Wtime() - t_it);
            if (stall > 0)
                alarm((unsigned)stall);
            done = i + 1;
            if (rank == 0 && progress > 0 && (i + 1) % progress == 0) {
                printf("pingpong %.6f iteration %lld\n", now_real(), (long long)(i + 1));
                fflush(stdout);
            }
            if (until && (i + 1) % progress == 0) {
                int stop = rank == 0 && access(until, F_OK) == 0;
                if (rank == 0)
                    MPI_Send(&stop, 1, MPI_INT, 1, 0, ctl);
                else
                    MPI_Recv(&stop, 1, MPI_INT, 0, 0, ctl, MPI_STATUS_IGNORE);
                if (stop)
                    break;
            }
        }
    }
    if (until)
        MPI_Comm_free(&ctl);
    if (stall > 0)
        alarm(0);
    if (rl)
        fclose(rl);
    int64_t all = 0;
    MPI_Allreduce(&errors, &all, 1, MPI_INT64_T, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0) {
        if (all == 0)
            printf("pingpong ok: %lld round trips of %lld bytes verified in %.3f s\n",
                   (long long)done, (long long)bytes, now_real() - t0);
        else
            printf("pingpong FAILED: %lld data errors\n", (long long)all);
        fflush(stdout);
    }
    free(buf);
    MPI_Finalize();
    return all ? 1 : 0;
}
