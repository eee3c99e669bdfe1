/* A plugin for bench/tune_diff_inject.py: bcast:inj and allreduce:inj run the native
 * collective and then, when MPILAB_INJECT_<OP> (e.g. MPILAB_INJECT_BCAST=0.10) is set, spin
 * for that fraction of the call's own duration on every rank: an injected slowdown of known
 * size for `mpilab diff` to find (docs/tune-perf.md).
 *   mpicc -shared -fPIC -I include -I build/include bench/tune_inject.c -o inj.so */
#include <stdlib.h>

#include "mpilab/ops.h"

static int slowed(mpilab_op_run_t *r, int (*run)(mpilab_op_run_t *), const char *var)
{
    const char *f = getenv(var);
    double t0 = MPI_Wtime();
    int rc = run(r);
    if (f) {
        double until = t0 + (MPI_Wtime() - t0) * (1.0 + atof(f));
        while (MPI_Wtime() < until) {
        }
    }
    return rc;
}

static int inj_bcast(mpilab_op_run_t *r)
{
    return slowed(r, mpilab_coll_run, "MPILAB_INJECT_BCAST");
}

static int inj_allreduce(mpilab_op_run_t *r)
{
    return slowed(r, mpilab_coll_run, "MPILAB_INJECT_ALLREDUCE");
}

MPILAB_PLUGIN_ENTRIES({.name = "bcast", .impl = "inj", .bytes_desc = "message", .flags = MPILAB_OP_ROOTED,
                       .setup = mpilab_coll_setup, .run = inj_bcast, .validate = mpilab_coll_validate,
                       .teardown = mpilab_coll_teardown, .family = "collective", .volume = {-1, 1, 0}},
                      {.name = "allreduce", .impl = "inj", .bytes_desc = "message (unsigned char sum)",
                       .setup = mpilab_coll_setup, .run = inj_allreduce, .validate = mpilab_coll_validate,
                       .teardown = mpilab_coll_teardown, .family = "collective", .volume = {-2, 2, 0}});
