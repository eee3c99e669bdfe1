/* The runner's pair design and its measurement (src/bench/runner_pairs.h). */
#include "runner_pairs.h"

#include <stdlib.h>
#include <string.h>

/* Group labels of every rank from the host names, computed on rank 0 (the names gathered
 * there: a simulated cluster of 1024 ranks would otherwise do 1024 times the same O(n x
 * groups) work) and broadcast; returns the number of groups, how, and -1 if memory ran out. */
static int groups_of_names(const char *how, MPI_Comm comm, int n, int *groups, const char **how_out)
{
    int me;
    MPI_Comm_rank(comm, &me);
    char name[MPI_MAX_PROCESSOR_NAME + 1] = "";
    int len = 0;
    MPI_Get_processor_name(name, &len);
    char *all = me == 0 ? calloc((size_t)n, sizeof name) : NULL;
    const char **names = me == 0 ? calloc((size_t)n, sizeof *names) : NULL;
    int hdr[2] = {-1, 0}; /* ngroups, how: 0 host, 1 site */
    MPI_Gather(name, (int)sizeof name, MPI_CHAR, all, (int)sizeof name, MPI_CHAR, 0, comm);
    if (me == 0 && all && names) {
        for (int r = 0; r < n; r++) {
            all[(size_t)r * sizeof name + sizeof name - 1] = '\0';
            names[r] = all + (size_t)r * sizeof name;
        }
        int site = strcmp(how, "site") == 0;
        hdr[0] = mpilab_pairs_groups_from_names(n, names, site, groups);
        hdr[1] = site;
        if (strcmp(how, "auto") == 0 && hdr[0] >= 0 && (hdr[0] <= 1 || hdr[0] >= n)) {
            /* auto: nodes holding several ranks, else the host names' stems (sites) */
            hdr[0] = mpilab_pairs_groups_from_names(n, names, 1, groups);
            hdr[1] = 1;
        }
    }
    free(all);
    free(names);
    MPI_Bcast(hdr, 2, MPI_INT, 0, comm);
    if (hdr[0] >= 0)
        MPI_Bcast(groups, n, MPI_INT, 0, comm);
    *how_out = hdr[1] ? "site" : "host";
    return hdr[0];
}

/* Group labels of every rank as --pair-groups asks (every rank gets the same). */
static int make_groups(const mpilab_runner_config_t *c, MPI_Comm comm, runner_pairs_t *rp, char *err, size_t errlen)
{
    int n = rp->ranks;
    const char *how = c->pair_groups ? c->pair_groups : "auto";
    rp->groups_how = "none";
    if (strcmp(how, "none") == 0)
        return 0;
    rp->groups = calloc((size_t)n, sizeof *rp->groups);
    int ok = rp->groups != NULL, allok = 0;
    MPI_Allreduce(&ok, &allok, 1, MPI_INT, MPI_LAND, comm);
    if (!allok) {
        snprintf(err, errlen, "--pair-groups: out of memory");
        return -1;
    }
    char *end = NULL;
    long block = strtol(how, &end, 10);
    if (end != how && *end == '\0') {
        for (int r = 0; r < n; r++)
            rp->groups[r] = (int)(r / block);
        rp->ngroups = (int)((n + block - 1) / block);
        rp->groups_how = "block";
    } else {
        rp->ngroups = groups_of_names(how, comm, n, rp->groups, &rp->groups_how);
        if (rp->ngroups < 0) {
            snprintf(err, errlen, "--pair-groups: out of memory");
            return -1;
        }
    }
    if (rp->ngroups <= 1 || rp->ngroups >= n) { /* one group, or one per rank: no boundary to cross */
        free(rp->groups);
        rp->groups = NULL;
        rp->ngroups = 0;
        if (strcmp(how, "auto") == 0)
            rp->groups_how = "none";
    }
    return 0;
}

