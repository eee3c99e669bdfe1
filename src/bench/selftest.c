/* Clock-synchronisation self-test with injected clock errors (include/mpilab/selftest.h). */
#include "mpilab/selftest.h"

#include <gsl/gsl_randist.h>
#include <gsl/gsl_rng.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define NCHK 11 /* doubles per check on the wire */

int mpilab_selftest_clock(MPI_Comm comm, const mpilab_inject_plan_t *plan, mpilab_sync_method_t method,
                          size_t nsyncs, mpilab_clock_check_t *out, char *err, size_t errlen)
{
    int rank, size;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    if (size < 2 || nsyncs < 1) {
        snprintf(err, errlen, "clock self-test needs >= 2 ranks and >= 1 synchronisation");
        return -1;
    }
    mpilab_clock_inject_t saved, mine = {0, 0, 0}, zero;
    mpilab_clock_inject_get(&saved);
    /* every rank's error, with a common base (rank 0's raw clock now) */
    double base = MPI_Wtime();
    MPI_Bcast(&base, 1, MPI_DOUBLE, 0, comm);
    if (plan) {
        mpilab_inject_plan_rank(plan, rank, &mine);
        mine.base = base;
        mpilab_inject_plan_rank(plan, 0, &zero);
        zero.base = base;
    } else {
        memset(&zero, 0, sizeof zero);
    }
    mpilab_clock_inject_set(&mine);
    /* MPI_Wtime may count from a per-process origin (Open MPI does): the shared clock of the
     * node is CLOCK_MONOTONIC; delta = monotonic - MPI_Wtime of this process, read back to
     * back (the pair with the least gap of 20) */
    double delta = 0.0, gap = INFINITY;
    for (int k = 0; k < 20; k++) {
        struct timespec a, b;
        clock_gettime(CLOCK_MONOTONIC, &a);
        double w = MPI_Wtime();
        clock_gettime(CLOCK_MONOTONIC, &b);
        double ta = (double)a.tv_sec + 1e-9 * (double)a.tv_nsec, tb = (double)b.tv_sec + 1e-9 * (double)b.tv_nsec;
        if (tb - ta < gap) {
            gap = tb - ta;
            delta = 0.5 * (ta + tb) - w;
        }
    }
    double delta0 = delta;
    MPI_Bcast(&delta0, 1, MPI_DOUBLE, 0, comm);
    double *row = calloc(nsyncs * NCHK, sizeof *row);
    double *all = rank == 0 ? calloc((size_t)size * nsyncs * NCHK, sizeof *all) : NULL;
    int bad = !row || (rank == 0 && !all), anybad = 0;
    MPI_Allreduce(&bad, &anybad, 1, MPI_INT, MPI_LOR, comm);
    int rc = 0;
    if (anybad) {
        snprintf(err, errlen, "out of memory");
        rc = -1;
        goto done;
    }
    srand((unsigned)(rank + 1) * 7919u);
    for (size_t s = 0; s < nsyncs; s++) {
        struct timespec ts = {0, (long)(rand() % 2000) * 1000L};
        nanosleep(&ts, NULL);
        mpilab_clocksync_t cs;
        if (mpilab_clocksync_run(comm, method, &cs) != MPI_SUCCESS) {
            snprintf(err, errlen, "clock synchronisation %zu failed", s);
            rc = -1;
            goto done;
        }
        double raw = MPI_Wtime();
        double reading = mpilab_clock_inject_apply(&mine, raw);
        /* rank 0's reading at this moment: its raw clock is shared - delta0 */
        double truth = mpilab_clock_inject_apply(&zero, raw + delta - delta0);
        double *c = &row[s * NCHK];
        c[0] = mpilab_clock_to_global(&cs, rank, reading) - truth;
        c[1] = cs.ranks[rank].uncertainty;
        c[2] = cs.ranks[rank].offset;
        c[3] = cs.ranks[rank].drift;
        /* the truth in the sync's model: rank 0 reads t0 at raw0; this rank then reads ... */
        double raw0 = mpilab_clock_inject_invert(&zero, cs.t0);
        c[4] = mpilab_clock_inject_apply(&mine, raw0 + delta0 - delta) - cs.t0;
        c[5] = (1.0 + mine.drift) / (1.0 + zero.drift) - 1.0;
        c[6] = cs.attempts;
        c[7] = cs.precise;
        c[8] = cs.ranks[rank].drift_uncertainty;
        /* the same 1 s later: the injected clocks are exactly linear in the node's one
         * physical clock, so both readings then follow from raw + 1 without waiting */
        c[9] = mpilab_clock_to_global(&cs, rank, mpilab_clock_inject_apply(&mine, raw + 1.0)) -
               mpilab_clock_inject_apply(&zero, raw + 1.0 + delta - delta0);
        c[10] = cs.stopped;
        mpilab_clocksync_free(&cs);
    }
    MPI_Gather(row, (int)(nsyncs * NCHK), MPI_DOUBLE, all, (int)(nsyncs * NCHK), MPI_DOUBLE, 0, comm);
    if (rank == 0 && out) {
        size_t k = 0;
        for (size_t s = 0; s < nsyncs; s++)
            for (int r = 1; r < size; r++) {
                const double *c = &all[((size_t)r * nsyncs + s) * NCHK];
                out[k++] = (mpilab_clock_check_t){(int)s, r, c[4], c[5], c[2], c[3], c[0], c[1], (int)c[6], c[7] != 0.0,
                                                  c[8], c[9], (int)c[10]};
            }
    }
done:
    mpilab_clock_inject_set(&saved);
    free(row);
    free(all);
    return rc;
}

