/* What the simulated transport and clock add to every measured time (docs/scale.md, "Model
 * ground truth"): SimGrid SMPI sends every message with a 16-byte envelope beyond its
 * payload (tag, source, communicator: smpi_request.cpp), and every MPI_Wtime advances the
 * simulated clock by its read cost (smpi/wtime, 10 ns unless configured). On a real MPI
 * both are left at 0: nothing is known exactly there. */
#include "model/assemble.h"
#include "mpilab/mpi_check.h"

void models_wire_opts(mpilab_robust_opts_t *o)
{
#ifdef MPILAB_MPI_IS_SMPI
    o->envelope = 16.0;
    int init = 0, fin = 0;
    MPI_Initialized(&init);
    MPI_Finalized(&fin);
    if (init && !fin) {
        /* the read cost as the clock shows it: two readings in a row differ by exactly it */
        double t0 = MPI_Wtime(), t1 = MPI_Wtime();
        o->tick = t1 > t0 ? t1 - t0 : 0.0;
    }
#else
    (void)o;
#endif
}

json_t *models_wire_json(const mpilab_robust_opts_t *o)
{
    if (o->envelope == 0.0 && o->tick == 0.0)
        return NULL;
    return json_pack("{s:f,s:f,s:s}", "envelope_bytes", o->envelope, "clock_tick_s", o->tick,
                     "note", "simulated (SimGrid SMPI): sizes fitted as payload + envelope, so the "
                     "headline alpha / L are the wire's latency and the ranges' lines (predictions) "
                     "are in payload bytes; the clock's read cost subtracted from every sample of a "
                     "time spanning two readings; no headline interval narrower than one tick");
}
