/* Model sizes that reach the regime they fit: after a size sweep, larger sizes are added
 * (x factor) until the last two segments of the curve have the same slope, so that a
 * Hockney beta or a LogGP G is taken past a shaper's burst allowance, a TCP window ramp or
 * an eager-to-rendezvous switch instead of inside them. Pure functions: the caller
 * measures. docs/models.md ("Model sizes"). */
#ifndef MPILAB_MODEL_EXTEND_H
#define MPILAB_MODEL_EXTEND_H

#include <stddef.h>

#include "mpilab/adaptive.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct mpilab_extend_opts {
    double tol;        /* the two top slopes agree, and the top one is known, within tol (0.05) */
    size_t factor;     /* next size = largest measured size x factor (4) */
    size_t max_bytes;  /* never a size above this (64 MiB) */
    double max_time_s; /* never a size whose predicted time exceeds this (1 s) */
    size_t max_added;  /* at most this many sizes added (6) */
    double max_stream_s; /* LogGP measures an added size only while a gap stream of it (burst x
                          * its one-way time) takes at most this (2 s) */
    double span;       /* the top size is at least span x n_half (16) */
} mpilab_extend_opts_t;

typedef enum mpilab_extend_state {
    MPILAB_EXTEND_MORE = 0,  /* measure `next` and ask again */
    MPILAB_EXTEND_LINEAR,    /* the top regime is reached: the last two slopes agree */
    MPILAB_EXTEND_MAX_BYTES, /* not reached; the next size would exceed max_bytes */
    MPILAB_EXTEND_MAX_TIME,  /* not reached; the next size would take longer than max_time_s */
    MPILAB_EXTEND_MAX_ADDED, /* not reached; max_added sizes were added */
    MPILAB_EXTEND_NO_DATA    /* fewer than 3 sizes with finite values, or a top slope <= 0 */
} mpilab_extend_state_t;

typedef struct mpilab_extend_step {
    mpilab_extend_state_t state;
    size_t next;                 /* MORE: the size to measure */
    double slope_prev, slope_top; /* s/byte over the last two segments */
    double slope_half;           /* the top slope's half width from the intervals (s/byte) */
    double n_half;               /* the smallest size's value / the top slope (bytes) */
} mpilab_extend_step_t;

void mpilab_extend_opts_default(mpilab_extend_opts_t *o);

/* One step over the measured points pts[0..n) sorted by bytes (distinct), `added` of them
 * already added by this rule. With a < b < c the three largest sizes,
 *     s1 = (v_b - v_a) / (b - a),  s2 = (v_c - v_b) / (c - b),
 *     h1 = (hw_a + hw_b) / (b - a),  h2 = (hw_b + hw_c) / (c - b)
 * (hw = half an interval); the regime is reached when s2 > 0, |s2 - s1| <= tol s2 + h1 + h2
 * (no bend beyond the noise), h2 <= tol s2 (the top slope is known to tol) and c >= span x
 * n_half, n_half = v_0 / s2 (the size whose transfer takes as long as the smallest size's
 * whole time: a shaper's burst allowance and a TCP window's ramp are of that order, so two
 * slopes below a few n_half can agree by chance and still be short of the rate). Otherwise
 * the next size is c x factor unless a limit stops it. */
mpilab_extend_state_t mpilab_extend_next(const mpilab_adaptive_point_t *pts, size_t n, size_t added,
                                         const mpilab_extend_opts_t *o, mpilab_extend_step_t *out);

/* "more", "linear", "max_bytes", "max_time", "max_added", "no_data". */
const char *mpilab_extend_state_name(mpilab_extend_state_t s);

#ifdef __cplusplus
}
#endif
#endif
