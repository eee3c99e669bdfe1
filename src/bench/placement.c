/* Rank placement before MPI_Init (include/mpilab/placement.h). */
#include "mpilab/placement.h"

#include <errno.h>
#include <limits.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

int mpilab_placement_parse(const char *s, mpilab_placement_mode_t *out)
{
    if (strcmp(s, "auto") == 0)
        *out = MPILAB_PLACEMENT_AUTO;
    else if (strcmp(s, "keep") == 0)
        *out = MPILAB_PLACEMENT_KEEP;
    else
        return -1;
    return 0;
}

const char *mpilab_placement_name(mpilab_placement_mode_t m)
{
    return m == MPILAB_PLACEMENT_KEEP ? "keep" : "auto";
}

const char *mpilab_placement_arg(int argc, char **argv)
{
    for (int k = 1; k < argc; k++) {
        if (strcmp(argv[k], "--") == 0)
            break;
        if (strcmp(argv[k], "--placement") == 0)
            return k + 1 < argc ? argv[k + 1] : NULL;
        if (strncmp(argv[k], "--placement=", 12) == 0)
            return argv[k] + 12;
    }
    return NULL;
}

/* A non-negative integer from the environment, or -1. */
static int env_int(const char *name)
{
    const char *v = getenv(name);
    if (!v || !*v)
        return -1;
    char *end;
    long x = strtol(v, &end, 10);
    return *end || x < 0 || x > 1000000 ? -1 : (int)x;
}

int mpilab_placement_slurm_tasks(const char *list, int node)
{
    if (!list || node < 0)
        return -1;
    const char *p = list;
    long first = 0; /* index of the first node of the current entry */
    for (;;) {
        char *end;
        if (*p < '0' || *p > '9')
            return -1;
        long tasks = strtol(p, &end, 10), reps = 1;
        if (tasks < 0 || tasks > 1000000)
            return -1;
        p = end;
        if (*p == '(') {
            if (p[1] != 'x' || p[2] < '0' || p[2] > '9')
                return -1;
            reps = strtol(p + 2, &end, 10);
            if (reps < 1 || reps > 1000000 || *end != ')')
                return -1;
            p = end + 1;
        }
        if (node < first + reps)
            return (int)tasks;
        first += reps;
        if (*p != ',')
            return -1; /* the end (or junk) before the node's entry */
        p++;
    }
}

/* Slurm: SLURM_LOCALID with SLURM_NTASKS_PER_NODE (only set when asked for), else this
 * node's entry of the per-node task list srun (or salloc) sets. */
static void slurm_rank_size(int *rank, int *size)
{
    *rank = env_int("SLURM_LOCALID");
    *size = env_int("SLURM_NTASKS_PER_NODE");
    if (*rank < 0 || *size > 0)
        return;
    int node = env_int("SLURM_NODEID");
    const char *list = getenv("SLURM_STEP_TASKS_PER_NODE");
    if (!list)
        list = getenv("SLURM_TASKS_PER_NODE");
    *size = mpilab_placement_slurm_tasks(list, node < 0 ? 0 : node);
}

static void local_rank_size(int *rank, int *size)
{
    static const char *const names[][2] = {{"OMPI_COMM_WORLD_LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_SIZE"},
                                     {"MPI_LOCALRANKID", "MPI_LOCALNRANKS"}};
    for (size_t k = 0; k < sizeof names / sizeof names[0]; k++) {
        *rank = env_int(names[k][0]);
        *size = env_int(names[k][1]);
        if (*rank >= 0 && *size > 0 && *rank < *size)
            return;
    }
    slurm_rank_size(rank, size);
    if (*rank >= 0 && *size > 0 && *rank < *size)
        return;
    *rank = *size = -1;
}

/* Pin this process to the n-th CPU (0-based) of set; the CPU, or -1. */
static int pin_nth(const cpu_set_t *set, int n)
{
    int seen = 0;
    for (int c = 0; c < CPU_SETSIZE; c++) {
        if (!CPU_ISSET(c, set))
            continue;
        if (seen++ == n) {
            cpu_set_t one;
            CPU_ZERO(&one);
            CPU_SET(c, &one);
            return sched_setaffinity(0, sizeof one, &one) == 0 ? c : -1;
        }
    }
    return -1;
}

