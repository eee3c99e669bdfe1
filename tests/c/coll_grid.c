/* The multilane grid description without MPI: site numbers and labels, testbed host names,
 * host files, map files (good and bad, with file:line reasons) and site detection from
 * synthetic latency matrices. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "kit.h"
#include "mpilab/multilane.h"

static char dir[] = "/tmp/coll_grid.XXXXXX";

static const char *write_file(const char *name, const char *text)
{
    static char path[256];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "w");
    fputs(text, f);
    fclose(f);
    return path;
}

static void expect_sites(const mpilab_grid_t *g, int n, const int *want, const char *what)
{
    CHECKF(g != NULL, "%s: %s", what, mpilab_multilane_last_error());
    if (!g)
        return;
    CHECKF(mpilab_grid_nranks(g) == n, "%s: %d ranks", what, mpilab_grid_nranks(g));
    for (int r = 0; r < n; r++)
        CHECKF(mpilab_grid_site_of(g, r) == want[r], "%s: rank %d in site %d, want %d", what, r,
              mpilab_grid_site_of(g, r), want[r]);
}

static void expect_error(const mpilab_grid_t *g, const char *needle, const char *what)
{
    CHECKF(g == NULL, "%s: accepted", what);
    CHECKF(strstr(mpilab_multilane_last_error(), needle) != NULL, "%s: message '%s' lacks '%s'",
          what, mpilab_multilane_last_error(), needle);
    CHECKF(strchr(mpilab_multilane_last_error(), '\n') == NULL, "%s: message has a newline", what);
}

static void numbers_and_labels(void)
{
    /* renumbered by lowest rank; members ascending; P_sup */
    mpilab_grid_t *g = mpilab_grid_create(7, (int[]){4, 9, 4, 9, 2, 4, 9});
    expect_sites(g, 7, (int[]){0, 1, 0, 1, 2, 0, 1}, "create");
    CHECKF(mpilab_grid_nsites(g) == 3, "nsites %d", mpilab_grid_nsites(g));
    CHECKF(mpilab_grid_site_size(g, 1) == 3 && mpilab_grid_site_rank(g, 1, 2) == 6, "members");
    CHECKF(mpilab_grid_site_rank(g, 1, 3) == -1, "index past the site");
    CHECKF(mpilab_grid_lanes_max(g, 0) == 1, "P_sup with a 1-rank site: %d",
          mpilab_grid_lanes_max(g, 0));
    mpilab_grid_free(g);
    g = mpilab_grid_create(5, (int[]){0, 0, 0, 1, 1});
    CHECKF(mpilab_grid_lanes_max(g, 0) == 2 && mpilab_grid_lanes_max(g, 4) == 2, "P_sup 3+2");
    mpilab_grid_free(g);
    const char *labels[] = {"tokyo", "osaka", "osaka", "tokyo"};
    g = mpilab_grid_from_labels(4, labels);
    expect_sites(g, 4, (int[]){0, 1, 1, 0}, "labels");
    mpilab_grid_free(g);
    errno = 0;
    expect_error(mpilab_grid_create(3, (int[]){1, 1, 1}), "one site", "one site");
    CHECKF(errno == EINVAL, "errno %d", errno);
    expect_error(mpilab_grid_create(1, (int[]){0}), "at least 2", "one rank");
    expect_error(mpilab_grid_create(2, (int[]){0, -1}), "negative site", "negative site");
}

