/* JSON of the suite's configuration (derived values: mpilab_results_derived), for runners that write
 * mpilab.results/1 (internal: needs jansson). */
#ifndef MPILAB_SUITE_JSON_H
#define MPILAB_SUITE_JSON_H

#include <jansson.h>
#include <stddef.h>

#include "mpilab/suite.h"

/* {"window":..,"pairs":..,"poll_sweep":[..],"comb_msgs":..,"overlap":"<definition>"}. */
json_t *mpilab_suite_config_json(void);


#endif
