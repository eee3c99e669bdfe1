/* Model sizes past the regime changes (include/mpilab/model_extend.h). */
#include <math.h>

#include "mpilab/model_extend.h"

void mpilab_extend_opts_default(mpilab_extend_opts_t *o)
{
    *o = (mpilab_extend_opts_t){.tol = 0.05, .factor = 4, .max_bytes = (size_t)64 << 20, .max_time_s = 1.0,
                                .max_added = 6, .max_stream_s = 2.0, .span = 16};
}

static double half_width(const mpilab_adaptive_point_t *p)
{
    double h = (p->hi - p->lo) / 2;
    return isfinite(h) && h > 0 ? h : 0.0;
}

mpilab_extend_state_t mpilab_extend_next(const mpilab_adaptive_point_t *pts, size_t n, size_t added,
                                         const mpilab_extend_opts_t *o, mpilab_extend_step_t *out)
{
    *out = (mpilab_extend_step_t){MPILAB_EXTEND_NO_DATA, 0, NAN, NAN, NAN, NAN};
    if (n < 3)
        return out->state;
    const mpilab_adaptive_point_t *a = &pts[n - 3], *b = &pts[n - 2], *c = &pts[n - 1];
    if (!isfinite(a->value) || !isfinite(b->value) || !isfinite(c->value) || !(a->bytes < b->bytes) ||
        !(b->bytes < c->bytes))
        return out->state;
    double s1 = (b->value - a->value) / ((double)b->bytes - (double)a->bytes);
    double s2 = (c->value - b->value) / ((double)c->bytes - (double)b->bytes);
    double h1 = (half_width(a) + half_width(b)) / ((double)b->bytes - (double)a->bytes);
    double h2 = (half_width(b) + half_width(c)) / ((double)c->bytes - (double)b->bytes);
    out->slope_prev = s1;
    out->slope_top = s2;
    out->slope_half = h2;
    /* n_half: the size whose transfer time equals the smallest size's time (the latency);
     * below a few of it a shaper's burst or a window's ramp still bends the curve */
    double n_half = s2 > 0 && isfinite(pts[0].value) && pts[0].value > 0 ? pts[0].value / s2 : INFINITY;
    out->n_half = n_half;
    if (s2 > 0 && fabs(s2 - s1) <= o->tol * s2 + h1 + h2 && h2 <= o->tol * s2 && (double)c->bytes >= o->span * n_half)
        return out->state = MPILAB_EXTEND_LINEAR;
    if (added >= o->max_added)
        return out->state = MPILAB_EXTEND_MAX_ADDED;
    if (o->factor < 2 || c->bytes > o->max_bytes / o->factor)
        return out->state = MPILAB_EXTEND_MAX_BYTES;
    size_t next = c->bytes * o->factor;
    /* the time at the next size along the steeper of the two top slopes (a negative or
     * noisy slope says nothing: then the time scales with the size) */
    double s = s2 > s1 ? s2 : s1;
    double t = s > 0 ? c->value + s * ((double)next - (double)c->bytes) : c->value * (double)o->factor;
    if (!(t <= o->max_time_s))
        return out->state = MPILAB_EXTEND_MAX_TIME;
    out->next = next;
    return out->state = MPILAB_EXTEND_MORE;
}

const char *mpilab_extend_state_name(mpilab_extend_state_t s)
{
    switch (s) {
    case MPILAB_EXTEND_MORE: return "more";
    case MPILAB_EXTEND_LINEAR: return "linear";
    case MPILAB_EXTEND_MAX_BYTES: return "max_bytes";
    case MPILAB_EXTEND_MAX_TIME: return "max_time";
    case MPILAB_EXTEND_MAX_ADDED: return "max_added";
    case MPILAB_EXTEND_NO_DATA: return "no_data";
    }
    return "unknown";
}
