/* The "provenance" object of every results file: what ran, where, how it was started and
 * bound, and what it was built from (docs/results-schema.md). */
#include "common/common.h"

#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "mpilab/cpuidle.h"
#include "mpilab/version.h"
#include "mpilab_build_info.h" /* generated at build time: compiler, flags, git commit */

extern char **environ;

/* The CPU this thread last ran on (sched_getcpu: the kernel's number, the OS index hwloc's
 * last-CPU location also gives); -1 if unknown. Loading hwloc's whole
 * topology for the one number would cost 5-10 ms of every launch's provenance. */
static int current_pu(void)
{
    int cpu = sched_getcpu();
    return cpu >= 0 ? cpu : -1;
}

#define CPUS_LEN 256

/* The CPUs this process may run on (sched_getaffinity) as a list "0-3,6", and how many.
 * A process is bound when that set is smaller than the CPUs online. */
static int allowed_cpus(char *out, size_t len)
{
    cpu_set_t set;
    out[0] = '\0';
    if (sched_getaffinity(0, sizeof set, &set) != 0)
        return -1;
    size_t used = 0;
    int count = 0;
    for (int c = 0; c < CPU_SETSIZE; c++) {
        if (!CPU_ISSET(c, &set))
            continue;
        int e = c;
        while (e + 1 < CPU_SETSIZE && CPU_ISSET(e + 1, &set))
            e++;
        count += e - c + 1;
        int n = e > c ? snprintf(out + used, len - used, "%s%d-%d", used ? "," : "", c, e)
                      : snprintf(out + used, len - used, "%s%d", used ? "," : "", c);
        if (n < 0 || (size_t)n >= len - used) {
            snprintf(out, len, "?");
            break;
        }
        used += (size_t)n;
        c = e;
    }
    return count;
}

/* MCA parameters that select or tune the transport, as Open MPI passes them to the ranks. */
static json_t *mca_json(void)
{
    static const char *const keep[] = {"btl", "pml", "mtl", "osc", "coll", "mpi_yield_when_idle", NULL};
    json_t *o = json_object();
    for (char **e = environ; *e; e++) {
        if (strncmp(*e, "OMPI_MCA_", 9) != 0)
            continue;
        const char *kv = *e + 9, *eq = strchr(kv, '=');
        if (!eq)
            continue;
        size_t len = (size_t)(eq - kv);
        int ok = 0;
        for (size_t k = 0; keep[k]; k++) {
            size_t kl = strlen(keep[k]);
            if (len >= kl && strncmp(kv, keep[k], kl) == 0 && (len == kl || kv[kl] == '_'))
                ok = 1;
        }
        if (!ok)
            continue;
        char key[128];
        snprintf(key, sizeof key, "%.*s", (int)(len < 120 ? len : 120), kv);
        json_object_set_new(o, key, json_string(eq + 1));
    }
    return o;
}

static int env_set(const char *name)
{
    const char *v = getenv(name);
    return v && *v;
}

/* How the ranks were started. `mpilab` sets MPILAB_LAUNCHER (name) and
 * MPILAB_LAUNCHER_ARGS (a JSON array: the launcher's command line up to the program);
 * otherwise the launcher is recognised from the variables it gives its ranks. */
static json_t *launcher_json(void)
{
    json_t *l = json_object();
    const char *name = getenv("MPILAB_LAUNCHER");
    if (name && *name) {
        json_object_set_new(l, "name", json_string(name));
        json_object_set_new(l, "source", json_string("mpilab"));
        const char *args = getenv("MPILAB_LAUNCHER_ARGS");
        json_t *a = args ? json_loads(args, 0, NULL) : NULL;
        if (a && json_is_array(a))
            json_object_set_new(l, "args", a);
        else
            json_decref(a);
        return l;
    }
    const char *guess = "unknown";
    if (env_set("OMPI_COMM_WORLD_SIZE") && env_set("OMPI_MCA_orte_hnp_uri"))
        guess = "mpirun";                      /* Open MPI's mpirun/mpiexec (ORTE) */
    else if (env_set("SLURM_STEP_ID") && env_set("SLURM_PROCID")) {
        guess = "srun";
        /* srun gives its tasks the PMI plugin it was asked for (--mpi=pmix, pmi2, none) */
        const char *plugin = getenv("SLURM_MPI_TYPE");
        if (plugin && *plugin)
            json_object_set_new(l, "pmi", json_string(plugin));
    }
    else if (env_set("PMI_RANK") && (env_set("PMI_FD") || env_set("PMI_PORT")))
        guess = "mpiexec.hydra";               /* MPICH's Hydra */
    json_object_set_new(l, "name", json_string(guess));
    json_object_set_new(l, "source", json_string("environment"));
    return l;
}