void mpilab_placement_apply(mpilab_placement_mode_t mode, mpilab_placement_t *out)
{
    memset(out, 0, sizeof *out);
    out->mode = mode;
    out->pinned_cpu = -1;
    out->kernel_ranks = -1;
    local_rank_size(&out->local_rank, &out->local_size);
    cpu_set_t set;
    CPU_ZERO(&set);
    out->cpus = sched_getaffinity(0, sizeof set, &set) == 0 ? CPU_COUNT(&set) : -1;
    _Static_assert(sizeof set <= sizeof out->allowed, "cpu_set_t larger than the saved mask");
    memcpy(out->allowed, &set, sizeof set);
    if (mode == MPILAB_PLACEMENT_KEEP) {
        snprintf(out->reason, sizeof out->reason, "kept as launched (--placement keep)");
        return;
    }
    if (out->local_size < 0) {
        snprintf(out->reason, sizeof out->reason, "kept as launched: local rank unknown");
        return;
    }
    if (out->cpus <= 1) {
        snprintf(out->reason, sizeof out->reason, "kept as launched: already bound to one CPU");
        return;
    }
    if (out->local_size > out->cpus) {
        snprintf(out->reason, sizeof out->reason,
                 "kept as launched: oversubscribed (%d local ranks on %d CPUs)", out->local_size, out->cpus);
        return;
    }
    out->pinned_cpu = pin_nth(&set, out->local_rank);
    if (out->pinned_cpu < 0) {
        snprintf(out->reason, sizeof out->reason, "kept as launched: pinning failed");
        return;
    }
    out->yield_off = setenv("OMPI_MCA_mpi_yield_when_idle", "0", 1) == 0;
    snprintf(out->reason, sizeof out->reason, "pinned: %d local ranks on %d CPUs, one CPU each%s",
             out->local_size, out->cpus, out->yield_off ? ", no yield when idle" : "");
}

/* This kernel's identity: its boot id (the same in every namespace), else the host name. */
static void kernel_key(char *key, size_t len)
{
    memset(key, 0, len);
    FILE *f = fopen("/proc/sys/kernel/random/boot_id", "r");
    if (f) {
        if (!fgets(key, (int)len, f))
            key[0] = '\0';
        fclose(f);
    }
    if (!key[0])
        gethostname(key, len - 1);
}

#define KEY_LEN 64

void mpilab_placement_settle(MPI_Comm comm, mpilab_placement_t *p)
{
    int rank, size;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    char key[KEY_LEN];
    kernel_key(key, sizeof key);
    char *all = malloc((size_t)size * KEY_LEN);
    if (!all)
        return;
    MPI_Allgather(key, KEY_LEN, MPI_CHAR, all, KEY_LEN, MPI_CHAR, comm);
    int mine = 0, n = 0;
    for (int r = 0; r < size; r++)
        if (memcmp(all + (size_t)r * KEY_LEN, key, KEY_LEN) == 0) {
            mine += r < rank;
            n++;
        }
    free(all);
    p->kernel_ranks = n;
    /* only what auto mode pinned (or would have) is revisited */
    if (p->mode != MPILAB_PLACEMENT_AUTO || p->cpus <= 1 || p->local_size < 0)
        return;
    cpu_set_t set;
    memcpy(&set, p->allowed, sizeof set);
    if (n > p->cpus) {
        if (p->pinned_cpu >= 0)
            sched_setaffinity(0, sizeof set, &set);
        p->pinned_cpu = -1;
        p->yield_oversubscribed = p->yield_off;
        snprintf(p->reason, sizeof p->reason, "kept as launched: oversubscribed (%d ranks on this kernel, %d CPUs)%s",
                 n, p->cpus, p->yield_off ? "; polling without yield (decided before MPI started)" : "");
        return;
    }
    if (n == p->local_size && p->pinned_cpu >= 0)
        return; /* the launcher's node is the kernel: as decided before MPI_Init */
    p->pinned_cpu = pin_nth(&set, mine);
    snprintf(p->reason, sizeof p->reason, "%s: %d ranks on this kernel (%d per launcher node) on %d CPUs%s",
             p->pinned_cpu >= 0 ? "pinned" : "kept as launched: pinning failed", n, p->local_size, p->cpus,
             p->yield_off ? ", no yield when idle" : "");
}

