/* mpilab-delayline: hold every packet routed into a tun device for a fixed time and
 * release it in order. Used by the testbed's WAN router (mpilab testbed up). */
#include <getopt.h>
#include <net/if.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/stream.h"
#include "common/common.h"
#include "mpilab/version.h"
#include "testbed/delayline.h"
#include "testbed/delayline_packet.h"

static void usage(FILE *f)
{
    fprintf(f,
        "usage: mpilab-delayline --dev TUN --delay T [--buffer BYTES] [--stats FILE]\n"
        "       mpilab-delayline --io packet --peer IP,LEG,MAC [--peer ...] --delay T [...]\n"
        "                        [--pidfile FILE] [--no-vnet-hdr]\n"
        "                        [--rt-priority N | --no-realtime] [--rt-adaptive]\n"
        "                        [--busy-poll auto|on|off] [--arrival ingress|tun]\n"
        "                        [--no-leg-stamps] [--no-advance] [--advance-quantile Q]\n"
        "                        [--idle-poll] [--cpu N] [--trim T] [--trim-file F]\n"
        "                        [--cold-crossing] [--spin-last auto|T] [--warm-path T]\n"
        "                        [--keep-warm auto|off|T]\n"
        "  -h, --help      this text\n"
        "      --version   the version\n"
        "  --dev TUN       existing tun device (ip tuntap add TUN mode tun)\n"
        "  --io M          tun (default): packets routed into the tun device --dev;\n"
        "                  packet: every IPv4 packet arriving on the namespace's interfaces\n"
        "                  for a --peer is held and sent out of that peer's leg by the line\n"
        "                  itself (turn the kernel's forwarding off: it would forward a copy)\n"
        "  --peer IP,LEG,MAC  with --io packet: a node the line delivers to, the interface\n"
        "                  of this namespace it sits behind and its MAC (repeat, at most %d)\n"
        "                  A line on packet sockets runs at normal scheduling unless\n"
        "                  --rt-priority is given; SIGUSR2 puts it in standby and back (it\n"
        "                  takes nothing in: turn the kernel's forwarding on meanwhile)\n"
        "  --delay T       hold time, 0 to 60 s: seconds, or with unit s, ms, us, ns (e.g. 5ms)\n"
        "  --buffer BYTES  packet buffer in bytes, binary suffixes K = 1024, M = 1024^2,\n"
        "                  G = 1024^3 (default 64M, at most 16G); full = tail drop\n"
        "  --stats FILE    JSON statistics, written at exit and on SIGUSR1\n"
        "  --pidfile FILE  written once the device is attached\n"
        "  --no-vnet-hdr   plain packets instead of 64 KiB GSO super-packets\n"
        "  --rt-priority N run under SCHED_FIFO priority N (1-99) with memory locked;\n"
        "                  refusal is an error. Default as root: priority %d, falling back\n"
        "                  to normal scheduling with a warning if refused\n"
        "                  (on packet sockets: --rt-adaptive unless busy-polling)\n"
        "  --no-realtime   normal scheduling even as root\n"
        "  --rt-adaptive   normal scheduling while lone packets are held, SCHED_FIFO\n"
        "                  (--rt-priority N, default %d) while a stream is (8 packets or\n"
        "                  more, until 50 ms after); refusal is an error\n"
        "  --busy-poll M   on: never sleep (a packet is read the moment it arrives; the line\n"
        "                  owns a CPU); off: sleep between packets (wake a margin early and\n"
        "                  spin to each release); auto (default): on below a 100 us delay.\n"
        "                  A busy line runs at normal scheduling unless --rt-priority is given\n"
        "  --arrival A     date a packet's arrival (the start of its hold) where it enters\n"
        "                  the router (ingress, the default as root) or the tun device (tun)\n"
        "  --no-leg-stamps no tap on the router's legs (arrivals dated at the tun device, no\n"
        "                  crossing statistics, no advance)\n"
        "  --no-advance    do not release early by the measured forwarding cost (with the\n"
        "                  leg tap, a packet is written that much before due so that it\n"
        "                  leaves the router when due)\n"
        "  --advance-quantile Q  advance by the Q-quantile (0 < Q <= 1) of the recent\n"
        "                  forwarding costs instead of the least less a margin (0.5 centres\n"
        "                  the crossings on the delay: about half then leave a little early)\n"
        "  --idle-poll     hold /dev/cpu_dma_latency at 0 while running: idle CPUs poll\n"
        "                  instead of halting, so waking the line (a packet, a release\n"
        "                  timer) does not wait for the host to resume a halted vCPU; costs\n"
        "                  no guest CPU time, the host a vCPU that never sleeps; refusal is\n"
        "                  an error\n"
        "  --cpu N         run on CPU N only\n"
        "  --trim T        hold each packet for the delay less T (not below 0): T is the\n"
        "                  path's own cost beyond the undelayed route, measured from\n"
        "                  outside (mpilab testbed up with wan.delay_trim = \"auto\");\n"
        "                  a negative T (-1 s to 1 s) lengthens the hold\n"
        "  --trim-file F   read the trim from F (one duration) at the start and again on\n"
        "                  SIGHUP (an unreadable file keeps the trim, with a warning)\n"
        "  --cold-crossing release each packet so that it leaves the router at its\n"
        "                  arrival + the delay + what the router takes to forward an\n"
        "                  undelayed packet in its direction after the same idle gap\n"
        "                  (learned from the undelayed crossings the leg tap sees, at most\n"
        "                  200 us; until some are seen, the default advance)\n"
        "  --spin-last M   a sleeping line wakes this long before each release and spins\n"
        "                  the rest: a duration (20us to 1s), or auto: the largest lateness\n"
        "                  of its last 16 timer wake-ups + 10 us (20 us to 1 ms)\n"
        "  --warm-path T   with --io packet: T (20us to 10ms; default %d us; off) before a\n"
        "                  packet held longer leaves an idle line (nothing released for\n"
        "                  1 ms), send a warm-up frame down its path: its Ethernet and IPv4\n"
        "                  headers alone, with a wrong header checksum, dropped as a header\n"
        "                  error (by the far bridge's netfilter, or by the node's IP input);\n"
        "                  the packet then crosses a path that is not cold from the hold\n"
        "                  (warm_frames in io)\n"
        "  --keep-warm T   with --io packet: while the line has released nothing for 1 ms,\n"
        "                  send each peer's warm-up frame (a bare IPv4 header to it, the\n"
        "                  checksum wrong) once per T (100us to 100ms; off); auto (default):\n"
        "                  1 ms for a busy line (--busy-poll) with --warm-path on, else off\n"
        "Stops cleanly on SIGTERM or SIGINT.\n", MPILAB_DL_PEERS_MAX, MPILAB_DL_DEFAULT_RT_PRIORITY,
        MPILAB_DL_DEFAULT_RT_PRIORITY, (int)(MPILAB_DL_WARM_DEFAULT_NS / 1000));
}

