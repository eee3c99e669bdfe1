/* In-core bounds: a STREAM-like triad for memory bandwidth and the in-memory loop-23 rate. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "wavefront/wf_internal.h"

static double now_s(void)
{
    struct timespec ts;
    (clock_gettime)(CLOCK_MONOTONIC, &ts); /* real time, also under SMPI (wf_worker.h) */
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

typedef struct {
    double *a, *b, *c;
    size_t lo, hi;
    pthread_barrier_t *bar;
    int reps;
    double best;
} triad_arg;

static void *triad_thread(void *v)
{
    triad_arg *t = v;
    for (size_t i = t->lo; i < t->hi; i++) { /* first touch by the owner thread */
        t->a[i] = 0.0;
        t->b[i] = 1.0 + (double)(i % 7);
        t->c[i] = 2.0 - (double)(i % 5);
    }
    t->best = 1e300;
    for (int r = 0; r < t->reps; r++) {
        pthread_barrier_wait(t->bar);
        double t0 = now_s();
        double *restrict a = t->a;
        const double *restrict b = t->b, *restrict c = t->c;
        const double s = 3.0 + r;
        for (size_t i = t->lo; i < t->hi; i++)
            a[i] = b[i] + s * c[i];
        pthread_barrier_wait(t->bar);
        double dt = now_s() - t0;
        if (dt < t->best)
            t->best = dt;
    }
    return NULL;
}

double mpilab_wf_triad_bandwidth(size_t n, int threads, int reps)
{
    if (threads < 1 || n < (size_t)threads || reps < 1)
        return -1;
    double *a = malloc(n * 8), *b = malloc(n * 8), *c = malloc(n * 8);
    triad_arg *ta = calloc((size_t)threads, sizeof *ta);
    pthread_t *tid = calloc((size_t)threads, sizeof *tid);
    if (!a || !b || !c || !ta || !tid) {
        free(a), free(b), free(c), free(ta), free(tid);
        return -1;
    }
    pthread_barrier_t bar;
    pthread_barrier_init(&bar, NULL, (unsigned)threads);
    for (int i = 0; i < threads; i++) {
        ta[i] = (triad_arg){a, b, c, n * (size_t)i / (size_t)threads,
                            n * (size_t)(i + 1) / (size_t)threads, &bar, reps, 0};
        pthread_create(&tid[i], NULL, triad_thread, &ta[i]);
    }
    double worst_best = 0;
    for (int i = 0; i < threads; i++) {
        pthread_join(tid[i], NULL);
        if (ta[i].best > worst_best)
            worst_best = ta[i].best; /* slowest thread defines the parallel time */
    }
    pthread_barrier_destroy(&bar);
    volatile double sink = a[n / 2];
    (void)sink;
    free(a), free(b), free(c), free(ta), free(tid);
    return 24.0 * (double)n / worst_best;
}

double mpilab_wf_kernel_rate(int64_t rows, int64_t cols, int reps)
{
    if (rows < 3 || cols < 3 || reps < 1)
        return -1;
    size_t n = (size_t)(rows * cols);
    double *d = malloc(n * 8), *cf = malloc(5 * n * 8);
    if (!d || !cf) {
        free(d);
        free(cf);
        return -1;
    }
    for (size_t i = 0; i < n; i++)
        d[i] = (double)(i % 11) * 0.1;
    for (size_t i = 0; i < 5 * n; i++)
        cf[i] = (double)(i % 13) * 0.01;
    double best = 1e300;
    for (int r = 0; r < reps; r++) {
        double t0 = now_s();
        mpilab_wf_reference(d, cf, rows, cols, 1);
        double dt = now_s() - t0;
        if (dt < best)
            best = dt;
    }
    volatile double sink = d[n / 2];
    (void)sink;
    free(d);
    free(cf);
    return (double)((rows - 2) * (cols - 2)) / best;
}
