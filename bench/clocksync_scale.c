/* Driver for bench/clocksync_scale.py (not part of the build): compiled with smpicc against
 * libmpilab's clocksync.c, wtime.c and parse.c, run under smpirun. Every rank gets an injected
 * clock error (the --inject-clock plan: offset=10ms,drift=100ppm,seed=1), the clocks are
 * synchronised with the method named in argv[1] and the drift window argv[2] (seconds), and
 * rank 0 prints one JSON line: the synchronisation's cost in simulated time and, per rank,
 * whether the recovered offset (the error of a reading converted to rank 0's time base, the
 * truth known exactly because the simulated ranks share one clock) lies within the stated
 * uncertainty. */
#include <math.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mpilab/clocksync.h"
#include "mpilab/wtime.h"

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    mpilab_sync_method_t method;
    if (argc < 3 || mpilab_sync_method_parse(argv[1], &method) != 0) {
        if (rank == 0)
            fprintf(stderr, "usage: clocksync_scale METHOD WINDOW_S\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    double window = atof(argv[2]);
    mpilab_inject_plan_t plan;
    char err[128];
    mpilab_inject_plan_parse("offset=10ms,drift=100ppm,seed=1", &plan, err, sizeof err);
    double base = MPI_Wtime();
    MPI_Bcast(&base, 1, MPI_DOUBLE, 0, MPI_COMM_WORLD);
    mpilab_clock_inject_t mine, zero;
    mpilab_inject_plan_rank(&plan, rank, &mine);
    mpilab_inject_plan_rank(&plan, 0, &zero);
    mine.base = zero.base = base;
    mpilab_clock_inject_set(&mine);
    MPI_Barrier(MPI_COMM_WORLD);
    double start = MPI_Wtime();
    mpilab_clocksync_t cs;
    if (mpilab_clocksync_run_window(MPI_COMM_WORLD, method, window, &cs) != MPI_SUCCESS)
        MPI_Abort(MPI_COMM_WORLD, 3);
    double cost = MPI_Wtime() - start;
    double raw = MPI_Wtime();
    double e[5] = {0};
    e[0] = mpilab_clock_to_global(&cs, rank, mpilab_clock_inject_apply(&mine, raw)) -
           mpilab_clock_inject_apply(&zero, raw);
    e[1] = cs.ranks[rank].uncertainty;
    e[2] = cs.ranks[rank].drift - ((1.0 + mine.drift) / (1.0 + zero.drift) - 1.0);
    e[3] = cs.ranks[rank].drift_uncertainty;
    e[4] = mine.offset - zero.offset;
    double *all = rank == 0 ? malloc(sizeof e * (size_t)size) : NULL;
    MPI_Gather(e, 5, MPI_DOUBLE, all, 5, MPI_DOUBLE, 0, MPI_COMM_WORLD);
    double maxcost = 0.0;
    MPI_Reduce(&cost, &maxcost, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
    if (rank == 0) {
        int inside = 0, drift_in = 0;
        double maxerr = 0.0, maxu = 0.0, maxdu = 0.0, sumu = 0.0, sume = 0.0, ratio = 0.0, spread = 0.0;
        for (int r = 1; r < size; r++) {
            const double *q = &all[5 * r];
            ratio = fmax(ratio, fabs(q[0]) / q[1]);
            spread = fmax(spread, fabs(q[4]));
            inside += fabs(q[0]) <= q[1];
            drift_in += fabs(q[2]) <= q[3];
            maxerr = fmax(maxerr, fabs(q[0]));
            sume += fabs(q[0]);
            maxu = fmax(maxu, q[1]);
            maxdu = fmax(maxdu, q[3]);
            sumu += q[1];
        }
        printf("{\"method\": \"%s\", \"ranks\": %d, \"window_s\": %g, \"cost_s\": %.9g, \"attempts\": %d, "
               "\"first_attempt_s\": %.9g, \"within_uncertainty\": %d, \"checked\": %d, \"max_abs_error_s\": %.6g, \"max_uncertainty_s\": %.6g, "
               "\"mean_uncertainty_s\": %.6g, \"drift_within_uncertainty\": %d, \"max_drift_uncertainty\": %.6g, "
               "\"max_error_to_uncertainty\": %.4g, \"max_injected_offset_s\": %.6g, \"mean_abs_error_s\": %.6g, "
               "\"ran\": \"%s\", \"nodes\": %d}\n",
               mpilab_sync_method_name(method), size, window, maxcost, cs.attempts, cs.first_duration, inside, size - 1, maxerr, maxu,
               sumu / (size - 1), drift_in, maxdu, ratio, spread, sume / (size - 1), mpilab_sync_method_name(cs.method),
               cs.nodes);
        free(all);
    }
    mpilab_clocksync_free(&cs);
    MPI_Finalize();
    return 0;
}
