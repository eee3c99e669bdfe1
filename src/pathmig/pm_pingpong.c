/* mpilab-pm-pingpong: a ping-pong over N MPTCP (or TCP) connections between two
 * processes, the connections used round robin (the paper's Verbs-level test with N queue
 * pairs). Every byte is checked. The client prints progress lines with CLOCK_REALTIME
 * stamps (so faults can be scheduled after N iterations), optionally every round trip,
 * and a one-line JSON summary whose max_rtt is the pause.
 *   server: mpilab-pm-pingpong --listen ADDR:PORT [--connections N] [--bytes B]
 *   client: mpilab-pm-pingpong --connect ADDR:PORT [--connections N] [--bytes B]
 *           [--iters I | --duration S] [--progress K] [--rtt-log FILE] [--stall S]
 *           [--idle I:S] [--tcp]
 * Exit: 0 ok, 1 data error or connection lost, 2 usage, 3 stalled. */
#include <arpa/inet.h>
#include <errno.h>
#include <limits.h>
#include <getopt.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "mpilab/parse.h"
#include "mpilab/version.h"

#ifndef IPPROTO_MPTCP
#define IPPROTO_MPTCP 262
#endif

static double now_real(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static double now_mono(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static unsigned char pattern(int64_t iter, int dir, int64_t k)
{
    return (unsigned char)((iter * 131 + k * 7 + dir * 29 + (k >> 8)) & 0xff);
}

static void on_alarm(int sig)
{
    (void)sig;
    static const char msg[] = "mpilab-pm-pingpong: stalled: no progress\n";
    ssize_t w = write(2, msg, sizeof(msg) - 1);
    (void)w;
    _exit(3);
}

static int parse_hostport(const char *s, struct sockaddr_in *sa)
{
    char host[64];
    const char *colon = strrchr(s, ':');
    if (!colon || (size_t)(colon - s) >= sizeof(host))
        return -1;
    memcpy(host, s, (size_t)(colon - s));
    host[colon - s] = 0;
    char *end;
    long port = strtol(colon + 1, &end, 10);
    if (*end || port < 1 || port > 65535)
        return -1;
    memset(sa, 0, sizeof(*sa));
    sa->sin_family = AF_INET;
    sa->sin_port = htons((uint16_t)port);
    return inet_pton(AF_INET, host, &sa->sin_addr) == 1 ? 0 : -1;
}

static int full_io(int fd, unsigned char *buf, size_t len, int send_it)
{
    size_t off = 0;
    while (off < len) {
        ssize_t n = send_it ? send(fd, buf + off, len - off, MSG_NOSIGNAL)
                            : recv(fd, buf + off, len - off, 0);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return n == 0 ? 1 : -1; /* 1: orderly end */
        off += (size_t)n;
    }
    return 0;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

int main(int argc, char **argv)
{
    static const struct option opts[] = {
        {"listen", required_argument, NULL, 'L'}, {"connect", required_argument, NULL, 'C'},
        {"connections", required_argument, NULL, 'n'}, {"bytes", required_argument, NULL, 'b'},
        {"iters", required_argument, NULL, 'i'}, {"duration", required_argument, NULL, 'd'},
        {"progress", required_argument, NULL, 'p'}, {"rtt-log", required_argument, NULL, 'r'},
        {"stall", required_argument, NULL, 's'}, {"tcp", no_argument, NULL, 't'},
        {"idle", required_argument, NULL, 'I'},
        {"help", no_argument, NULL, 'h'}, {"version", no_argument, NULL, 'V'},
        {NULL, 0, NULL, 0}};
    const char *listen_at = NULL, *connect_to = NULL, *rtt_log = NULL;
    long nconn = 1, bytes = 1024, iters = 1000, progress = 0, stall = 0;
    double duration = 0, idle_s = 0;
    long long idle_at = -1;
    int proto = IPPROTO_MPTCP, c;
    opterr = 0;
    while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
        long long v = 0;
        switch (c) {
        case 'L': listen_at = optarg; break;
        case 'C': connect_to = optarg; break;
        case 'n': if (mpilab_parse_i64(optarg, &v) || v < 1 || v > 4096) goto bad; nconn = (long)v; break;
        case 'b': if (mpilab_parse_i64(optarg, &v) || v < 1 || v > (64 << 20)) goto bad; bytes = (long)v; break;
        case 'i': if (mpilab_parse_i64(optarg, &v) || v < 1 || v > LONG_MAX) goto bad; iters = (long)v; break;
        case 'd': if (mpilab_parse_duration(optarg, &duration) || !(duration > 0)) goto bad; break;
        case 'p': if (mpilab_parse_i64(optarg, &v) || v < 0 || v > LONG_MAX) goto bad; progress = (long)v; break;
        case 'r': rtt_log = optarg; break;
        case 's': if (mpilab_parse_i64(optarg, &v) || v < 0 || v > 3600) goto bad; stall = (long)v; break;
        case 't': proto = IPPROTO_TCP; break;
        case 'I': {
            /* I:S: the client waits S seconds before iteration I, outside any round trip
               (its connections idle) */
            char *colon = strchr(optarg, ':');
            if (!colon)
                goto bad;
            *colon = '\0';
            int e = mpilab_parse_i64(optarg, &v) || v < 1 ||
                    mpilab_parse_duration(colon + 1, &idle_s) || !(idle_s > 0) || idle_s > 3600;
            *colon = ':';
            if (e)
                goto bad;
            idle_at = v;
            break;
        }
        case 'V': printf("mpilab-pm-pingpong %s\n", MPILAB_VERSION_STRING); return 0;
        case 'h':
            printf("usage: mpilab-pm-pingpong --listen|--connect ADDR:PORT [--connections N] "
                   "[--bytes B] [--iters I | --duration S] [--progress K] [--rtt-log FILE] "
                   "[--stall S] [--idle I:S] [--tcp]\n");
            return 0;
        default:
        bad:
            fprintf(stderr, "mpilab-pm-pingpong: bad option or value '%s' (see --help)\n",
                    argv[optind - 1]);
            return 2;
        }
    }
    struct sockaddr_in sa;
    if (!!listen_at == !!connect_to || parse_hostport(listen_at ? listen_at : connect_to, &sa)) {
        fprintf(stderr, "mpilab-pm-pingpong: give one of --listen or --connect ADDR:PORT\n");
        return 2;
    }
    int *fds = calloc((size_t)nconn, sizeof(int));
    unsigned char *buf = malloc((size_t)bytes);
    if (!fds || !buf)
        return 1;
    int one = 1;
    if (listen_at) {
        int ls = socket(AF_INET, SOCK_STREAM, proto);
        setsockopt(ls, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
        if (ls < 0 || bind(ls, (struct sockaddr *)&sa, sizeof(sa)) || listen(ls, 4096)) {
            fprintf(stderr, "mpilab-pm-pingpong: listen %s: %s\n", listen_at, strerror(errno));
            return 1;
        }
        printf("listening\n");
        fflush(stdout);
        for (long k = 0; k < nconn; k++) {
            fds[k] = accept(ls, NULL, NULL);
            if (fds[k] < 0) {
                fprintf(stderr, "mpilab-pm-pingpong: accept: %s\n", strerror(errno));
                return 1;
            }
            setsockopt(fds[k], IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
        }
        /* the listener stays open: MPTCP joins (the alternate subflows) arrive through it */
        for (int64_t it = 0;; it++) {
            int fd = fds[it % nconn];
            int r = full_io(fd, buf, (size_t)bytes, 0);
            if (r == 1 && it % nconn == 0)
                break; /* the client closed after a complete round */
            if (r != 0) {
                fprintf(stderr, "mpilab-pm-pingpong: connection lost at iteration %lld\n",
                        (long long)it);
                return 1;
            }
            for (long k = 0; k < bytes; k++)
                if (buf[k] != pattern(it, 0, k)) {
                    fprintf(stderr, "mpilab-pm-pingpong: data error at iteration %lld byte %ld\n",
                            (long long)it, k);
                    return 1;
                }
            for (long k = 0; k < bytes; k++)
                buf[k] = pattern(it, 1, k);
            if (full_io(fd, buf, (size_t)bytes, 1) != 0) {
                fprintf(stderr, "mpilab-pm-pingpong: send failed at iteration %lld\n",
                        (long long)it);
                return 1;
            }
        }
        printf("server ok\n");
        return 0;
    }
    for (long k = 0; k < nconn; k++) {
        fds[k] = socket(AF_INET, SOCK_STREAM, proto);
        if (fds[k] < 0 || connect(fds[k], (struct sockaddr *)&sa, sizeof(sa))) {
            fprintf(stderr, "mpilab-pm-pingpong: connect %s (connection %ld): %s\n", connect_to,
                    k, strerror(errno));
            return 1;
        }
        setsockopt(fds[k], IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    }
    if (iters % nconn) /* whole rounds: the server ends at a round's first connection */
        iters += nconn - iters % nconn;
    FILE *rl = rtt_log ? fopen(rtt_log, "w") : NULL;
    if (rtt_log && !rl) {
        fprintf(stderr, "mpilab-pm-pingpong: --rtt-log %s: %s\n", rtt_log, strerror(errno));
        return 2;
    }
    if (stall) {
        struct sigaction act;
        memset(&act, 0, sizeof(act));
        act.sa_handler = on_alarm;
        sigaction(SIGALRM, &act, NULL);
        alarm((unsigned)stall); /* re-armed on progress below */
    }
    printf("connected %ld %.6f\n", nconn, now_real());
    fflush(stdout);
    size_t cap = 1 << 16, n = 0;
    double *rtt = malloc(cap * sizeof(double));
    double max_rtt = 0, max_at = 0, t_start = now_mono(), last_alarm = t_start;
    int64_t it;
    for (it = 0; duration > 0 || it < iters; it++) {
        int fd = fds[it % nconn];
        if (it == idle_at) {
            alarm(0);
            struct timespec ts = {(time_t)idle_s, (long)((idle_s - (double)(time_t)idle_s) * 1e9)};
            while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
                ;
            if (stall)
                alarm((unsigned)stall);
            last_alarm = now_mono();
        }
        for (long k = 0; k < bytes; k++)
            buf[k] = pattern(it, 0, k);
        double t0 = now_mono();
        if (full_io(fd, buf, (size_t)bytes, 1) != 0 || full_io(fd, buf, (size_t)bytes, 0) != 0) {
            fprintf(stderr, "mpilab-pm-pingpong: connection lost at iteration %lld\n",
                    (long long)it);
            return 1;
        }
        double t1 = now_mono(), d = t1 - t0;
        for (long k = 0; k < bytes; k++)
            if (buf[k] != pattern(it, 1, k)) {
                fprintf(stderr, "mpilab-pm-pingpong: data error at iteration %lld byte %ld\n",
                        (long long)it, k);
                return 1;
            }
        if (n == cap) {
            cap *= 2;
            double *r2 = realloc(rtt, cap * sizeof(double));
            if (!r2)
                return 1;
            rtt = r2;
        }
        rtt[n++] = d;
        double tr = now_real();
        if (d > max_rtt) {
            max_rtt = d;
            max_at = tr;
        }
        if (rl)
            fprintf(rl, "%lld %.6f %.9f\n", (long long)it, tr, d);
        if (progress && (it + 1) % progress == 0) {
            printf("progress %lld %.6f\n", (long long)(it + 1), tr);
            fflush(stdout);
        }
        if (stall && t1 - last_alarm >= 0.5) {
            alarm((unsigned)stall);
            last_alarm = t1;
        }
        if (duration > 0 && t1 - t_start >= duration && (it + 1) % nconn == 0) {
            it++;
            break;
        }
    }
    alarm(0);
    double elapsed = now_mono() - t_start;
    for (long k = 0; k < nconn; k++)
        close(fds[k]);
    if (rl)
        fclose(rl);
    qsort(rtt, n, sizeof(double), cmp_double);
    printf("{\"iterations\": %lld, \"bytes\": %ld, \"connections\": %ld, \"elapsed\": %.6f, "
           "\"median_rtt\": %.9f, \"p99_rtt\": %.9f, \"max_rtt\": %.9f, \"max_rtt_at\": %.6f, "
           "\"verified\": true}\n",
           (long long)it, bytes, nconn, elapsed, n ? rtt[n / 2] : 0.0,
           n ? rtt[(size_t)((double)(n - 1) * 0.99)] : 0.0, max_rtt, max_at);
    free(rtt);
    free(buf);
    free(fds);
    return 0;
}
