/* Quality flags as JSON (include/mpilab/quality.h). */
#include "mpilab/quality.h"

#include <math.h>
#include <stdio.h>

static json_t *num(double x)
{
    return isfinite(x) ? json_real(x) : json_null();
}

json_t *mpilab_quality_param(const mpilab_param_t *p)
{
    json_t *f = json_array();
    if (p->flags & MPILAB_PARAM_CLAMPED)
        json_array_append_new(f, json_string("clamped"));
    if (p->flags & MPILAB_PARAM_NO_CI)
        json_array_append_new(f, json_string("no_ci"));
    if (p->flags & MPILAB_PARAM_WIDE)
        json_array_append_new(f, json_string("ci_wide"));
    return json_pack("{s:o,s:o,s:o,s:o}", "raw", num(p->raw), "lo", num(p->lo), "hi", num(p->hi), "flags", f);
}

json_t *mpilab_quality_measurement_flags(const mpilab_stats_t *s, size_t negative)
{
    json_t *f = json_array();
    if (!s->converged)
        json_array_append_new(f, json_string("not_converged"));
    if (s->invalid > 0)
        json_array_append_new(f, json_string("invalid_samples"));
    if (negative > 0)
        json_array_append_new(f, json_string("negative_time"));
    if (s->reps > 0 && s->invalid >= s->reps)
        json_array_append_new(f, json_string("no_valid_samples"));
    return f;
}

int mpilab_quality_clock_uncertain(double sync_uncertainty, double median, double eps)
{
    if (!(sync_uncertainty > 0.0))
        return 0;
    return !isfinite(median) || sync_uncertainty > eps * fabs(median);
}

int mpilab_quality_noisy_verdict(size_t converged, size_t total, const mpilab_quality_context_t *ctx, char *buf,
                                 size_t len)
{
    if (total == 0 || 2 * converged >= total || (ctx && ctx->fixed_count))
        return 0;
    const mpilab_quality_context_t none = {0, 0, 0, 0, 0.0};
    if (!ctx)
        ctx = &none;
    int over = ctx->node_cpus > 0 && ctx->local_ranks > ctx->node_cpus;
    char cause[160] = "";
    if (over)
        snprintf(cause, sizeof cause, " (%d ranks share %d CPUs on a node: oversubscription is the likely cause)",
                 ctx->local_ranks, ctx->node_cpus);
    char budget[64] = "";
    if (ctx->time_budget > 0.0)
        snprintf(budget, sizeof budget, " (this run had %g s)", ctx->time_budget);
    snprintf(buf, len,
             "too noisy to converge: only %zu of %zu measurements reached the asked precision%s; repeat with a "
             "larger --time-budget%s, a looser --eps, %s%son a quieter machine",
             converged, total, cause, budget,
             /* pinning cannot help ranks that outnumber the CPUs */
             ctx->pinned || over ? "" : "pinned ranks (--bind-to core), ",
             over ? "fewer ranks per node, " : "fewer ranks, ");
    return 1;
}

int mpilab_quality_undetermined(double lo, double hi)
{
    if (!isfinite(lo) || !isfinite(hi))
        return 0;
    return lo <= 0.0 || hi > MPILAB_QUALITY_DECADE * lo * (1 + 1e-9); /* a decade exactly still holds */
}
