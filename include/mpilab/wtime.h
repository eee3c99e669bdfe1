/* The library's timer: every clock reading of the clock synchronisation and of the
 * self-test goes through mpilab_wtime(), which is MPI_Wtime() unless a known clock error
 * was injected into this process (the self-test mode, mpilab_selftest_clock):
 *   mpilab_wtime() = raw + offset + drift * (raw - base),  raw = MPI_Wtime(). */
#ifndef MPILAB_WTIME_H
#define MPILAB_WTIME_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct mpilab_clock_inject {
    double offset; /* seconds added at raw time `base` */
    double drift;  /* dimensionless rate error (1e-6 = 1 ppm) */
    double base;   /* raw MPI_Wtime value at which the offset holds */
} mpilab_clock_inject_t;

double mpilab_wtime(void);

/* The injected clock error of this process (all zero if none). */
void mpilab_clock_inject_set(const mpilab_clock_inject_t *c);
void mpilab_clock_inject_get(mpilab_clock_inject_t *c);
/* The reading a clock with error c shows at raw time raw, and its inverse. */
double mpilab_clock_inject_apply(const mpilab_clock_inject_t *c, double raw);
double mpilab_clock_inject_invert(const mpilab_clock_inject_t *c, double reading);

/* An injection plan for a whole job: every rank r gets an offset uniform in
 * [-max_offset, max_offset] and a drift uniform in [-max_drift, max_drift], drawn from
 * `seed` and r (the same plan on every rank).
 * Spec text: comma-separated key=value, keys offset (a duration: 10ms, 250us, 0.01s),
 * drift (ppm, e.g. 100ppm or 100) and seed (non-negative integer); e.g.
 * "offset=10ms,drift=100ppm,seed=3" (a duration without unit is in seconds, as everywhere). Defaults: offset 10ms, drift 100ppm, seed 1. */
typedef struct mpilab_inject_plan {
    double max_offset, max_drift;
    unsigned long seed;
} mpilab_inject_plan_t;

/* 0, or -1 with a one-line reason naming the bad part. Offsets up to 1000 s, drifts up to
 * 10000 ppm. */
int mpilab_inject_plan_parse(const char *spec, mpilab_inject_plan_t *out, char *err, size_t errlen);
/* Rank r's clock error under the plan (base left 0: set it before use). */
void mpilab_inject_plan_rank(const mpilab_inject_plan_t *p, int rank, mpilab_clock_inject_t *out);

#ifdef __cplusplus
}
#endif
#endif