static int parse_quantile(const char *arg, double *out)
{
    char *end = NULL;
    double q = strtod(arg, &end);
    if (end == arg || *end != '\0' || !(q > 0.0 && q <= 1.0)) {
        fprintf(stderr, "mpilab-delayline: --advance-quantile %s: not a fraction in (0,1]\n", arg);
        return -1;
    }
    *out = q;
    return 0;
}

static int parse_cpu(const char *arg, int *out)
{
    long long cpu;
    long ncpu = sysconf(_SC_NPROCESSORS_CONF);
    if (ncpu <= 0)
        ncpu = 1024;
    if (mpilab_parse_i64(arg, &cpu) != 0 || cpu < 0 || cpu >= ncpu) {
        fprintf(stderr, "mpilab-delayline: --cpu %s: not a CPU of this machine (0 to %ld)\n", arg, ncpu - 1);
        return -1;
    }
    *out = (int)cpu;
    return 0;
}

static int parse_busy(const char *arg, int *out)
{
    if (strcmp(arg, "auto") == 0)
        *out = MPILAB_DL_BUSY_AUTO;
    else if (strcmp(arg, "on") == 0)
        *out = MPILAB_DL_BUSY_ON;
    else if (strcmp(arg, "off") == 0)
        *out = MPILAB_DL_BUSY_OFF;
    else {
        fprintf(stderr, "mpilab-delayline: --busy-poll %s: expected auto, on or off\n", arg);
        return -1;
    }
    return 0;
}