#define FIT_SIZES 15
#define FIT_REPS 30

static double fit_noisy(gsl_rng *r, double t, double delayed)
{
    if (gsl_rng_uniform(r) >= delayed)
        return t * (1.0 + 0.002 * gsl_rng_uniform(r));
    return t * (1.0 + gsl_ran_exponential(r, 0.2));
}

int mpilab_selftest_fit(const mpilab_fit_truth_t *t, unsigned long seed, double delayed, int outliers,
                        mpilab_fit_check_t *out, char *err, size_t errlen)
{
    if (!t || !out || !(delayed >= 0.0 && delayed < 1.0)) {
        snprintf(err, errlen, "bad synthetic-fit arguments");
        return -1;
    }
    int rc = -1;
    gsl_rng *r = gsl_rng_alloc(gsl_rng_mt19937);
    double *buf = malloc(FIT_SIZES * 4 * FIT_REPS * sizeof *buf);
    mpilab_loggp_point_t pts[FIT_SIZES];
    mpilab_sample_set_t sets[FIT_SIZES];
    double x[FIT_SIZES], med[4][FIT_SIZES];
    if (!r || !buf) {
        snprintf(err, errlen, "out of memory");
        goto done;
    }
    gsl_rng_set(r, seed);
    memset(pts, 0, sizeof pts);
    for (int k = 0; k < FIT_SIZES; k++) {
        double m = k == 0 ? 0.0 : 64.0 * pow(2.0, k - 1);
        x[k] = m;
        double truth[4] = {2.0 * (t->os + t->L + t->orr + (m > t->burst ? (m - t->burst) * t->G : 0.0)), t->os,
                           t->orr, t->g0 + t->G * m};
        mpilab_loggp_series_t *sr[4] = {&pts[k].rtt, &pts[k].os, &pts[k].orr, &pts[k].g};
        pts[k].bytes = (size_t)m;
        for (int q = 0; q < 4; q++) {
            double *v = buf + ((size_t)k * 4 + (size_t)q) * FIT_REPS;
            for (int i = 0; i < FIT_REPS; i++)
                v[i] = q == 3 ? truth[q] * (1.0 + gsl_ran_gaussian(r, 0.02)) : fit_noisy(r, truth[q], delayed);
            if (outliers)
                v[gsl_rng_uniform_int(r, FIT_REPS)] *= 1000.0;
            sr[q]->samples = v;
            mpilab_stats_compute(v, NULL, FIT_REPS, 0.95, 0.05, &sr[q]->stats);
            med[q][k] = sr[q]->stats.median;
        }
        sets[k] = (mpilab_sample_set_t){m, pts[k].rtt.samples, NULL, FIT_REPS};
    }
    mpilab_robust_opts_t o;
    mpilab_robust_opts_default(&o);
    o.seed = seed;
    mpilab_hockney_robust_t h;
    mpilab_loggp_robust_t lg;
    if (mpilab_hockney_fit_samples(sets, FIT_SIZES, 0.5, &o, &h, NULL, err, errlen) != 0 ||
        mpilab_loggp_fit_samples(pts, FIT_SIZES, &o, &lg, NULL, err, errlen) != 0 ||
        mpilab_loggp_fit(x, med[0], med[1], med[2], med[3], FIT_SIZES, &out->median_fit, err, errlen) != 0)
        goto done;
    out->alpha = h.alpha;
    out->beta = h.beta;
    out->L = lg.L;
    out->G = lg.G;
    rc = 0;
done:
    free(buf);
    if (r)
        gsl_rng_free(r);
    return rc;
}

