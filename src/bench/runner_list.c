/* The operation table as text and as JSON, with each entry's knowledge (runner.h). */
#include <string.h>

#include "mpilab/runner.h"
#include "mpilab/suite.h"

void mpilab_runner_list(FILE *f)
{
    for (size_t k = 0; k < mpilab_ops_count(); k++) {
        const mpilab_op_t *op = mpilab_ops_get(k);
        fprintf(f, "%s %s %s\n", op->name, op->impl, mpilab_op_timings(op));
    }
}

/* A comma list as a JSON array of strings. */
static json_t *split(const char *list)
{
    json_t *a = json_array();
    for (const char *p = list; p && *p;) {
        const char *comma = strchr(p, ',');
        size_t n = comma ? (size_t)(comma - p) : strlen(p);
        json_array_append_new(a, json_stringn(p, n));
        p += n + (comma != NULL);
    }
    return a;
}

json_t *mpilab_runner_list_json(void)
{
    json_t *entries = json_array();
    for (size_t k = 0; k < mpilab_ops_count(); k++) {
        const mpilab_op_t *op = mpilab_ops_get(k);
        json_t *needs = json_array();
        if (op->flags & MPILAB_OP_ROOTED)
            json_array_append_new(needs, json_string("root"));
        if (op->flags & MPILAB_OP_OPSPEC)
            json_array_append_new(needs, json_string("opspec"));
        if (op->flags & MPILAB_OP_PAIR)
            json_array_append_new(needs, json_string("pair"));
        if (op->flags & MPILAB_OP_ALLPAIRS)
            json_array_append_new(needs, json_string("allpairs"));
        if (op->flags & MPILAB_OP_GRID)
            json_array_append_new(needs, json_string("grid"));
        const char *model = mpilab_op_model_name(op->model);
        json_array_append_new(entries, json_pack("{s:s,s:s,s:s,s:s,s:o,s:o,s:o,s:o,s:b}", "name", op->name, "impl",
                                                 op->impl, "bytes", op->bytes_desc ? op->bytes_desc : "",
                                                 "family", op->family ? op->family : "user", "needs", needs,
                                                 "timing", split(mpilab_op_timings(op)), "derived",
                                                 split(op->derived), "model",
                                                 model ? json_string(model) : json_null(), "suite",
                                                 mpilab_suite_is_entry(op)));
        json_t *e = json_array_get(entries, json_array_size(entries) - 1);
        /* builtin, suite, registered or the plugin file it was loaded from */
        json_object_set_new(e, "origin", json_string(mpilab_ops_origin(op)));
        /* what one run's time is: its name and the table's line for it */
        json_object_set_new(e, "figure", json_string(mpilab_op_figure_name(op->figure)));
        json_object_set_new(e, "figure_text", json_string(mpilab_op_figure_text(op->figure)));
        /* bytes moved per call = bytes * (c0 + c1 p + c2 p^2) for p ranks, or null */
        json_object_set_new(e, "volume", op->volume[0] != 0.0 || op->volume[1] != 0.0 || op->volume[2] != 0.0
                                             ? json_pack("[f,f,f]", op->volume[0], op->volume[1], op->volume[2])
                                             : json_null());
    }
    return json_pack("{s:s,s:o}", "schema", "mpilab.entries/1", "entries", entries);
}
