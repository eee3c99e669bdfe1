/* mpilab-pathmigd: the path migration agent for MPTCP connections of one node (see
 * docs/pathmig.md). Parses the options, creates the agent, runs it until SIGTERM/SIGINT
 * or a `stop` command, destroys it. Exit: 0 stopped, 2 bad input or unusable kernel. */
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/stream.h"
#include "mpilab/pathmig.h"
#include "mpilab/version.h"

static volatile sig_atomic_t g_signal;
static void on_signal(int sig) { g_signal = sig; }

static void usage(FILE *f)
{
    fprintf(f,
            "usage: mpilab-pathmigd --node NAME --peers FILE [options]\n"
            "Path migration agent for MPTCP connections of one node (run one per node).\n"
            "  --node NAME          this node's name in FILE\n"
            "  --peers FILE         lines 'NAME ADDR_RAIL0 ADDR_RAIL1 ...' for every node\n"
            "  --control PATH       unix socket for commands (status, arm, migrate, auto, stop)\n"
            "  --log PATH           append the event log (JSON lines) here (default: stderr)\n"
            "  --pidfile PATH       write the pid once ready\n"
            "  --alt default|auto|MAP  alternate path: the next rail (default), the first\n"
            "                       healthy one (auto), or MAP lines 'PEER RAIL ALT_RAIL'\n"
            "  --manual             no automatic migration or re-arming (commands only)\n"
            "  --probe-interval MS  probe period per peer and rail, milliseconds (default 10)\n"
            "  --probe-timeout MS   smallest silence that can make a path dead, ms (default\n"
            "                       50); the timeout adapts to the measured round trips\n"
            "  --hold-down MS       a path judged dead is used again no sooner, ms (default\n"
            "                       1000; a link that went down: as soon as it is up)\n"
            "  --port N             UDP port of the probes (default 47990)\n"
            "  --no-realtime        stay at normal scheduling (default: SCHED_FIFO priority 5\n"
            "                       where permitted, so a busy machine does not delay probes)\n"
            "  --no-passive         probe every path in use; by default a path whose TCP\n"
            "                       subflows show it working (tcp_info over sock_diag) is\n"
            "                       not probed while that evidence is fresh\n"
            "  --no-join-listeners  open no listeners for joins; by default, for each port a\n"
            "                       connection was accepted on, an MPTCP listener at that\n"
            "                       port on this node's other rails' addresses, where free\n"
            "                       (for applications listening on one address, as UCX)\n"
            "  -h, --help, --version\n");
}

static int parse_ms(const char *s, double lo, double hi, double *out)
{
    char *end;
    double v = strtod(s, &end);
    if (!*s || *end || !(v >= lo && v <= hi))
        return -1;
    *out = v / 1e3;
    return 0;
}

