/* mpilab_cpuidle_read on fixture trees (a haltpoll guest, a disabled deepest state, a
 * latency limit held at 0, no cpuidle at all), mpilab_cpuidle_may_halt's verdicts, and, as
 * root on a kernel with PM QoS, a real hold: the limit in force reads 0 while it is held. */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "kit.h"
#include "mpilab/cpuidle.h"

/* A fixture tree under a fresh directory (root[] receives its path), removed by tree_rm. */
static void put(const char *root, const char *rel, const void *data, size_t len)
{
    char path[512], dir[512];
    snprintf(path, sizeof path, "%s%s", root, rel);
    for (char *s = strchr(path + strlen(root) + 1, '/'); s; s = strchr(s + 1, '/')) {
        snprintf(dir, sizeof dir, "%.*s", (int)(s - path), path);
        mkdir(dir, 0700);
    }
    FILE *f = fopen(path, "wb");
    if (!f || fwrite(data, 1, len, f) != len)
        FAIL("fixture %s not written", path);
    if (f)
        fclose(f);
}

static void put_str(const char *root, const char *rel, const char *text)
{
    put(root, rel, text, strlen(text));
}

static void tree_rm(const char *root)
{
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", root);
    if (system(cmd) != 0)
        fprintf(stderr, "could not remove %s\n", root);
}

#define CPU0 "/sys/devices/system/cpu/cpu0/cpuidle/"

static void haltpoll_guest(const char *root, int32_t limit)
{
    put_str(root, "/sys/devices/system/cpu/cpuidle/current_driver", "haltpoll\n");
    put_str(root, "/sys/devices/system/cpu/cpuidle/current_governor_ro", "haltpoll\n");
    put_str(root, CPU0 "state0/name", "POLL\n");
    put_str(root, CPU0 "state0/latency", "0\n");
    put_str(root, CPU0 "state0/disable", "0\n");
    put_str(root, CPU0 "state1/name", "haltpoll idle\n");
    put_str(root, CPU0 "state1/latency", "1\n");
    put_str(root, CPU0 "state1/disable", "0\n");
    put_str(root, "/sys/module/haltpoll/parameters/guest_halt_poll_ns", "0\n");
    put(root, "/dev/cpu_dma_latency", &limit, sizeof limit);
}

MPILAB_TEST(haltpoll_guest_may_halt)
{
    char root[] = "/tmp/mpilab-cpuidle-XXXXXX";
    REQUIRE(mkdtemp(root) != NULL);
    haltpoll_guest(root, 2000000000);
    mpilab_cpuidle_t c;
    mpilab_cpuidle_read(root, &c);
    CHECK_STR(c.driver, "haltpoll");
    CHECK_STR(c.governor, "haltpoll");
    CHECK(c.nstates == 2);
    CHECK_STR(c.deepest, "haltpoll idle");
    CHECK(c.deepest_exit_us == 1 && c.halt_poll_ns == 0);
    CHECK(c.latency_limit_us == MPILAB_CPUIDLE_NO_LIMIT_US);
    CHECK(mpilab_cpuidle_may_halt(&c) == 1);
    /* the limit held at 0: the governor keeps to the polling state */
    int32_t zero = 0;
    put(root, "/dev/cpu_dma_latency", &zero, sizeof zero);
    mpilab_cpuidle_read(root, &c);
    CHECK(c.latency_limit_us == 0);
    CHECK(mpilab_cpuidle_may_halt(&c) == 0);
    tree_rm(root);
}

MPILAB_TEST(disabled_state_is_not_the_deepest)
{
    char root[] = "/tmp/mpilab-cpuidle-XXXXXX";
    REQUIRE(mkdtemp(root) != NULL);
    haltpoll_guest(root, 2000000000);
    put_str(root, "/sys/devices/system/cpu/cpuidle/current_driver", "intel_idle\n");
    put_str(root, CPU0 "state2/name", "C6\n");
    put_str(root, CPU0 "state2/latency", "133\n");
    put_str(root, CPU0 "state2/disable", "1\n");
    mpilab_cpuidle_t c;
    mpilab_cpuidle_read(root, &c);
    CHECK(c.nstates == 3);
    CHECK_STR(c.deepest, "haltpoll idle"); /* C6 is disabled */
    CHECK(c.halt_poll_ns == -1);           /* not the haltpoll driver */
    put_str(root, CPU0 "state2/disable", "0\n");
    int32_t limit = 100; /* below C6's exit latency: the governor will not enter it */
    put(root, "/dev/cpu_dma_latency", &limit, sizeof limit);
    mpilab_cpuidle_read(root, &c);
    CHECK_STR(c.deepest, "C6");
    CHECK(c.deepest_exit_us == 133 && c.latency_limit_us == 100);
    CHECK(mpilab_cpuidle_may_halt(&c) == 0);
    limit = 200;
    put(root, "/dev/cpu_dma_latency", &limit, sizeof limit);
    mpilab_cpuidle_read(root, &c);
    CHECK(mpilab_cpuidle_may_halt(&c) == 1);
    tree_rm(root);
}

MPILAB_TEST(polling_only_and_nothing_known)
{
    char root[] = "/tmp/mpilab-cpuidle-XXXXXX";
    REQUIRE(mkdtemp(root) != NULL);
    mpilab_cpuidle_t c;
    mpilab_cpuidle_read(root, &c); /* an empty tree: nothing known, nothing invented */
    CHECK(!c.driver[0] && !c.governor[0] && c.nstates == 0 && !c.deepest[0]);
    CHECK(c.deepest_exit_us == -1 && c.halt_poll_ns == -1 && c.latency_limit_us == -1);
    CHECK(mpilab_cpuidle_may_halt(&c) == -1);
    put_str(root, CPU0 "state0/name", "POLL\n");
    put_str(root, CPU0 "state0/latency", "0\n");
    put_str(root, "/dev/cpu_dma_latency", "x"); /* short: unreadable, not a value */
    mpilab_cpuidle_read(root, &c);
    CHECK(c.nstates == 1 && mpilab_cpuidle_may_halt(&c) == 0 && c.latency_limit_us == -1);
    tree_rm(root);
}

MPILAB_TEST(hold_sets_the_limit)
{
    CHECK(mpilab_cpuidle_hold(-1) == -1 && errno == EINVAL);
    if (geteuid() != 0 || access("/dev/cpu_dma_latency", F_OK) != 0) {
        printf("hold_sets_the_limit: not root or no PM QoS here, the real hold not tried\n");
        return;
    }
    int fd = mpilab_cpuidle_hold(0);
    REQUIRE(fd >= 0);
    mpilab_cpuidle_t c;
    mpilab_cpuidle_read(NULL, &c);
    CHECK(c.latency_limit_us == 0);
    CHECK(mpilab_cpuidle_may_halt(&c) != 1);
    close(fd);
}

MPILAB_TEST_MAIN()
