/* Message sizes chosen where the curve bends (after mpptest, as MPIBlib's section 2 asks):
 * start from a coarse geometric list, then insert sizes around every measured size whose
 * value departs from the straight line between its two neighbours by more than the
 * measurement's own interval allows, until nothing bends or a budget of sizes is spent.
 * Pure functions: the caller measures. docs/models.md ("Adaptive sizes"). */
#ifndef MPILAB_ADAPTIVE_H
#define MPILAB_ADAPTIVE_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* One measured size: the reported value (e.g. the median time) and its interval. */
typedef struct mpilab_adaptive_point {
    size_t bytes;
    double value, lo, hi;
} mpilab_adaptive_point_t;

/* Why a size was added (start: the coarse list; the others name the size that bent). */
typedef struct mpilab_adaptive_why {
    size_t bytes;
    size_t bent_at;      /* the measured size whose value departed (0 for the start list) */
    double departure;    /* |value - straight line between its neighbours| (s) */
    double allowed;      /* the intervals' half widths it had to exceed (s) */
    double size;         /* the bend's rank: |departure| / line, the smaller of the measurement's
                          * and the repeat's (mpilab_adaptive_next_repeated) */
    int start;           /* 1: in the coarse start list */
} mpilab_adaptive_why_t;

/* The coarse start list: min, then min * factor^k below max, then max (min 0: 0, then 1,
 * factor, ...). Writes at most cap sizes to out; returns their number (0 on bad input:
 * min > max, factor < 2). */
size_t mpilab_adaptive_start(size_t min, size_t max, size_t factor, size_t *out, size_t cap);

/* The next sizes to measure, given the measured points pts[0..n) sorted by bytes (distinct):
 * for every inner point b with neighbours a < b < c, the straight line through a and c at b
 * (weights wa, wc) is compared with b's value; b bends when
 *     |value_b - line| > hw_b + wa hw_a + wc hw_c   (hw = half the interval)
 * The bending points are taken in order of their size relative to the curve
 * (mpilab_adaptive_bend_size), largest first, and for each
 * the geometric midpoints of (a, b) and (b, c) are proposed, where the gap leaves room
 * (an integer strictly between, not measured, not proposed) and while n + proposed < budget.
 * out[] / why[] (capacity cap) receive the proposals in increasing size; returns their
 * number (0: nothing bends, or the budget is spent). A point without a finite interval
 * counts as half width 0. */
size_t mpilab_adaptive_next(const mpilab_adaptive_point_t *pts, size_t n, size_t budget, size_t *out,
                            mpilab_adaptive_why_t *why, size_t cap);

/* b = abc[1] between a = abc[0] and c = abc[2]: its departure from the straight line
 * through a and c over what the intervals allow (as mpilab_adaptive_next tests it), signed
 * (+: above the line), when it exceeds 1; 0 when b does not bend (or a value is not finite). */
double mpilab_adaptive_bend(const mpilab_adaptive_point_t *abc);

/* The size of b's bend relative to the curve: |value_b - line| / |line| (as
 * mpilab_adaptive_bend's line), when b bends; 0 when it does not. Bends are ranked by it, not
 * by how far they exceed their intervals: a protocol switch departs by a good fraction of the
 * value, while a small step of a precisely measured size can exceed tight intervals by far. */
double mpilab_adaptive_bend_size(const mpilab_adaptive_point_t *abc);

/* As mpilab_adaptive_next, with a bend required to persist across a repeat: rep[k] is a
 * second measurement of pts[k] (value NAN: not repeated). An inner point b proposes sizes
 * only when it bends in pts and again, in the same direction, in rep[k-1..k+1] (a noise
 * spike in one measurement does not repeat; a protocol switch or a knee does). Such bends
 * are ranked by the smaller of their two sizes (mpilab_adaptive_bend_size of pts and of rep).
 * rep NULL: mpilab_adaptive_next. */
size_t mpilab_adaptive_next_repeated(const mpilab_adaptive_point_t *pts, const mpilab_adaptive_point_t *rep,
                                     size_t n, size_t budget, size_t *out, mpilab_adaptive_why_t *why, size_t cap);

#ifdef __cplusplus
}
#endif
#endif