#define LINK_MAX_RANGES 4
/* The precision a minimum is measured to in further rounds (the mean of its lowest
 * spacings against it): link_measure. */
#define LINK_MIN_PRECISION 0.01

/* The mean of the lowest (up to 8) spacings of the valid samples: how far apart the
 * samples near the minimum lie (the minimum's bootstrap scale in src/model/robust.c). */
static double low_spacing(const double *x, const unsigned char *valid, size_t n)
{
    double low[9];
    size_t m = 0;
    for (size_t i = 0; i < n; i++) {
        if ((valid && !valid[i]) || !isfinite(x[i]))
            continue;
        size_t j = m < 9 ? m++ : 9;
        if (j == 9 && !(x[i] < low[8]))
            continue;
        if (j == 9)
            j = 8;
        while (j > 0 && low[j - 1] > x[i]) {
            low[j] = low[j - 1];
            j--;
        }
        low[j] = x[i];
    }
    return m > 1 ? (low[m - 1] - low[0]) / (double)(m - 1) : 0.0;
}

/* Appends n samples (valid: NULL = all valid) to a series of *have samples (dst, dvalid:
 * NULL = not kept) and recomputes its statistics; 0, or -1 when memory ran out. */
static int append_samples(double **dst, unsigned char **dvalid, mpilab_stats_t *st, const double *src,
                          const unsigned char *svalid, size_t n, const mpilab_precision_t *prec)
{
    size_t have = st->reps;
    double *d = realloc(*dst, (have + n + 1) * sizeof *d);
    if (!d)
        return -1;
    *dst = d;
    memcpy(d + have, src, n * sizeof *d);
    if (dvalid) {
        unsigned char *v = realloc(*dvalid, have + n + 1);
        if (!v)
            return -1;
        *dvalid = v;
        for (size_t k = 0; k < n; k++)
            v[have + k] = svalid ? svalid[k] : 1;
    }
    mpilab_stats_compute(d, dvalid ? *dvalid : NULL, have + n, prec->cl, prec->eps, st);
    return 0;
}

/* 1 when a series' minimum is precise: the mean of its lowest spacings at most
 * LINK_MIN_PRECISION of it (the scale of the minimum's interval in src/model/robust.c). */
static int min_precise(const double *x, const unsigned char *valid, size_t n)
{
    double m = mpilab_quantile(x, valid, n, 0.0);
    return low_spacing(x, valid, n) <= LINK_MIN_PRECISION * m;
}

/* One more round of ping-pongs at the sizes whose minimum is imprecise (want[k]), their
 * samples added to pp[k]. */
static int link_more_p2p(MPI_Comm comm, const size_t *sizes, size_t nsizes, const mpilab_precision_t *prec,
                         const int *want, mpilab_p2p_result_t *pp)
{
    for (size_t k = 0; k < nsizes; k++) {
        if (!want[k])
            continue;
        mpilab_p2p_result_t more;
        if (mpilab_p2p_measure(comm, sizes[k], sizes[k], MPILAB_P2P_SEQUENTIAL, prec, &more) != MPI_SUCCESS)
            return -1;
        int rc = append_samples(&pp[k].samples, &pp[k].valid, &pp[k].stats, more.samples, more.valid,
                                more.stats.reps, prec);
        mpilab_p2p_result_free(&more);
        if (rc != 0)
            return -1;
    }
    return 0;
}

/* One more LogGP measurement at the sizes whose round trip's minimum is imprecise (want[k]),
 * every series' samples added to lg's points. */
