/* msgcost_pingpong: ranks 0 and 1 exchange COUNT empty messages each way and print the CPU
 * time their main thread used for it, for tests/testbed/msgcost.sh (libmpilab_msgcost.so).
 * Every wait sleeps between tests of its requests (1 ms), so a rank uses little CPU of its
 * own while it waits and the CPU the preloaded library spends per message stands out.
 * Rank 0 sends with MPI_Isend and receives with MPI_Irecv, waiting with MPI_Testall; rank 1
 * receives with MPI_Irecv and MPI_Testany, answers with MPI_Isend and MPI_Test, so the
 * library's three kinds of completion are all on the path. One line per rank:
 *   msgcost_pingpong rank R: COUNT sends COUNT receives cpu_us X
 * (a kit case, `pingpong`; COUNT, default 50, is the program's argument).
 * Case `early_receive` (run with MPILAB_MSG_COST_US > 0 on both ranks; without, it fails on
 * both ranks at once instead of leaving one waiting): rank 0 waits with MPI_Testall for
 * two messages, the second sent only once rank 0 has seen the first (MPI_Request_get_status,
 * not charged); the library charges the first when a test
 * finds it in, not both at the last test, so no single MPI_Testall call uses twice the
 * cost of CPU time and two of them use about the cost each (CPU time, not wall time). */
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

/* Rank 0's two receives from rank 1, tags 1 and 2, into *a and *b. */
static void post_two(MPI_Request q[2], char *a, char *b)
{
    CHECK(MPI_Irecv(a, 1, MPI_CHAR, 1, 1, MPI_COMM_WORLD, &q[0]) == MPI_SUCCESS);
    CHECK(MPI_Irecv(b, 1, MPI_CHAR, 1, 2, MPI_COMM_WORLD, &q[1]) == MPI_SUCCESS);
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

MPILAB_TEST(early_receive)
{
    const char *v = getenv("MPILAB_MSG_COST_US");
    double cost = v ? strtod(v, NULL) : 0;
    /* decided together: a rank that stopped alone would leave the other waiting for it */
    int mine = kit_size == 2 && cost > 0, every_rank_has_a_cost = 0;
    MPI_Allreduce(&mine, &every_rank_has_a_cost, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    REQUIRE(every_rank_has_a_cost);
    char a = 0, b = 0, go = 0;
    MPI_Barrier(MPI_COMM_WORLD);
    if (kit_rank == 1) { /* the second message only once rank 0 has seen the first: in order */
        CHECK(MPI_Send(&a, 1, MPI_CHAR, 0, 1, MPI_COMM_WORLD) == MPI_SUCCESS);
        CHECK(MPI_Recv(&go, 1, MPI_CHAR, 0, 3, MPI_COMM_WORLD, MPI_STATUS_IGNORE) == MPI_SUCCESS);
        CHECK(MPI_Send(&b, 1, MPI_CHAR, 0, 2, MPI_COMM_WORLD) == MPI_SUCCESS);
        return;
    }
    MPI_Request q[2];
    MPI_Status st[2];
    post_two(q, &a, &b);
    int done = 0, charged = 0, told = 0, seen = 0;
    double most = 0;
    while (!done) {
        double t0 = thread_cpu_us();
        CHECK(MPI_Testall(2, q, &done, st) == MPI_SUCCESS);
        double used = thread_cpu_us() - t0;
        most = used > most ? used : most;
        charged += used >= 0.95 * cost;
        /* the second message is asked for once a test has charged the first, or (a library
         * that does not charge early) once a test has run with the first already in: not as
         * soon as this loop sees it in, which a preempted rank can do before any test has */
        if (!done && !told && (charged > 0 || seen)) {
            CHECK(MPI_Send(&go, 1, MPI_CHAR, 1, 3, MPI_COMM_WORLD) == MPI_SUCCESS);
            told = 1;
        }
        int in = 0; /* MPI_Request_get_status is not charged by the library */
        if (!done && !seen && MPI_Request_get_status(q[0], &in, MPI_STATUS_IGNORE) == MPI_SUCCESS)
            seen = in;
        if (!done)
            nap();
    }
    /* charged at the last MPI_Testall only, both costs would fall in one call (2x the cost) */
    printf("early_receive: %d tests used the cost, the largest %.1f us (cost %.1f us)\n", charged, most, cost);
    CHECK(charged == 2);
    CHECK(most < 1.5 * cost);
}

/* Case `early_waitall`: rank 0 waits with MPI_Waitall for two messages, the second sent 1 s
 * after the first; the library charges the first while the second is in flight (its debug
 * line's "while others were in flight" count, which msgcost.sh reads), as a linear gather's
 * root takes the blocks as they come. Works with any cost (0 included). */
MPILAB_TEST(early_waitall)
{
    REQUIRE(kit_size == 2);
    char a = 0, b = 0;
    MPI_Barrier(MPI_COMM_WORLD);
    if (kit_rank == 1) { /* the second 1 s after the first */
        struct timespec d = {1, 0};
        CHECK(MPI_Send(&a, 1, MPI_CHAR, 0, 1, MPI_COMM_WORLD) == MPI_SUCCESS);
        nanosleep(&d, NULL);
        CHECK(MPI_Send(&b, 1, MPI_CHAR, 0, 2, MPI_COMM_WORLD) == MPI_SUCCESS);
        return;
    }
    MPI_Request q[2];
    MPI_Status st[2];
    post_two(q, &a, &b);
    CHECK(MPI_Waitall(2, q, st) == MPI_SUCCESS);
    printf("early_waitall: both in\n");
}

MPILAB_TEST_MAIN()
