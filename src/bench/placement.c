/* Rank placement before MPI_Init (include/mpilab/placement.h). */
#include "mpilab/placement.h"

#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

static void local_rank_size(int *rank, int *size)
{
    static const char *names[][2] = {{"OMPI_COMM_WORLD_LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_SIZE"},
                                     {"MPI_LOCALRANKID", "MPI_LOCALNRANKS"},
                                     {"SLURM_LOCALID", "SLURM_NTASKS_PER_NODE"}};
    for (size_t k = 0; k < sizeof names / sizeof names[0]; k++) {
        *rank = env_int(names[k][0]);
        *size = env_int(names[k][1]);
        if (*rank >= 0 && *size > 0 && *rank < *size)
            return;
    }
    *rank = *size = -1;
}

void mpilab_placement_apply(mpilab_placement_mode_t mode, mpilab_placement_t *out)
{
    memset(out, 0, sizeof *out);
    out->mode = mode;
    out->pinned_cpu = -1;
    local_rank_size(&out->local_rank, &out->local_size);
    cpu_set_t set;
    CPU_ZERO(&set);
    out->cpus = sched_getaffinity(0, sizeof set, &set) == 0 ? CPU_COUNT(&set) : -1;
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
    int seen = 0;
    for (int c = 0; c < CPU_SETSIZE; c++) {
        if (!CPU_ISSET(c, &set))
            continue;
        if (seen++ == out->local_rank) {
            cpu_set_t one;
            CPU_ZERO(&one);
            CPU_SET(c, &one);
            if (sched_setaffinity(0, sizeof one, &one) == 0)
                out->pinned_cpu = c;
            break;
        }
    }
    if (out->pinned_cpu < 0) {
        snprintf(out->reason, sizeof out->reason, "kept as launched: pinning failed");
        return;
    }
    out->yield_off = setenv("OMPI_MCA_mpi_yield_when_idle", "0", 1) == 0;
    snprintf(out->reason, sizeof out->reason, "pinned: %d local ranks on %d CPUs, one CPU each%s",
             out->local_size, out->cpus, out->yield_off ? ", no yield when idle" : "");
}