static void hosts(void)
{
    const char *tb[] = {"mlg-s0n0", "mlg-s1n0", "mlg-s0n1", "mlg-s1n1.local"};
    mpilab_grid_t *g = mpilab_grid_from_hosts(4, tb, NULL);
    expect_sites(g, 4, (int[]){0, 1, 0, 1}, "testbed names");
    mpilab_grid_free(g);
    const char *plain[] = {"mlg-s0n0", "node7"};
    expect_error(mpilab_grid_from_hosts(2, plain, NULL), "rank 1: host 'node7'", "non-testbed");
    const char *hf = write_file("hosts", "# cluster\nalpha slots=2 site=east\n"
                                         "beta site=west slots=1\ngamma east\n\n");
    const char *names[] = {"beta", "alpha", "gamma", "alpha"};
    g = mpilab_grid_from_hosts(4, names, hf);
    expect_sites(g, 4, (int[]){0, 1, 1, 1}, "hostfile");
    mpilab_grid_free(g);
    const char *missing[] = {"alpha", "delta"};
    expect_error(mpilab_grid_from_hosts(2, missing, hf), "rank 1's host 'delta' is not listed",
                 "host not in file");
    const char *nolabel = write_file("hosts2", "alpha site=a\nbeta slots=4\n");
    char want[300];
    snprintf(want, sizeof want, "%s:2: host beta has no site label", nolabel);
    expect_error(mpilab_grid_from_hosts(2, names, nolabel), want, "host without label");
    expect_error(mpilab_grid_from_hosts(2, names, "/nonexistent/hosts"),
                 "/nonexistent/hosts: No such file", "unreadable host file");
}

