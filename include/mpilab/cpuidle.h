/* What waking an idle CPU costs on this machine (Linux): the cpuidle driver and governor,
 * the deepest idle state the CPUs may enter, the haltpoll driver's polling window (a KVM
 * guest), and the system's CPU latency limit (PM QoS, /dev/cpu_dma_latency). A rank or a
 * daemon that sleeps (a yielding MPI, `--lmo-wait sleep`, the testbed's delay line) is
 * woken out of that state; in a guest whose idle vCPUs halt, the wake-up waits for the host
 * to resume the vCPU (220-370 us for the delay line here, docs/testbed.md), which a
 * spinning rank never pays. Holding the latency limit at 0 makes idle CPUs poll instead of
 * halting, for as long as the holder keeps its file open (what `tuned`'s
 * latency-performance profile does). */
#ifndef MPILAB_CPUIDLE_H
#define MPILAB_CPUIDLE_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct mpilab_cpuidle {
    char driver[32];            /* "" when the kernel has no cpuidle (then CPUs idle as the
                                 * architecture does, often a halt) */
    char governor[32];          /* "" unknown */
    int nstates;                /* cpu0's idle states, 0 none or unknown */
    char deepest[32];           /* cpu0's deepest state not disabled, "" none */
    int64_t deepest_exit_us;    /* its exit latency as the kernel states it, -1 unknown */
    int64_t halt_poll_ns;       /* haltpoll driver: how long an idle vCPU polls before it
                                 * halts (guest_halt_poll_ns); -1 another driver */
    int64_t latency_limit_us;   /* the CPU latency limit now in force, -1 unreadable
                                 * (reading /dev/cpu_dma_latency needs root) */
} mpilab_cpuidle_t;

/* The latency limit the kernel reports when nobody asks for one (2000 s, PM QoS's default). */
#define MPILAB_CPUIDLE_NO_LIMIT_US INT64_C(2000000000)

/* Read the above from `root` (a prefix before /sys and /dev: NULL or "" for the machine's
 * own, a directory of fixture files in tests). Missing files leave the fields at their
 * "unknown" values; never fails. */
void mpilab_cpuidle_read(const char *root, mpilab_cpuidle_t *out);

/* 1 when a sleeping thread may wait for a halted CPU to be resumed: the deepest idle state
 * is not polling and the latency limit in force does not keep the CPUs out of it (a
 * haltpoll vCPU that polls first still halts once its window is over). 0 when idle CPUs
 * only poll; -1 unknown (no idle states read). */
int mpilab_cpuidle_may_halt(const mpilab_cpuidle_t *c);

/* Ask the kernel for a CPU latency limit of `us` microseconds (0: idle CPUs poll) for as
 * long as the returned descriptor stays open (close it, or exit, to release). Returns the
 * descriptor, or -1 with errno set (EACCES unless root, ENOENT without PM QoS). */
int mpilab_cpuidle_hold(int32_t us);

#ifdef __cplusplus
}
#endif

#endif
