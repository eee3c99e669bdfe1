/* Segment dynamic programming (src/model/segdp.h) and the ranges with a known top regime
 * (mpilab_robust_segments_top, include/mpilab/robust.h). */
#include "model/segdp.h"

#include "mpilab/robust.h"

#include <math.h>

void mpilab_segdp_fill(const double *cost, size_t n, size_t kmax, double *D, size_t *arg)
{
    const size_t W = n + 1;
    for (size_t k = 0; k <= kmax; k++)
        for (size_t j = 0; j <= n; j++) {
            D[k * W + j] = INFINITY;
            arg[k * W + j] = 0;
        }
    D[0] = 0;
    for (size_t k = 1; k <= kmax; k++)
        for (size_t j = 1; j <= n; j++)
            for (size_t i = 0; i < j; i++) {
                double prev = D[(k - 1) * W + i], c = cost[i * n + (j - 1)];
                if (isinf(prev) || isinf(c))
                    continue;
                if (prev + c < D[k * W + j]) {
                    D[k * W + j] = prev + c;
                    arg[k * W + j] = i;
                }
            }
}

void mpilab_segdp_starts(const size_t *arg, size_t n, size_t k, size_t *starts)
{
    const size_t W = n + 1;
    size_t j = n;
    for (size_t r = k; r >= 1; r--) {
        size_t i = arg[r * W + j];
        starts[r - 1] = i;
        j = i;
    }
}

size_t mpilab_robust_segments_top(const double *x, const double *y, const double *sigma, size_t n,
                                  size_t max_ranges, double top_x, size_t *starts)
{
    size_t kt = 0;
    while (top_x > 0 && kt < n && x[kt] < top_x)
        kt++;
    if (!(top_x > 0) || kt < 2 || kt + 2 > n || max_ranges < 2)
        return mpilab_robust_segments_sigma(x, y, sigma, n, max_ranges, starts);
    size_t K = mpilab_robust_segments_sigma(x, y, sigma, kt, max_ranges - 1, starts);
    if (K == 0)
        return 0;
    starts[K++] = kt;
    return K;
}