static int parse_spin(const char *arg, int64_t *out)
{
    double sec;
    if (strcmp(arg, "auto") == 0) {
        *out = -1;
        return 0;
    }
    if (mpilab_parse_duration(arg, &sec) != 0 || sec < 20e-6 || sec > 1.0) {
        fprintf(stderr, "mpilab-delayline: --spin-last %s: expected auto or a duration of 20us to 1s\n", arg);
        return -1;
    }
    *out = (int64_t)(sec * 1e9 + 0.5);
    return 0;
}

static int parse_warm(const char *arg, int64_t *out)
{
    double sec;
    if (strcmp(arg, "off") == 0) {
        *out = 0;
        return 0;
    }
    if (mpilab_parse_duration(arg, &sec) != 0 || sec < 20e-6 || sec > 10e-3) {
        fprintf(stderr, "mpilab-delayline: --warm-path %s: expected off or a duration of 20us to 10ms\n", arg);
        return -1;
    }
    *out = (int64_t)(sec * 1e9 + 0.5);
    return 0;
}

static int parse_keep(const char *arg, int64_t *out)
{
    double sec;
    if (strcmp(arg, "off") == 0 || strcmp(arg, "auto") == 0) {
        *out = arg[0] == 'o' ? 0 : -1;
        return 0;
    }
    if (mpilab_parse_duration(arg, &sec) != 0 || sec < 100e-6 || sec > 0.1) {
        fprintf(stderr, "mpilab-delayline: --keep-warm %s: expected auto, off or a duration of 100us to 100ms\n", arg);
        return -1;
    }
    *out = (int64_t)(sec * 1e9 + 0.5);
    return 0;
}

static int parse_trim(const char *arg, int64_t *out)
{
    if (mpilab_dl_parse_trim(arg, out) != 0) {
        fprintf(stderr, "mpilab-delayline: --trim %s: not a duration of -1 s to 1 s\n", arg);
        return -1;
    }
    return 0;
}

/* `arg` is one of two words: *is_first 1 for `first`, 0 for `second`; -1 (one line) else. */
static int parse_choice(const char *name, const char *arg, const char *first, const char *second,
                        int *is_first)
{
    if (strcmp(arg, first) != 0 && strcmp(arg, second) != 0) {
        fprintf(stderr, "mpilab-delayline: %s %s: expected %s or %s\n", name, arg, first, second);
        return -1;
    }
    *is_first = strcmp(arg, first) == 0;
    return 0;
}

/* One --peer into peers[opt->npeers]; -1 with one line when malformed or one too many. */
static int add_peer(const char *arg, mpilab_dl_options *opt, mpilab_dl_peer *peers)
{
    char err[256];
    if (opt->npeers == MPILAB_DL_PEERS_MAX) {
        fprintf(stderr, "mpilab-delayline: more than %d --peer\n", MPILAB_DL_PEERS_MAX);
        return -1;
    }
    if (mpilab_dl_peer_parse(arg, &peers[opt->npeers], err, sizeof(err)) != 0) {
        fprintf(stderr, "mpilab-delayline: %s\n", err);
        return -1;
    }
    opt->npeers++;
    return 0;
}