static void maps(void)
{
    const char *ok = write_file("map", "# rank site\n3 b\n0 a\n1 b   # comment\n2 a\n");
    mpilab_grid_t *g = mpilab_grid_read_map(ok, 4);
    expect_sites(g, 4, (int[]){0, 1, 0, 1}, "map");
    mpilab_grid_free(g);
    struct {
        const char *text, *needle;
    } bad[] = {
        {"0 a\n1 b\n2 a\n", "rank 3 is missing from the map"},
        {"0 a\n1 b\n2 a\n3 b\n1 a\n", ":5: rank 1 already mapped at line 2"},
        {"0 a\n1 b\nx a\n3 b\n", ":3: 'x' is not a rank"},
        {"0 a\n1 b\n2\n3 b\n", ":3: expected two fields"},
        {"0 a\n1 b\n2 a c\n3 b\n", ":3: expected two fields"},
        {"0 a\n1 b\n2 a\n7 b\n", ":4: rank 7 out of range"},
        {"0 a\n1 a\n2 a\n3 a\n", "one site"},
        {"", "rank 0 is missing"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char name[32];
        snprintf(name, sizeof name, "bad%zu", i);
        const char *path = write_file(name, bad[i].text);
        expect_error(mpilab_grid_read_map(path, 4), bad[i].needle, bad[i].text);
        CHECKF(strncmp(mpilab_multilane_last_error(), path, strlen(path)) == 0,
              "map error does not start with the file: %s", mpilab_multilane_last_error());
    }
    expect_error(mpilab_grid_read_map("/nonexistent/map", 4), "/nonexistent/map: No such file",
                 "unreadable map");
    const char *unreadable = write_file("noperm", "0 a\n1 b\n");
    if (getuid() != 0) { /* root reads anything */
        chmod(unreadable, 0);
        expect_error(mpilab_grid_read_map(unreadable, 2), "Permission denied", "no permission");
    }
    expect_error(mpilab_grid_read_map(dir, 2), dir, "a directory");
}

/* A synthetic latency matrix: `site` per rank, l inside, L across, with jitter. */
static double *matrix(int n, const int *site, double l, double L, unsigned seed)
{
    double *m = malloc((size_t)n * (size_t)n * sizeof *m);
    srand(seed);
    for (int i = 0; i < n; i++)
        for (int j = 0; j < n; j++) {
            double base = site[i] == site[j] ? l : L;
            m[i * n + j] = i == j ? 0 : base * (0.8 + 0.4 * rand() / (double)RAND_MAX);
        }
    return m;
}

static void detection(void)
{
    /* 3 sites, interleaved, 60 us LAN and 5 ms WAN, 20% jitter */
    int site[12];
    for (int r = 0; r < 12; r++)
        site[r] = (r * 5) % 3;
    double *m = matrix(12, site, 60e-6, 5e-3, 1);
    double split = 0;
    mpilab_grid_t *g = mpilab_grid_from_latency(12, m, &split);
    int want[12];
    for (int r = 0; r < 12; r++) /* renumbered by lowest rank: 0 -> 0, 1 -> 2, 2 -> 1 */
        want[r] = site[r] == 0 ? 0 : (site[r] == 2 ? 1 : 2);
    expect_sites(g, 12, want, "3-site matrix");
    CHECKF(split > 72e-6 && split < 4e-3, "split %g between the classes", split);
    mpilab_grid_free(g);
    free(m);
    /* two sites of unequal size; asymmetric measurements averaged */
    int s2[6] = {1, 1, 1, 1, 0, 0};
    m = matrix(6, s2, 100e-6, 1e-3, 2);
    m[0 * 6 + 4] = 1.9e-3;
    m[4 * 6 + 0] = 0.3e-3; /* mean 1.1 ms: still across */
    g = mpilab_grid_from_latency(6, m, NULL);
    expect_sites(g, 6, (int[]){0, 0, 0, 0, 1, 1}, "2-site matrix");
    mpilab_grid_free(g);
    free(m);
    /* a loaded machine: the LAN latencies of site A spread 8.5x (a chain 0-1-2 of 40 us
     * pairs with 0-2 at 340 us), more than the 5.9x from LAN to WAN: the largest gap gives
     * no consistent partition, the next one gives the two sites */
    double spread[36];
    const int sa[6] = {0, 0, 0, 1, 1, 1};
    for (int i = 0; i < 6; i++)
        for (int j = 0; j < 6; j++)
            spread[i * 6 + j] = i == j ? 0 : sa[i] != sa[j] ? 2e-3 : sa[i] ? 50e-6 : 40e-6;
    spread[0 * 6 + 2] = spread[2 * 6 + 0] = 340e-6;
    double split2 = 0;
    g = mpilab_grid_from_latency(6, spread, &split2);
    expect_sites(g, 6, sa, "LAN spread wider than the WAN gap");
    CHECKF(split2 > 340e-6 && split2 < 2e-3, "split %g", split2);
    mpilab_grid_free(g);
    /* no structure: one site */
    int flat[5] = {0};
    m = matrix(5, flat, 50e-6, 50e-6, 3);
    expect_error(mpilab_grid_from_latency(5, m, NULL), "no site structure", "flat matrix");
    free(m);
    /* inconsistent: a chain of near pairs joins ranks that are far apart */
    double chain[9] = {0, 1e-5, 1e-3, 1e-5, 0, 1e-5, 1e-3, 1e-5, 0};
    expect_error(mpilab_grid_from_latency(3, chain, NULL), "no consistent sites", "chain");
    double neg[4] = {0, -1, -1, 0};
    expect_error(mpilab_grid_from_latency(2, neg, NULL), "need finite", "negative latency");
    expect_error(mpilab_grid_from_latency(1, neg, NULL), "at least 2", "one rank");
}

/* A recorded failure on a loaded machine (two busy-loop hogs beside 6 ranks): sites
 * {0,1,2} and {3,4,5} over a 2 ms WAN; rank 5 held off its CPU, so its pairs with its own
 * site's ranks measured 1.5 ms and across 2.5 ms.  The largest gap (LAN to 1.5 ms) used to
 * give rank 5 a site of its own (P_sup 1); it must be refused. */
static void held_rank(void)
{
    double m[36];
    const int sa[6] = {0, 0, 0, 1, 1, 1};
    for (int i = 0; i < 6; i++)
        for (int j = 0; j < 6; j++)
            m[i * 6 + j] = i == j ? 0 : sa[i] != sa[j] ? 2.05e-3 : 50e-6;
    for (int r = 0; r < 5; r++)
        m[r * 6 + 5] = m[5 * 6 + r] = sa[r] ? 1.5e-3 : 2.5e-3;
    expect_error(mpilab_grid_from_latency(6, m, NULL), "site of its own", "a held rank");
    /* measured again with the hold gone: the sites */
    for (int r = 0; r < 5; r++)
        m[r * 6 + 5] = m[5 * 6 + r] = sa[r] ? 60e-6 : 2.1e-3;
    expect_sites(mpilab_grid_from_latency(6, m, NULL), 6, sa, "the hold gone");
    /* a site of 4 split in two by load on the pairs across the cut (0.3-1.5 ms, not one
     * link's latency): refused, not sites {0,1} {2,3} */
    double c[64];
    for (int i = 0; i < 8; i++)
        for (int j = 0; j < 8; j++)
            c[i * 8 + j] = i == j ? 0 : (i < 4) != (j < 4) ? 2e-3 : 50e-6;
    const double load[4] = {0.3e-3, 0.8e-3, 1.5e-3, 0.6e-3};
    for (int k = 0; k < 4; k++) {
        int i = k / 2, j = 2 + k % 2;
        c[i * 8 + j] = c[j * 8 + i] = load[k];
    }
    expect_error(mpilab_grid_from_latency(8, c, NULL), "over 2x", "a site cut by load");
}

static double uniform(unsigned *seed, double lo, double hi)
{
    return lo + (hi - lo) * (rand_r(seed) / ((double)RAND_MAX + 1.0));
}

/* Load noise: ranks of S sites of `per` ranks (LAN 50 us, WAN 2 ms); each rank is held off
 * its CPU with probability 1/4 for a time that adds to all its pairs, and each pair gets
 * its own extra with probability 1/3; a measurement is the smallest of `reps` such draws.
 * With sites of 3 ranks a wrong partition would need a site of one rank (load only adds
 * time), so detection must give the sites or refuse: never another grid. */
static void load_noise(void)
{
    int right = 0, refused = 0, wrong = 0;
    unsigned seed = 7;
    for (int trial = 0; trial < 400; trial++) {
        const int sites = 2 + trial % 2, per = 3, n = sites * per;
        const int reps = 1 + trial % 4;
        double m[81], held[9];
        int want[9];
        for (int r = 0; r < n; r++)
            want[r] = r / per;
        for (int i = 0; i < n; i++)
            for (int j = 0; j < n; j++)
                m[i * n + j] = i == j ? 0 : INFINITY;
        for (int k = 0; k < reps; k++) {
            for (int r = 0; r < n; r++)
                held[r] = rand_r(&seed) % 6 == 0 ? uniform(&seed, 0.2e-3, 6e-3) : 0;
            for (int i = 0; i < n; i++)
                for (int j = i + 1; j < n; j++) {
                    double x = want[i] == want[j] ? 50e-6 : 2e-3;
                    x += held[i] + held[j];
                    if (rand_r(&seed) % 4 == 0)
                        x += uniform(&seed, 0, 4e-3);
                    if (x < m[i * n + j])
                        m[i * n + j] = m[j * n + i] = x;
                }
        }
        mpilab_grid_t *g = mpilab_grid_from_latency(n, m, NULL);
        if (!g) {
            refused++;
            CHECKF(strchr(mpilab_multilane_last_error(), '\n') == NULL, "trial %d: two lines",
                   trial);
            continue;
        }
        int same = mpilab_grid_nsites(g) == sites;
        for (int r = 0; r < n; r++)
            same = same && mpilab_grid_site_of(g, r) == want[r];
        right += same;
        wrong += !same;
        mpilab_grid_free(g);
    }
    CHECKF(wrong == 0, "%d of 400 noisy matrices gave a wrong grid", wrong);
    /* both outcomes occur, so the check above saw grids and refusals */
    CHECKF(right > 40 && refused > 40, "%d right, %d refused of 400", right, refused);
}

/* Run fn with a fresh temporary directory in `dir`, removed afterwards. */
static void in_temp_dir(void (*fn)(void))
{
    strcpy(dir, "/tmp/coll_grid.XXXXXX");
    if (!mkdtemp(dir)) {
        FAIL("mkdtemp: %s", strerror(errno));
        return;
    }
    fn();
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    if (system(cmd) != 0)
        fprintf(stderr, "could not remove %s\n", dir);
}

MPILAB_TEST(site_numbers_and_labels)
{
    in_temp_dir(numbers_and_labels);
}

MPILAB_TEST(testbed_host_names)
{
    in_temp_dir(hosts);
}

MPILAB_TEST(map_files)
{
    in_temp_dir(maps);
}

MPILAB_TEST(detection_from_latencies)
{
    in_temp_dir(detection);
}

MPILAB_TEST(detection_refuses_load_not_sites)
{
    held_rank();
    load_noise();
}

MPILAB_TEST_MAIN()
