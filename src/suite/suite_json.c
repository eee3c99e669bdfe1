/* JSON of derived quantities and configuration (suite_json.h). */
#include "suite/suite_json.h"

#include <string.h>

json_t *mpilab_suite_config_json(void)
{
    const mpilab_suite_config_t *c = mpilab_suite_config();
    json_t *sw = json_array();
    for (size_t k = 0; k < c->npoll; k++)
        json_array_append_new(sw, json_integer((json_int_t)c->poll_sweep[k]));
    return json_pack("{s:I,s:I,s:o,s:I,s:s,s:s}", "window", (json_int_t)c->window, "pairs", (json_int_t)c->pairs,
                     "poll_sweep", sw, "comb_msgs", (json_int_t)c->comb_msgs, "overlap",
                     "100*(t_comm+t_comp-t_total)/min(t_comm,t_comp), clamped to [0,100]", "cpu_avail",
                     "work rate during transfers / work rate without communication (rank 0; "
                     "cpu_avail_peer: the same for rank 1)");
}
