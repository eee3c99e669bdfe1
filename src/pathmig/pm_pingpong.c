/* The path migration ping-pong (include/mpilab/pm_pingpong.h): N MPTCP or TCP connections
 * between two processes, used round robin, every byte checked. The client prints progress
 * lines with CLOCK_REALTIME stamps (so faults can be scheduled after N iterations),
 * optionally logs every round trip, and ends with a one-line JSON summary. The option
 * parsing is the tool's (tools/mpilab-pm-pingpong.c). */
#include "mpilab/pm_pingpong.h"
#include "common/stream.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#ifndef IPPROTO_MPTCP
#define IPPROTO_MPTCP 262
#endif

#define ERR(...) snprintf(err, errlen, __VA_ARGS__)

void mpilab_pm_pingpong_defaults(mpilab_pm_pingpong_opts *o)
{
    memset(o, 0, sizeof(*o));
    o->nconn = 1;
    o->bytes = 1024;
    o->iters = 1000;
    o->idle_at = -1;
}

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
    _exit(MPILAB_PMPP_STALLED);
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

/* the server: answers round trips on its connections in turn until the client closes */
static int serve(const mpilab_pm_pingpong_opts *o, const struct sockaddr_in *sa, int *fds,
                 unsigned char *buf, FILE *out, char *err, size_t errlen)
{
    int one = 1;
    int ls = socket(AF_INET, SOCK_STREAM, o->tcp ? IPPROTO_TCP : IPPROTO_MPTCP);
    setsockopt(ls, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    if (ls < 0 || bind(ls, (const struct sockaddr *)sa, sizeof(*sa)) || listen(ls, 4096)) {
        ERR("listen %s: %s", o->listen_at, strerror(errno));
        return MPILAB_PMPP_FAILED;
    }
    fprintf(out, "listening\n");
    fflush(out);
    for (long k = 0; k < o->nconn; k++) {
        fds[k] = accept(ls, NULL, NULL);
        if (fds[k] < 0) {
            ERR("accept: %s", strerror(errno));
            return MPILAB_PMPP_FAILED;
        }
        setsockopt(fds[k], IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    }
    /* the listener stays open: MPTCP joins (the alternate subflows) arrive through it */
    for (int64_t it = 0;; it++) {
        int fd = fds[it % o->nconn];
        int r = full_io(fd, buf, (size_t)o->bytes, 0);
        if (r == 1 && it % o->nconn == 0)
            break; /* the client closed after a complete round */
        if (r != 0) {
            ERR("connection lost at iteration %lld", (long long)it);
            return MPILAB_PMPP_FAILED;
        }
        for (long k = 0; k < o->bytes; k++)
            if (buf[k] != pattern(it, 0, k)) {
                ERR("data error at iteration %lld byte %ld", (long long)it, k);
                return MPILAB_PMPP_FAILED;
            }
        for (long k = 0; k < o->bytes; k++)
            buf[k] = pattern(it, 1, k);
        if (full_io(fd, buf, (size_t)o->bytes, 1) != 0) {
            ERR("send failed at iteration %lld", (long long)it);
            return MPILAB_PMPP_FAILED;
        }
    }
    fprintf(out, "server ok\n");
    return MPILAB_PMPP_OK;
}

/* the client's round trips so far and the longest of them */
typedef struct {
    double *rtt;
    size_t n, cap;
    double max_rtt, max_at;
} rtts;

static int rtts_add(rtts *r, double d, double at)
{
    if (r->n == r->cap) {
        size_t cap = r->cap ? 2 * r->cap : 1 << 16;
        double *r2 = realloc(r->rtt, cap * sizeof(double));
        if (!r2)
            return -1;
        r->rtt = r2;
        r->cap = cap;
    }
    r->rtt[r->n++] = d;
    if (d > r->max_rtt) {
        r->max_rtt = d;
        r->max_at = at;
    }
    return 0;
}

/* one round trip of iteration `it` on `fd`, checked; its time in *d */
static int round_trip(const mpilab_pm_pingpong_opts *o, int fd, int64_t it, unsigned char *buf,
                      double *d, char *err, size_t errlen)
{
    for (long k = 0; k < o->bytes; k++)
        buf[k] = pattern(it, 0, k);
    double t0 = now_mono();
    if (full_io(fd, buf, (size_t)o->bytes, 1) != 0 || full_io(fd, buf, (size_t)o->bytes, 0) != 0) {
        ERR("connection lost at iteration %lld", (long long)it);
        return MPILAB_PMPP_FAILED;
    }
    *d = now_mono() - t0;
    for (long k = 0; k < o->bytes; k++)
        if (buf[k] != pattern(it, 1, k)) {
            ERR("data error at iteration %lld byte %ld", (long long)it, k);
            return MPILAB_PMPP_FAILED;
        }
    return MPILAB_PMPP_OK;
}

/* the client's idle pause before iteration idle_at: outside any round trip, the stall
 * alarm off meanwhile */
static void idle(const mpilab_pm_pingpong_opts *o)
{
    alarm(0);
    struct timespec ts = {(time_t)o->idle_s,
                          (long)((o->idle_s - (double)(time_t)o->idle_s) * 1e9)};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
        ;
    if (o->stall)
        alarm((unsigned)o->stall);
}

/* the client's round trips; the iterations done in *done */
static int client_loop(const mpilab_pm_pingpong_opts *o, const int *fds, unsigned char *buf,
                       FILE *rl, FILE *out, double t_start, rtts *r, int64_t *done, char *err,
                       size_t errlen)
{
    long iters = o->iters;
    if (iters % o->nconn) /* whole rounds: the server ends at a round's first connection */
        iters += o->nconn - iters % o->nconn;
    double last_alarm = t_start;
    int64_t it;
    for (it = 0; o->duration > 0 || it < iters; it++) {
        if (it == o->idle_at) {
            idle(o);
            last_alarm = now_mono();
        }
        double d;
        int rc = round_trip(o, fds[it % o->nconn], it, buf, &d, err, errlen);
        if (rc)
            return rc;
        double t1 = now_mono(), tr = now_real();
        if (rtts_add(r, d, tr)) {
            ERR("out of memory");
            return MPILAB_PMPP_FAILED;
        }
        if (rl)
            fprintf(rl, "%lld %.6f %.9f\n", (long long)it, tr, d);
        if (o->progress && (it + 1) % o->progress == 0) {
            fprintf(out, "progress %lld %.6f\n", (long long)(it + 1), tr);
            fflush(out);
        }
        if (o->stall && t1 - last_alarm >= 0.5) {
            alarm((unsigned)o->stall);
            last_alarm = t1;
        }
        if (o->duration > 0 && t1 - t_start >= o->duration && (it + 1) % o->nconn == 0) {
            it++;
            break;
        }
    }
    *done = it;
    return MPILAB_PMPP_OK;
}

static int client(const mpilab_pm_pingpong_opts *o, const struct sockaddr_in *sa, int *fds,
                  unsigned char *buf, FILE *rl, FILE *out, char *err, size_t errlen)
{
    int one = 1;
    for (long k = 0; k < o->nconn; k++) {
        fds[k] = socket(AF_INET, SOCK_STREAM, o->tcp ? IPPROTO_TCP : IPPROTO_MPTCP);
        if (fds[k] < 0 || connect(fds[k], (const struct sockaddr *)sa, sizeof(*sa))) {
            ERR("connect %s (connection %ld): %s", o->connect_to, k, strerror(errno));
            return MPILAB_PMPP_FAILED;
        }
        setsockopt(fds[k], IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    }
    if (o->stall) {
        struct sigaction act;
        memset(&act, 0, sizeof(act));
        act.sa_handler = on_alarm;
        sigaction(SIGALRM, &act, NULL);
        alarm((unsigned)o->stall); /* re-armed on progress */
    }
    fprintf(out, "connected %ld %.6f\n", o->nconn, now_real());
    fflush(out);
    rtts r = {0};
    int64_t it = 0;
    double t_start = now_mono();
    int rc = client_loop(o, fds, buf, rl, out, t_start, &r, &it, err, errlen);
    if (rc) {
        free(r.rtt);
        return rc;
    }
    alarm(0);
    double elapsed = now_mono() - t_start;
    for (long k = 0; k < o->nconn; k++)
        close(fds[k]);
    qsort(r.rtt, r.n, sizeof(double), cmp_double);
    fprintf(out, "{\"iterations\": %lld, \"bytes\": %ld, \"connections\": %ld, \"elapsed\": "
            "%.6f, \"median_rtt\": %.9f, \"p99_rtt\": %.9f, \"max_rtt\": %.9f, "
            "\"max_rtt_at\": %.6f, \"verified\": true}\n",
            (long long)it, o->bytes, o->nconn, elapsed, r.n ? r.rtt[r.n / 2] : 0.0,
            r.n ? r.rtt[(size_t)((double)(r.n - 1) * 0.99)] : 0.0, r.max_rtt, r.max_at);
    free(r.rtt);
    return MPILAB_PMPP_OK;
}

int mpilab_pm_pingpong_run(const mpilab_pm_pingpong_opts *o, FILE *out, char *err,
                           size_t errlen)
{
    struct sockaddr_in sa;
    if (!!o->listen_at == !!o->connect_to ||
        parse_hostport(o->listen_at ? o->listen_at : o->connect_to, &sa)) {
        ERR("give one of --listen or --connect ADDR:PORT");
        return MPILAB_PMPP_USAGE;
    }
    int *fds = calloc((size_t)o->nconn, sizeof(int));
    unsigned char *buf = malloc((size_t)o->bytes);
    FILE *rl = NULL;
    struct stat st;
    int rc, made = o->rtt_log && stat(o->rtt_log, &st) != 0; /* the log is this run's own */
    if (!fds || !buf) {
        ERR("out of memory");
        rc = MPILAB_PMPP_FAILED;
    } else if (o->listen_at) {
        rc = serve(o, &sa, fds, buf, out, err, errlen);
    } else if (o->rtt_log && !(rl = mpilab_stream_open(o->rtt_log, "w"))) {
        /* before any connection: a FIFO with no reader is one line, not a wait for ever */
        ERR("--rtt-log %s: %s", o->rtt_log, mpilab_stream_error(errno));
        rc = MPILAB_PMPP_USAGE;
    } else {
        rc = client(o, &sa, fds, buf, rl, out, err, errlen);
    }
    if (rl)
        fclose(rl);
    /* a run that failed before its first round trip (no connection) leaves no empty log file
     * it created; a log with round trips in it is kept, failed run or not */
    if (rl && made && rc != MPILAB_PMPP_OK && stat(o->rtt_log, &st) == 0 && S_ISREG(st.st_mode) &&
        st.st_size == 0)
        unlink(o->rtt_log);
    free(buf);
    free(fds);
    return rc;
}
