/* The LogGP measurement's parallel schedule check (src/bench/runner_run.h): the pairs of
 * runner_pairs_check_pick measured again one at a time; when their round trips or gap
 * streams disagree with the parallel ones (runner_pairs_disagree at any size), the
 * measurement is flagged parallel_contention and every pair is measured again sequentially
 * (docs/pairs.md, "Contention check"). */
#include "runner_run.h"

#include <stdio.h>
#include <stdlib.h>

/* rank 0: the picked pairs whose parallel figures (lres[pick[q]]) and lone ones (alone[q])
 * disagree in the round trip or the gap per message at some size; the worst ratio of their
 * medians (parallel over alone) among those. */
static size_t loggp_compare(const mpilab_loggp_pair_result_t *lres, const size_t *pick, size_t k,
                            const mpilab_loggp_pair_result_t *alone, double eps, double *worst)
{
    size_t bad = 0;
    *worst = 1.0;
    for (size_t q = 0; q < k; q++) {
        const mpilab_loggp_pair_result_t *p = &lres[pick[q]], *s = &alone[q];
        int differs = 0;
        for (size_t z = 0; p->points && s->points && z < p->nsizes && z < s->nsizes; z++) {
            const mpilab_stats_t *ps[2] = {&p->points[z].rtt.stats, &p->points[z].g.stats};
            const mpilab_stats_t *ss[2] = {&s->points[z].rtt.stats, &s->points[z].g.stats};
            for (int u = 0; u < 2; u++)
                if (runner_pairs_disagree(ps[u], ss[u], eps)) {
                    differs = 1;
                    if (ps[u]->median / ss[u]->median > *worst)
                        *worst = ps[u]->median / ss[u]->median;
                }
        }
        bad += (size_t)differs;
    }
    return bad;
}

int runner_loggp_check(run_t *w, const mpilab_pair_t *pairs, size_t npairs, const size_t *order,
                       const size_t *round_start, size_t rounds, const int *groups,
                       mpilab_loggp_pair_result_t *lres)
{
    const mpilab_runner_config_t *c = w->c;
    w->lg_check_pairs = w->lg_check_disagree = 0;
    w->lg_check_worst = 1.0;
    w->lg_fell_back = 0;
    if (c->lg.mode != MPILAB_P2P_PARALLEL || rounds >= npairs)
        return MPI_SUCCESS;
    size_t pick[RUNNER_PAIRS_CHECK];
    size_t k = runner_pairs_check_pick(pairs, order, round_start, rounds, groups, pick);
    if (k == 0)
        return MPI_SUCCESS;
    mpilab_pair_t sub[RUNNER_PAIRS_CHECK];
    size_t sorder[RUNNER_PAIRS_CHECK], sstart[RUNNER_PAIRS_CHECK + 1];
    for (size_t q = 0; q < k; q++) {
        sub[q] = pairs[pick[q]];
        sorder[q] = sstart[q] = q;
    }
    sstart[k] = k;
    mpilab_loggp_opts_t lone = c->lg;
    lone.mode = MPILAB_P2P_SEQUENTIAL;
    lone.progress = 0;
    mpilab_loggp_pair_result_t alone[RUNNER_PAIRS_CHECK];
    int rc = mpilab_loggp_measure_pairs(MPI_COMM_WORLD, sub, k, sorder, sstart, k, w->lg_sizes, w->lg_nsizes, &lone,
                                        w->rank == 0 ? alone : NULL);
    if (rc != MPI_SUCCESS)
        return rc;
    unsigned long long bad = 0;
    if (w->rank == 0) {
        w->lg_check_pairs = k;
        w->lg_check_disagree = loggp_compare(lres, pick, k, alone, c->bo.prec.eps, &w->lg_check_worst);
        bad = w->lg_check_disagree;
        for (size_t q = 0; q < k; q++)
            mpilab_loggp_pair_result_free(&alone[q]);
    }
    MPI_Bcast(&bad, 1, MPI_UNSIGNED_LONG_LONG, 0, MPI_COMM_WORLD);
    if (bad == 0)
        return MPI_SUCCESS;
    if (w->rank == 0 && !c->quiet)
        fprintf(stderr, "mpilab-bench: LogGP: %llu of %zu checked pairs slower in parallel than alone "
                "(contention); every pair measured again one at a time\n", bad, k);
    for (size_t q = 0; w->rank == 0 && q < npairs; q++)
        mpilab_loggp_pair_result_free(&lres[q]);
    w->lg_fell_back = 1;
    mpilab_loggp_opts_t seq = c->lg;
    seq.mode = MPILAB_P2P_SEQUENTIAL;
    return mpilab_loggp_measure_pairs(MPI_COMM_WORLD, pairs, npairs, order, round_start, rounds, w->lg_sizes,
                                      w->lg_nsizes, &seq, lres);
}

json_t *runner_loggp_check_json(const run_t *w)
{
    if (w->lg_check_pairs == 0)
        return NULL;
    return json_pack("{s:s,s:I,s:I,s:o,s:b}", "asked", "parallel", "pairs_checked", (json_int_t)w->lg_check_pairs,
                     "disagreed", (json_int_t)w->lg_check_disagree, "worst_ratio",
                     mpilab_json_real(w->lg_check_disagree ? w->lg_check_worst : 1.0), "fell_back",
                     w->lg_fell_back);
}
