/* mpilab-delayline refuses bad arguments with one line on stderr and exit status 2. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "kit.h"

static int run(const char *args, char *out, size_t outlen)
{
    const char *bin = getenv("MPILAB_DELAYLINE");
    char cmd[1024];
    snprintf(cmd, sizeof(cmd), "%s %s 2>&1 >/dev/null", bin, args);
    FILE *p = popen(cmd, "r");
    if (!p)
        return -1;
    size_t n = fread(out, 1, outlen - 1, p);
    out[n] = '\0';
    int st = pclose(p);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static int lines(const char *s)
{
    int n = 0;
    for (; *s; s++)
        n += *s == '\n';
    return n;
}

MPILAB_TEST(bad_arguments_refused)
{
    REQUIRE(getenv("MPILAB_DELAYLINE")); /* the tool under test (the ctest sets it) */
    const char *bad[] = {"--dev x --delay -1ms", "--dev x --delay 5parsecs", "--dev x",
                         "--delay 5ms", "--dev x --delay 5ms --buffer 12Q", "--dev x --delay 5ms extra",
                         "--dev x --delay 5ms --bogus", "--dev x --delay 100s",
                         "--dev x --delay 5ms --rt-priority 0", "--dev x --delay 5ms --rt-priority 100",
                         "--dev x --delay 5ms --rt-priority x",
                         "--dev x --delay 5ms --rt-priority 5 --no-realtime", "--dev x --delay ' 5ms'",
                         "--dev x --delay 5ms --rt-adaptive --no-realtime",
                         "--dev x --delay 5ms --rt-adaptive=yes",
                         "--dev x --delay nan", "--dev x --delay 5ms --buffer ' -1'",
                         "--dev x --delay 5ms --busy-poll sometimes", "--dev x --delay 5ms --busy-poll",
                         "--dev x --delay 5ms --arrival egress",
                         "--dev x --delay 5ms --advance-quantile 0",
                         "--dev x --delay 5ms --advance-quantile 1.5",
                         "--dev x --delay 5ms --advance-quantile half",
                         "--dev x --delay 5ms --cpu -1", "--dev x --delay 5ms --cpu 100000",
                         "--dev x --delay 5ms --cpu one", "--dev x --delay 5ms --cpu",
                         "--dev x --delay 5ms --trim 2s", "--dev x --delay 5ms --trim -2s",
                         "--dev x --delay 5ms --trim --3us",
                         "--dev x --delay 5ms --trim", "--dev x --delay 5ms --trim-file",
                         "--dev x --delay 5ms --spin-last 5us", "--dev x --delay 5ms --spin-last 2s",
                         "--dev x --delay 5ms --spin-last soon", "--dev x --delay 5ms --spin-last",
                         "--dev x --delay 5ms --warm-path 100us",
                         "--io packet --peer 10.0.0.2,l0,02:00:00:00:00:01 --delay 5ms --warm-path 10us",
                         "--io packet --peer 10.0.0.2,l0,02:00:00:00:00:01 --delay 5ms --warm-path 20ms",
                         "--io packet --peer 10.0.0.2,l0,02:00:00:00:00:01 --delay 5ms --warm-path",
                         "--dev x --delay 5ms --keep-warm 1ms",
                         "--io packet --peer 10.0.0.2,l0,02:00:00:00:00:01 --delay 5ms --keep-warm 50us",
                         "--io packet --peer 10.0.0.2,l0,02:00:00:00:00:01 --delay 5ms --keep-warm 1s",
                         "--io packet --peer 10.0.0.2,l0,02:00:00:00:00:01 --delay 5ms --keep-warm on",
                         "--dev x --delay 5ms --cold-crossing=yes",
                         "--io packet --delay 5ms", "--io socket --delay 5ms",
                         "--dev x --io packet --peer 10.0.0.1,s0r0,02:00:00:00:00:01 --delay 5ms",
                         "--dev x --peer 10.0.0.1,s0r0,02:00:00:00:00:01 --delay 5ms",
                         "--io packet --peer 10.0.0.1,s0r0 --delay 5ms",
                         "--io packet --peer 10.0.0.300,s0r0,02:00:00:00:00:01 --delay 5ms",
                         "--io packet --peer 10.0.0.1,,02:00:00:00:00:01 --delay 5ms",
                         "--io packet --peer 10.0.0.1,averyveryverylongname,02:00:00:00:00:01 --delay 5ms",
                         "--io packet --peer 10.0.0.1,s0r0,02:00:00:00:00 --delay 5ms",
                         "--io packet --peer 10.0.0.1,s0r0,02:00:00:00:00:01:03 --delay 5ms",
                         "--io packet --peer 10.0.0.1,s0r0,zz:00:00:00:00:01 --delay 5ms",
                         "--io packet --peer 10.0.0.1,s0r0,02:00:00:00:00:01,x --delay 5ms",
                         "--io packet --peer 10.0.0.1,s0r0,02:00:00:00:00:01"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        char out[4096];
        int rc = run(bad[i], out, sizeof(out));
        CHECKF(rc == 2 && lines(out) == 1 && strncmp(out, "mpilab-delayline: ", 18) == 0,
               "args '%s': exit %d, stderr '%s'", bad[i], rc, out);
    }
}

/* a buffer too small for two GSO packets is refused before touching any device */
MPILAB_TEST(small_buffer_refused_before_any_device)
{
    REQUIRE(getenv("MPILAB_DELAYLINE")); /* the tool under test (the ctest sets it) */
    char out[4096];
    int rc = run("--dev mpilabnosuchtun --delay 1ms --buffer 4K", out, sizeof(out));
    CHECKF(rc == 2 && lines(out) == 1 && strstr(out, "--buffer"), "small buffer: exit %d, stderr '%s'", rc, out);
}

/* -h/--help (units stated) and --version: stdout, exit 0 */
MPILAB_TEST(help_and_version)
{
    REQUIRE(getenv("MPILAB_DELAYLINE")); /* the tool under test (the ctest sets it) */
    const char *bin = getenv("MPILAB_DELAYLINE");
    char out[16384]; /* the whole help text */
    const char *info[][2] = {{"-h", "K = 1024"}, {"--help", "--busy-poll M"}, {"--version", "mpilab-delayline "}};
    for (size_t i = 0; i < sizeof(info) / sizeof(info[0]); i++) {
        char cmd[1024];
        snprintf(cmd, sizeof(cmd), "%s %s 2>/dev/null", bin, info[i][0]);
        FILE *p = popen(cmd, "r");
        size_t n = p ? fread(out, 1, sizeof(out) - 1, p) : 0;
        out[n] = '\0';
        int st = p ? pclose(p) : -1;
        CHECKF(WIFEXITED(st) && WEXITSTATUS(st) == 0 && strstr(out, info[i][1]), "%s: status %d, stdout '%s'",
               info[i][0], st, out);
    }
}

MPILAB_TEST_MAIN()
