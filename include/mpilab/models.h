/* Model assembly and prediction as library calls: fit the Hockney and LogGP models of every
 * pair of ranks from a run's measurements and predict each measured entry whose
 * operation-table entry declares a pattern (mpilab_op_t.model). The fits themselves are in
 * mpilab/model.h (Hockney) and mpilab/loggp.h; this header turns measurements into models
 * and models into the "models" object of a results file (docs/results-schema.md). */
#ifndef MPILAB_MODELS_H
#define MPILAB_MODELS_H

#include <jansson.h>
#include <stdio.h>

#include "mpilab/lmo.h"
#include "mpilab/loggp.h"
#include "mpilab/model.h"
#include "mpilab/ops.h"

#ifdef __cplusplus
extern "C" {
#endif

#define MPILAB_MODELS_MAX_RANGES 4 /* protocol ranges per pair */

/* Hockney prediction of pattern m for p ranks, root and bytes (per-rank block) from pairs of
 * per-range models (p*p, [src*p+dst]); NaN if m is not a pattern it predicts. */
double mpilab_models_hockney_predict(mpilab_op_model_t m, const mpilab_pair_model_t *pairs, size_t p, size_t root,
                                     double bytes);
/* The same from single whole-range fits per pair. */
double mpilab_models_hockney_predict_single(mpilab_op_model_t m, const mpilab_hockney_t *pairs, size_t p,
                                            size_t root, double bytes);

/* The results file's models object from the measurements array `meas` of a run on nranks
 * ranks: {"hockney": {"pairs": [...], "fit_on": ...}, "predictions": [...]}. Pairs are fitted
 * on half the round trip of measurements of entries with model MPILAB_MODEL_P2P_FIT and
 * bytes == bytes_back; predictions cover every measurement with a mean whose entry has a
 * pattern, once every pair has a fit. */
json_t *mpilab_models_hockney(json_t *meas, int nranks);
/* The same with every pair's last range (its beta) starting at the first size >= top_from
 * bytes (0: from the data): where the model-size extension (mpilab/model_extend.h) found the
 * curve's top regime; `top_state` (its state name, or NULL) goes into hockney.top_regime, and
 * a state other than "linear" flags every beta regime_not_reached. */
json_t *mpilab_models_hockney_top(json_t *meas, int nranks, double top_from, const char *top_state);

/* The models.loggp object from a LogGP measurement of npairs pairs (res[k].pair; every
 * pair of nranks ranks, or a design's), over sizes[nsizes], options lg: per-pair fits on the
 * per-size medians (per protocol range), per-size data (with every sample while the pairs'
 * samples stay within MPILAB_PAIR_SAMPLE_BUDGET, else their statistics), and, when every
 * pair was measured, predictions of the measurements in `meas` whose entries have a
 * pattern. With table != NULL, prints a per-pair table there. */
json_t *mpilab_models_loggp(const mpilab_loggp_pair_result_t *res, size_t npairs, const size_t *sizes, size_t nsizes,
                            int nranks, const mpilab_loggp_opts_t *lg, json_t *meas, FILE *table);

/* The models.lmo object from an LMO measurement (rank 0's mpilab_lmo_measured_t): the fit
 * (mpilab_lmo_fit, default options) per node and per link with intervals and flags, the
 * experiments (medians, repetitions, samples, as arrays), the slowest node and link, and
 * LMO predictions of the measurements in `meas` with a scatter/gather pattern; a fit that
 * fails leaves {"error": reason} beside the experiments. With table != NULL, prints the
 * per-node table and the slowest node and link there. */
json_t *mpilab_models_lmo(const mpilab_lmo_measured_t *m, json_t *meas, double rendezvous_bytes, FILE *table);

#ifdef __cplusplus
}
#endif
#endif
