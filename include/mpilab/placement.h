/* Rank placement before MPI_Init: pin each local rank to its own CPU and turn off Open MPI's
 * yield-when-idle polling when the node has a CPU for every local rank, so that a
 * measurement does not depend on where the scheduler happened to put the ranks (see
 * docs/bench.md, "Placement"). */
#ifndef MPILAB_PLACEMENT_H
#define MPILAB_PLACEMENT_H

#include <mpi.h>
#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum mpilab_placement_mode {
    MPILAB_PLACEMENT_AUTO = 0, /* pin + no yield when local ranks <= allowed CPUs and unbound */
    MPILAB_PLACEMENT_KEEP = 1  /* leave the launcher's binding and polling as they are */
} mpilab_placement_mode_t;

typedef struct mpilab_placement {
    mpilab_placement_mode_t mode;
    int local_rank, local_size; /* from the launcher's environment; -1 if unknown */
    int cpus;                   /* CPUs this process was allowed before pinning */
    int pinned_cpu;             /* the CPU pinned to, -1 if not pinned */
    int yield_off;              /* 1 if OMPI_MCA_mpi_yield_when_idle was set to 0 here */
    int kernel_ranks;           /* ranks on this kernel (mpilab_placement_settle), -1 before */
    int yield_oversubscribed;   /* yield was turned off but the kernel has more ranks than CPUs */
    unsigned char allowed[128]; /* the CPU mask before pinning (a cpu_set_t) */
    char reason[200];           /* why it was (not) pinned, one phrase */
} mpilab_placement_t;

/* The mode named by s ("auto", "keep"): 0, or -1 if unknown. */
int mpilab_placement_parse(const char *s, mpilab_placement_mode_t *out);
const char *mpilab_placement_name(mpilab_placement_mode_t m);

/* The value of "--placement" in argv ("--placement X" or "--placement=X"), else NULL. For
 * main()s that must decide before MPI_Init. */
const char *mpilab_placement_arg(int argc, char **argv);

/* Slurm's tasks-per-node list ("2(x3),1": 2 tasks on each of the first 3 nodes, then 1,
 * as srun sets SLURM_STEP_TASKS_PER_NODE and salloc SLURM_TASKS_PER_NODE): the tasks on node
 * `node` (0-based, SLURM_NODEID), or -1 when the list is malformed or too short. */
int mpilab_placement_slurm_tasks(const char *list, int node);

/* Call BEFORE MPI_Init. The local rank and size come from the launcher's variables
 * (OMPI_COMM_WORLD_LOCAL_RANK/SIZE, MPI_LOCALRANKID/MPI_LOCALNRANKS, SLURM_LOCALID with
 * SLURM_NTASKS_PER_NODE, or with this node's entry (SLURM_NODEID) of
 * SLURM_STEP_TASKS_PER_NODE, which srun sets, or SLURM_TASKS_PER_NODE). In auto mode, when they are known, the process is not bound
 * (allowed on more than one CPU) and local_size <= those CPUs, the process is pinned to the
 * local_rank-th allowed CPU and OMPI_MCA_mpi_yield_when_idle is set to 0 (a yielding rank
 * gives its CPU to any busy process for a whole time slice: 1-9 ms per round trip with two
 * busy loops running). Otherwise nothing changes and reason says why. Never fails. */
void mpilab_placement_apply(mpilab_placement_mode_t mode, mpilab_placement_t *out);

/* Collective, right after MPI_Init: the launcher's notion of a node can be narrower than the
 * kernel (the testbed starts every rank in its own network namespace as its own "host"), so
 * the ranks are counted per kernel (boot id) and, in auto mode, each is pinned to its own
 * CPU by its rank among them; when the kernel has more ranks than CPUs the pinning is undone
 * (and yield_oversubscribed set if yield was already turned off). */
void mpilab_placement_settle(MPI_Comm comm, mpilab_placement_t *p);

/* Raise the calling thread's scheduling priority to nice value `nice` (-20..19) when it is
 * lower than that now (a smaller nice value is a higher priority; raising needs root or
 * CAP_SYS_NICE), and, where the kernel shares CPUs between autogroups first
 * (CONFIG_SCHED_AUTOGROUP on, the process in the root cpu cgroup: one group per session), the
 * process's autogroup too: a thread's nice value only orders it within its group, and a
 * testbed job is a session of its own beside the busy loops' session. Call it after MPI_Init
 * from the thread that polls for messages: on Linux the nice value is per thread, so MPI's
 * own helper threads keep theirs. Why: a rank that polls beside a busy process of equal
 * priority on its CPU shares the CPU by whole scheduler ticks, and a message that arrives
 * while the other process holds the CPU waits for the tick; with two busy loops whole
 * launches locked into a pattern 1 ms late per message (docs/models-robust.md). At
 * nice -20 a rank holds 87/88 of its CPU against a nice-0 loop. Returns the thread's nice
 * value in force afterwards (the old one when raising failed or was not needed) and says in
 * `why` what was done; *group_old gets the autogroup's former nice value when it was changed
 * (INT_MIN otherwise), for mpilab_placement_priority_restore. Never fails. */
int mpilab_placement_priority(int nice, int *group_old, char *why, size_t len);

/* Give the autogroup back its former nice value (group_old from mpilab_placement_priority;
 * INT_MIN: nothing to do). The autogroup is the session's and outlives the process. */
void mpilab_placement_priority_restore(int group_old);

#ifdef __cplusplus
}
#endif
#endif