static int link_more_loggp(MPI_Comm comm, const size_t *sizes, size_t nsizes, const mpilab_loggp_opts_t *lo,
                           const int *want, mpilab_loggp_pair_result_t *lg)
{
    size_t sub[64], at[64], m = 0;
    for (size_t k = 0; k < nsizes && k < 64; k++)
        if (want[k]) {
            sub[m] = sizes[k];
            at[m++] = k;
        }
    if (m == 0)
        return 0;
    mpilab_loggp_pair_result_t more;
    memset(&more, 0, sizeof more);
    if (mpilab_loggp_measure(comm, sub, m, lo, &more) != MPI_SUCCESS)
        return -1;
    int rc = 0;
    for (size_t i = 0; i < m && rc == 0; i++) {
        mpilab_loggp_point_t *d = &lg->points[at[i]], *s = &more.points[i];
        mpilab_loggp_series_t *ds[4] = {&d->rtt, &d->os, &d->orr, &d->g};
        const mpilab_loggp_series_t *ss[4] = {&s->rtt, &s->os, &s->orr, &s->g};
        for (int q = 0; q < 4 && rc == 0; q++)
            rc = append_samples(&ds[q]->samples, NULL, &ds[q]->stats, ss[q]->samples, NULL, ss[q]->stats.reps,
                                &lo->prec);
    }
    mpilab_loggp_pair_result_free(&more);
    return rc;
}

/* The link's ping-pongs (per size) and LogGP measurement, in rounds: the fits report
 * minima, and a round's repetitions (stopped on the median's precision, at most
 * prec->max_reps) can leave a minimum imprecise where many samples are delayed (busy CPUs:
 * the lowest samples then lie far apart and the minimum's interval is wide). Sizes whose
 * minimum is imprecise (ping-pong, or LogGP round trip) are measured again and their
 * samples added, at most `rounds` rounds in all; every rank holds every sample, and
 * the ranks agree on what is imprecise (MPI_MIN over the flags) before each round. */
static int link_measure(MPI_Comm comm, const size_t *sizes, size_t nsizes, const mpilab_precision_t *prec,
                        const mpilab_loggp_opts_t *lo, size_t rounds, mpilab_p2p_result_t *pp,
                        mpilab_loggp_pair_result_t *lg, char *err, size_t errlen)
{
    for (size_t k = 0; k < nsizes; k++)
        if (mpilab_p2p_measure(comm, sizes[k], sizes[k], MPILAB_P2P_SEQUENTIAL, prec, &pp[k]) != MPI_SUCCESS) {
            snprintf(err, errlen, "ping-pong at %zu bytes failed", sizes[k]);
            return -1;
        }
    if (mpilab_loggp_measure(comm, sizes, nsizes, lo, lg) != MPI_SUCCESS) {
        snprintf(err, errlen, "LogGP measurement failed");
        return -1;
    }
    size_t n = nsizes < 64 ? nsizes : 64; /* the rounds look at the first 64 sizes */
    for (size_t round = 1; round < rounds; round++) {
        int ok[128], all[128], more_p2p = 0, more_lg = 0;
        for (size_t k = 0; k < n; k++) {
            const mpilab_loggp_series_t *rt = &lg->points[k].rtt;
            ok[k] = min_precise(pp[k].samples, pp[k].valid, pp[k].stats.reps);
            ok[64 + k] = min_precise(rt->samples, NULL, rt->stats.reps);
        }
        for (size_t k = n; k < 64; k++)
            ok[k] = ok[64 + k] = 1;
        MPI_Allreduce(ok, all, 128, MPI_INT, MPI_MIN, comm);
        int want[128];
        for (size_t k = 0; k < 128; k++) {
            want[k] = !all[k];
            more_p2p += k < 64 && want[k];
            more_lg += k >= 64 && want[k];
        }
        if (!more_p2p && !more_lg)
            break;
        if (link_more_p2p(comm, sizes, n, prec, want, pp) != 0 ||
            link_more_loggp(comm, sizes, n, lo, want + 64, lg) != 0) {
            snprintf(err, errlen, "a further round of measurement failed");
            return -1;
        }
    }
    return 0;
}

