/* Internal: what the Hockney and LogGP assembly share. */
#ifndef MPILAB_SRC_MODEL_ASSEMBLE_H
#define MPILAB_SRC_MODEL_ASSEMBLE_H

#include <jansson.h>

#include "mpilab/ops.h"
#include "mpilab/robust.h"

/* A measurement a model can predict: its entry (with a pattern), the figure the tables and
 * report show (the median; the mean only for a document without one), bytes, root. */
typedef struct models_target {
    const mpilab_op_t *entry;
    json_t *measured;     /* a JSON real */
    const char *statistic; /* "median" or "mean": which one `measured` is */
    double bytes;
    size_t root;
} models_target_t;

/* The table entry of a measurement object (by its op and impl), or NULL. */
const mpilab_op_t *models_entry_of(json_t *m);
/* 1 and t filled if m is a measurement with a mean whose entry declares a pattern. */
int models_target(json_t *m, models_target_t *t);

/* The envelope and clock tick of the MPI the library runs on into o (wire.c; SMPI only, else
 * unchanged), and their record for the model's JSON (NULL when both are 0). */
void models_wire_opts(mpilab_robust_opts_t *o);
json_t *models_wire_json(const mpilab_robust_opts_t *o);

#endif