int runner_pairs_init(const mpilab_runner_config_t *c, MPI_Comm comm, runner_pairs_t *rp, char *err, size_t errlen)
{
    memset(rp, 0, sizeof *rp);
    MPI_Comm_size(comm, &rp->ranks);
    int n = rp->ranks;
    rp->asked = c->pairs_design;
    rp->seed = c->pairs_seed;
    rp->design = n < 3 ? MPILAB_PAIRS_FULL : mpilab_pairs_resolve(c->pairs_design, n);
    if (make_groups(c, comm, rp, err, errlen) != 0)
        return -1;
    size_t full = n >= 2 ? (size_t)n * (size_t)(n - 1) / 2 : 0;
    rp->matchings = mpilab_pairs_default_matchings(n);
    size_t cap = rp->design == MPILAB_PAIRS_FULL ? full : mpilab_pairs_sample_max(n, rp->ngroups, rp->matchings);
    rp->pairs = calloc(cap + 1, sizeof *rp->pairs);
    rp->order = calloc(cap + 1, sizeof *rp->order);
    rp->round_start = calloc(cap + 2, sizeof *rp->round_start);
    if (!rp->pairs || !rp->order || !rp->round_start) {
        snprintf(err, errlen, "the pair design of %d ranks: out of memory", n);
        return -1;
    }
    rp->npairs = rp->design == MPILAB_PAIRS_FULL
                     ? mpilab_pairs_full(n, rp->pairs)
                     : mpilab_pairs_sample(n, rp->groups, rp->matchings, (uint64_t)c->pairs_seed, rp->pairs);
    rp->rounds = rp->npairs ? mpilab_pairs_rounds(n, rp->pairs, rp->npairs, rp->order, rp->round_start) : 0;
    if (n >= 2 && (!rp->npairs || !rp->rounds)) {
        snprintf(err, errlen, "the %s pair design of %d ranks could not be built (out of memory)",
                 mpilab_pairs_design_name(rp->design), n);
        return -1;
    }
    return 0;
}

void runner_pairs_free(runner_pairs_t *rp)
{
    free(rp->groups);
    free(rp->pairs);
    free(rp->order);
    free(rp->round_start);
    memset(rp, 0, sizeof *rp);
}

/* rank 0: one delivered pair into the matrix */
static void runner_pairs_sink(void *ctx, size_t index, size_t round, const mpilab_p2p_result_t *r)
{
    mpilab_pair_matrix_t *mx = ctx;
    mx->stats[index] = r->stats;
    mx->round[index] = round;
    mx->measured[index] = 1;
    free(mx->samples[index]);
    mx->samples[index] = NULL;
    size_t n = r->stats.reps;
    if (n <= mx->samples_cap && r->samples) {
        mx->samples[index] = malloc((n ? n : 1) * sizeof(double));
        if (mx->samples[index])
            memcpy(mx->samples[index], r->samples, n * sizeof(double));
    }
}

/* rank 0: the check's sequential figures */
typedef struct check_ctx {
    mpilab_stats_t stats[RUNNER_PAIRS_CHECK];
} check_ctx_t;

static void check_sink(void *ctx, size_t index, size_t round, const mpilab_p2p_result_t *r)
{
    (void)round;
    check_ctx_t *cc = ctx;
    if (index < RUNNER_PAIRS_CHECK)
        cc->stats[index] = r->stats;
}

size_t runner_pairs_check_pick(const mpilab_pair_t *pairs, const size_t *order, const size_t *round_start,
                               size_t rounds, const int *groups, size_t *pick)
{
    size_t many = 0; /* rounds of two pairs or more: where pairs can contend */
    for (size_t r = 0; r < rounds; r++)
        many += round_start[r + 1] - round_start[r] >= 2;
    size_t want = many < RUNNER_PAIRS_CHECK ? many : RUNNER_PAIRS_CHECK, got = 0, seen = 0;
    if (many == 1) /* one round of many pairs (a matching): several of its pairs */
        for (size_t r = 0; r < rounds; r++)
            if (round_start[r + 1] - round_start[r] >= 2)
                want = round_start[r + 1] - round_start[r] < RUNNER_PAIRS_CHECK ? round_start[r + 1] - round_start[r]
                                                                                 : RUNNER_PAIRS_CHECK;
    for (size_t r = 0; r < rounds && got < want; r++) {
        size_t a = round_start[r], len = round_start[r + 1] - a;
        if (len < 2)
            continue;
        for (size_t take = many == 1 ? want : 1; take > 0 && got < want; take--) {
            if (many > 1 && seen++ * want / many != got) /* evenly spaced over the contending rounds */
                continue;
            size_t idx = order[a + got % len];
            for (size_t k = 0; groups && got % 2 == 0 && k < len; k++) {
                const mpilab_pair_t *q = &pairs[order[a + k]];
                int taken = 0;
                for (size_t t = 0; t < got; t++)
                    taken |= pick[t] == order[a + k];
                if (!taken && groups[q->i] != groups[q->j]) {
                    idx = order[a + k]; /* a pair across a boundary, where links are shared */
                    break;
                }
            }
            for (size_t t = 0; t < got; t++) /* distinct pairs (a matching's round) */
                if (pick[t] == idx)
                    for (size_t k = 0; k < len; k++) {
                        int taken = 0;
                        for (size_t u = 0; u < got; u++)
                            taken |= pick[u] == order[a + k];
                        if (!taken) {
                            idx = order[a + k];
                            break;
                        }
                    }
            pick[got++] = idx;
        }
    }
    return got;
}

