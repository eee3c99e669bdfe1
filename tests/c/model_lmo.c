/* The LMO heterogeneous model (include/mpilab/lmo.h): the triplet schedule, the fit on
 * synthetic experiments generated from known parameters (exact, then noise and a 1000x
 * outlier), the predictions against hand-written and independent computations. */
#include "kit.h"

#include "mpilab/lmo.h"
#include "mpilab/model.h"

#define P 5
#define M 65536.0
#define NP (P * (P - 1) / 2)

/* Known parameters: node 3 is slow (C, t), link 1-4 is slow (L, 1/beta). */
static const double Ct[P] = {20e-6, 25e-6, 30e-6, 120e-6, 22e-6};
static const double tt[P] = {1e-9, 1.5e-9, 2e-9, 8e-9, 1.2e-9};
static double Lt[P * P], Bt[P * P];
static double slow01; /* > 0: link 0-1's L (a test's long link), else the default */

static void truth(void)
{
    for (int i = 0; i < P; i++)
        for (int j = 0; j < P; j++) {
            Lt[i * P + j] = (40 + 5 * (i + j)) * 1e-6;
            Bt[i * P + j] = 80e-9 + 4e-9 * (i * j % 3); /* 100 Mbit/s-ish */
        }
    Lt[1 * P + 4] = Lt[4 * P + 1] = 400e-6;
    Bt[1 * P + 4] = Bt[4 * P + 1] = 320e-9;
    if (slow01 > 0)
        Lt[0 * P + 1] = Lt[1 * P + 0] = slow01;
}

static size_t pq(int i, int j)
{
    return (size_t)i * (size_t)(2 * P - i - 1) / 2 + (size_t)(j - i - 1);
}

/* The model's experiment times (docs/models-lmo.md). */
static double rt(int i, int j, double m)
{
    return 2 * Ct[i] + 2 * Ct[j] + 2 * Lt[i * P + j] + m * (tt[i] + tt[j] + Bt[i * P + j]);
}

/* The root sends to x at s = C_r + m t_r, to y at 2 s; each reply is back a flight b later;
 * the root, done sending at 2 s, takes the replies in the order they arrive, C_r each. */
static double p2t(int r, int x, int y, double m)
{
    double bx = 2 * Ct[x] + m * tt[x] + 2 * Lt[r * P + x] + m * Bt[r * P + x];
    double by = 2 * Ct[y] + m * tt[y] + 2 * Lt[r * P + y] + m * Bt[r * P + y];
    double s = Ct[r] + m * tt[r], back_x = s + bx, back_y = 2 * s + by;
    double first = back_x < back_y ? back_x : back_y, second = back_x < back_y ? back_y : back_x;
    double done = (first > 2 * s ? first : 2 * s) + Ct[r];
    return (second > done ? second : done) + Ct[r];
}

