/* The measurement runner behind mpilab-bench, as library calls: its options (parsed from
 * argv, with help text), the entry list (text and JSON), and one whole run (engine and
 * all-pairs measurements, LogGP, models, results document). A tool is then: MPI_Init, parse,
 * run, write, MPI_Finalize. */
#ifndef MPILAB_RUNNER_H
#define MPILAB_RUNNER_H

#include <jansson.h>
#include <mpi.h>
#include <stdio.h>

#include "mpilab/bench.h"
#include "mpilab/epsrule.h"
#include "mpilab/loggp.h"
#include "mpilab/model_extend.h"
#include "mpilab/p2p.h"
#include "mpilab/pairs.h"
#include "mpilab/placement.h"
#include "mpilab/wait.h"
#include "mpilab/wtime.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct mpilab_runner_config {
    const mpilab_op_t **sel; /* selected entries, in --ops order */
    size_t nsel;
    size_t *sizes; /* sorted, distinct (--sizes auto:...: the coarse start list) */
    size_t nsizes;
    /* --sizes auto:MIN:MAX[:BUDGET]: sizes chosen where each entry's curve bends
     * (mpilab/adaptive.h), starting from MIN..MAX x8, at most `auto_budget` sizes per entry */
    int adaptive;
    size_t auto_budget;
    mpilab_timing_t timing[4];
    size_t ntiming;
    mpilab_bench_opts_t bo;
    /* --isolation: every engine measurement under each of these (bo.isolation is the
     * first); all-pairs entries under the first only */
    mpilab_isolation_t isolation[3];
    size_t nisolation;
    mpilab_p2p_mode_t p2p_mode;
    /* --pairs full|sampled (default auto: sampled above MPILAB_PAIRS_FULL_LIMIT ranks),
     * --pair-groups auto|none|host|site|K (K: blocks of K consecutive ranks), --pairs-seed */
    mpilab_pairs_design_t pairs_design;
    const char *pair_groups;
    unsigned long long pairs_seed;
    long long p2p_back; /* -1 = the same as bytes */
    const char *out;    /* results file or NULL */
    int no_fit, quiet, single;
    int csv;            /* --format csv: the table as CSV on stdout */
    int hockney, loggp, lmo; /* --models */
    size_t lmo_bytes;        /* --lmo-bytes: M of the LMO experiments (default 64K) */
    size_t lmo_rendezvous;   /* --lmo-rendezvous: LMO predictions take messages of at least this
                                many bytes as synchronous (default 64K; 0: every one eager) */
    mpilab_wait_t lmo_wait;  /* --lmo-wait: how the ranks wait in the LMO experiments (spin) */
    double lmo_eps;          /* --lmo-eps: relative precision of the LMO experiments' medians
                                (0: --eps); C_i is the difference of two of them */
    mpilab_loggp_opts_t lg;
    /* --loggp-pairs: the pairs LogGP measures. 0 auto: one random perfect matching of the
     * ranks (mpilab_pairs_matching, a subset of the design, one round) when the pair design is
     * sampled, else the design's pairs; 1 design: always the design's; 2 matching: always one
     * matching */
    int loggp_pairs;
    int list;      /* 1: --list, 2: --list --json */
    /* --placement: the mode parsed here; the placement itself must happen before MPI_Init
     * (mpilab_placement_apply), its outcome is given to the run in `placement` (may be NULL) */
    mpilab_placement_mode_t placement_mode;
    const mpilab_placement_t *placement;
    /* --inject-clock SPEC: a known clock error per rank through mpilab_wtime (the self-test
     * mode of mpilab/wtime.h), recorded in provenance.options.inject_clock */
    int inject;
    int sync_given; /* --sync given: no default choice of the method (runner_cli.c) */
    mpilab_inject_plan_t inject_plan;
    const char *inject_spec;
    double time_budget; /* --time-budget: seconds of samples for the run (0 = none); each
                         * measurement's share is bo.prec.max_time */
    int mpi_algorithms; /* --mpi-algorithms: the MPI library's forced algorithms as entries
                         * (mpilab/forced.h) */
    int probe;          /* --probe: run each selected entry once per size, no timing, and say
                         * so on stderr (mpilab_runner_probe) */
    int idle_poll;      /* --idle-poll: every rank holds the CPU latency limit at 0 while the
                         * run measures (mpilab/cpuidle.h); provenance.cpu_idle.held_by_run */
    int probe_skew;     /* --probe-skew: ranks give counts one byte apart, so that the MPI
                         * library reports an error naming the algorithm that ran (MPICH) */
    mpilab_eps_rules_t eps_for; /* --eps-for: measurements measured to another eps than --eps */
    /* --model-sizes extend|fixed: the entries a model is fitted from (p2p) get larger sizes
     * until the curve's top regime is reached (mpilab/model_extend.h), LogGP measures them too;
     * default extend when --sizes (-m, -msglog) is not given and a model is fitted */
    int model_extend;
    mpilab_extend_opts_t ext;
} mpilab_runner_config_t;

