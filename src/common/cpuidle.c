/* The machine's idle states and its CPU latency limit (include/mpilab/cpuidle.h). */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* O_CLOEXEC */
#endif
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "mpilab/cpuidle.h"
#include "mpilab/parse.h"

/* The first line of root/rel into buf (without its newline); 0, or -1 if unreadable. */
static int read_line(const char *root, const char *rel, char *buf, size_t len)
{
    char path[512];
    if (snprintf(path, sizeof path, "%s%s", root, rel) >= (int)sizeof path)
        return -1;
    FILE *f = fopen(path, "re");
    if (!f)
        return -1;
    char *got = fgets(buf, (int)len, f);
    fclose(f);
    if (!got)
        return -1;
    buf[strcspn(buf, "\n")] = '\0';
    return 0;
}

static int64_t read_i64(const char *root, const char *rel)
{
    char buf[64];
    long long v;
    if (read_line(root, rel, buf, sizeof buf) != 0 || mpilab_parse_i64(buf, &v) != 0)
        return -1;
    return (int64_t)v;
}

/* cpu0's states: their count and the deepest one that is not disabled. */
static void read_states(const char *root, mpilab_cpuidle_t *out)
{
    for (int k = 0; k < 64; k++) {
        char rel[128], name[32];
        snprintf(rel, sizeof rel, "/sys/devices/system/cpu/cpu0/cpuidle/state%d/name", k);
        if (read_line(root, rel, name, sizeof name) != 0)
            break;
        out->nstates = k + 1;
        snprintf(rel, sizeof rel, "/sys/devices/system/cpu/cpu0/cpuidle/state%d/disable", k);
        if (read_i64(root, rel) == 1)
            continue;
        snprintf(rel, sizeof rel, "/sys/devices/system/cpu/cpu0/cpuidle/state%d/latency", k);
        snprintf(out->deepest, sizeof out->deepest, "%s", name);
        out->deepest_exit_us = read_i64(root, rel);
    }
}

/* The limit in force: /dev/cpu_dma_latency reads as one native 32-bit integer (us). */
static int64_t read_limit(const char *root)
{
    char path[512];
    if (snprintf(path, sizeof path, "%s/dev/cpu_dma_latency", root) >= (int)sizeof path)
        return -1;
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0)
        return -1;
    int32_t v = -1;
    ssize_t n = read(fd, &v, sizeof v);
    close(fd);
    return n == (ssize_t)sizeof v && v >= 0 ? (int64_t)v : -1;
}

void mpilab_cpuidle_read(const char *root, mpilab_cpuidle_t *out)
{
    if (!root)
        root = "";
    memset(out, 0, sizeof *out);
    out->deepest_exit_us = -1;
    out->halt_poll_ns = -1;
    if (read_line(root, "/sys/devices/system/cpu/cpuidle/current_driver", out->driver, sizeof out->driver) != 0)
        out->driver[0] = '\0';
    if (read_line(root, "/sys/devices/system/cpu/cpuidle/current_governor_ro", out->governor,
                  sizeof out->governor) != 0 &&
        read_line(root, "/sys/devices/system/cpu/cpuidle/current_governor", out->governor,
                  sizeof out->governor) != 0)
        out->governor[0] = '\0';
    read_states(root, out);
    if (strcmp(out->driver, "haltpoll") == 0)
        out->halt_poll_ns = read_i64(root, "/sys/module/haltpoll/parameters/guest_halt_poll_ns");
    out->latency_limit_us = read_limit(root);
}

int mpilab_cpuidle_may_halt(const mpilab_cpuidle_t *c)
{
    if (c->nstates <= 0 || !c->deepest[0])
        return -1;
    if (strcmp(c->deepest, "POLL") == 0)
        return 0;
    /* a governor enters no state whose exit latency is above the limit in force */
    if (c->latency_limit_us >= 0 && c->deepest_exit_us > c->latency_limit_us)
        return 0;
    return 1;
}

int mpilab_cpuidle_hold(int32_t us)
{
    if (us < 0) {
        errno = EINVAL;
        return -1;
    }
    int fd = open("/dev/cpu_dma_latency", O_WRONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    if (write(fd, &us, sizeof us) != (ssize_t)sizeof us) {
        int e = errno;
        close(fd);
        errno = e ? e : EIO;
        return -1;
    }
    return fd;
}
