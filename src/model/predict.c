/* Hockney predictions for mpilab's linear and binomial scatter/gather (formulas and their
 * justification: docs/models.md).  The binomial tree is the one of
 * src/coll/scatter_gather.c: relative rank vr = (rank - root) mod p, stage masks
 * 2^(L-1) ... 1; in the stage with mask m every vr that is a multiple of 2m with
 * vr + m < p exchanges min(m, p - vr - m) blocks with vr + m. */
#include <math.h>

#include "mpilab/model.h"

/* Time of one transfer src -> dst of `bytes`, from whichever pair-model matrix is used. */
typedef double (*pair_time_fn)(const void *pairs, size_t p, size_t src, size_t dst, double bytes);

static double single_time(const void *pairs, size_t p, size_t src, size_t dst, double bytes)
{
    return mpilab_hockney_time(&((const mpilab_hockney_t *)pairs)[src * p + dst], bytes);
}

static double model_time(const void *pairs, size_t p, size_t src, size_t dst, double bytes)
{
    const mpilab_pair_model_t *m = &((const mpilab_pair_model_t *)pairs)[src * p + dst];
    if (m->nranges > 0 && m->ranges)
        return mpilab_hockney_ranges_time(m->ranges, m->nranges, bytes);
    return mpilab_hockney_time(&m->h, bytes);
}

static int bad(const void *pairs, size_t p, size_t root, double bytes)
{
    return !pairs || p == 0 || root >= p || !(bytes >= 0) || isinf(bytes);
}

/* Root sends (receives) one block per other rank, one after another: the times add. */
static double linear(pair_time_fn pair_time, const void *pairs, size_t p, size_t root, double bytes,
                     int to_root)
{
    if (bad(pairs, p, root, bytes))
        return NAN;
    double t = 0;
    for (size_t j = 0; j < p; j++)
        if (j != root)
            t += to_root ? pair_time(pairs, p, j, root, bytes) : pair_time(pairs, p, root, j, bytes);
    return t;
}

/* Sum over stages of the slowest transfer of the stage. */
static double binomial(pair_time_fn pair_time, const void *pairs, size_t p, size_t root,
                       double bytes, int to_root)
{
    if (bad(pairs, p, root, bytes))
        return NAN;
    size_t top = 1;
    while (top < p)
        top <<= 1;
    double t = 0;
    for (size_t m = top >> 1; m > 0; m >>= 1) {
        double stage = 0;
        for (size_t vr = 0; vr + m < p; vr += 2 * m) {
            size_t blocks = m < p - vr - m ? m : p - vr - m;
            size_t a = (vr + root) % p, b = (vr + m + root) % p;
            double x = to_root ? pair_time(pairs, p, b, a, (double)blocks * bytes)
                               : pair_time(pairs, p, a, b, (double)blocks * bytes);
            if (x > stage)
                stage = x;
        }
        t += stage;
    }
    return t;
}

double mpilab_predict_scatter_linear(const mpilab_hockney_t *pairs, size_t p, size_t root, double bytes)
{
    return linear(single_time, pairs, p, root, bytes, 0);
}

double mpilab_predict_scatter_linear_ranges(const mpilab_pair_model_t *pairs, size_t p, size_t root, double bytes)
{
    return linear(model_time, pairs, p, root, bytes, 0);
}

double mpilab_predict_gather_linear(const mpilab_hockney_t *pairs, size_t p, size_t root, double bytes)
{
    return linear(single_time, pairs, p, root, bytes, 1);
}

double mpilab_predict_gather_linear_ranges(const mpilab_pair_model_t *pairs, size_t p, size_t root, double bytes)
{
    return linear(model_time, pairs, p, root, bytes, 1);
}

double mpilab_predict_scatter_binomial(const mpilab_hockney_t *pairs, size_t p, size_t root, double bytes)
{
    return binomial(single_time, pairs, p, root, bytes, 0);
}

double mpilab_predict_scatter_binomial_ranges(const mpilab_pair_model_t *pairs, size_t p, size_t root, double bytes)
{
    return binomial(model_time, pairs, p, root, bytes, 0);
}

double mpilab_predict_gather_binomial(const mpilab_hockney_t *pairs, size_t p, size_t root, double bytes)
{
    return binomial(single_time, pairs, p, root, bytes, 1);
}

double mpilab_predict_gather_binomial_ranges(const mpilab_pair_model_t *pairs, size_t p, size_t root, double bytes)
{
    return binomial(model_time, pairs, p, root, bytes, 1);
}
