/* msgcost_pingpong: ranks 0 and 1 exchange COUNT empty messages each way and print the CPU
 * time their main thread used for it, for tests/testbed/msgcost.sh (libmpilab_msgcost.so).
 * Every wait sleeps between tests of its requests (1 ms), so a rank uses little CPU of its
 * own while it waits and the CPU the preloaded library spends per message stands out.
 * Rank 0 sends with MPI_Isend and receives with MPI_Irecv, waiting with MPI_Testall; rank 1
 * receives with MPI_Irecv and MPI_Testany, answers with MPI_Isend and MPI_Test, so the
 * library's three kinds of completion are all on the path. One line per rank:
 *   msgcost_pingpong rank R: COUNT sends COUNT receives cpu_us X
 * (a kit case, `pingpong`; COUNT, default 50, is the program's argument) */
#ifndef _POSIX_C_SOURCE
#define _POSIX_C_SOURCE 200809L /* clock_gettime, nanosleep */
#endif
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define MPILAB_KIT_MPI
#include "../c/kit.h"

static double thread_cpu_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

static void nap(void)
{
    struct timespec d = {0, 1000000};
    nanosleep(&d, NULL);
}

static void wait_all(MPI_Request r[2])
{
    int done = 0;
    MPI_Status st[2]; /* not MPI_STATUSES_IGNORE: MPICH's sentinel trips gcc's -Wstringop-overflow */
    while (MPI_Testall(2, r, &done, st) == MPI_SUCCESS && !done)
        nap();
}

static void wait_any(MPI_Request *r)
{
    int idx = MPI_UNDEFINED, done = 0;
    while (MPI_Testany(1, r, &idx, &done, MPI_STATUS_IGNORE) == MPI_SUCCESS && !done)
        nap();
}

static void wait_one(MPI_Request *r)
{
    int done = 0;
    while (MPI_Test(r, &done, MPI_STATUS_IGNORE) == MPI_SUCCESS && !done)
        nap();
}

MPILAB_TEST(pingpong)
{
    long count = kit_nargs > 0 ? strtol(kit_args[0], NULL, 10) : 50;
    REQUIRE(kit_size == 2);
    REQUIRE(count >= 1 && count <= 100000);
    char s = 0, r = 0;
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = thread_cpu_us();
    for (long i = 0; i < count; i++) {
        MPI_Request q[2];
        if (kit_rank == 0) {
            CHECK(MPI_Irecv(&r, 0, MPI_CHAR, 1, 7, MPI_COMM_WORLD, &q[1]) == MPI_SUCCESS);
            CHECK(MPI_Isend(&s, 0, MPI_CHAR, 1, 7, MPI_COMM_WORLD, &q[0]) == MPI_SUCCESS);
            wait_all(q);
        } else {
            CHECK(MPI_Irecv(&r, 0, MPI_CHAR, 0, 7, MPI_COMM_WORLD, &q[0]) == MPI_SUCCESS);
            wait_any(&q[0]);
            CHECK(MPI_Isend(&s, 0, MPI_CHAR, 0, 7, MPI_COMM_WORLD, &q[1]) == MPI_SUCCESS);
            wait_one(&q[1]);
        }
    }
    double cpu = thread_cpu_us() - t0;
    printf("msgcost_pingpong rank %d: %ld sends %ld receives cpu_us %.1f\n", kit_rank, count, count, cpu);
    fflush(stdout);
}

MPILAB_TEST_MAIN()
