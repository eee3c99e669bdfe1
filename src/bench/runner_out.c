/* mpilab-bench's output file: checked before measuring, the final document written to
 * --out only when the run succeeded; a failed run's document and the checkpoints of a
 * running one go to OUT.partial.json (a name that says so), removed once OUT is complete.
 * See docs/hardening.md, "Outputs". */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/common.h"
#include "mpilab/results.h"
#include "mpilab/runner.h"

int mpilab_runner_out_open(const mpilab_runner_config_t *c, int *hold, char *err, size_t errlen)
{
    *hold = -1;
    return c->out ? mpilab_output_hold(c->out, hold, err, errlen) : 0;
}

int mpilab_runner_out_write(const mpilab_runner_config_t *c, const json_t *doc, int hold, int failed,
                            char *err, size_t errlen)
{
    char part[4096];
    int file = mpilab_output_is_file(c->out);
    int have_part = file && mpilab_partial_path(c->out, part, sizeof part) == 0;
    int rc = 0;
    size_t n = json_array_size(json_object_get(doc, "measurements"));
    if (failed && have_part && n == 0) {
        /* a failed run that measured nothing: no file at all, and the failure stays the
         * one line its cause printed (a checkpoint, if any, held nothing either) */
        unlink(part);
    } else if (failed && have_part) {
        /* a failed run: what it measured goes under the partial name, never to OUT */
        if (mpilab_results_write(part, doc, err, errlen) != 0) {
            rc = -1;
        } else {
            fprintf(stderr, "mpilab-bench: the run failed; its %zu completed measurement(s) are in %s "
                    "(marked partial); nothing written to %s\n", n, part, c->out);
        }
    } else if (mpilab_results_write(c->out, doc, err, errlen) != 0) {
        rc = -1;
        if (have_part && access(part, F_OK) == 0) {
            size_t k = strlen(err);
            snprintf(err + k, errlen > k ? errlen - k : 0, "; the last checkpoint (partial) is in %s", part);
        }
    } else if (have_part) {
        unlink(part); /* complete: the checkpoints are superseded */
    }
    if (hold >= 0)
        close(hold);
    return rc;
}

struct mpilab_runner_writer {
    mpilab_runner_config_t c; /* only out is set */
    char *out;
    json_t *doc;
    int hold, failed, rc, threaded;
    pthread_t thread;
    char err[1024];
};

static void *writer_main(void *arg)
{
    mpilab_runner_writer_t *w = arg;
    w->rc = mpilab_runner_out_write(&w->c, w->doc, w->hold, w->failed, w->err, sizeof w->err);
    return NULL;
}

mpilab_runner_writer_t *mpilab_runner_out_write_begin(const mpilab_runner_config_t *c, json_t *doc, int hold,
                                                      int failed, int threaded)
{
    if (!c->out)
        return NULL;
    mpilab_runner_writer_t *w = calloc(1, sizeof *w);
    char *out = strdup(c->out);
    if (!w || !out) {
        free(w);
        free(out);
        return NULL;
    }
    w->c.out = w->out = out;
    w->doc = json_incref(doc);
    w->hold = hold;
    w->failed = failed;
#ifdef MPILAB_MPI_IS_SMPI
    threaded = 0; /* simulated ranks are SimGrid actors: no thread of their own */
#endif
    /* "-" and FIFOs are written now: their reader sees the document before the exit */
    threaded = threaded && mpilab_output_is_file(out);
    w->threaded = threaded && pthread_create(&w->thread, NULL, writer_main, w) == 0;
    if (!w->threaded)
        writer_main(w);
    return w;
}

int mpilab_runner_out_write_end(mpilab_runner_writer_t *w, char *err, size_t errlen)
{
    if (w->threaded)
        pthread_join(w->thread, NULL);
    int rc = w->rc;
    if (rc != 0)
        snprintf(err, errlen, "%s", w->err);
    json_decref(w->doc);
    free(w->out);
    free(w);
    return rc;
}