/* The I/O options agree and the required ones are there; -1 with one line otherwise. */
static int check_io(const mpilab_dl_options *opt)
{
    const char *why = NULL;
    if (opt->io_packet && opt->dev)
        why = "--io packet takes no --dev";
    else if (opt->io_packet && opt->npeers == 0)
        why = "--io packet needs at least one --peer";
    else if (!opt->io_packet && opt->npeers > 0)
        why = "--peer needs --io packet";
    else if (!opt->io_packet && opt->warm_ns > 0)
        why = "--warm-path needs --io packet";
    else if (!opt->io_packet && opt->keep_ns > 0)
        why = "--keep-warm needs --io packet";
    else if ((!opt->dev && !opt->io_packet) || opt->delay_ns < 0)
        why = "--dev (or --io packet) and --delay are required (see --help)";
    if (why)
        fprintf(stderr, "mpilab-delayline: %s\n", why);
    return why ? -1 : 0;
}

/* What is wrong with FILE as a file this tool reads or writes later (an empty name, a
 * directory or another non-regular file, a folder that is not there, or, when `writable`,
 * one it cannot write in), or NULL. */
static const char *file_name_problem(const char *path, int writable)
{
    struct stat st;
    char dir[4096];
    if (path[0] == '\0')
        return "an empty name";
    if (strlen(path) >= sizeof dir)
        return "name too long";
    if (stat(path, &st) == 0 && !S_ISREG(st.st_mode))
        return S_ISDIR(st.st_mode) ? "a directory, expected a file name" : "not a regular file";
    snprintf(dir, sizeof dir, "%s", path);
    char *slash = strrchr(dir, '/');
    if (!slash)
        snprintf(dir, sizeof dir, ".");
    else if (slash == dir)
        dir[1] = '\0';
    else
        *slash = '\0';
    if (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode))
        return "its folder does not exist";
    if (writable && access(dir, W_OK | X_OK) != 0)
        return "its folder is not writable";
    return NULL;
}

/* --stats FILE is rewritten at exit and on SIGUSR1 through a temporary name beside it:
 * checked at start, so a directory, a FIFO, a device or a folder that is not there is one
 * line now rather than a lost statistics file at exit ("-": standard output). */
static int check_stats(const char *path)
{
    const char *why = !path || strcmp(path, "-") == 0 ? NULL : file_name_problem(path, 1);
    if (why)
        fprintf(stderr, "mpilab-delayline: --stats %s: %s\n", path, why);
    return why ? -1 : 0;
}

/* --dev TUN names an interface of this network namespace (a legal name, and there: the
 * line attaches only to an existing device); -1 with one line otherwise. */
static int check_dev(const char *dev)
{
    const char *why = NULL;
    if (!dev)
        return 0;
    if (dev[0] == '\0')
        why = "an empty name";
    else if (strlen(dev) >= IFNAMSIZ)
        why = "name too long (interface names have at most 15 characters)";
    else if (strpbrk(dev, "/: \t\n") || !strcmp(dev, ".") || !strcmp(dev, ".."))
        why = "not an interface name";
    if (!why) {
        struct ifreq ifr;
        memset(&ifr, 0, sizeof ifr);
        memcpy(ifr.ifr_name, dev, strlen(dev) + 1);
        int sk = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
        int exists = sk >= 0 && ioctl(sk, SIOCGIFINDEX, &ifr) == 0;
        if (sk >= 0)
            close(sk);
        if (!exists) {
            fprintf(stderr, "mpilab-delayline: --dev %s: no such device (create it first: ip tuntap add %s "
                            "mode tun)\n", dev, dev);
            return -1;
        }
    }
    if (why)
        fprintf(stderr, "mpilab-delayline: --dev %s: %s\n", dev, why);
    return why ? -1 : 0;
}

/* --trim-file FILE is read at start and on SIGHUP and may be written later: a name that is
 * empty, a directory or another non-regular file, or in a folder that is not there is one
 * line now. */
