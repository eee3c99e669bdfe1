/* mpilab-bench-suite: TRANSITIONAL runner until tools/mpilab-bench calls the suite hooks
 * itself. It is tools/mpilab-bench.c unchanged (built with main renamed) behind this small
 * front: it takes the suite options (--window, --pairs, --poll-sweep, --comb-msgs) out of
 * argv, registers the suite entries, runs the engine's runner, then adds the suite's
 * "derived" values, the "suite" configuration and the MCA parameters of the run
 * (provenance.mca) to the results file it wrote. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/common.h"
#include "suite/suite_json.h"

extern char **environ;

int mpilab_bench_tool_main(int argc, char **argv);

static int my_rank(void)
{
    static const char *vars[] = {"OMPI_COMM_WORLD_RANK", "PMIX_RANK", "PMI_RANK", "SLURM_PROCID"};
    for (size_t k = 0; k < sizeof vars / sizeof vars[0]; k++) {
        const char *v = getenv(vars[k]);
        if (v && *v)
            return atoi(v);
    }
    return 0;
}

static int is_suite_option(const char *name, size_t len)
{
    for (const char *const *o = mpilab_suite_option_names(); *o; o++)
        if (strlen(*o) == len && strncmp(*o, name, len) == 0)
            return 1;
    return 0;
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

int main(int argc, char **argv)
{
    char **av = calloc((size_t)argc + 1, sizeof *av);
    if (!av)
        return 1;
    int ac = 0;
    const char *out = NULL;
    char err[256];
    av[ac++] = argv[0];
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (strncmp(a, "--", 2) == 0 && a[2]) {
            const char *name = a + 2, *eq = strchr(name, '=');
            size_t len = eq ? (size_t)(eq - name) : strlen(name);
            if (is_suite_option(name, len)) {
                char nm[32];
                snprintf(nm, sizeof nm, "%.*s", (int)len, name);
                const char *val = eq ? eq + 1 : (i + 1 < argc ? argv[++i] : NULL);
                if (mpilab_suite_parse_option(nm, val, err, sizeof err) != 0) {
                    if (my_rank() == 0)
                        fprintf(stderr, "mpilab-bench: %s\n", err);
                    free(av);
                    return 2;
                }
                continue;
            }
            if (strcmp(a, "--out") == 0 && i + 1 < argc)
                out = argv[i + 1];
            else if (strncmp(a, "--out=", 6) == 0)
                out = a + 6;
        }
        av[ac++] = argv[i];
    }
    if (mpilab_suite_register() != 0) {
        fprintf(stderr, "mpilab-bench: cannot register the suite entries\n");
        free(av);
        return 1;
    }
    int rc = mpilab_bench_tool_main(ac, av);
    free(av);
    if (rc != 0 || !out || my_rank() != 0)
        return rc;
    json_error_t je;
    json_t *root = json_load_file(out, 0, &je);
    if (!root) {
        fprintf(stderr, "mpilab-bench: %s:%d: cannot re-read the results: %s\n", out, je.line, je.text);
        return 1;
    }
    mpilab_suite_annotate(root);
    json_t *prov = json_object_get(root, "provenance");
    if (json_is_object(prov))
        json_object_set_new(prov, "mca", mca_json());
    if (mpilab_json_write_atomic(out, root, err, sizeof err) != 0) {
        fprintf(stderr, "mpilab-bench: %s\n", err);
        rc = 1;
    }
    json_decref(root);
    return rc;
}