/* splitmix64 + Box-Muller: reproducible noise. */
static unsigned long long rs = 42;
static double unif(void)
{
    unsigned long long z = (rs += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return ((z ^ (z >> 31)) >> 11) * (1.0 / 9007199254740992.0);
}
static double gauss(void)
{
    double u = unif(), v = unif();
    return sqrt(-2 * log(u + 1e-300)) * cos(6.283185307179586 * v);
}

typedef struct data {
    mpilab_triplet_t trip[64];
    size_t nt;
    double buf[4][3 * 64 > NP ? 3 * 64 : NP][64];
    mpilab_lmo_series_t s[4][3 * 64];
    double lbuf[2][3 * 64][1];          /* the round trips beside the empty experiments */
    mpilab_lmo_series_t ls[2][3 * 64];
    mpilab_lmo_input_t in;
} data_t;

/* Synthetic experiments: n samples each, relative Gaussian noise rel (0: the exact value). */
static void make(data_t *d, size_t n, double rel)
{
    truth();
    d->nt = mpilab_lmo_triplets(P, d->trip);
    for (int kind = 0; kind < 4; kind++) {
        double m = kind % 2 ? M : 0;
        size_t ne = kind < 2 ? NP : 3 * d->nt;
        for (size_t e = 0; e < ne; e++) {
            double v;
            if (kind < 2) {
                int i = 0, j = 1;
                for (i = 0; i < P; i++)
                    for (j = i + 1; j < P; j++)
                        if (pq(i, j) == e)
                            goto found;
            found:
                v = rt(i, j, m);
            } else {
                int r, x, y;
                mpilab_triplet_roles(&d->trip[e / 3], (int)(e % 3), &r, &x, &y);
                v = p2t(r, x, y, m);
            }
            for (size_t k = 0; k < n; k++)
                d->buf[kind][e][k] = v * (1 + rel * gauss());
            d->s[kind][e] = (mpilab_lmo_series_t){d->buf[kind][e], n};
        }
    }
    d->in = (mpilab_lmo_input_t){.p = P, .trip = d->trip, .ntrip = d->nt, .bytes = M, .rt_0 = d->s[0],
                                 .rt_m = d->s[1], .p2t_0 = d->s[2], .p2t_m = d->s[3]};
}

static data_t D;

MPILAB_TEST(triplets_every_one_once_disjoint_rounds)
{
    for (int n = 3; n <= 17; n++) {
        size_t nt = mpilab_lmo_ntriplets(n);
        mpilab_triplet_t *t = malloc(nt * sizeof *t);
        size_t *order = malloc(nt * sizeof *order), *rs0 = malloc((nt + 1) * sizeof *rs0);
        CHECK(mpilab_lmo_triplets(n, t) == nt);
        CHECK(nt == (size_t)n * (n - 1) * (n - 2) / 6);
        size_t rounds = mpilab_lmo_triplet_rounds(n, t, nt, order, rs0);
        CHECK(rounds > 0 && rounds <= nt);
        CHECK(rs0[0] == 0 && rs0[rounds] == nt);
        unsigned char *seen = calloc(nt, 1);
        for (size_t r = 0; r < rounds; r++) {
            unsigned char busy[32] = {0};
            CHECK(rs0[r + 1] > rs0[r]); /* no empty round */
            for (size_t k = rs0[r]; k < rs0[r + 1]; k++) {
                const mpilab_triplet_t *x = &t[order[k]];
                CHECKF(!busy[x->a] && !busy[x->b] && !busy[x->c], "n=%d round %zu: a rank in two triplets", n, r);
                busy[x->a] = busy[x->b] = busy[x->c] = 1;
                CHECKF(!seen[order[k]], "n=%d: triplet %zu scheduled twice", n, order[k]);
                seen[order[k]] = 1;
            }
        }
        for (size_t k = 0; k < nt; k++)
            CHECKF(seen[k], "n=%d: triplet %zu never scheduled", n, k);
        /* every pair (a, b) of a triplet is distinct and ordered: all C(n,3) distinct sets */
        for (size_t k = 1; k < nt; k++)
            CHECK(t[k - 1].a < t[k].a || (t[k - 1].a == t[k].a && (t[k - 1].b < t[k].b ||
                                                                  (t[k - 1].b == t[k].b && t[k - 1].c < t[k].c))));
        /* the first round is full: floor(n/3) triplets at once */
        CHECK(rs0[1] - rs0[0] == (size_t)(n / 3));
        free(seen);
        free(t);
        free(order);
        free(rs0);
    }
    size_t order[4], st[5];
    mpilab_triplet_t bad[2] = {{0, 1, 2}, {0, 2, 2}};
    CHECK(mpilab_lmo_triplet_rounds(4, bad, 2, order, st) == 0);
    mpilab_triplet_t out[1] = {{0, 1, 5}};
    CHECK(mpilab_lmo_triplet_rounds(4, out, 1, order, st) == 0);
    CHECK(mpilab_lmo_triplet_rounds(2, bad, 1, order, st) == 0);
    CHECK(mpilab_lmo_ntriplets(2) == 0);
}

MPILAB_TEST(roles_cover_the_triplet)
{
    mpilab_triplet_t t = {2, 5, 9};
    int r, x, y;
    mpilab_triplet_roles(&t, 0, &r, &x, &y);
    CHECK(r == 2 && x == 5 && y == 9);
    mpilab_triplet_roles(&t, 1, &r, &x, &y);
    CHECK(r == 5 && x == 2 && y == 9);
    mpilab_triplet_roles(&t, 2, &r, &x, &y);
    CHECK(r == 9 && x == 2 && y == 5);
}

MPILAB_TEST(fit_exact_recovery)
{
    make(&D, 1, 0);
    mpilab_lmo_fit_t f;
    char err[256];
    mpilab_lmo_opts_t o;
    mpilab_lmo_opts_default(&o);
    CHECK(mpilab_lmo_fit(&D.in, &o, &f, err, sizeof err) == 0);
    for (int i = 0; i < P && f.node; i++) {
        CHECK_NEAR(f.node[i].C.value, Ct[i], 1e-12);
        CHECK_NEAR(f.node[i].t.value, tt[i], 1e-17);
        CHECK(f.node[i].C.flags == 0 && f.node[i].t.flags == 0);
        CHECK(f.node[i].ntrip == 6);
        CHECK_NEAR(f.node[i].C_spread, 0, 1e-12);
    }
    for (int i = 0; i < P && f.link; i++)
        for (int j = i + 1; j < P; j++) {
            const mpilab_lmo_link_t *l = &f.link[pq(i, j)];
            CHECK(l->i == i && l->j == j);
            CHECK_NEAR(l->L.value, Lt[i * P + j], 1e-12);
            CHECK_NEAR(l->inv_beta.value, Bt[i * P + j], 1e-17);
        }
    mpilab_lmo_fit_free(&f);
}

/* The slowest node by C and the slowest link by 1/beta of a fit. */
static void slowest(const mpilab_lmo_fit_t *f, int *node, size_t *link)
{
    *node = 0;
    *link = 0;
    for (int i = 1; i < f->p; i++)
        if (f->node[i].C.value > f->node[*node].C.value)
            *node = i;
    for (size_t q = 1; q < NP; q++)
        if (f->link[q].inv_beta.value > f->link[*link].inv_beta.value)
            *link = q;
}

MPILAB_TEST(fit_noise_and_outlier)
{
    char err[256];
    mpilab_lmo_opts_t o;
    mpilab_lmo_opts_default(&o);
    int cover_C = 0, cover_L = 0, total_C = 0, total_L = 0;
    for (int set = 0; set < 10; set++) {
        make(&D, 41, 0.002);
        mpilab_lmo_fit_t f, g;
        CHECK(mpilab_lmo_fit(&D.in, &o, &f, err, sizeof err) == 0);
        if (!f.node)
            return;
        for (int i = 0; i < P; i++) {
            CHECKF(fabs(f.node[i].C.value / Ct[i] - 1) < 0.25, "set %d node %d: C %g vs %g", set, i,
                   f.node[i].C.value, Ct[i]);
            CHECKF(fabs(f.node[i].t.value / tt[i] - 1) < 0.25, "set %d node %d: t %g vs %g", set, i,
                   f.node[i].t.value, tt[i]);
            cover_C += f.node[i].C.lo <= Ct[i] && Ct[i] <= f.node[i].C.hi;
            total_C++;
        }
        for (size_t q = 0; q < NP; q++) {
            int i = f.link[q].i, j = f.link[q].j;
            CHECK(fabs(f.link[q].L.value / Lt[i * P + j] - 1) < 0.10);
            CHECK(fabs(f.link[q].inv_beta.value / Bt[i * P + j] - 1) < 0.05);
            cover_L += f.link[q].L.lo <= Lt[i * P + j] && Lt[i * P + j] <= f.link[q].L.hi;
            total_L++;
        }
        int sn;
        size_t sl;
        slowest(&f, &sn, &sl);
        CHECK(sn == 3);
        CHECK(sl == pq(1, 4));
        /* a 1000x outlier in one sample of every kind of experiment moves nothing by more
         * than half its interval */
        D.buf[0][pq(0, 2)][7] *= 1000;
        D.buf[1][pq(3, 4)][0] *= 1000;
        D.buf[2][5][3] *= 1000;
        D.buf[3][11][40] *= 1000;
        CHECK(mpilab_lmo_fit(&D.in, &o, &g, err, sizeof err) == 0);
        for (int i = 0; g.node && i < P; i++) {
            CHECK(fabs(g.node[i].C.value - f.node[i].C.value) <= (f.node[i].C.hi - f.node[i].C.lo) / 2 + 1e-15);
            CHECK(fabs(g.node[i].t.value - f.node[i].t.value) <= (f.node[i].t.hi - f.node[i].t.lo) / 2 + 1e-20);
        }
        for (size_t q = 0; g.link && q < NP; q++) {
            CHECK(fabs(g.link[q].L.value - f.link[q].L.value) <= (f.link[q].L.hi - f.link[q].L.lo) / 2 + 1e-15);
            CHECK(fabs(g.link[q].inv_beta.value - f.link[q].inv_beta.value) <=
                  (f.link[q].inv_beta.hi - f.link[q].inv_beta.lo) / 2 + 1e-20);
        }
        mpilab_lmo_fit_free(&g);
        /* a whole point-to-two experiment 1000x off: the median over the node's triplets
         * keeps its C near the truth; the triplets disagree and say so */
        for (size_t k = 0; k < 41; k++)
            D.buf[2][0][k] *= 1000; /* node 0 is root of experiment 0 */
        CHECK(mpilab_lmo_fit(&D.in, &o, &g, err, sizeof err) == 0);
        if (g.node) {
            CHECK(fabs(g.node[0].C.value / Ct[0] - 1) < 0.5);
            CHECK(g.node[0].C.flags & MPILAB_LMO_DISAGREE);
        }
        mpilab_lmo_fit_free(&g);
        mpilab_lmo_fit_free(&f);
    }
    /* intervals hold the truth in most cases (bootstrap of medians, 95%) */
    CHECKF(cover_C >= total_C * 7 / 10, "C covered %d of %d", cover_C, total_C);
    CHECKF(cover_L >= total_L * 7 / 10, "L covered %d of %d", cover_L, total_L);
}

MPILAB_TEST(noise_size_excess_does_not_fix_C)
{
    /* link 0-1 is 2 ms long: in triplet (0,1,k) node 0's first receiver is 1 and node 1's
     * is 0, so the first reply is the late one and the point-to-two time is the slower
     * round trip whatever the root's C (up to about 2 ms): excess 0, noise-size once the
     * samples are noisy. Solving those experiments returned where the flat part ends (ms),
     * and with 3 of a node's 6 experiments flat, its median C was off by tens of times.
     * Only the experiments whose excess is above the medians' noise fix C. */
    char err[256];
    mpilab_lmo_opts_t o;
    mpilab_lmo_opts_default(&o);
    slow01 = 2e-3;
    /* exact data: a flat experiment's excess is exactly 0, so the experiments that fix C
     * are the ones with a positive excess: 3 of 6 for nodes 0 and 1 (their triplets with
     * each other), fewer for node 0 (its triplet with node 3, whose large C delays the
     * first reply too) */
    size_t exact[P];
    make(&D, 1, 0);
    mpilab_lmo_fit_t e;
    CHECK(mpilab_lmo_fit(&D.in, &o, &e, err, sizeof err) == 0);
    for (int i = 0; e.node && i < P; i++) {
        CHECK_NEAR(e.node[i].C.value, Ct[i], 1e-12);
        exact[i] = e.node[i].C_solved;
    }
    mpilab_lmo_fit_free(&e);
    CHECKF(exact[0] <= 3 && exact[1] == 3, "exact: node 0 %zu, node 1 %zu solved", exact[0], exact[1]);
    size_t flat = 0, leaked = 0;
    for (int set = 0; set < 10; set++) {
        make(&D, 41, 0.002);
        mpilab_lmo_fit_t f;
        CHECK(mpilab_lmo_fit(&D.in, &o, &f, err, sizeof err) == 0);
        for (int i = 0; f.node && i < P; i++) {
            CHECKF(fabs(f.node[i].C.value / Ct[i] - 1) < 0.25, "set %d node %d: C %g vs %g (%zu solved)", set, i,
                   f.node[i].C.value, Ct[i], f.node[i].C_solved);
            /* the flat ones stay out: one is above the noise by chance about 2.5% of the
             * time (a 95% interval on each side) */
            CHECKF(f.node[i].C_solved >= exact[i] && f.node[i].C_solved <= exact[i] + 2,
                   "set %d node %d: %zu solved, %zu exact", set, i, f.node[i].C_solved, exact[i]);
            if (f.node) {
                flat += f.node[i].ntrip - exact[i];
                leaked += f.node[i].C_solved - exact[i];
            }
        }
        for (size_t q = 0; f.link && q < NP; q++) {
            int i = f.link[q].i, j = f.link[q].j;
            CHECKF(fabs(f.link[q].L.value / Lt[i * P + j] - 1) < 0.10, "set %d link %d-%d: L %g vs %g", set, i, j,
                   f.link[q].L.value, Lt[i * P + j]);
        }
        mpilab_lmo_fit_free(&f);
    }
    CHECKF(leaked * 10 <= flat, "%zu of %zu flat experiments solved", leaked, flat);
    slow01 = 0;
}

/* A level that moved between the round-trip pass and the point-to-two pass (every time of
 * the latter delta longer): solved against rt_0, each root's C takes the shift for its own;
 * against the round trips timed beside each experiment (p2t_rtx_0, p2t_rty_0: they moved
 * with it) the shift cancels, C exact, and so L (from rt_0, which did not move). */
MPILAB_TEST(round_trips_beside_the_experiments_cancel_a_level_shift)
{
    const double delta = 30e-6;
    make(&D, 1, 0);
    for (size_t e = 0; e < 3 * D.nt; e++) {
        int r, x, y;
        mpilab_triplet_roles(&D.trip[e / 3], (int)(e % 3), &r, &x, &y);
        D.buf[2][e][0] += delta;
        D.lbuf[0][e][0] = rt(r, x, 0) + delta;
        D.lbuf[1][e][0] = rt(r, y, 0) + delta;
        D.ls[0][e] = (mpilab_lmo_series_t){D.lbuf[0][e], 1};
        D.ls[1][e] = (mpilab_lmo_series_t){D.lbuf[1][e], 1};
    }
    mpilab_lmo_opts_t o;
    mpilab_lmo_opts_default(&o);
    char err[256];
    mpilab_lmo_fit_t f;
    CHECK(mpilab_lmo_fit(&D.in, &o, &f, err, sizeof err) == 0); /* without them: shifted */
    double worst = 0;
    for (int i = 0; i < P && f.node; i++)
        worst = fmax(worst, fabs(f.node[i].C.value - Ct[i]));
    CHECK(worst > delta / 3);
    mpilab_lmo_fit_free(&f);
    D.in.p2t_rtx_0 = D.ls[0];
    D.in.p2t_rty_0 = D.ls[1];
    CHECK(mpilab_lmo_fit(&D.in, &o, &f, err, sizeof err) == 0);
    for (int i = 0; i < P && f.node; i++) {
        CHECK_NEAR(f.node[i].C.value, Ct[i], 1e-12);
        CHECK_NEAR(f.node[i].t.value, tt[i], 1e-12);
    }
    for (int i = 0; i < P && f.link; i++)
        for (int j = i + 1; j < P; j++)
            CHECK_NEAR(f.link[pq(i, j)].L.value, Lt[i * P + j], 1e-12);
    mpilab_lmo_fit_free(&f);
    /* one without a sample is refused in one line, as the other series are */
    D.ls[1][4].n = 0;
    CHECK(mpilab_lmo_fit(&D.in, &o, &f, err, sizeof err) == -1);
    CHECK(strstr(err, "round trip beside an empty point-to-two experiment 4 has no sample") != NULL);
    D.in.p2t_rtx_0 = D.in.p2t_rty_0 = NULL;
}

MPILAB_TEST(fit_flags_impossible_values)
{
    /* a node whose point-to-two costs less than its slower round trip: C < 0, clamped */
    make(&D, 1, 0);
    for (size_t k = 0; k < D.nt; k++)
        for (int e = 0; e < 3; e++) {
            int r, x, y;
            mpilab_triplet_roles(&D.trip[k], e, &r, &x, &y);
            if (r == 2)
                D.buf[2][3 * k + (size_t)e][0] -= 4 * Ct[2] + 10e-6;
        }
    mpilab_lmo_fit_t f;
    char err[256];
    CHECK(mpilab_lmo_fit(&D.in, NULL, &f, err, sizeof err) == 0);
    if (f.node) {
        CHECK(f.node[2].C.value == 0 && f.node[2].C.raw < 0);
        CHECK(f.node[2].C.flags & MPILAB_PARAM_CLAMPED);
    }
    mpilab_lmo_fit_free(&f);
}

MPILAB_TEST(fit_refuses_bad_input)
{
    make(&D, 1, 0);
    mpilab_lmo_fit_t f;
    char err[256] = "";
    mpilab_lmo_input_t in = D.in;
    in.p = 2;
    CHECK(mpilab_lmo_fit(&in, NULL, &f, err, sizeof err) == -1);
    CHECK(strstr(err, "at least 3 ranks") != NULL);
    in = D.in;
    in.bytes = 0;
    CHECK(mpilab_lmo_fit(&in, NULL, &f, err, sizeof err) == -1);
    CHECK(strstr(err, "M must be > 0") != NULL);
    in = D.in;
    in.ntrip = 1; /* only (0,1,2): ranks 3 and 4 are root of nothing */
    CHECK(mpilab_lmo_fit(&in, NULL, &f, err, sizeof err) == -1);
    CHECK(strstr(err, "root of no") != NULL);
    in = D.in;
    D.buf[3][4][0] = NAN;
    CHECK(mpilab_lmo_fit(&in, NULL, &f, err, sizeof err) == -1);
    CHECK(strstr(err, "not finite") != NULL);
    D.s[1][2].n = 0;
    CHECK(mpilab_lmo_fit(&in, NULL, &f, err, sizeof err) == -1);
    CHECK(strstr(err, "no sample") != NULL);
    for (size_t k = 0; k < strlen(err); k++)
        CHECK(err[k] != '\n');
}

MPILAB_TEST(point_to_two_event_by_event)
{
    /* c = 1, s = 3 per send. Flights b_x = 13, b_y = 10: replies back at 3 + 13 = 16 and
     * 6 + 10 = 16, together: 16 + 1 + 1 = 18 = the textbook 4 C + 2 M t + max b = 2 s + 2 c
     * + 13; round trips s + b + c = 17 and 14 */
    CHECK_NEAR(mpilab_lmo_p2t_events(17, 14, 1, 3), 18, 1e-12);
    /* b_x = b_y = 10: back at 13 (taken 13..14) and 16: 17, one C less than the textbook */
    CHECK_NEAR(mpilab_lmo_p2t_events(14, 14, 1, 3), 17, 1e-12);
    /* the first reply's flight much longer (b_x = 100): back at 103 and 16, the time is x's
     * round trip (104): nothing of the root's work shows */
    CHECK_NEAR(mpilab_lmo_p2t_events(104, 14, 1, 3), 104, 1e-12);
}

MPILAB_TEST(predictions_hand_cases)
{
    /* p = 3, root 0: node delays C = (1, 2, 3), t = 0; L_01 = 10, L_02 = 20, L_12 = 5;
     * 1/beta = 1 per byte on every link, m = 100 */
    double C[3] = {1, 2, 3}, t[3] = {0, 0, 0};
    double L[9] = {0, 10, 20, 10, 0, 5, 20, 5, 0}, B[9] = {0, 1, 1, 1, 0, 1, 1, 1, 0};
    mpilab_lmo_params_t q = {3, C, t, L, B, 0};
    /* one-way 0 -> 1: 1 + 10 + 100 + 2 = 113; 0 -> 2: 1 + 20 + 100 + 3 = 124 */
    CHECK_NEAR(mpilab_lmo_oneway(&q, 0, 1, 100), 113, 1e-12);
    /* linear scatter: sends at 1 (to 1), 2 (to 2): max(1 + 112, 2 + 123) = 125 */
    CHECK_NEAR(mpilab_lmo_predict(MPILAB_MODEL_SCATTER_LINEAR, &q, 0, 100), 125, 1e-12);
    /* linear gather: arrivals 2 + 10 + 100 = 112 (from 1), 3 + 20 + 100 = 123 (from 2);
     * c1 = 112 + 1 = 113, c2 = max(123, 113) + 1 = 124 */
    CHECK_NEAR(mpilab_lmo_predict(MPILAB_MODEL_GATHER_LINEAR, &q, 0, 100), 124, 1e-12);
    /* binomial, eager, event by event. Scatter p = 3 root 0: the root sends to 2 first (its
     * CPU done at 1, there at 1 + 20 + 100 + 3 = 124), then to 1 (CPU done at 2, there at
     * 2 + 10 + 100 + 2 = 114): 124 */
    CHECK_NEAR(mpilab_lmo_predict(MPILAB_MODEL_SCATTER_BINOMIAL, &q, 0, 100), 124, 1e-12);
    /* gather root 1 (relative 0,1,2 = ranks 1,2,0): 2 -> 1 at 3 + 5 + 100 = 108, 0 -> 1 at
     * 1 + 10 + 100 = 111; rank 1 takes relative 1 (rank 2) first: 108 + 2 = 110, then rank 0:
     * max(111, 110) + 2 = 113 */
    CHECK_NEAR(mpilab_lmo_predict(MPILAB_MODEL_GATHER_BINOMIAL, &q, 1, 100), 113, 1e-12);
    CHECK(isnan(mpilab_lmo_predict(MPILAB_MODEL_SCATTER_LINEAR, &q, 3, 100)));
    CHECK(isnan(mpilab_lmo_predict(MPILAB_MODEL_SCATTER_LINEAR, &q, 0, -1)));
    CHECK(isnan(mpilab_lmo_predict(MPILAB_MODEL_SCATTER_LINEAR, NULL, 0, 1)));
    CHECK(isnan(mpilab_lmo_predict(MPILAB_MODEL_P2P_FIT, &q, 0, 1)));
    /* synchronous messages (m >= rendezvous_bytes): the linear patterns' one-way times add:
     * scatter 113 + 124; gather 1 -> 0 (2 + 10 + 100 + 1 = 113) + 2 -> 0 (3 + 20 + 100 + 1) */
    q.rendezvous_bytes = 100;
    CHECK_NEAR(mpilab_lmo_predict(MPILAB_MODEL_SCATTER_LINEAR, &q, 0, 100), 237, 1e-12);
    CHECK_NEAR(mpilab_lmo_predict(MPILAB_MODEL_GATHER_LINEAR, &q, 0, 100), 237, 1e-12);
    /* synchronous binomial: the sum over stages of the slowest message: 0 -> 2 (124) then
     * 0 -> 1 (113); gather root 1: 2 -> 1 (3 + 5 + 100 + 2 = 110) then 0 -> 1 (1 + 10 + 100
     * + 2 = 113) */
    CHECK_NEAR(mpilab_lmo_predict(MPILAB_MODEL_SCATTER_BINOMIAL, &q, 0, 100), 237, 1e-12);
    CHECK_NEAR(mpilab_lmo_predict(MPILAB_MODEL_GATHER_BINOMIAL, &q, 1, 100), 223, 1e-12);
    q.rendezvous_bytes = 101; /* 100 bytes are eager again */
    CHECK_NEAR(mpilab_lmo_predict(MPILAB_MODEL_SCATTER_LINEAR, &q, 0, 100), 125, 1e-12);
    CHECK_NEAR(mpilab_lmo_predict(MPILAB_MODEL_GATHER_LINEAR, &q, 0, 100), 124, 1e-12);
    CHECK_NEAR(mpilab_lmo_predict(MPILAB_MODEL_SCATTER_BINOMIAL, &q, 0, 100), 124, 1e-12);
    q.rendezvous_bytes = -1;
    CHECK(isnan(mpilab_lmo_predict(MPILAB_MODEL_SCATTER_LINEAR, &q, 0, 100)));
}

MPILAB_TEST(binomial_reduces_to_hockney_without_node_delays)
{
    /* with C = t = 0 a message costs L + m/beta, Hockney's alpha + beta m: the binomial
     * predictions must agree with the Hockney ones for every p and root */
    for (int p = 1; p <= 9; p++) {
        double C[9] = {0}, t[9] = {0}, L[81], B[81];
        mpilab_hockney_t h[81];
        for (int i = 0; i < p; i++)
            for (int j = 0; j < p; j++) {
                L[i * p + j] = 1e-6 * (1 + (i * 7 + j * 3) % 5);
                B[i * p + j] = 1e-9 * (1 + (i + j) % 4);
                h[i * p + j] = (mpilab_hockney_t){L[i * p + j], B[i * p + j]};
            }
        /* synchronous messages (1000 >= 1 byte): the stage sum, as Hockney's */
        mpilab_lmo_params_t q = {p, C, t, L, B, 1};
        for (int r = 0; r < p; r++) {
            CHECK_NEAR(mpilab_lmo_predict(MPILAB_MODEL_SCATTER_BINOMIAL, &q, r, 1000),
                       mpilab_predict_scatter_binomial(h, (size_t)p, (size_t)r, 1000), 1e-15);
            CHECK_NEAR(mpilab_lmo_predict(MPILAB_MODEL_GATHER_BINOMIAL, &q, r, 1000),
                       mpilab_predict_gather_binomial(h, (size_t)p, (size_t)r, 1000), 1e-15);
        }
        /* eager, event by event, without node delays: the critical path of the same tree,
         * never above the stage sum (an upper bound of it) and never below the slowest
         * single message of the tree; equal for p <= 2 (one message) */
        q.rendezvous_bytes = 0;
        for (int r = 0; r < p; r++) {
            double ss = mpilab_predict_scatter_binomial(h, (size_t)p, (size_t)r, 1000);
            double sg = mpilab_predict_gather_binomial(h, (size_t)p, (size_t)r, 1000);
            double es = mpilab_lmo_predict(MPILAB_MODEL_SCATTER_BINOMIAL, &q, r, 1000);
            double eg = mpilab_lmo_predict(MPILAB_MODEL_GATHER_BINOMIAL, &q, r, 1000);
            CHECK(es <= ss + 1e-15 && eg <= sg + 1e-15);
            if (p <= 2) {
                CHECK_NEAR(es, ss, 1e-15);
                CHECK_NEAR(eg, sg, 1e-15);
            }
            /* the largest one-way message of the tree (the root's first, p - top/2 blocks) */
            size_t top = 1;
            while (top < (size_t)p)
                top <<= 1;
            if (p > 1) {
                int b = (int)((top / 2 + (size_t)r) % (size_t)p);
                double km = (double)((size_t)p - top / 2) * 1000;
                CHECK(es >= L[r * p + b] + km * B[r * p + b] - 1e-15);
                CHECK(eg >= L[b * p + r] + km * B[b * p + r] - 1e-15);
            }
        }
    }
}

MPILAB_TEST_MAIN()