/* The Slurm job and step the ranks run in; NULL outside Slurm. */
static json_t *slurm_json(void)
{
    if (!env_set("SLURM_JOB_ID"))
        return NULL;
    static const struct { const char *key, *env; } vars[] = {
        {"job_id", "SLURM_JOB_ID"},   {"step_id", "SLURM_STEP_ID"},
        {"nodelist", "SLURM_JOB_NODELIST"}, {"ntasks", "SLURM_NTASKS"},
        {"cpus_on_node", "SLURM_CPUS_ON_NODE"}, {"cluster", "SLURM_CLUSTER_NAME"},
        {"mpi_type", "SLURM_MPI_TYPE"}, {"tasks_per_node", "SLURM_STEP_TASKS_PER_NODE"},
    };
    json_t *s = json_object();
    for (size_t k = 0; k < sizeof vars / sizeof vars[0]; k++) {
        const char *v = getenv(vars[k].env);
        if (v && *v)
            json_object_set_new(s, vars[k].key, json_string(v));
    }
    return s;
}

/* What libmpilab (and the tool linked with it) was built from. */
static json_t *build_json(void)
{
    return json_pack("{s:s,s:s,s:s,s:s,s:b,s:{s:s,s:s,s:s}}",
                     "compiler", MPILAB_BUILD_COMPILER, "flags", MPILAB_BUILD_FLAGS,
                     "build_type", MPILAB_BUILD_TYPE, "git_commit", MPILAB_BUILD_GIT_COMMIT,
                     "git_dirty", MPILAB_BUILD_GIT_DIRTY, "mpi", "impl", MPILAB_BUILD_MPI_IMPL,
                     "version", MPILAB_BUILD_MPI_VERSION, "compiler", MPILAB_BUILD_MPI_CC);
}

/* The calling process's machine: what waking an idle CPU costs there (mpilab/cpuidle.h);
 * unknown values are null. */
static json_t *cpu_idle_json(void)
{
    mpilab_cpuidle_t ci;
    mpilab_cpuidle_read(NULL, &ci);
    int halt = mpilab_cpuidle_may_halt(&ci);
    json_t *o = json_object();
    json_object_set_new(o, "driver", ci.driver[0] ? json_string(ci.driver) : json_null());
    json_object_set_new(o, "governor", ci.governor[0] ? json_string(ci.governor) : json_null());
    json_object_set_new(o, "deepest_state", ci.deepest[0] ? json_string(ci.deepest) : json_null());
    json_object_set_new(o, "deepest_exit_latency_us",
                        ci.deepest_exit_us >= 0 ? json_integer((json_int_t)ci.deepest_exit_us) : json_null());
    json_object_set_new(o, "halt_poll_ns", ci.halt_poll_ns >= 0 ? json_integer((json_int_t)ci.halt_poll_ns) : json_null());
    json_object_set_new(o, "latency_limit_us",
                        ci.latency_limit_us >= 0 ? json_integer((json_int_t)ci.latency_limit_us) : json_null());
    json_object_set_new(o, "may_halt", halt < 0 ? json_null() : json_boolean(halt));
    return o;
}

/* One rank's facts, gathered to rank 0 as fixed-size records. */
struct rank_info {
    char host[MPI_MAX_PROCESSOR_NAME];
    char cpus[CPUS_LEN];
    int pu, ncpus;
};

static json_t *mapping_entry(int rank, const struct rank_info *ri, long online)
{
    json_t *m = json_pack("{s:i,s:s,s:i}", "rank", rank, "host", ri->host, "pu", ri->pu);
    if (ri->ncpus > 0) {
        json_object_set_new(m, "cpus", json_string(ri->cpus));
        json_object_set_new(m, "bound", json_boolean(online > 0 && ri->ncpus < online));
    }
    return m;
}

