/* Timing the grid collectives for the multilane experiments (mpilab_multilane_run_timed). */
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "coll/multilane_internal.h"
#include "mpilab/ops.h"

static double realtime(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int run_once(MPI_Comm comm, const mpilab_grid_t *g, int op, int lanes, int root, int n,
                    unsigned char *sbuf, unsigned char *rbuf)
{
    if (op == MPILAB_ML_SCATTER)
        return lanes == 0 ? MPI_Scatter(sbuf, n, MPI_BYTE, rbuf, n, MPI_BYTE, root, comm)
                          : mpilab_scatter_multilane(sbuf, n, MPI_BYTE, rbuf, n, MPI_BYTE, root,
                                                     comm, g, lanes);
    return lanes == 0 ? MPI_Gather(sbuf, n, MPI_BYTE, rbuf, n, MPI_BYTE, root, comm)
                      : mpilab_gather_multilane(sbuf, n, MPI_BYTE, rbuf, n, MPI_BYTE, root, comm,
                                                g, lanes);
}

/* This repetition's phase marks on the common time base, seconds after the root's start t0:
 * added to sum[i] (count n[i]) where some rank passed the mark. */
static void phase_marks(MPI_Comm comm, const mpilab_clocksync_t *cs, int rank, double t0,
                        double sum[4], int n[4])
{
    double lo[2], hi[2], glo[2], ghi[2];
    for (int w = 0; w < 2; w++) {
        const double first = mpilab_ml_mark_get(w, 0), last = mpilab_ml_mark_get(w, 1);
        lo[w] = isnan(first) ? INFINITY : mpilab_clock_to_global(cs, rank, first);
        hi[w] = isnan(last) ? INFINITY : -mpilab_clock_to_global(cs, rank, last);
    }
    double both[4] = {lo[0], lo[1], hi[0], hi[1]}, red[4];
    mpilab_ml_allreduce(both, red, 4, MPI_DOUBLE, MPI_MIN, comm);
    glo[0] = red[0];
    glo[1] = red[1];
    ghi[0] = -red[2];
    ghi[1] = -red[3];
    const double v[4] = {glo[0], ghi[0], glo[1], ghi[1]};
    for (int i = 0; i < 4; i++)
        if (isfinite(v[i])) {
            sum[i] += v[i] - t0;
            n[i]++;
        }
}

int mpilab_multilane_run_timed(MPI_Comm comm, const mpilab_grid_t *g, int op, int lanes, int root,
                               size_t bytes, int reps, const mpilab_clocksync_t *cs,
                               double *times, double wall[2], double *phases)
{
    int rank, p;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &p);
    if (!g || g->nranks != p || root < 0 || root >= p || reps < 1 || !times ||
        (op != MPILAB_ML_SCATTER && op != MPILAB_ML_GATHER) || lanes < 0 ||
        lanes > mpilab_grid_lanes_max(g, root))
        return mpilab_ml_fail(-1, "time: bad arguments (P = %d, P_sup = %d, reps = %d)", lanes,
                              mpilab_grid_lanes_max(g, root), reps);
    if (bytes > (size_t)INT_MAX / (size_t)p)
        return mpilab_ml_fail(-1, "time: %zu bytes per rank x %d ranks is too large", bytes, p);
    const size_t total = bytes * (size_t)p;
    const int isroot = rank == root;
    const size_t sn = op == MPILAB_ML_SCATTER ? (isroot ? total : 0) : bytes;
    const size_t rn = op == MPILAB_ML_SCATTER ? bytes : (isroot ? total : 0);
    unsigned char *sbuf = malloc(sn ? sn : 1), *rbuf = malloc(rn ? rn : 1);
    int bad = !sbuf || !rbuf, anybad = 0;
    MPI_Allreduce(&bad, &anybad, 1, MPI_INT, MPI_LOR, comm);
    if (anybad) {
        free(sbuf);
        free(rbuf);
        return mpilab_ml_fail(-1, "time: out of memory");
    }
    if (op == MPILAB_ML_SCATTER) {
        for (size_t i = 0; i < sn; i++)
            sbuf[i] = mpilab_ops_pattern((int)(i / bytes), i % bytes);
    } else {
        for (size_t i = 0; i < sn; i++)
            sbuf[i] = mpilab_ops_pattern(rank, i);
    }
    memset(rbuf, 0xA5, rn ? rn : 1);
    const int n = (int)bytes;
    int rc = run_once(comm, g, op, lanes, root, n, sbuf, rbuf);
    int wrong = 0;
    if (rc == MPI_SUCCESS) {
        if (op == MPILAB_ML_SCATTER) {
            for (size_t i = 0; i < bytes && !wrong; i++)
                wrong = rbuf[i] != mpilab_ops_pattern(rank, i);
        } else if (isroot) {
            for (size_t i = 0; i < rn && !wrong; i++)
                wrong = rbuf[i] != mpilab_ops_pattern((int)(i / bytes), i % bytes);
        }
    }
    int failed = rc != MPI_SUCCESS, anyfailed = 0, anywrong = 0;
    MPI_Allreduce(&failed, &anyfailed, 1, MPI_INT, MPI_LOR, comm);
    MPI_Allreduce(&wrong, &anywrong, 1, MPI_INT, MPI_LOR, comm);
    int ret = anyfailed ? -1 : anywrong ? 1 : 0;
    if (anyfailed)
        mpilab_ml_fail(-1, "time: the collective failed");
    double psum[4] = {0, 0, 0, 0};
    int pn[4] = {0, 0, 0, 0};
    for (int k = 0; k < reps && ret == 0; k++) {
        mpilab_ml_marks_reset();
        mpilab_ml_barrier(comm);
        double w0 = realtime(), t0 = MPI_Wtime();
        rc = run_once(comm, g, op, lanes, root, n, sbuf, rbuf);
        double mine = MPI_Wtime() - t0, w1 = realtime();
        if (k == 0 && wall && isroot) {
            wall[0] = w0;
            wall[1] = w1;
        }
        failed = rc != MPI_SUCCESS;
        mpilab_ml_allreduce(&failed, &anyfailed, 1, MPI_INT, MPI_LOR, comm);
        if (anyfailed) {
            ret = mpilab_ml_fail(-1, "time: the collective failed");
            break;
        }
        if (cs) { /* latest end minus the root's start, on rank 0's clock */
            double se[2] = {isroot ? -mpilab_clock_to_global(cs, rank, t0) : -INFINITY,
                            mpilab_clock_to_global(cs, rank, t0 + mine)};
            double mx[2];
            mpilab_ml_allreduce(se, mx, 2, MPI_DOUBLE, MPI_MAX, comm);
            times[k] = mx[1] + mx[0];
            if (phases)
                phase_marks(comm, cs, rank, -mx[0], psum, pn);
        } else {
            mpilab_ml_allreduce(&mine, &times[k], 1, MPI_DOUBLE, MPI_MAX, comm);
        }
    }
    if (wall)
        MPI_Bcast(wall, 2, MPI_DOUBLE, root, comm);
    if (phases)
        for (int i = 0; i < 4; i++)
            phases[i] = pn[i] ? psum[i] / pn[i] : NAN;
    free(sbuf);
    free(rbuf);
    return ret;
}
