/* The star view of an LMO fit (mpilab_lmo_star, include/mpilab/lmo.h): per node the share of
 * a route's fixed time and the access link's time per byte recovered exactly from a fit whose
 * sums are a star's, whatever the split between nodes and links; the one fastest node gets
 * the second fastest link; a platform with a link per pair shows a large misfit. */
#include "kit.h"

#include "mpilab/lmo.h"

#define NMAX 6

typedef struct star_case {
    mpilab_lmo_node_t node[NMAX];
    mpilab_lmo_link_t link[NMAX * (NMAX - 1) / 2];
    mpilab_lmo_fit_t f;
} star_case_t;

/* A fit of p nodes whose pair sums are y_ij = a_i + a_j and path_ij = path(i, j), split
 * arbitrarily: C_i and t_i as given, L and 1/beta the rest. */
static void make_fit(star_case_t *c, int p, double M, const double *a, const double *C, const double *t,
                     double (*path)(int, int))
{
    memset(c, 0, sizeof *c);
    for (int i = 0; i < p; i++) {
        c->node[i].C.raw = c->node[i].C.value = C[i];
        c->node[i].t.raw = c->node[i].t.value = t[i];
    }
    size_t q = 0;
    for (int i = 0; i < p; i++)
        for (int j = i + 1; j < p; j++, q++) {
            mpilab_lmo_link_t *l = &c->link[q];
            l->i = i;
            l->j = j;
            l->L.raw = a[i] + a[j] - C[i] - C[j];
            l->inv_beta.raw = path(i, j) - t[i] - t[j];
            l->L.value = l->L.raw > 0 ? l->L.raw : 0;
            l->inv_beta.value = l->inv_beta.raw > 0 ? l->inv_beta.raw : 0;
        }
    c->f = (mpilab_lmo_fit_t){.p = p, .bytes = M, .node = c->node, .link = c->link};
}

/* hetero4's access links: 100, 100, 50, 25 Mbit/s */
static const double U4[4] = {80e-9, 80e-9, 160e-9, 320e-9};
static double star4(int i, int j) { return fmax(U4[i], U4[j]); }

MPILAB_TEST(star_recovered_whatever_the_split)
{
    static star_case_t c;
    const double a[4] = {50e-6, 100e-6, 200e-6, 400e-6};
    /* the node/link splits of a fit on a star: the root's link in t_3 only, or in no t */
    const double C1[4] = {0, 0, 0, 0}, t1[4] = {0, 0, 79e-9, 318.6e-9};
    const double C2[4] = {5e-6, 40e-6, 1e-6, 0}, t2[4] = {0, 0, 0, 0};
    for (int k = 0; k < 2; k++) {
        make_fit(&c, 4, 65536, a, k ? C2 : C1, k ? t2 : t1, star4);
        mpilab_lmo_star_t s;
        CHECK(mpilab_lmo_star(&c.f, &s) == 0);
        for (int i = 0; i < 4 && s.a; i++) {
            CHECK_NEAR(s.a[i], a[i], 1e-15);
            CHECK_NEAR(s.u[i], U4[i], 1e-20);
        }
        CHECK(s.misfit_a < 1e-9 && s.misfit_u < 1e-9);
        CHECK(s.slowest == 3);
        /* a + M u: 400 + 20.97 ms against the median of 5.34 and 10.69 ms */
        double cost[4];
        for (int i = 0; i < 4; i++)
            cost[i] = a[i] + 65536 * U4[i];
        CHECK_NEAR(s.slowest_cost, cost[3], 1e-12);
        CHECK_NEAR(s.slowest_vs_median, cost[3] / ((cost[1] + cost[2]) / 2), 1e-9);
        mpilab_lmo_star_free(&s);
        CHECK(s.a == NULL && s.u == NULL);
    }
}

/* one fastest node: its own link is never a path's bottleneck; it gets the second fastest */
static const double U5[5] = {40e-9, 80e-9, 80e-9, 160e-9, 320e-9};
static double star5(int i, int j) { return fmax(U5[i], U5[j]); }

MPILAB_TEST(one_fastest_node_gets_the_second_fastest_link)
{
    static star_case_t c;
    const double a[5] = {10e-6, 20e-6, 30e-6, 40e-6, 50e-6}, z[5] = {0};
    make_fit(&c, 5, 1e6, a, z, z, star5);
    mpilab_lmo_star_t s;
    CHECK(mpilab_lmo_star(&c.f, &s) == 0);
    CHECK_NEAR(s.u[0], 80e-9, 1e-20);
    for (int i = 1; i < 5; i++)
        CHECK_NEAR(s.u[i], U5[i], 1e-20);
    for (int i = 0; i < 5; i++)
        CHECK_NEAR(s.a[i], a[i], 1e-15);
    CHECK(s.misfit_u < 1e-9 && s.slowest == 4);
    mpilab_lmo_star_free(&s);
}

