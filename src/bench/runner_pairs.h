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

/* provenance.options.pairs: the design, how it was chosen, its groups. */
json_t *runner_pairs_json(const runner_pairs_t *rp);

#endif
