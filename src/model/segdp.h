/* Exact dynamic programming over contiguous segments, shared by the least-squares and the
 * robust piecewise fits (internal). */
#ifndef MPILAB_SRC_SEGDP_H
#define MPILAB_SRC_SEGDP_H

#include <stddef.h>

/* cost[i*n + j]: cost of one segment over points [i, j] (INFINITY: not allowed). Fills
 * D[k*(n+1) + j] = least total cost of the first j points in k segments (k <= kmax) and
 * arg[] the start of the last segment; D and arg hold (kmax+1)*(n+1) entries. */
void mpilab_segdp_fill(const double *cost, size_t n, size_t kmax, double *D, size_t *arg);

/* The starts of the k segments that cover all n points (starts[0] = 0), from arg. */
void mpilab_segdp_starts(const size_t *arg, size_t n, size_t k, size_t *starts);

#endif
