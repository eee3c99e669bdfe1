/* A wavefront run's report and its mpilab.results/1 document (include/mpilab/wavefront_cli.h;
 * the fields: docs/wavefront.md, the schema: docs/results-schema.md). */
#include "mpilab/results.h"
#include "mpilab/stats.h"
#include "mpilab/wavefront_cli.h"

static double time_per_iteration(const mpilab_wf_stats *st)
{
    return st->iterations > 0 ? st->total_s / (double)st->iterations : 0.0;
}

static double io_bandwidth(const mpilab_wf_stats *st)
{
    double bytes = (double)(st->bytes_read + st->bytes_written);
    return st->total_s > 0 ? bytes / st->total_s : 0.0;
}

void mpilab_wf_run_report(FILE *f, const mpilab_wf_stats *st, const mpilab_wf_run_opts *o,
                          int mpi)
{
    for (int64_t i = 0; i < st->iterations; i++)
        fprintf(f, "iteration %lld: %.6f s\n", (long long)i, st->iter_s[i]);
    fprintf(f, "wavefront: %lldx%lld %s (coef %s) block %lldx%lld, %d %s, %d wave(s) chained "
            "by %s, io %s\n",
            (long long)st->rows, (long long)st->cols, mpilab_wf_layout_name(st->layout),
            mpilab_wf_layout_name(st->coef_layout), (long long)st->mb, (long long)st->nb,
            st->workers, mpi ? "ranks" : "workers", o->waves, mpilab_wf_chain_name(st->chain),
            mpilab_wf_io_name(st->io));
    fprintf(f, "buffer slots (blocks in flight) per worker: %d, engine buffers %.1f MiB\n",
            st->queue_depth, (double)st->buffer_bytes / 1048576.0);
    fprintf(f, "time per iteration %.6f s, total %.6f s\n", time_per_iteration(st), st->total_s);
    fprintf(f, "bytes read %lld, written %lld, I/O bandwidth %.1f MiB/s, peak RSS %ld KiB\n",
            (long long)st->bytes_read, (long long)st->bytes_written,
            io_bandwidth(st) / 1048576.0, st->maxrss_kb);
    fprintf(f, "requests read %lld, written %lld\n", (long long)st->requests_read,
            (long long)st->requests_written);
    if (st->dev_read_bytes >= 0)
        fprintf(f, "device bytes read %lld, written %lld\n", (long long)st->dev_read_bytes,
                (long long)st->dev_write_bytes);
    for (int i = 0; st->compute_s && i < st->workers; i++)
        fprintf(f, "worker %d: compute %.3f s, I/O wait %.3f s, dependency wait %.3f s, "
                "I/O helper busy %.3f s\n", i, st->compute_s[i], st->io_wait_s[i],
                st->dep_wait_s[i], st->io_busy_s[i]);
}

static json_t *count_or_null(int64_t v)
{
    return v >= 0 ? json_integer(v) : json_null();
}

/* The top-level "wavefront" object (iteration_s is added by the caller). */
static json_t *wavefront_object(const mpilab_wf_stats *st, const mpilab_wf_run_opts *o, int mpi)
{
    json_t *wf = json_pack(
        "{s:I,s:I,s:s,s:s,s:I,s:I,s:I,s:s,s:i,s:i,s:s,s:I,s:s,s:i,s:b,s:I,s:o,s:o,s:I,s:I,s:I,"
        "s:I,s:o,s:I,s:b,s:o,s:o}",
        "N", (json_int_t)st->cols, "M", (json_int_t)st->rows, "layout",
        mpilab_wf_layout_name(st->layout), "coef_layout", mpilab_wf_layout_name(st->coef_layout),
        "MB", (json_int_t)st->mb, "NB", (json_int_t)st->nb, "T",
        (json_int_t)(st->layout == MPILAB_WF_OPTIMIZED ? st->t : 0), "mode",
        mpi ? "mpi" : "threads", "workers", st->workers, "waves", o->waves, "chain",
        mpilab_wf_chain_name(st->chain), "buffer_bytes", (json_int_t)st->buffer_bytes, "io",
        mpilab_wf_io_name(st->io), "queue_depth", st->queue_depth, "drop_behind",
        o->drop_behind, "iterations", (json_int_t)st->iterations, "total_s",
        mpilab_json_real(st->total_s), "time_per_iteration_s",
        mpilab_json_real(time_per_iteration(st)), "bytes_read", (json_int_t)st->bytes_read,
        "bytes_written", (json_int_t)st->bytes_written, "requests_read",
        (json_int_t)st->requests_read, "requests_written", (json_int_t)st->requests_written,
        "io_bandwidth_Bps", mpilab_json_real(io_bandwidth(st)), "peak_rss_bytes",
        (json_int_t)st->maxrss_kb * 1024, "prefetch", st->prefetch, "dev_read_bytes",
        count_or_null(st->dev_read_bytes), "dev_write_bytes", count_or_null(st->dev_write_bytes));
    json_t *pw = json_array();
    for (int i = 0; st->compute_s && i < st->workers; i++)
        json_array_append_new(pw, json_pack("{s:i,s:o,s:o,s:o,s:o}", "worker", i, "compute_s",
                                            mpilab_json_real(st->compute_s[i]), "io_wait_s",
                                            mpilab_json_real(st->io_wait_s[i]), "dep_wait_s",
                                            mpilab_json_real(st->dep_wait_s[i]), "io_busy_s",
                                            mpilab_json_real(st->io_busy_s[i])));
    json_object_set_new(wf, "per_worker", pw);
    json_object_set_new(wf, "io_turns", json_boolean(o->io_turns));
    return wf;
}

