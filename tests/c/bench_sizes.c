/* The runner's size-list syntax. */
#include <stdlib.h>
#include <string.h>

#include "mpilab/parse.h"
#include "mpilab/placement.h"
#include "kit.h"

static int eq(const char *spec, const size_t *want, size_t n)
{
    size_t *v = NULL, c = 0;
    char err[200];
    if (mpilab_parse_size_list(spec, 100000, &v, &c, err, sizeof err) != 0) {
        fprintf(stderr, "'%s': %s\n", spec, err);
        return 0;
    }
    int ok = c == n && (n == 0 || memcmp(v, want, n * sizeof *v) == 0);
    if (!ok)
        fprintf(stderr, "'%s': got %zu sizes\n", spec, c);
    free(v);
    return ok;
}

static int bad(const char *spec)
{
    size_t *v = NULL, c = 0;
    char err[200] = "";
    int rc = mpilab_parse_size_list(spec, 1000, &v, &c, err, sizeof err);
    free(v);
    return rc != 0 && err[0] != '\0' && strchr(err, '\n') == NULL;
}

MPILAB_TEST(lists_and_ranges)
{
    CHECK(eq("4K", (size_t[]){4096}, 1));
    CHECK(eq("1:64K:x4", (size_t[]){1, 4, 16, 64, 256, 1024, 4096, 16384, 65536}, 9));
    CHECK(eq("0:8:x2", (size_t[]){0, 1, 2, 4, 8}, 5));
    CHECK(eq("0:10:5", (size_t[]){0, 5, 10}, 3));
    CHECK(eq("0:11:5", (size_t[]){0, 5, 10}, 3));
    CHECK(eq("1M,1K,1K,0", (size_t[]){0, 1024, 1048576}, 3));
    CHECK(eq("0:100K:1K,7", (size_t[]){0, 7, 1024}, 0) == 0); /* 102 entries, checked below */
    size_t *v = NULL, c = 0;
    char err[200];
    CHECK(mpilab_parse_size_list("0:100K:1K", 1000, &v, &c, err, sizeof err) == 0 && c == 101 && v[100] == 102400);
    free(v);
}

MPILAB_TEST(bad_specs_refused_in_one_line)
{
    CHECK(bad("-1"));
    CHECK(bad("abc"));
    CHECK(bad("4Q"));
    CHECK(bad("1:2"));
    CHECK(bad("1:2:3:4"));
    CHECK(bad("8:1:1"));
    CHECK(bad("1:8:0"));
    CHECK(bad("1:8:x1"));
    CHECK(bad("1:8:x"));
    CHECK(bad("1,,2"));
    CHECK(bad(""));
    CHECK(bad("0:1G:1")); /* more than max_count */
    CHECK(bad("1:-8:1"));
}

/* Slurm's per-node task lists, as srun sets SLURM_STEP_TASKS_PER_NODE */
MPILAB_TEST(slurm_tasks_per_node)
{
    CHECK(mpilab_placement_slurm_tasks("2", 0) == 2);
    CHECK(mpilab_placement_slurm_tasks("2(x3),1", 0) == 2);
    CHECK(mpilab_placement_slurm_tasks("2(x3),1", 2) == 2);
    CHECK(mpilab_placement_slurm_tasks("2(x3),1", 3) == 1);
    CHECK(mpilab_placement_slurm_tasks("4,2(x2),8", 2) == 2);
    CHECK(mpilab_placement_slurm_tasks("4,2(x2),8", 3) == 8);
    CHECK(mpilab_placement_slurm_tasks("4,2(x2),8", 4) == -1);
    CHECK(mpilab_placement_slurm_tasks("2(x3),1", 4) == -1); /* too short */
    CHECK(mpilab_placement_slurm_tasks("", 0) == -1);
    CHECK(mpilab_placement_slurm_tasks(NULL, 0) == -1);
    CHECK(mpilab_placement_slurm_tasks("2(3)", 0) == -1);
    CHECK(mpilab_placement_slurm_tasks("2(x0)", 0) == -1);
    CHECK(mpilab_placement_slurm_tasks("x2", 0) == -1);
    CHECK(mpilab_placement_slurm_tasks("2;1", 1) == -1);
    CHECK(mpilab_placement_slurm_tasks("2", -1) == -1);
}

MPILAB_TEST_MAIN()
