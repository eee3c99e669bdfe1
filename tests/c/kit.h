/* The C test kit: named cases that can be run one at a time.
 *
 *   #include "kit.h"
 *   MPILAB_TEST(parses_sizes) { CHECK(f(1) == 2); CHECK_NEAR(g(), 0.5, 1e-9); }
 *   (also CHECKF, CHECK_STR, FAIL, and REQUIRE, which ends the case when it fails)
 *   MPILAB_TEST_MAIN()
 *
 *   ./test                 every case, in definition order
 *   ./test --case NAME     only NAME (repeatable); --list prints the names
 *   ./test FILE ...        other arguments are the program's own: kit_args[0..kit_nargs)
 *
 * A case registers itself (a constructor), so a case cannot be left out of the run. CHECK
 * failures print file:line, the case and the condition, count against the case and make the
 * program exit 1; each case prints "NAME: ok" or "NAME: FAILED (n)".
 * MPI test programs define MPILAB_KIT_MPI before the include: MPILAB_TEST_MAIN() then runs
 * MPI_Init/MPI_Finalize around the cases (MPI_Init_thread at the level MPILAB_KIT_MPI_THREAD,
 * when the program defines it) and checks the world size the test launcher exported
 * (tests/mpi/mpi_world.h); failures are summed over the ranks (every rank runs every
 * selected case; cases may communicate), messages name the rank, and rank 0 prints the
 * verdicts. kit_rank and kit_size hold the world rank and size. */
#ifndef MPILAB_TESTS_KIT_H
#define MPILAB_TESTS_KIT_H

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#ifdef MPILAB_KIT_MPI
#include <mpi.h>

#include "../mpi/mpi_world.h" /* the world size the test launcher started */
#endif

#define KIT_MAX_CASES 256

typedef struct kit_case {
    const char *name;
    void (*fn)(void);
} kit_case_t;

static kit_case_t kit_cases[KIT_MAX_CASES];
static int kit_ncases, kit_failures, kit_rank;
__attribute__((unused)) static int kit_size = 1;
static const char *kit_current = "(none)";
/* the program's own arguments (those that are not --case/--list), for its cases */
__attribute__((unused)) static char **kit_args;
__attribute__((unused)) static int kit_nargs;

static inline void kit_add(const char *name, void (*fn)(void))
{
    if (kit_ncases >= KIT_MAX_CASES) {
        fprintf(stderr, "kit.h: more than %d cases (raise KIT_MAX_CASES)\n", KIT_MAX_CASES);
        exit(2);
    }
    kit_cases[kit_ncases].name = name;
    kit_cases[kit_ncases].fn = fn;
    kit_ncases++;
}

#define MPILAB_TEST(name)                                                                          \
    static void kit_test_##name(void);                                                             \
    __attribute__((constructor)) static void kit_register_##name(void)                             \
    {                                                                                              \
        kit_add(#name, kit_test_##name);                                                           \
    }                                                                                              \
    static void kit_test_##name(void)

static inline void kit_fail_prefix(const char *file, int line)
{
#ifdef MPILAB_KIT_MPI
    fprintf(stderr, "rank %d: ", kit_rank);
#endif
    fprintf(stderr, "%s:%d: [%s] ", file, line, kit_current);
}

#define CHECK(cond)                                                                                \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            kit_fail_prefix(__FILE__, __LINE__);                                                   \
            fprintf(stderr, "check failed: %s\n", #cond);                                          \
            kit_failures++;                                                                        \
        }                                                                                          \
    } while (0)
/* CHECK with a printf-style explanation. */
#define CHECKF(cond, ...)                                                                          \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            kit_fail_prefix(__FILE__, __LINE__);                                                   \
            fprintf(stderr, __VA_ARGS__);                                                          \
            fputc('\n', stderr);                                                                   \
            kit_failures++;                                                                        \
        }                                                                                          \
    } while (0)
/* CHECK that ends the case when it fails (what follows needs it: a pointer, a state a
 * loop would otherwise report a thousand times). In a case's own body only. */
#define REQUIRE(cond)                                                                              \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            kit_fail_prefix(__FILE__, __LINE__);                                                   \
            fprintf(stderr, "required check failed: %s (the case stops)\n", #cond);               \
            kit_failures++;                                                                        \
            return;                                                                                \
        }                                                                                          \
    } while (0)