/* pairlinks4: every pair its own link (0-1, 0-2, 1-2 100 Mbit/s, 0-3, 1-3 50, 2-3 25) */
static double pairlinks(int i, int j)
{
    return j < 3 ? 80e-9 : i < 2 ? 160e-9 : 320e-9;
}

MPILAB_TEST(links_of_their_own_are_not_a_star)
{
    static star_case_t c;
    const double a[4] = {50e-6, 50e-6, 50e-6, 50e-6}, z[4] = {0};
    make_fit(&c, 4, 65536, a, z, z, pairlinks);
    c.link[5].L.raw = 400e-6; /* 2-3's latency of its own, not a_2 + a_3 */
    mpilab_lmo_star_t s;
    CHECK(mpilab_lmo_star(&c.f, &s) == 0);
    /* u = 80, 80, 80, 160: max(u_2, u_3) = 160 against 2-3's 320 ns/B */
    CHECK_NEAR(s.u[3], 160e-9, 1e-20);
    CHECK_NEAR(s.misfit_u, 0.5, 1e-9);
    CHECK(s.misfit_a > 0.3);
    mpilab_lmo_star_free(&s);
}

/* The headlines of a 4-node star with one slow access link (node 3's, 25 Mbit/s) and one
 * slow CPU (node 1: 400 us per message against 20 us), the link's time per byte held by t_3
 * as the fit holds it: the slowest node is the CPU's (not the slow link's node, whose
 * C + M t is the largest), the slowest link node 3's access link. */
MPILAB_TEST(headlines_on_a_star_name_the_cpu_and_the_access_link)
{
    static star_case_t c;
    const double a[4] = {50e-6, 420e-6, 50e-6, 50e-6};
    const double C[4] = {20e-6, 400e-6, 20e-6, 20e-6}, t[4] = {0, 0, 0, 318.6e-9};
    make_fit(&c, 4, 65536, a, C, t, star4);
    mpilab_lmo_headlines_t h;
    CHECK(mpilab_lmo_headlines(&c.f, &h) == 0);
    CHECK(h.star == 1);
    CHECK(h.node == 1);
    CHECK_NEAR(h.node_cost, 400e-6, 1e-15);
    CHECK(h.link_of == 3 && h.link_i == -1 && h.link_j == -1);
    CHECK(h.link_vs_median > 1.5);
    /* the cost rule of C + M t would have named node 3 (20 us + 20.9 ms) */
    CHECK(C[3] + 65536 * t[3] > C[1] + 65536 * t[1]);
}

/* Off a star (pairlinks4: every pair its own link, 2-3 the slowest at 25 Mbit/s) with node 0
 * slow at messaging: t and 1/beta are the nodes' and the links' own, the headlines are the
 * largest C + M t (node 0) and the largest L + M/beta (2-3). */
MPILAB_TEST(headlines_off_a_star_name_the_node_and_the_pair_link)
{
    static star_case_t c;
    const double a[4] = {450e-6, 50e-6, 50e-6, 50e-6};
    const double C[4] = {400e-6, 0, 0, 0}, t[4] = {0, 0, 0, 0};
    make_fit(&c, 4, 65536, a, C, t, pairlinks);
    c.link[5].L.raw = c.link[5].L.value = 400e-6; /* 2-3's latency of its own */
    mpilab_lmo_headlines_t h;
    CHECK(mpilab_lmo_headlines(&c.f, &h) == 0);
    CHECK(h.star == 0);
    CHECK(h.node == 0);
    CHECK(h.link_of == -1 && h.link_i == 2 && h.link_j == 3);
}

/* Off a star with equal nodes (every pair its own link, 1-3 slow, every C and t 0 as a
 * simulated mesh gives): no node stands out, the link is 1-3. */
MPILAB_TEST(headlines_off_a_star_with_equal_nodes_name_no_node)
{
    static star_case_t c;
    const double a[4] = {10e-6, 10e-6, 10e-6, 10e-6}, z[4] = {0};
    make_fit(&c, 4, 65536, a, z, z, pairlinks);
    c.link[4].L.raw = c.link[4].L.value = 20e-3; /* 1-3: 20 ms + 10.5 ms against 2-3's 21 ms */
    mpilab_lmo_headlines_t h;
    CHECK(mpilab_lmo_headlines(&c.f, &h) == 0);
    CHECK(h.star == 0);
    CHECK(h.node == -1);
    CHECK(h.link_i == 1 && h.link_j == 3);
}

