/* Adaptive message sizes (include/mpilab/adaptive.h). */
#include <math.h>
#include <stdlib.h>

#include "mpilab/adaptive.h"

size_t mpilab_adaptive_start(size_t min, size_t max, size_t factor, size_t *out, size_t cap)
{
    if (min > max || factor < 2 || cap == 0)
        return 0;
    size_t n = 0, s = min;
    if (s == 0) {
        out[n++] = 0;
        s = 1;
    }
    while (n < cap && s < max) {
        out[n++] = s;
        if (s > max / factor)
            break;
        s *= factor;
    }
    if (n < cap && (n == 0 || out[n - 1] != max))
        out[n++] = max;
    return n;
}

static double half(const mpilab_adaptive_point_t *p)
{
    double h = (p->hi - p->lo) / 2;
    return isfinite(h) && h > 0 ? h : 0.0;
}

typedef struct bend {
    size_t k;
    double score, dep, allowed;
} bend_t;

static int by_score(const void *x, const void *y)
{
    const bend_t *p = x, *q = y;
    if (p->score != q->score)
        return (p->score < q->score) - (p->score > q->score);
    return (p->k > q->k) - (p->k < q->k); /* equal sizes: the smaller message first */
}

static int taken(const size_t *v, size_t n, size_t s)
{
    for (size_t k = 0; k < n; k++)
        if (v[k] == s)
            return 1;
    return 0;
}

/* The geometric midpoint of (a, b), or 0 when no integer lies strictly between. */
static size_t midpoint(size_t a, size_t b)
{
    if (b <= a + 1)
        return 0;
    size_t m = a == 0 ? 1 : (size_t)llround(sqrt((double)a * (double)b));
    if (m <= a)
        m = a + 1;
    if (m >= b)
        m = b - 1;
    return m;
}

double mpilab_adaptive_bend(const mpilab_adaptive_point_t *abc)
{
    const mpilab_adaptive_point_t *pa = &abc[0], *pb = &abc[1], *pc = &abc[2];
    double span = (double)pc->bytes - (double)pa->bytes;
    if (!(span > 0))
        return 0.0;
    double wc = ((double)pb->bytes - (double)pa->bytes) / span, wa = 1 - wc;
    double line = wa * pa->value + wc * pc->value, dep = pb->value - line;
    double allowed = half(pb) + wa * half(pa) + wc * half(pc);
    if (!isfinite(dep) || fabs(dep) <= allowed)
        return 0.0;
    return allowed > 0 ? dep / allowed : copysign(INFINITY, dep);
}

double mpilab_adaptive_bend_size(const mpilab_adaptive_point_t *abc)
{
    const mpilab_adaptive_point_t *pa = &abc[0], *pb = &abc[1], *pc = &abc[2];
    if (mpilab_adaptive_bend(abc) == 0.0)
        return 0.0;
    double wc = ((double)pb->bytes - (double)pa->bytes) / ((double)pc->bytes - (double)pa->bytes);
    double line = (1 - wc) * pa->value + wc * pc->value, r = fabs(pb->value - line) / fabs(line);
    return isfinite(r) ? r : 0.0;
}

size_t mpilab_adaptive_next(const mpilab_adaptive_point_t *pts, size_t n, size_t budget, size_t *out,
                            mpilab_adaptive_why_t *why, size_t cap)
{
    return mpilab_adaptive_next_repeated(pts, NULL, n, budget, out, why, cap);
}

size_t mpilab_adaptive_next_repeated(const mpilab_adaptive_point_t *pts, const mpilab_adaptive_point_t *rep,
                                     size_t n, size_t budget, size_t *out, mpilab_adaptive_why_t *why, size_t cap)
{
    if (n < 3 || n >= budget || cap == 0)
        return 0;
    bend_t *b = malloc(n * sizeof *b);
    if (!b)
        return 0;
    size_t nb = 0;
    for (size_t k = 1; k + 1 < n; k++) {
        double s = mpilab_adaptive_bend(&pts[k - 1]);
        if (s == 0.0 || (rep && !(mpilab_adaptive_bend(&rep[k - 1]) * s > 0)))
            continue;
        /* ranked by the bend's size relative to the curve, the smaller of the measurement's
         * and the repeat's: a bend that persists only in part ranks by what persists */
        double size = mpilab_adaptive_bend_size(&pts[k - 1]);
        if (rep)
            size = fmin(size, mpilab_adaptive_bend_size(&rep[k - 1]));
        const mpilab_adaptive_point_t *pa = &pts[k - 1], *pb = &pts[k], *pc = &pts[k + 1];
        double wc = ((double)pb->bytes - (double)pa->bytes) / ((double)pc->bytes - (double)pa->bytes);
        double dep = fabs(pb->value - ((1 - wc) * pa->value + wc * pc->value));
        b[nb++] = (bend_t){k, size, dep, half(pb) + (1 - wc) * half(pa) + wc * half(pc)};
    }
    qsort(b, nb, sizeof *b, by_score);
    size_t np = 0;
    for (size_t q = 0; q < nb && np < cap && n + np < budget; q++) {
        size_t k = b[q].k;
        size_t cand[2] = {midpoint(pts[k - 1].bytes, pts[k].bytes), midpoint(pts[k].bytes, pts[k + 1].bytes)};
        for (int h = 0; h < 2 && np < cap && n + np < budget; h++) {
            size_t s = cand[h];
            int measured = 0;
            for (size_t j = 0; j < n; j++)
                measured |= pts[j].bytes == s;
            if (s == 0 || measured || taken(out, np, s))
                continue;
            out[np] = s;
            why[np] = (mpilab_adaptive_why_t){s, pts[k].bytes, b[q].dep, b[q].allowed, b[q].score, 0};
            np++;
        }
    }
    free(b);
    /* increasing size (insertion sort: few proposals) */
    for (size_t a = 1; a < np; a++)
        for (size_t c = a; c > 0 && out[c - 1] > out[c]; c--) {
            size_t s = out[c];
            out[c] = out[c - 1];
            out[c - 1] = s;
            mpilab_adaptive_why_t w = why[c];
            why[c] = why[c - 1];
            why[c - 1] = w;
        }
    return np;
}