json_t *mpilab_provenance(MPI_Comm comm, const char *tool, int argc, char **argv)
{
    json_t *p = json_object();
    json_object_set_new(p, "tool", json_string(tool));
    json_object_set_new(p, "version", json_string(MPILAB_VERSION_STRING));

    char lib[MPI_MAX_LIBRARY_VERSION_STRING] = "";
    int liblen = 0;
    MPI_Get_library_version(lib, &liblen);
    /* the whole string, trimmed, as the library's own account of its build */
    size_t ll = strlen(lib);
    while (ll && (lib[ll - 1] == '\n' || lib[ll - 1] == ' ' || lib[ll - 1] == '\t'))
        lib[--ll] = '\0';
    json_object_set_new(p, "mpi_library", json_string(lib));
    char *nl = strchr(lib, '\n');
    if (nl)
        *nl = '\0';
    char *comma = strchr(lib, ',');
    if (comma && strncmp(lib, "Open MPI", 8) == 0)
        *comma = '\0';
    json_object_set_new(p, "mpi", json_string(lib));
    int ver = 0, sub = 0;
    MPI_Get_version(&ver, &sub);
    char vbuf[32];
    snprintf(vbuf, sizeof vbuf, "%d.%d", ver, sub);
    json_object_set_new(p, "mpi_standard", json_string(vbuf));
    json_object_set_new(p, "build", build_json());

    char date[32];
    mpilab_iso_date(date, sizeof date);
    json_object_set_new(p, "date", json_string(date));

    size_t cmdlen = 1;
    for (int i = 0; i < argc; i++)
        cmdlen += strlen(argv[i]) + 1;
    char *cmd = calloc(cmdlen, 1);
    if (cmd) {
        for (int i = 0; i < argc; i++) {
            if (i)
                strcat(cmd, " ");
            strcat(cmd, argv[i]);
        }
        json_object_set_new(p, "command", json_string(cmd));
        free(cmd);
    }
    json_object_set_new(p, "launcher", launcher_json());
    json_t *slurm = slurm_json();
    if (slurm)
        json_object_set_new(p, "slurm", slurm);

    long online = sysconf(_SC_NPROCESSORS_ONLN);
    struct rank_info me;
    memset(&me, 0, sizeof me);
    me.pu = current_pu();
    me.ncpus = allowed_cpus(me.cpus, sizeof me.cpus);
    int inited = 0, root = 1;
    MPI_Initialized(&inited);
    json_t *hosts = json_array();
    json_t *mapping = json_array();
    if (inited && comm != MPI_COMM_NULL) {
        int rank = 0, size = 1, hlen = 0;
        MPI_Comm_rank(comm, &rank);
        MPI_Comm_size(comm, &size);
        root = rank == 0;
        MPI_Get_processor_name(me.host, &hlen);
        struct rank_info *all = NULL;
        if (rank == 0)
            all = calloc((size_t)size, sizeof *all);
        MPI_Gather(&me, (int)sizeof me, MPI_BYTE, all, (int)sizeof me, MPI_BYTE, 0, comm);
        if (rank == 0 && all) {
            for (int r = 0; r < size; r++) {
                all[r].host[MPI_MAX_PROCESSOR_NAME - 1] = '\0';
                all[r].cpus[CPUS_LEN - 1] = '\0';
                int seen = 0;
                for (size_t k = 0; k < json_array_size(hosts); k++)
                    if (strcmp(json_string_value(json_array_get(hosts, k)), all[r].host) == 0)
                        seen = 1;
                if (!seen)
                    json_array_append_new(hosts, json_string(all[r].host));
                json_array_append_new(mapping, mapping_entry(r, &all[r], online));
            }
        }
        free(all);
        json_object_set_new(p, "ranks", json_integer(size));
    } else {
        gethostname(me.host, sizeof me.host - 1);
        json_array_append_new(hosts, json_string(me.host));
        json_array_append_new(mapping, mapping_entry(0, &me, online));
        json_object_set_new(p, "ranks", json_integer(1));
    }
    json_object_set_new(p, "hosts", hosts);
    json_object_set_new(p, "mapping", mapping);
    json_object_set_new(p, "mca", mca_json());
    if (root) /* only rank 0's object is kept: the other ranks skip the sysfs reads */
        json_object_set_new(p, "cpu_idle", cpu_idle_json());
    const char *transport = getenv("MPILAB_TRANSPORT");
    if (transport && *transport)
        json_object_set_new(p, "transport", json_string(transport));
    return p;
}