/* A star whose only slow part is node 2's access link (10x the others' time per byte), the
 * MPI's 32 header bytes crossing each sender's access link in every C_i (C_i = 32 u_i, as SMPI
 * gives with no processing cost): node 2's C is 10x the median, yet no node's processor is
 * slow; the headlines name node 2's access link and no node. */
static const double UH[4] = {8e-9, 8e-9, 80e-9, 8e-9};
static double starh(int i, int j) { return fmax(UH[i], UH[j]); }

MPILAB_TEST(headlines_on_a_star_take_the_header_off_c)
{
    static star_case_t c;
    double a[4], C[4], t[4];
    for (int i = 0; i < 4; i++) {
        C[i] = 32 * UH[i];
        a[i] = 20e-6 + C[i];
        t[i] = i == 2 ? UH[i] : 0;
    }
    make_fit(&c, 4, 65536, a, C, t, starh);
    mpilab_lmo_headlines_t h;
    CHECK(mpilab_lmo_headlines(&c.f, &h) == 0);
    CHECK(h.star == 1);
    CHECK_NEAR(h.header_bytes, 32, 1e-6);
    CHECK(h.node == -1);
    CHECK(h.link_of == 2);
    /* the same star with node 1's processor 300 us per message: node 1, by 300 us */
    C[1] += 300e-6;
    a[1] += 300e-6;
    make_fit(&c, 4, 65536, a, C, t, starh);
    CHECK(mpilab_lmo_headlines(&c.f, &h) == 0);
    CHECK(h.star == 1 && h.node == 1 && h.link_of == 2);
    CHECK_NEAR(h.header_bytes, 32, 1e-6);
    CHECK_NEAR(h.node_cost, 300e-6, 1e-12);
    /* and with the slow processor on the slow link's node: node 2, by 300 us */
    C[1] -= 300e-6;
    a[1] -= 300e-6;
    C[2] += 300e-6;
    a[2] += 300e-6;
    make_fit(&c, 4, 65536, a, C, t, starh);
    CHECK(mpilab_lmo_headlines(&c.f, &h) == 0);
    CHECK(h.star == 1 && h.node == 2 && h.link_of == 2);
    CHECK_NEAR(h.node_cost, 300e-6, 1e-9);
}

MPILAB_TEST(too_few_nodes)
{
    static star_case_t c;
    const double a[2] = {1e-6, 1e-6}, z[2] = {0};
    make_fit(&c, 2, 1, a, z, z, star4);
    mpilab_lmo_star_t s;
    CHECK(mpilab_lmo_star(&c.f, &s) == -1);
    CHECK(s.a == NULL);
    CHECK(mpilab_lmo_star(NULL, &s) == -1);
}

/* The lmo-hetero4-cost testbed's shape: node 1's processor slow at messaging (large C),
 * node 3's access link slow (large t on a star): the slowest node by C + M t is node 3, the
 * slowest at messaging node 1, with its C over the median C. */
MPILAB_TEST(slowest_cpu_is_the_largest_fixed_delay)
{
    static star_case_t c;
    const double a[4] = {600e-6, 5000e-6, 2600e-6, 2100e-6};
    const double C[4] = {60e-6, 4500e-6, 1560e-6, 40e-6}, t[4] = {0, 0, 0, 335e-9};
    make_fit(&c, 4, 262144, a, C, t, star4);
    double r = 0;
    CHECK(mpilab_lmo_slowest_cpu(&c.f, &r) == 1);
    CHECK_NEAR(r, 4500e-6 / ((60e-6 + 1560e-6) / 2), 1e-9);
    mpilab_lmo_star_t s;
    CHECK(mpilab_lmo_star(&c.f, &s) == 0);
    CHECK(s.slowest == 3); /* the access link: a different node */
    mpilab_lmo_star_free(&s);
    /* a node whose C is clamped at 0 counts as 0; all zero: no ratio */
    const double z[4] = {0};
    make_fit(&c, 4, 262144, a, z, t, star4);
    CHECK(mpilab_lmo_slowest_cpu(&c.f, &r) == 0 && isnan(r));
    c.f.p = 0;
    CHECK(mpilab_lmo_slowest_cpu(&c.f, &r) == -1 && isnan(r));
}

MPILAB_TEST_MAIN()