/* The iteration times' statistics. The count is fixed by the caller, so "converged" says
 * whether it met the default precision (it does not stop the run); the measurement has no
 * "precision" object, so the confidence level and relative error are part of "stats". None
 * if nothing was run. */
static json_t *iteration_stats(const mpilab_wf_stats *st)
{
    const mpilab_precision_t prec = MPILAB_PRECISION_DEFAULT;
    if (st->iterations <= 0)
        return json_object();
    json_t *s = mpilab_results_sample_stats(st->iter_s, NULL, (size_t)st->iterations, &prec);
    json_object_set_new(s, "cl", json_real(prec.cl));
    json_object_set_new(s, "eps", json_real(prec.eps));
    return s;
}

json_t *mpilab_wf_results(const mpilab_wf_stats *st, const mpilab_wf_run_opts *o, int mpi,
                          json_t *provenance)
{
    json_t *opts = json_pack("{s:s,s:I,s:i,s:i,s:s,s:s,s:i,s:b,s:b}", "mode",
                             mpi ? "mpi" : "threads", "iterations", (json_int_t)o->iterations,
                             "workers", o->workers, "waves", o->waves, "chain",
                             mpilab_wf_chain_name(o->chain), "io", mpilab_wf_io_name(o->io),
                             "queue_depth", o->queue_depth, "drop_behind", o->drop_behind,
                             "prefetch", !o->no_prefetch);
    json_object_set_new(opts, "io_turns", json_boolean(o->io_turns));
    json_object_set_new(opts, "sim_cell_flops", json_real(o->sim_cell_flops));
    json_object_set_new(provenance, "options", opts);
    json_object_set_new(provenance, "clock_sync", json_null());
    size_t n = st->iterations > 0 ? (size_t)st->iterations : 0;
    json_t *valid, *samples = mpilab_results_samples(st->iter_s, NULL, n, &valid);
    json_t *wf = wavefront_object(st, o, mpi);
    json_object_set_new(wf, "iteration_s", json_deep_copy(samples));
    char impl[64];
    snprintf(impl, sizeof impl, "%s/%s", mpilab_wf_layout_name(st->layout),
             mpilab_wf_io_name(st->io));
    json_t *m = json_pack(
        "{s:s,s:s,s:s,s:I,s:i,s:i,s:i,s:s,s:I,s:I,s:o,s:o,s:o}", "op", "wavefront", "impl", impl,
        "timing", "iteration", "bytes",
        (json_int_t)(n ? (st->bytes_read + st->bytes_written) / st->iterations : 0), "ranks",
        mpi ? st->workers : 1, "workers", st->workers, "waves", o->waves, "chain",
        mpilab_wf_chain_name(st->chain), "MB", (json_int_t)st->mb, "NB", (json_int_t)st->nb,
        "stats", iteration_stats(st), "samples", samples, "valid", valid);
    json_incref(provenance);
    json_t *doc = mpilab_results_new(provenance, json_pack("[o]", m));
    json_object_set_new(doc, "wavefront", wf);
    return doc;
}
