/* The interconnect evaluation suite (after Brightwell, Doerfler and Underwood's InfiniPath/XD1
 * study): point-to-point, streaming, CPU-availability (COMB polling) and overlap benchmarks as
 * entries of the operation table (mpilab/ops.h), measured by the engine (mpilab/bench.h).
 * See docs/suite.md. */
#ifndef MPILAB_SUITE_H
#define MPILAB_SUITE_H

#include <stddef.h>
#include <stdint.h>

#include "mpilab/bench.h"
#include "mpilab/ops.h"

#ifdef __cplusplus
extern "C" {
#endif

#define MPILAB_SUITE_MAX_SWEEP 16

/* Parameters the op struct cannot carry. */
typedef struct mpilab_suite_config {
    size_t window;    /* stream: sends per window answered by one reply (default 160) */
    size_t pairs;     /* stream_multi: concurrent pairs, 0 = floor(ranks / 2) (default 0) */
    size_t poll_sweep[MPILAB_SUITE_MAX_SWEEP]; /* comb: work-loop iterations between polls */
    size_t npoll;     /* entries of poll_sweep (1..MPILAB_SUITE_MAX_SWEEP) */
    size_t comb_msgs; /* comb: messages per direction per run (default 16) */
} mpilab_suite_config_t;

void mpilab_suite_config_default(mpilab_suite_config_t *c);
/* 0 if usable, else -1 and a one-line reason ("window must be >= 1", ...). */
int mpilab_suite_config_check(const mpilab_suite_config_t *c, char *err, size_t errlen);
/* The active configuration (defaults until changed). Setting checks it first (-1 + err).
 * The poll sweep cannot change once the entries are registered (-1 + err). */
const mpilab_suite_config_t *mpilab_suite_config(void);
int mpilab_suite_config_set(const mpilab_suite_config_t *c, char *err, size_t errlen);

/* Runner options: "window" (count >= 1), "pairs" (count >= 0), "poll-sweep" (comma list of
 * counts, e.g. "0,100,1K", at most MPILAB_SUITE_MAX_SWEEP), "comb-msgs" (count >= 1).
 * Returns 0 if applied, -1 on a bad value (one-line reason in err, naming the option),
 * 1 if `name` is not a suite option. Names are given without the leading "--". */
int mpilab_suite_parse_option(const char *name, const char *value, char *err, size_t errlen);
/* NULL-terminated list of the option names above (all take a value). */
const char *const *mpilab_suite_option_names(void);

/* Register every suite entry with mpilab_ops_register (after the options are parsed: the
 * COMB entries are one per poll interval, impl "poll<N>"). Idempotent. Returns 0 or -1. */
int mpilab_suite_register(void);
/* 1 if op is a suite entry. */
int mpilab_suite_is_entry(const mpilab_op_t *op);

/* Per-process counters of what suite entries did, for tests ("count the calls"). */
typedef struct mpilab_suite_counters {
    uint64_t runs;           /* run() calls of suite entries on this process */
    uint64_t stream_sends;   /* messages sent by streaming senders */
    uint64_t stream_windows; /* windows completed by streaming senders (one reply each) */
    uint64_t comb_polls;     /* MPI_Test calls polling for message arrival */
    uint64_t comb_send_tests;/* MPI_Test calls on outstanding sends */
    uint64_t comb_messages;  /* messages received */
    uint64_t comb_sends;     /* messages sent */
    uint64_t comb_work_iters;/* work-loop iterations run between polls */
} mpilab_suite_counters_t;
void mpilab_suite_counters_get(mpilab_suite_counters_t *out);
void mpilab_suite_counters_reset(void);

/* Derived quantities of one measurement; NaN where not applicable.
 * bandwidth_Bps: pingpong bytes/(t/2); pingping bytes/t; sendrecv 2*bytes/t; exchange
 *   4*bytes/t (IMB); stream window*bytes/t; stream_multi pairs*window*bytes/t; comb
 *   msgs*bytes/t per direction; overlap entries: not set.
 * msg_rate: messages per second (stream, stream_multi, comb per direction).
 * latency_s: pingpong t/2, pingping t.
 * cpu_avail: comb, (work iterations per second during the runs) / (per second with no
 *   communication, measured in the same setup), on the calling rank (rank 0 for the runner).
 * overlap_pct: overlap_*, 100 * (t_comm + t_comp - t_total) / min(t_comm, t_comp) clamped
 *   to [0, 100], with t_comm (communication alone) and t_comp (compute alone, sized to
 *   t_comm) calibrated in setup and t_total the measured time. */
/* Each entry's derive fills the keys above into the engine's result (mpilab_result_t.derived,
 * mpilab_derived_get). */

#ifdef __cplusplus
}
#endif
#endif
