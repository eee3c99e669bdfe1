#include "common/common.h"

#include <errno.h>
#include <hwloc.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

#include "mpilab/version.h"

int mpilab_errf(char *err, size_t errlen, const char *fmt, ...)
{
    if (err && errlen) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err, errlen, fmt, ap);
        va_end(ap);
    }
    return -1;
}

int mpilab_write_atomic(const char *path, const char *text, size_t len, char *err, size_t errlen)
{
    char tmp[PATH_MAX];
    int n = snprintf(tmp, sizeof tmp, "%s.tmp.%ld", path, (long)getpid());
    if (n < 0 || (size_t)n >= sizeof tmp) {
        snprintf(err, errlen, "%s: path too long", path);
        return -1;
    }
    FILE *f = fopen(tmp, "wb");
    if (!f) {
        snprintf(err, errlen, "%s: cannot create: %s", tmp, strerror(errno));
        return -1;
    }
    size_t w = fwrite(text, 1, len, f);
    int bad = (w != len) | (fflush(f) != 0) | (fsync(fileno(f)) != 0);
    int saved = errno;
    bad |= (fclose(f) != 0);
    if (bad) {
        snprintf(err, errlen, "%s: write failed: %s", tmp, strerror(saved ? saved : errno));
        unlink(tmp);
        return -1;
    }
    if (rename(tmp, path) != 0) {
        snprintf(err, errlen, "%s: cannot rename into place: %s", path, strerror(errno));
        unlink(tmp);
        return -1;
    }
    return 0;
}

int mpilab_json_write_atomic(const char *path, const json_t *root, char *err, size_t errlen)
{
    char *text = json_dumps(root, JSON_INDENT(1) | JSON_REAL_PRECISION(10));
    if (!text) {
        snprintf(err, errlen, "%s: cannot serialise results", path);
        return -1;
    }
    size_t len = strlen(text);
    /* end with a newline */
    char *withnl = realloc(text, len + 2);
    if (!withnl) {
        free(text);
        snprintf(err, errlen, "%s: out of memory", path);
        return -1;
    }
    withnl[len] = '\n';
    withnl[len + 1] = '\0';
    int rc = mpilab_write_atomic(path, withnl, len + 1, err, errlen);
    free(withnl);
    return rc;
}

void mpilab_iso_date(char *buf, size_t len)
{
    time_t now = time(NULL);
    struct tm tm;
    gmtime_r(&now, &tm);
    strftime(buf, len, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

/* Logical PU this thread last ran on, via hwloc; -1 if unknown. */
static int current_pu(void)
{
    hwloc_topology_t topo;
    if (hwloc_topology_init(&topo) != 0)
        return -1;
    int pu = -1;
    if (hwloc_topology_load(topo) == 0) {
        hwloc_bitmap_t set = hwloc_bitmap_alloc();
        if (set && hwloc_get_last_cpu_location(topo, set, HWLOC_CPUBIND_THREAD) == 0)
            pu = hwloc_bitmap_first(set);
        hwloc_bitmap_free(set);
    }
    hwloc_topology_destroy(topo);
    return pu;
}

/* MCA parameters that select or tune the transport, as Open MPI passes them to the ranks. */
static json_t *mca_json(void)
{
    static const char *keep[] = {"btl", "pml", "mtl", "osc", "coll", "mpi_yield_when_idle", NULL};
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

json_t *mpilab_provenance(MPI_Comm comm, const char *tool, int argc, char **argv)
{
    json_t *p = json_object();
    json_object_set_new(p, "tool", json_string(tool));
    json_object_set_new(p, "version", json_string(MPILAB_VERSION_STRING));

    char lib[MPI_MAX_LIBRARY_VERSION_STRING] = "";
    int liblen = 0;
    MPI_Get_library_version(lib, &liblen);
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

    char host[MPI_MAX_PROCESSOR_NAME] = "";
    int hlen = 0;
    int inited = 0;
    MPI_Initialized(&inited);
    int pu = current_pu();
    json_t *hosts = json_array();
    json_t *mapping = json_array();
    if (inited && comm != MPI_COMM_NULL) {
        int rank = 0, size = 1;
        MPI_Comm_rank(comm, &rank);
        MPI_Comm_size(comm, &size);
        MPI_Get_processor_name(host, &hlen);
        char *all = NULL;
        int *pus = NULL;
        if (rank == 0) {
            all = calloc((size_t)size, MPI_MAX_PROCESSOR_NAME);
            pus = calloc((size_t)size, sizeof *pus);
        }
        MPI_Gather(host, MPI_MAX_PROCESSOR_NAME, MPI_CHAR, all, MPI_MAX_PROCESSOR_NAME, MPI_CHAR, 0, comm);
        MPI_Gather(&pu, 1, MPI_INT, pus, 1, MPI_INT, 0, comm);
        if (rank == 0 && all && pus) {
            for (int r = 0; r < size; r++) {
                const char *h = all + (size_t)r * MPI_MAX_PROCESSOR_NAME;
                int seen = 0;
                for (size_t k = 0; k < json_array_size(hosts); k++)
                    if (strcmp(json_string_value(json_array_get(hosts, k)), h) == 0)
                        seen = 1;
                if (!seen)
                    json_array_append_new(hosts, json_string(h));
                json_array_append_new(mapping, json_pack("{s:i,s:s,s:i}", "rank", r, "host", h, "pu", pus[r]));
            }
        }
        free(all);
        free(pus);
        json_object_set_new(p, "ranks", json_integer(size));
    } else {
        gethostname(host, sizeof host - 1);
        json_array_append_new(hosts, json_string(host));
        json_array_append_new(mapping, json_pack("{s:i,s:s,s:i}", "rank", 0, "host", host, "pu", pu));
        json_object_set_new(p, "ranks", json_integer(1));
    }
    json_object_set_new(p, "hosts", hosts);
    json_object_set_new(p, "mapping", mapping);
    json_object_set_new(p, "mca", mca_json());
    const char *transport = getenv("MPILAB_TRANSPORT");
    if (transport && *transport)
        json_object_set_new(p, "transport", json_string(transport));
    return p;
}