int runner_pairs_disagree(const mpilab_stats_t *par, const mpilab_stats_t *seq, double eps)
{
    if (par->reps == 0 || seq->reps == 0 || !(seq->median > 0))
        return 0;
    double slack = eps * seq->median;
    return par->med_lo > seq->med_hi + slack || seq->med_lo > par->med_hi + slack;
}

/* The parallel figures of the picked pairs against their sequential ones: the count of
 * pairs that disagree (runner_pairs_disagree), on rank 0. */
static size_t check_compare(const mpilab_pair_matrix_t *mx, const size_t *pick, size_t k, const check_ctx_t *cc,
                            double eps, double *worst)
{
    size_t bad = 0;
    *worst = 1.0;
    for (size_t q = 0; q < k; q++) {
        const mpilab_stats_t *p = &mx->stats[pick[q]], *s = &cc->stats[q];
        if (!mx->measured[pick[q]] || !runner_pairs_disagree(p, s, eps))
            continue;
        bad++;
        if (p->median / s->median > *worst)
            *worst = p->median / s->median;
    }
    return bad;
}

/* Collective, after a parallel measurement into mx: the check; when pairs disagree, every
 * pair is measured again one at a time into mx (the contention stays out of the figures). */
static int check_parallel(const runner_pairs_t *rp, const mpilab_runner_config_t *c, MPI_Comm comm, size_t bytes,
                          size_t back, mpilab_pair_matrix_t *mx)
{
    int me;
    MPI_Comm_rank(comm, &me);
    size_t pick[RUNNER_PAIRS_CHECK];
    size_t k = runner_pairs_check_pick(rp->pairs, rp->order, rp->round_start, rp->rounds, rp->groups, pick);
    if (k == 0)
        return MPI_SUCCESS;
    mpilab_pair_t sub[RUNNER_PAIRS_CHECK];
    for (size_t q = 0; q < k; q++)
        sub[q] = rp->pairs[pick[q]];
    check_ctx_t cc;
    memset(&cc, 0, sizeof cc);
    mpilab_p2p_plan_t plan = {sub, k, NULL, NULL, k, "checked pairs"};
    int rc = mpilab_p2p_measure_plan(comm, bytes, back, MPILAB_P2P_SEQUENTIAL, &c->bo.prec, c->bo.warmup, &plan,
                                     1, check_sink, &cc);
    if (rc != MPI_SUCCESS)
        return rc;
    unsigned long long bad = 0;
    if (me == 0) {
        mx->check_pairs = k;
        mx->check_disagree = check_compare(mx, pick, k, &cc, c->bo.prec.eps, &mx->check_worst_ratio);
        bad = mx->check_disagree;
    }
    MPI_Bcast(&bad, 1, MPI_UNSIGNED_LONG_LONG, 0, comm);
    if (bad == 0)
        return MPI_SUCCESS;
    if (me == 0 && !c->quiet)
        fprintf(stderr, "mpilab-bench: p2p %zu B: %llu of %zu checked pairs slower in parallel than alone "
                "(contention); every pair measured again one at a time\n", bytes, bad, k);
    if (me == 0) {
        mx->fell_back = 1;
        mx->rounds = rp->npairs;
    }
    char label[64];
    snprintf(label, sizeof label, "%s pairs", rp->design == MPILAB_PAIRS_FULL ? "all" : "sampled");
    mpilab_p2p_plan_t all = {rp->pairs, rp->npairs, rp->order, rp->round_start, rp->rounds, label};
    return mpilab_p2p_measure_plan(comm, bytes, back, MPILAB_P2P_SEQUENTIAL, &c->bo.prec, c->bo.warmup, &all,
                                   c->quiet, runner_pairs_sink, mx);
}

