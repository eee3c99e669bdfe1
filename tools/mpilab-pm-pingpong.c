/* mpilab-pm-pingpong: a ping-pong over N MPTCP (or TCP) connections between two
 * processes, the connections used round robin, every byte checked; the client's one-line
 * JSON summary has the longest round trip (the pause). The logic is the library's
 * (src/pathmig/pm_pingpong.c, include/mpilab/pm_pingpong.h).
 *   server: mpilab-pm-pingpong --listen ADDR:PORT [--connections N] [--bytes B]
 *   client: mpilab-pm-pingpong --connect ADDR:PORT [--connections N] [--bytes B]
 *           [--iters I | --duration S] [--progress K] [--rtt-log FILE] [--stall S]
 *           [--idle I:S] [--tcp]
 * Exit: 0 ok, 1 data error or connection lost, 2 usage, 3 stalled. */
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>

#include "common/stream.h"
#include "mpilab/parse.h"
#include "mpilab/pm_pingpong.h"
#include "mpilab/version.h"

/* --idle I:S: the client waits S seconds before iteration I, outside any round trip (its
 * connections idle) */
static int parse_idle(char *arg, mpilab_pm_pingpong_opts *o)
{
    char *colon = strchr(arg, ':');
    long long v = 0;
    if (!colon)
        return -1;
    *colon = '\0';
    int e = mpilab_parse_i64(arg, &v) || v < 1 || mpilab_parse_duration(colon + 1, &o->idle_s) ||
            !(o->idle_s > 0) || o->idle_s > 3600;
    *colon = ':';
    if (e)
        return -1;
    o->idle_at = v;
    return 0;
}

static int in_range(const char *s, long long lo, long long hi, long *out)
{
    long long v = 0;
    if (mpilab_parse_i64(s, &v) || v < lo || v > hi)
        return -1;
    *out = (long)v;
    return 0;
}

/* 0: parsed; 1: --help or --version answered; 2: bad option (reported) */
static int parse_args(int argc, char **argv, mpilab_pm_pingpong_opts *o)
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
    int c, bad = 0;
    opterr = 0;
    while (!bad && (c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
        switch (c) {
        case 'L': o->listen_at = optarg; break;
        case 'C': o->connect_to = optarg; break;
        case 'n': bad = in_range(optarg, 1, 4096, &o->nconn); break;
        case 'b': bad = in_range(optarg, 1, 64 << 20, &o->bytes); break;
        case 'i': bad = in_range(optarg, 1, LONG_MAX, &o->iters); break;
        case 'd': bad = mpilab_parse_duration(optarg, &o->duration) || !(o->duration > 0); break;
        case 'p': bad = in_range(optarg, 0, LONG_MAX, &o->progress); break;
        case 'r': o->rtt_log = optarg; break;
        case 's': bad = in_range(optarg, 0, 3600, &o->stall); break;
        case 't': o->tcp = 1; break;
        case 'I': bad = parse_idle(optarg, o); break;
        case 'V': printf("mpilab-pm-pingpong %s\n", MPILAB_VERSION_STRING); return 1;
        case 'h':
            printf("usage: mpilab-pm-pingpong --listen|--connect ADDR:PORT [--connections N] "
                   "[--bytes B] [--iters I | --duration S] [--progress K] [--rtt-log FILE] "
                   "[--stall S] [--idle I:S] [--tcp]\n");
            return 1;
        default: bad = 1; break;
        }
    }
    if (bad) {
        fprintf(stderr, "mpilab-pm-pingpong: bad option or value '%s' (see --help)\n",
                argv[optind - 1]);
        return 2;
    }
    return 0;
}

int main(int argc, char **argv)
{
    mpilab_stdout_guard();
    mpilab_pm_pingpong_opts o;
    mpilab_pm_pingpong_defaults(&o);
    int rc = parse_args(argc, argv, &o);
    if (rc)
        return rc == 1 ? 0 : 2;
    char err[512];
    rc = mpilab_pm_pingpong_run(&o, stdout, err, sizeof(err));
    if (rc != MPILAB_PMPP_OK)
        fprintf(stderr, "mpilab-pm-pingpong: %s\n", err);
    return rc;
}
