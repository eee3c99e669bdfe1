/* Segment dynamic programming (src/model/segdp.h). */
#include "model/segdp.h"

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