static int check_trim_file(const char *path)
{
    const char *why = path ? file_name_problem(path, 0) : NULL;
    if (why)
        fprintf(stderr, "mpilab-delayline: --trim-file %s: %s\n", path, why);
    return why ? -1 : 0;
}

/* The options (a constant table). */
static const struct option longopts[] = {
    {"dev", required_argument, NULL, 'd'},
    {"delay", required_argument, NULL, 'l'},
    {"buffer", required_argument, NULL, 'b'},
    {"stats", required_argument, NULL, 's'},
    {"pidfile", required_argument, NULL, 'p'},
    {"no-vnet-hdr", no_argument, NULL, 'n'},
    {"rt-priority", required_argument, NULL, 'r'},
    {"no-realtime", no_argument, NULL, 'R'},
    {"rt-adaptive", no_argument, NULL, 'F'},
    {"busy-poll", required_argument, NULL, 'B'},
    {"no-leg-stamps", no_argument, NULL, 'L'},
    {"no-advance", no_argument, NULL, 'A'},
    {"arrival", required_argument, NULL, 'a'},
    {"advance-quantile", required_argument, NULL, 'q'},
    {"idle-poll", no_argument, NULL, 'I'},
    {"cpu", required_argument, NULL, 'c'},
    {"trim", required_argument, NULL, 't'},
    {"trim-file", required_argument, NULL, 'T'},
    {"cold-crossing", no_argument, NULL, 'C'},
    {"spin-last", required_argument, NULL, 'S'},
    {"warm-path", required_argument, NULL, 'W'},
    {"keep-warm", required_argument, NULL, 'K'},
    {"io", required_argument, NULL, 'i'},
    {"peer", required_argument, NULL, 'P'},
    {"help", no_argument, NULL, 'h'},
    {"version", no_argument, NULL, 'V'},
    {NULL, 0, NULL, 0}};

