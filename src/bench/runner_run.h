/* What one run of mpilab-bench accumulates (src/bench/runner.c measures it, runner_doc.c
 * reports it: the tables and the results document). Private to the runner. */
#ifndef MPILAB_RUNNER_RUN_H
#define MPILAB_RUNNER_RUN_H

#include <string.h>

#include <jansson.h>

#include "mpilab/models.h"
#include "mpilab/runner.h"
#include "runner_pairs.h"

/* A row of the human table (rank 0). */
typedef struct row {
    const mpilab_op_t *entry; /* what it measured: its declared figure names the quantity */
    char op[48], impl[48], timing[12], iso[12];
    size_t bytes;
    double mean, ci, median, med_lo, med_hi;
    size_t reps, invalid, negative;
    int converged, clock_uncertain;
    int differs;         /* index+1 of the row of another isolation it disagrees with */
    int global_differs;  /* max or root timing: index+1 of the global row whose interval its
                          * own interval misses (flag global_differs) */
    int contention;      /* all-pairs: the parallel schedule's check found contention (flag
                          * parallel_contention; the figures are the sequential ones) */
    size_t meas;         /* its measurement object (engine rows) */
} row_t;

/* What one run accumulates. */
typedef struct run {
    const mpilab_runner_config_t *c;
    mpilab_bench_t *b;
    int rank, size;
    row_t *rows;
    size_t nrows, done, total;
    json_t *meas, *skipped;
    json_t *adaptive;   /* rank 0, --sizes auto: per entry the sizes chosen and why */
    json_t *extended;   /* rank 0, --model-sizes extend: per entry where the extension ended */
    size_t ext_sizes[16], n_ext, n_ext_lg; /* ... and how many of them LogGP measures */ /* the sizes the first extended entry added (every rank) */
    int ext_done;
    size_t top_from;        /* rank 0: where the first extended entry's top regime starts ... */
    const char *top_state;  /* ... and how the extension ended (NULL: no extension) */
    size_t *lg_sizes, lg_nsizes; /* the sizes LogGP measured (the run's and the extension's) */
    json_t *prov;       /* rank 0: provenance, taken before measuring (checkpoints use it) */
    double last_save;   /* rank 0: MPI_Wtime of the last checkpoint (at first: the start) */
    int exit_code, sync_used, suite_used;
    size_t nsyncs, fit_sizes;
    double worst_residual;
    double sync_total;  /* seconds of every clock synchronisation performed, and how many */
    double sync_last_end;
    size_t sync_count;
    double loggp_wall;  /* rank 0: seconds the LogGP measurement took */
    size_t loggp_npairs;     /* the pairs LogGP measured (rank 0's results) ... */
    const char *loggp_design; /* ... and which: the design's name, or "matching" */
    size_t lg_check_pairs, lg_check_disagree; /* rank 0: LogGP's parallel schedule check ... */
    double lg_check_worst;   /* ... (runner_loggp_check) ... */
    int lg_fell_back;        /* ... and whether every pair was measured again alone */
    runner_pairs_t rp;  /* the pair design of all-pairs entries */
    double save_cost;   /* rank 0: seconds the last checkpoint took */
    int ckpt_failed;    /* rank 0: a checkpoint write failed; no more are tried */
} run_t;

/* What a row's figures are multiplied by in the table: its entry's declared figure says
 * (round trips are shown one-way). */
static inline double runner_row_scale(const row_t *r)
{
    return r->entry ? mpilab_op_figure_scale(r->entry->figure) : 1.0;
}

/* provenance.placement: what mpilab_placement_apply did (rank 0's view; every rank decides
 * alike) and, per rank, the CPU it was pinned to (-1: not pinned). */
json_t *runner_placement_json(const mpilab_placement_t *p, int pinned_all);

/* Collective, after LogGP measured pairs in parallel into lres (rank 0's): the schedule
 * check (pairs measured again one at a time) and, when they disagree, every pair measured
 * again sequentially into lres. The check's outcome in w->lg_check_*; 0 or an MPI error. */
int runner_loggp_check(run_t *w, const mpilab_pair_t *pairs, size_t npairs, const size_t *order,
                       const size_t *round_start, size_t rounds, const int *groups,
                       mpilab_loggp_pair_result_t *lres);

/* Rank 0: models.loggp.schedule_check of the run (NULL: not checked). */
json_t *runner_loggp_check_json(const run_t *w);

/* Rank 0: the results document from what the run measured; prints the tables. */
json_t *runner_document(run_t *w, json_t *prov, const mpilab_loggp_pair_result_t *lres,
                        const mpilab_lmo_measured_t *lmo, json_t *multilane);

#endif