/* one option with an argument or flag; 0 ok, 2 refused (reported) */
static int option(int c, const char *arg, mpilab_pm_agent_config *cfg)
{
    char *end;
    long v;
    static const char *const named[] = {"n--node", "p--peers", "c--control", "l--log",
                                         "P--pidfile", "a--alt"};
    for (size_t k = 0; arg && !*arg && k < sizeof named / sizeof *named; k++)
        if (named[k][0] == c) { /* a name or a path given as "" */
            fprintf(stderr, "mpilab-pathmigd: %s: an empty value\n", named[k] + 1);
            return 2;
        }
    switch (c) {
    case 'n': cfg->node_name = arg; break;
    case 'p': cfg->peers_path = arg; break;
    case 'c': cfg->ctl_path = arg; break;
    case 'l': cfg->log_path = arg; break;
    case 'P': cfg->pid_path = arg; break;
    case 'a': cfg->alt_spec = arg; break;
    case 'm': cfg->manual = 1; break;
    case 'R': cfg->realtime_prio = 0; break;
    case 'N': cfg->passive = 0; break;
    case 'J': cfg->join_listeners = 0; break;
    case 'i':
        if (parse_ms(arg, 1, 10000, &cfg->interval)) {
            fprintf(stderr, "mpilab-pathmigd: --probe-interval %s: expected 1..10000 ms\n", arg);
            return 2;
        }
        break;
    case 't':
        if (parse_ms(arg, 2, 60000, &cfg->timeout)) {
            fprintf(stderr, "mpilab-pathmigd: --probe-timeout %s: expected 2..60000 ms\n", arg);
            return 2;
        }
        break;
    case 'H':
        if (parse_ms(arg, 0, 600000, &cfg->hold_down)) {
            fprintf(stderr, "mpilab-pathmigd: --hold-down %s: expected 0..600000 ms\n", arg);
            return 2;
        }
        break;
    case 'o':
        v = strtol(arg, &end, 10);
        if (!*arg || *end || v < 1 || v > 65534) { /* replies go to port + 1 */
            fprintf(stderr, "mpilab-pathmigd: --port %s: expected 1..65534 (replies use the "
                    "next port)\n", arg);
            return 2;
        }
        cfg->port = (int)v;
        break;
    }
    return 0;
}

/* 0: parsed; 1: --help or --version answered; 2: refused (reported) */
static int parse_args(int argc, char **argv, mpilab_pm_agent_config *cfg)
{
    static const struct option opts[] = {
        {"node", required_argument, NULL, 'n'}, {"peers", required_argument, NULL, 'p'},
        {"control", required_argument, NULL, 'c'}, {"log", required_argument, NULL, 'l'},
        {"pidfile", required_argument, NULL, 'P'}, {"alt", required_argument, NULL, 'a'},
        {"manual", no_argument, NULL, 'm'}, {"probe-interval", required_argument, NULL, 'i'},
        {"probe-timeout", required_argument, NULL, 't'}, {"port", required_argument, NULL, 'o'},
        {"no-realtime", no_argument, NULL, 'R'}, {"no-passive", no_argument, NULL, 'N'},
        {"no-join-listeners", no_argument, NULL, 'J'},
        {"hold-down", required_argument, NULL, 'H'},
        {"help", no_argument, NULL, 'h'}, {"version", no_argument, NULL, 'V'},
        {NULL, 0, NULL, 0}};
    int c;
    opterr = 0;
    while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
        if (c == 'h') {
            usage(stdout);
            return 1;
        }
        if (c == 'V') {
            printf("mpilab-pathmigd %s\n", MPILAB_VERSION_STRING);
            return 1;
        }
        if (c == '?' || c == ':') {
            fprintf(stderr, "mpilab-pathmigd: unknown or incomplete option '%s' (see --help)\n",
                    argv[optind - 1]);
            return 2;
        }
        if (option(c, optarg, cfg))
            return 2;
    }
    if (optind < argc) {
        fprintf(stderr, "mpilab-pathmigd: unexpected argument '%s'\n", argv[optind]);
        return 2;
    }
    return 0;
}

int main(int argc, char **argv)
{
    mpilab_stdout_guard();
    mpilab_pm_agent_config cfg;
    mpilab_pm_agent_config_defaults(&cfg);
    int rc = parse_args(argc, argv, &cfg);
    if (rc)
        return rc == 1 ? 0 : 2;
    char err[300];
    mpilab_pm_agent *ag = mpilab_pm_agent_create(&cfg, err, sizeof(err));
    if (!ag) {
        fprintf(stderr, "mpilab-pathmigd: %s\n", err);
        return 2;
    }
    struct sigaction sa;
    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = on_signal;
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);
    signal(SIGPIPE, SIG_IGN);
    rc = mpilab_pm_agent_run(ag, &g_signal, err, sizeof(err));
    if (rc)
        fprintf(stderr, "mpilab-pathmigd: %s\n", err);
    mpilab_pm_agent_destroy(ag);
    return rc ? 2 : 0;
}