enum {
    MPILAB_RUNNER_RUN = 0,     /* measure with the configuration */
    MPILAB_RUNNER_HELP = 1,    /* -h/--help: print mpilab_runner_usage, exit 0 */
    MPILAB_RUNNER_VERSION = 2, /* --version: print the version, exit 0 */
    MPILAB_RUNNER_LIST = 3,    /* --list [--json]: print the entries, exit 0 */
    MPILAB_RUNNER_BAD = -1     /* bad input: one line in err, exit 2 */
};

/* Parse argv for a run on nranks ranks (the same on every rank). Registers the interconnect
 * suite's entries (after its options). Returns one of the MPILAB_RUNNER_* codes. */
int mpilab_runner_parse(int argc, char **argv, int nranks, mpilab_runner_config_t *c, char *err, size_t errlen);
void mpilab_runner_config_free(mpilab_runner_config_t *c);
/* The help text: every option with its unit and default. */
void mpilab_runner_usage(FILE *f);

/* "NAME IMPL TIMINGS" per entry, one a line. */
void mpilab_runner_list(FILE *f);
/* {"entries": [{"name", "impl", "bytes", "family", "needs": [...], "timing": [...],
 * "derived": [...], "model": pattern or null, "suite": bool}, ...]} */
json_t *mpilab_runner_list_json(void);

/* Collective over MPI_COMM_WORLD: measure everything c selects, then (rank 0) assemble the
 * results document (provenance from argv) into *doc, print the table on stdout and
 * progress on stderr unless quiet. Returns 0, 1 if a measurement failed or delivered wrong
 * data (the document still holds what was measured), or 2 with a one-line reason in err
 * if the options are unusable. *doc is NULL on other ranks. */
/* --probe: each selected entry run once per size on a communicator that returns errors, each
 * call announced on stderr ("mpilab-probe: rank R begin|end OP:IMPL BYTES [rc N error TEXT]");
 * no timing, no results document. 0, or 1 with one line in err. */
int mpilab_runner_probe(const mpilab_runner_config_t *c, char *err, size_t errlen);
int mpilab_runner_run(const mpilab_runner_config_t *c, int argc, char **argv, json_t **doc, char *err,
                      size_t errlen);

/* Rank 0, before measuring: check --out (a FIFO without a reader is refused with a
 * one-line reason in err, -1; a FIFO with a reader is held open in *hold). 0 otherwise. */
int mpilab_runner_out_open(const mpilab_runner_config_t *c, int *hold, char *err, size_t errlen);
/* Rank 0, after mpilab_runner_run: write doc to --out, or, when the run failed, to
 * OUT.partial.json (saying so on stderr; nothing at --out). On success the checkpoints
 * (OUT.partial.json, written while running) are removed. Closes hold. 0, or -1 with a
 * one-line reason in err (naming the last checkpoint if there is one). */
int mpilab_runner_out_write(const mpilab_runner_config_t *c, const json_t *doc, int hold, int failed,
                            char *err, size_t errlen);
/* Rank 0: mpilab_runner_out_write on a thread of its own, so that serialising, writing,
 * fsync and rename overlap MPI_Finalize (which mostly waits: about 50 ms of a short run). The
 * writer keeps its own reference to doc and its own copy of the output's name; c may be
 * freed after this call. Standard output, a FIFO or a device, threaded = 0, a failed thread
 * start and SMPI: written before returning. Only with the process initialised for MPI_THREAD_FUNNELED or more: the thread
 * makes no MPI call. NULL when c->out is NULL or out of memory (nothing written: write
 * with mpilab_runner_out_write). */
typedef struct mpilab_runner_writer mpilab_runner_writer_t;
mpilab_runner_writer_t *mpilab_runner_out_write_begin(const mpilab_runner_config_t *c, json_t *doc, int hold,
                                                      int failed, int threaded);
/* Waits for the writer and frees it: its mpilab_runner_out_write result (0, or -1 with the
 * one-line reason in err). The file is complete (renamed into place) when this returns. */
int mpilab_runner_out_write_end(mpilab_runner_writer_t *w, char *err, size_t errlen);

#ifdef __cplusplus
}
#endif
#endif
