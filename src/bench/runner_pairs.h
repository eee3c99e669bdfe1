/* mpilab-bench's all-pairs measurements of a pair design (src/bench/runner_pairs.c): the
 * design built once per run (collective), each size measured into rank 0's pair matrix. */
#ifndef MPILAB_RUNNER_PAIRS_H
#define MPILAB_RUNNER_PAIRS_H

#include <jansson.h>

#include "mpilab/results.h"
#include "mpilab/runner.h"

typedef struct runner_pairs {
    mpilab_pairs_design_t asked, design;
    const char *groups_how; /* "none", "host", "site", "block" */
    int ngroups, matchings;
    int *groups;            /* [ranks] or NULL */
    mpilab_pair_t *pairs;
    size_t npairs, rounds;
    size_t *order, *round_start;
    int ranks;
    unsigned long long seed;
} runner_pairs_t;

/* Collective: the design of c on comm (host names gathered for the groups). 0, or -1 with a
 * one-line reason in err (the same on every rank). */
int runner_pairs_init(const mpilab_runner_config_t *c, MPI_Comm comm, runner_pairs_t *rp, char *err, size_t errlen);
void runner_pairs_free(runner_pairs_t *rp);

/* Collective: every pair of the design at one size; on rank 0 *mx receives the matrix
 * (free with runner_pairs_matrix_free). Returns 0 or an MPI error code. */
int runner_pairs_measure(const runner_pairs_t *rp, const mpilab_runner_config_t *c, MPI_Comm comm, size_t bytes,
                         size_t back, mpilab_pair_matrix_t *mx);
void runner_pairs_matrix_free(mpilab_pair_matrix_t *mx);

/* The parallel schedule's check (docs/pairs.md, "Contention check"): up to
 * RUNNER_PAIRS_CHECK pairs of a design measured in parallel are measured again one at a time. */
#define RUNNER_PAIRS_CHECK 4

/* Indices into pairs of the check's pairs (every rank computes the same), taken from rounds
 * of several pairs spread over the schedule (several from one round when only one has
 * several), half of them across a group boundary where groups (or NULL) give one; their
 * count. pick holds RUNNER_PAIRS_CHECK. */
size_t runner_pairs_check_pick(const mpilab_pair_t *pairs, const size_t *order, const size_t *round_start,
                               size_t rounds, const int *groups, size_t *pick);

/* 1 when a figure measured in parallel and the same measured alone lie apart by more than
 * the asked precision (eps x the lone median) beyond both intervals (the rule of max/root
 * against global timing); 0 when they agree or either is missing. */
int runner_pairs_disagree(const mpilab_stats_t *par, const mpilab_stats_t *seq, double eps);

/* provenance.options.pairs: the design, how it was chosen, its groups. */
json_t *runner_pairs_json(const runner_pairs_t *rp);

#endif