/* An unconditional failure with a printf-style message. */
#define FAIL(...) CHECKF(0, __VA_ARGS__)
#define CHECK_NEAR(a, b, tol)                                                                      \
    do {                                                                                           \
        double kit_a_ = (a), kit_b_ = (b);                                                         \
        if (!(fabs(kit_a_ - kit_b_) <= (tol))) {                                                   \
            kit_fail_prefix(__FILE__, __LINE__);                                                   \
            fprintf(stderr, "%s = %.12g, expected %.12g (tol %g)\n", #a, kit_a_, kit_b_, (double)(tol)); \
            kit_failures++;                                                                        \
        }                                                                                          \
    } while (0)
#define CHECK_STR(a, b)                                                                            \
    do {                                                                                           \
        const char *kit_sa_ = (a), *kit_sb_ = (b);                                                 \
        if (!kit_sa_ || !kit_sb_ || strcmp(kit_sa_, kit_sb_) != 0) {                               \
            kit_fail_prefix(__FILE__, __LINE__);                                                   \
            fprintf(stderr, "%s = \"%s\", expected \"%s\"\n", #a, kit_sa_ ? kit_sa_ : "(null)",    \
                    kit_sb_ ? kit_sb_ : "(null)");                                                 \
            kit_failures++;                                                                        \
        }                                                                                          \
    } while (0)

/* Failures of the current case, summed over the ranks in MPI programs. */
static inline int kit_case_failures(int before)
{
    int mine = kit_failures - before, all = mine;
#ifdef MPILAB_KIT_MPI
    MPI_Allreduce(&mine, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
#endif
    return all;
}

/* Parse --case/--list, run the selected cases; the exit status (0, 1 failures, 2 usage). */
static inline int kit_run(int argc, char **argv)
{
    int nsel = 0, list = 0, bad = 0;
    const char **sel = calloc((size_t)argc + 1, sizeof *sel);
    kit_args = calloc((size_t)argc + 1, sizeof *kit_args);
    if (!sel || !kit_args) {
        fprintf(stderr, "%s: out of memory\n", argv[0]);
        return 2;
    }
    for (int a = 1; a < argc && !bad; a++) {
        if (strcmp(argv[a], "--list") == 0) {
            list = 1;
        } else if (strcmp(argv[a], "--case") == 0 && a + 1 < argc) {
            int found = 0;
            for (int k = 0; k < kit_ncases; k++)
                found |= strcmp(kit_cases[k].name, argv[a + 1]) == 0;
            if (!found && kit_rank == 0)
                fprintf(stderr, "%s: --case %s: no such case (--list names them)\n", argv[0], argv[a + 1]);
            bad |= !found;
            sel[nsel++] = argv[++a];
        } else if (argv[a][0] == '-') {
            if (kit_rank == 0)
                fprintf(stderr, "%s: unknown option '%s' (--case NAME, --list)\n", argv[0], argv[a]);
            bad = 1;
        } else {
            kit_args[kit_nargs++] = argv[a];
        }
    }
    int failed = 0;
    for (int k = 0; k < kit_ncases && !bad; k++) {
        if (list) {
            if (kit_rank == 0)
                printf("%s\n", kit_cases[k].name);
            continue;
        }
        int run = nsel == 0;
        for (int s = 0; s < nsel; s++)
            run |= strcmp(sel[s], kit_cases[k].name) == 0;
        if (!run)
            continue;
        kit_current = kit_cases[k].name;
        int before = kit_failures;
        kit_cases[k].fn();
        int n = kit_case_failures(before);
        if (kit_rank == 0) {
            if (n)
                printf("%s: FAILED (%d)\n", kit_current, n);
            else
                printf("%s: ok\n", kit_current);
            fflush(stdout);
        }
        failed += n != 0;
    }
    free(sel);
    return bad ? 2 : failed ? 1 : 0;
}

#ifdef MPILAB_KIT_MPI
/* MPI_Init, or MPI_Init_thread at the level a program defines as MPILAB_KIT_MPI_THREAD (before
 * the include) when threads of its own run beside MPI. */
static inline void kit_mpi_init(int *argc, char ***argv)
{
#ifdef MPILAB_KIT_MPI_THREAD
    int provided;
    MPI_Init_thread(argc, argv, MPILAB_KIT_MPI_THREAD, &provided);
#else
    MPI_Init(argc, argv);
#endif
}
#define MPILAB_TEST_MAIN()                                                                         \
    int main(int argc, char **argv)                                                                \
    {                                                                                              \
        kit_mpi_init(&argc, &argv);                                                                \
        mpilab_test_check_world(1);                                                                \
        MPI_Comm_rank(MPI_COMM_WORLD, &kit_rank);                                                  \
        MPI_Comm_size(MPI_COMM_WORLD, &kit_size);                                                  \
        int kit_rc = kit_run(argc, argv);                                                          \
        MPI_Finalize();                                                                            \
        return kit_rc;                                                                             \
    }
#else
#define MPILAB_TEST_MAIN()                                                                         \
    int main(int argc, char **argv)                                                                \
    {                                                                                              \
        return kit_run(argc, argv);                                                                \
    }
#endif

#endif