int mpilab_selftest_link(MPI_Comm comm, const size_t *sizes, size_t nsizes, const mpilab_precision_t *prec,
                         size_t burst, size_t rounds, mpilab_link_fit_t *out, char *err, size_t errlen)
{
    int size;
    MPI_Comm_size(comm, &size);
    memset(out, 0, sizeof *out);
    if (size != 2 || nsizes < 2) {
        snprintf(err, errlen, "link self-test needs exactly 2 ranks and >= 2 sizes");
        return -1;
    }
    mpilab_loggp_opts_t lo;
    mpilab_loggp_opts_default(&lo);
    lo.prec = *prec;
    lo.mode = MPILAB_P2P_SEQUENTIAL;
    if (burst >= 2)
        lo.burst = burst;
    if (mpilab_loggp_check(sizes, nsizes, &lo, err, errlen) != 0)
        return -1;
    int rc = -1;
    mpilab_p2p_result_t *pp = calloc(nsizes, sizeof *pp);
    mpilab_loggp_pair_result_t lg;
    memset(&lg, 0, sizeof lg);
    mpilab_sample_set_t *sets = calloc(nsizes, sizeof *sets);
    double *x = calloc(nsizes, sizeof *x), *mean = calloc(nsizes, sizeof *mean);
    double *med[4];
    for (int q = 0; q < 4; q++)
        med[q] = calloc(nsizes, sizeof *med[q]);
    if (!pp || !sets || !x || !mean || !med[0] || !med[1] || !med[2] || !med[3]) {
        snprintf(err, errlen, "out of memory");
        goto done;
    }
    if (link_measure(comm, sizes, nsizes, prec, &lo, rounds, pp, &lg, err, errlen) != 0)
        goto done;
    mpilab_robust_opts_t ro;
    mpilab_robust_opts_default(&ro);
    for (size_t k = 0; k < nsizes; k++) {
        x[k] = (double)sizes[k];
        sets[k] = (mpilab_sample_set_t){x[k], pp[k].samples, pp[k].valid, pp[k].stats.reps};
        mean[k] = 0.5 * pp[k].stats.mean;
        const mpilab_loggp_point_t *pt = &lg.points[k];
        med[0][k] = pt->rtt.stats.median;
        med[1][k] = pt->os.stats.median;
        med[2][k] = pt->orr.stats.median;
        med[3][k] = pt->g.stats.median;
    }
    double *resid = calloc(nsizes, sizeof *resid);
    out->hockney_ok = resid && mpilab_hockney_fit_samples(sets, nsizes, 0.5, &ro, &out->hockney, resid,
                                                          out->hockney_err, sizeof out->hockney_err) == 0;
    for (size_t k = 0; k < nsizes && k < 64; k++) {
        out->oneway_min[k] = 0.5 * mpilab_quantile(pp[k].samples, pp[k].valid, pp[k].stats.reps, 0.0);
        out->oneway_residual[k] = resid ? resid[k] : NAN;
        out->oneway_median[k] = 0.5 * pp[k].stats.median;
        out->reps[k] = pp[k].stats.reps;
        out->oneway_low_spacing[k] = 0.5 * low_spacing(pp[k].samples, pp[k].valid, pp[k].stats.reps);
    }
    free(resid);
    out->loggp_ok = mpilab_loggp_fit_samples(lg.points, nsizes, &ro, &out->loggp, NULL, out->loggp_err,
                                             sizeof out->loggp_err) == 0;
    out->former_hockney_ok = mpilab_hockney_fit(x, mean, nsizes, &out->former_hockney) == 0;
    {
        double half[nsizes], from[LINK_MAX_RANGES], to[LINK_MAX_RANGES];
        mpilab_hockney_range_t hr[LINK_MAX_RANGES];
        mpilab_loggp_t rf[LINK_MAX_RANGES];
        for (size_t k = 0; k < nsizes; k++)
            half[k] = 0.5 * med[0][k];
        size_t nr = mpilab_hockney_fit_ranges(x, half, nsizes, hr, LINK_MAX_RANGES);
        for (size_t r = 0; r < nr; r++) {
            from[r] = hr[r].from;
            to[r] = hr[r].to;
        }
        char e2[128];
        out->former_loggp_ok =
            (nr > 0 ? mpilab_loggp_fit_ranges(x, med[0], med[1], med[2], med[3], nsizes, from, to, nr, rf,
                                              &out->former_loggp, e2, sizeof e2)
                    : mpilab_loggp_fit(x, med[0], med[1], med[2], med[3], nsizes, &out->former_loggp, e2,
                                       sizeof e2)) == 0;
    }
    rc = 0;
done:
    if (pp)
        for (size_t k = 0; k < nsizes; k++)
            mpilab_p2p_result_free(&pp[k]);
    free(pp);
    mpilab_loggp_pair_result_free(&lg);
    free(sets);
    free(x);
    free(mean);
    for (int q = 0; q < 4; q++)
        free(med[q]);
    return rc;
}
