/* Minimal checking macros shared by the C unit tests. */
#ifndef BENCH_CHECK_H
#define BENCH_CHECK_H
#include <math.h>
#include <stdio.h>
static int bench_failures;
#define CHECK(cond)                                                                   \
    do {                                                                              \
        if (!(cond)) {                                                                \
            fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond);  \
            bench_failures++;                                                         \
        }                                                                             \
    } while (0)
/* CHECK with a printf-style explanation. */
#define CHECKF(cond, ...)                                                             \
    do {                                                                              \
        if (!(cond)) {                                                                \
            fprintf(stderr, "%s:%d: ", __FILE__, __LINE__);                           \
            fprintf(stderr, __VA_ARGS__);                                             \
            fputc('\n', stderr);                                                      \
            bench_failures++;                                                         \
        }                                                                             \
    } while (0)
#define CHECK_NEAR(a, b, tol)                                                                    \
    do {                                                                                         \
        double a_ = (a), b_ = (b);                                                               \
        if (!(fabs(a_ - b_) <= (tol))) {                                                         \
            fprintf(stderr, "%s:%d: %s = %.12g, expected %.12g (tol %g)\n", __FILE__, __LINE__, \
                    #a, a_, b_, (double)(tol));                                                  \
            bench_failures++;                                                                    \
        }                                                                                        \
    } while (0)
#define CHECK_DONE() (bench_failures ? (fprintf(stderr, "%d failure(s)\n", bench_failures), 1) : 0)
#endif