int runner_pairs_measure(const runner_pairs_t *rp, const mpilab_runner_config_t *c, MPI_Comm comm, size_t bytes,
                         size_t back, mpilab_pair_matrix_t *mx)
{
    int me;
    MPI_Comm_rank(comm, &me);
    memset(mx, 0, sizeof *mx);
    int ok = 1, allok = 0;
    if (me == 0) {
        mx->design = mpilab_pairs_design_name(rp->design);
        mx->pairs = rp->pairs;
        mx->npairs = rp->npairs;
        mx->rounds = c->p2p_mode == MPILAB_P2P_SEQUENTIAL ? rp->npairs : rp->rounds;
        mx->bytes = bytes;
        mx->bytes_back = back;
        mx->samples_cap = MPILAB_PAIR_SAMPLE_BUDGET / (rp->npairs ? rp->npairs : 1);
        mx->stats = calloc(rp->npairs + 1, sizeof *mx->stats);
        mx->round = calloc(rp->npairs + 1, sizeof *mx->round);
        mx->samples = calloc(rp->npairs + 1, sizeof *mx->samples);
        mx->measured = calloc(rp->npairs + 1, 1);
        ok = mx->stats && mx->round && mx->samples && mx->measured;
    }
    MPI_Allreduce(&ok, &allok, 1, MPI_INT, MPI_LAND, comm);
    if (!allok)
        return MPI_ERR_NO_MEM;
    char label[64];
    snprintf(label, sizeof label, "%s pairs", rp->design == MPILAB_PAIRS_FULL ? "all" : "sampled");
    mpilab_p2p_plan_t plan = {rp->pairs, rp->npairs, rp->order, rp->round_start, rp->rounds, label};
    int rc = mpilab_p2p_measure_plan(comm, bytes, back, c->p2p_mode, &c->bo.prec, c->bo.warmup, &plan, c->quiet,
                                     runner_pairs_sink, mx);
    if (rc == MPI_SUCCESS && c->p2p_mode == MPILAB_P2P_PARALLEL && rp->rounds < rp->npairs)
        rc = check_parallel(rp, c, comm, bytes, back, mx);
    return rc;
}

void runner_pairs_matrix_free(mpilab_pair_matrix_t *mx)
{
    for (size_t k = 0; mx->samples && k < mx->npairs; k++)
        free(mx->samples[k]);
    free(mx->samples);
    free(mx->stats);
    free(mx->round);
    free(mx->measured);
    memset(mx, 0, sizeof *mx);
}

json_t *runner_pairs_json(const runner_pairs_t *rp)
{
    int n = rp->ranks;
    json_t *o = json_pack("{s:s,s:s,s:I,s:I,s:I,s:s,s:i}", "design", mpilab_pairs_design_name(rp->design), "asked",
                          mpilab_pairs_design_name(rp->asked), "pairs", (json_int_t)rp->npairs, "full_pairs",
                          (json_int_t)(n >= 2 ? (size_t)n * (size_t)(n - 1) / 2 : 0), "rounds",
                          (json_int_t)rp->rounds, "groups", rp->groups_how, "ngroups", rp->ngroups);
    json_object_set_new(o, "full_limit", json_integer(MPILAB_PAIRS_FULL_LIMIT));
    if (rp->design == MPILAB_PAIRS_SAMPLED)
        json_object_set_new(o, "matchings", json_integer(rp->matchings));
    if (rp->design == MPILAB_PAIRS_SAMPLED)
        json_object_set_new(o, "seed", json_integer((json_int_t)rp->seed));
    if (rp->groups) {
        json_t *g = json_array();
        for (int r = 0; r < n; r++)
            json_array_append_new(g, json_integer(rp->groups[r]));
        json_object_set_new(o, "rank_groups", g);
    }
    return o;
}