/* The options into opt (peers: room for MPILAB_DL_PEERS_MAX), then the line. */
static int run(int argc, char **argv, mpilab_dl_peer *peers)
{
    mpilab_dl_options opt = {.dev = NULL, .delay_ns = -1, .buffer = (size_t)64 << 20,
                             .stats = NULL, .pidfile = NULL, .vnet_hdr = 1,
                             .realtime = MPILAB_DL_RT_AUTO,
                             .rt_priority = MPILAB_DL_DEFAULT_RT_PRIORITY,
                             .busy_poll = MPILAB_DL_BUSY_AUTO, .leg_stamps = 1,
                             .arrival_ingress = 1, .advance = 1, .cpu = -1, .warm_ns = -1,
                             .keep_ns = -1};
    int rt_set = 0, nort_set = 0;
    opt.peers = peers;
    int c;
    opterr = 0;
    while ((c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
        double sec;
        switch (c) {
        case 'd': opt.dev = optarg; break;
        case 'l':
            if (mpilab_parse_duration(optarg, &sec) != 0 || sec > 60.0) {
                fprintf(stderr, "mpilab-delayline: --delay %s: not a duration of 0 to 60 s\n", optarg);
                return 2;
            }
            opt.delay_ns = (long long)(sec * 1e9 + 0.5);
            break;
        case 'b':
            if (mpilab_parse_size(optarg, &opt.buffer) != 0 || opt.buffer > ((size_t)16 << 30)) {
                fprintf(stderr, "mpilab-delayline: --buffer %s: not a size up to 16G\n", optarg);
                return 2;
            }
            break;
        case 's': opt.stats = optarg; break;
        case 'p': opt.pidfile = optarg; break;
        case 'n': opt.vnet_hdr = 0; break;
        case 'r': {
            long long prio;
            if (mpilab_parse_i64(optarg, &prio) != 0 || prio < 1 || prio > 99) {
                fprintf(stderr, "mpilab-delayline: --rt-priority %s: not a priority of 1 to 99\n",
                        optarg);
                return 2;
            }
            opt.rt_priority = (int)prio;
            opt.realtime = MPILAB_DL_RT_ON;
            rt_set = 1;
            break;
        }
        case 'R': opt.realtime = MPILAB_DL_RT_OFF; nort_set = 1; break;
        case 'F': opt.rt_adaptive = 1; break;
        case 'B':
            if (parse_busy(optarg, &opt.busy_poll) != 0)
                return 2;
            break;
        case 'L': opt.leg_stamps = 0; break;
        case 'I': opt.idle_poll = 1; break;
        case 'c':
            if (parse_cpu(optarg, &opt.cpu) != 0)
                return 2;
            break;
        case 'A': opt.advance = 0; break;
        case 't':
            if (parse_trim(optarg, &opt.trim_ns) != 0)
                return 2;
            break;
        case 'T': opt.trim_file = optarg; break;
        case 'C': opt.cold = 1; break;
        case 'S': if (parse_spin(optarg, &opt.spin_last_ns) != 0) return 2; break;
        case 'W': if (parse_warm(optarg, &opt.warm_ns) != 0) return 2; break;
        case 'K': if (parse_keep(optarg, &opt.keep_ns) != 0) return 2; break;
        case 'q':
            if (parse_quantile(optarg, &opt.advance_q) != 0)
                return 2;
            break;
        case 'a':
            if (parse_choice("--arrival", optarg, "ingress", "tun", &opt.arrival_ingress) != 0)
                return 2;
            break;
        case 'i':
            if (parse_choice("--io", optarg, "packet", "tun", &opt.io_packet) != 0)
                return 2;
            break;
        case 'P':
            if (add_peer(optarg, &opt, peers) != 0)
                return 2;
            break;
        case 'h': usage(stdout); return 0;
        case 'V': printf("mpilab-delayline %s\n", MPILAB_VERSION_STRING); return 0;
        default:
            fprintf(stderr, "mpilab-delayline: unknown or incomplete option '%s' (see --help)\n",
                    argv[optind - 1]);
            return 2;
        }
    }
    if (optind < argc) {
        fprintf(stderr, "mpilab-delayline: unexpected argument '%s'\n", argv[optind]);
        return 2;
    }
    if (nort_set && (rt_set || opt.rt_adaptive)) {
        fprintf(stderr, "mpilab-delayline: --no-realtime excludes --rt-priority and --rt-adaptive\n");
        return 2;
    }
    if (opt.buffer < mpilab_dl_buffer_min()) { /* before any device is looked at */
        fprintf(stderr, "mpilab-delayline: --buffer %zu: must hold at least two 64 KiB packets\n", opt.buffer);
        return 2;
    }
    if (check_io(&opt) != 0 || check_stats(opt.stats) != 0 ||
        check_trim_file(opt.trim_file) != 0 || check_dev(opt.dev) != 0)
        return 2;
    if (opt.warm_ns < 0) /* the default: packet I/O warms, a tun line cannot */
        opt.warm_ns = opt.io_packet ? MPILAB_DL_WARM_DEFAULT_NS : 0;
    if (opt.keep_ns < 0) /* auto: a busy packet line that warms keeps the paths warm */
        opt.keep_ns = opt.io_packet && opt.warm_ns > 0 && mpilab_dl_busy(&opt)
                          ? MPILAB_DL_WARM_IDLE_NS : 0;
    return mpilab_dl_run(&opt);
}

int main(int argc, char **argv)
{
    mpilab_stdout_guard();
    mpilab_dl_peer *peers = calloc(MPILAB_DL_PEERS_MAX, sizeof(*peers));
    if (!peers) {
        fprintf(stderr, "mpilab-delayline: out of memory\n");
        return 1;
    }
    int rc = run(argc, argv, peers);
    free(peers);
    return rc;
}