/* This process's autogroup nice value (CONFIG_SCHED_AUTOGROUP, /proc/self/autogroup reads
 * "/autogroup-N nice X"): 0 and *nice; -1 when autogroups are off or unreadable; -2 when
 * they are on but this session has no group of its own (the file reads empty: a session
 * never made by setsid, e.g. init's, shares the root group). */
static int autogroup_nice(int *nice)
{
    FILE *f = fopen("/proc/sys/kernel/sched_autogroup_enabled", "r");
    int on = 0;
    if (!f)
        return -1;
    if (fscanf(f, "%d", &on) != 1)
        on = 0;
    fclose(f);
    if (!on)
        return -1;
    f = fopen("/proc/self/autogroup", "r");
    if (!f)
        return -1;
    int rc = fscanf(f, "%*s nice %d", nice) == 1 ? 0 : -2;
    fclose(f);
    return rc;
}

static int autogroup_set(int nice)
{
    FILE *f = fopen("/proc/self/autogroup", "w");
    if (!f)
        return -1;
    int ok = fprintf(f, "%d\n", nice) > 0;
    /* the kernel takes the value on write: the close reports whether it was accepted */
    if (fclose(f) != 0)
        ok = 0;
    return ok ? 0 : -1;
}

/* Raise this process's autogroup to `nice` when it is lower; appends what was done to why.
 * Returns the autogroup's former nice value when it was changed, else INT_MIN. */
static int autogroup_raise(int nice, char *why, size_t len)
{
    int now;
    size_t used = strlen(why);
    int got = autogroup_nice(&now);
    if (got == -2)
        snprintf(why + used, len - used, "; no autogroup of its own (the session shares the root group)");
    if (got != 0)
        return INT_MIN;
    if (now <= nice) { /* e.g. raised by another rank of the same session */
        snprintf(why + used, len - used, "; its autogroup (the job's session) already at nice %d", now);
        return INT_MIN;
    }
    if (autogroup_set(nice) != 0) {
        snprintf(why + used, len - used, "; its autogroup kept at nice %d (raising failed: %s)", now,
                 strerror(errno));
        return INT_MIN;
    }
    snprintf(why + used, len - used, "; its autogroup (the job's session) raised from nice %d to nice %d", now, nice);
    return now;
}

void mpilab_placement_priority_restore(int group_old)
{
    if (group_old != INT_MIN)
        (void)autogroup_set(group_old);
}

int mpilab_placement_priority(int nice, int *group_old, char *why, size_t len)
{
    *group_old = INT_MIN;
    /* the calling thread (Linux keeps a nice value per thread): its kernel thread id */
    id_t tid = (id_t)syscall(SYS_gettid);
    errno = 0;
    int now = getpriority(PRIO_PROCESS, tid);
    if (now == -1 && errno != 0) {
        snprintf(why, len, "priority kept: getpriority failed (%s)", strerror(errno));
        return 0;
    }
    if (nice < -20 || nice > 19) {
        snprintf(why, len, "priority kept at nice %d: nice %d is outside -20..19", now, nice);
        return now;
    }
    if (now <= nice) {
        snprintf(why, len, "priority kept at nice %d (asked nice %d: already as high)", now, nice);
        return now;
    }
    if (setpriority(PRIO_PROCESS, tid, nice) != 0) {
        snprintf(why, len, "priority kept at nice %d: raising to nice %d failed (%s; needs root or CAP_SYS_NICE)",
                 now, nice, strerror(errno));
        return now;
    }
    errno = 0;
    int after = getpriority(PRIO_PROCESS, tid);
    if (after == -1 && errno != 0)
        after = nice;
    snprintf(why, len, "polling thread raised from nice %d to nice %d", now, after);
    /* with autogroups (one per session; a testbed job is its own session) the CPU is shared
     * between groups first: a thread's nice value only orders it within its group */
    *group_old = autogroup_raise(nice, why, len);
    return after;
}
