/* Core-to-core round trip of one cache line: two threads pinned to CPUs 0 and 1 hand a flag
 * back and forth. No MPI, no mpilab code: a floor for what any benchmark on this machine
 * can see. Prints the median, minimum and 90th percentile of 2000 blocks of 100 round
 * trips, in nanoseconds (median and minimum first, as minpp prints them). */
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

enum { ROUNDS = 200000, BLOCK = 100, NBLOCK = ROUNDS / BLOCK };

static _Alignas(64) atomic_int cl_flag;

static double cl_now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static void cl_pin(int cpu)
{
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    if (pthread_setaffinity_np(pthread_self(), sizeof set, &set) != 0)
        fprintf(stderr, "corelat: cannot pin to CPU %d\n", cpu);
}

static void *cl_pong(void *arg)
{
    (void)arg;
    cl_pin(1);
    for (int i = 0; i < ROUNDS; i++) {
        while (atomic_load(&cl_flag) != 1)
            ;
        atomic_store(&cl_flag, 0);
    }
    return NULL;
}

static int cl_cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

int main(void)
{
    static double blk[NBLOCK];
    pthread_t t;
    cl_pin(0);
    if (pthread_create(&t, NULL, cl_pong, NULL) != 0)
        return 1;
    for (int b = 0; b < NBLOCK; b++) {
        double t0 = cl_now();
        for (int i = 0; i < BLOCK; i++) {
            atomic_store(&cl_flag, 1);
            while (atomic_load(&cl_flag) != 0)
                ;
        }
        blk[b] = (cl_now() - t0) / BLOCK;
    }
    pthread_join(t, NULL);
    qsort(blk, NBLOCK, sizeof blk[0], cl_cmp);
    printf("%.1f %.1f %.1f\n", blk[NBLOCK / 2] * 1e9, blk[0] * 1e9, blk[NBLOCK * 9 / 10] * 1e9);
    return 0;
}
