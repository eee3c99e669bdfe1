/* The delay line's cold crossing and spin margin (see delayline.h), and the parts of its
 * statistics that report them and the router's legs. */
#include "testbed/delayline.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

static int cold_slot(const mpilab_dl_cold *c, int ifindex)
{
    for (int k = 0; k < c->ndirs; k++)
        if (c->ifindex[k] == ifindex)
            return k;
    return -1;
}

void mpilab_dl_cold_learn(mpilab_dl_cold *c, int ifindex, int bucket, int64_t cost_ns)
{
    if (ifindex <= 0 || cost_ns < 0)
        return;
    int k = cold_slot(c, ifindex);
    if (k < 0) {
        if (c->ndirs >= MPILAB_DL_COLD_DIRS)
            return;
        k = c->ndirs++;
        c->ifindex[k] = ifindex;
        memset(&c->cal[k], 0, sizeof(c->cal[k]));
    }
    mpilab_dl_calib_add(&c->cal[k], bucket, cost_ns);
}

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

/* The median (upper of the two middle ones) of a bucket's last costs. */
static int64_t bucket_median(const mpilab_dl_calib *cal, int b)
{
    int64_t v[MPILAB_DL_CAL_N];
    memcpy(v, cal->cost[b], sizeof(int64_t) * (size_t)cal->n[b]);
    qsort(v, (size_t)cal->n[b], sizeof(int64_t), cmp_i64);
    return v[cal->n[b] / 2];
}

int64_t mpilab_dl_cold_cost(const mpilab_dl_cold *c, int ifindex, int bucket)
{
    int k = ifindex > 0 ? cold_slot(c, ifindex) : -1;
    if (k < 0)
        return -1;
    if (bucket < 0)
        bucket = 0;
    if (bucket >= MPILAB_DL_GAP_BUCKETS)
        bucket = MPILAB_DL_GAP_BUCKETS - 1;
    const mpilab_dl_calib *cal = &c->cal[k];
    int64_t v[MPILAB_DL_GAP_BUCKETS * MPILAB_DL_CAL_N];
    int n = 0;
    /* widen the window of buckets around `bucket` until it holds enough costs */
    for (int r = 0; r < MPILAB_DL_GAP_BUCKETS; r++) {
        for (int j = 0; j < (r ? 2 : 1); j++) {
            int b = j ? bucket + r : bucket - r;
            if (b < 0 || b >= MPILAB_DL_GAP_BUCKETS)
                continue;
            memcpy(v + n, cal->cost[b], sizeof(int64_t) * (size_t)cal->n[b]);
            n += cal->n[b];
        }
        if (n >= MPILAB_DL_CAL_MIN) {
            qsort(v, (size_t)n, sizeof(int64_t), cmp_i64);
            int64_t m = v[n / 2];
            return m < 0 ? 0 : m > MPILAB_DL_COLD_MAX_NS ? MPILAB_DL_COLD_MAX_NS : m;
        }
    }
    return -1;
}

void mpilab_dl_note_wake(mpilab_dl_stats *st, int64_t late_ns)
{
    st->wake_late_ns = st->wake_late_ns == 0.0 ? (double)late_ns
                                                : 0.9 * st->wake_late_ns + 0.1 * (double)late_ns;
    st->wake_recent[st->wake_next] = late_ns;
    st->wake_next = (st->wake_next + 1) % MPILAB_DL_WAKE_N;
    if (st->wake_n < MPILAB_DL_WAKE_N)
        st->wake_n++;
}

int64_t mpilab_dl_spin_margin(const mpilab_dl_stats *st, int64_t spin_last_ns)
{
    if (spin_last_ns > 0)
        return spin_last_ns;
    int64_t m = 0;
    for (int k = 0; k < st->wake_n; k++)
        m = st->wake_recent[k] > m ? st->wake_recent[k] : m;
    m += MPILAB_DL_SPIN_SLACK_NS;
    return m < MPILAB_DL_SPIN_MIN_NS ? MPILAB_DL_SPIN_MIN_NS : m > MPILAB_DL_SPIN_MAX_NS ? MPILAB_DL_SPIN_MAX_NS : m;
}

/* What the leg tap saw: whole router crossings (ingress leg to egress leg, both kernel
 * stamps) against the delay, the forwarding out of the tun device, the advance taken. */
json_t *mpilab_dl_router_json(const mpilab_dl_stats *st)
{
    const uint64_t *cf = st->cross_fine, *of = st->out_fine;
    double cm = st->cross_max_s, om = st->out_max_s;
    return json_pack("{s:I, s:I, s:f, s:{s:f,s:f,s:f,s:f}, s:I, s:{s:f,s:f,s:f,s:f}, s:I, s:f, s:f}",
        "crossings", (json_int_t)st->crossings, "crossings_early", (json_int_t)st->cross_early,
        "early_max_s", st->cross_early_max_s,
        "late_percentiles_s", "p50", mpilab_dl_hist_quantile(cf, 0.5, cm),
        "p90", mpilab_dl_hist_quantile(cf, 0.9, cm), "p99", mpilab_dl_hist_quantile(cf, 0.99, cm), "max", cm,
        "forwarded", (json_int_t)st->out_n,
        "forward_percentiles_s", "p10", mpilab_dl_hist_quantile(of, 0.1, om),
        "p50", mpilab_dl_hist_quantile(of, 0.5, om), "p90", mpilab_dl_hist_quantile(of, 0.9, om), "max", om,
        "advanced", (json_int_t)st->advanced,
        "advance_mean_s", st->advanced ? st->advance_sum_s / (double)st->advanced : 0.0,
        "advance_max_s", st->advance_max_s);
}

/* Per direction: {"ifindex": I, "buckets": {"B": {"n": N, "median_s": S}}} (B: gap < 2^B us). */
static json_t *cold_dirs(const mpilab_dl_legs *legs)
{
    json_t *a = json_array();
    for (int k = 0; a && legs && k < legs->cold.ndirs; k++) {
        const mpilab_dl_calib *cal = &legs->cold.cal[k];
        json_t *bk = json_object();
        for (int b = 0; bk && b < MPILAB_DL_GAP_BUCKETS; b++) {
            if (!cal->n[b])
                continue;
            char key[8];
            snprintf(key, sizeof key, "%d", b);
            json_object_set_new(bk, key, json_pack("{s:i, s:f}", "n", cal->n[b], "median_s",
                                                   (double)bucket_median(cal, b) * 1e-9));
        }
        json_array_append_new(a, json_pack("{s:i, s:o}", "ifindex", legs->cold.ifindex[k], "buckets",
                                           bk ? bk : json_null()));
    }
    return a;
}

json_t *mpilab_dl_cold_json(const mpilab_dl_stats *st, const mpilab_dl_legs *legs, int enabled)
{
    json_t *dirs = cold_dirs(legs);
    if (!dirs)
        return NULL;
    return json_pack("{s:b, s:I, s:I, s:I, s:f, s:f, s:f, s:o}",
        "enabled", enabled, "learned", (json_int_t)st->cold_learned,
        "used", (json_int_t)st->cold_used, "fallback", (json_int_t)st->cold_fallback,
        "added_mean_s", st->cold_used ? st->cold_sum_s / (double)st->cold_used : 0.0,
        "added_max_s", st->cold_max_s, "bound_s", (double)MPILAB_DL_COLD_MAX_NS * 1e-9,
        "directions", dirs);
}

json_t *mpilab_dl_wait_json(const mpilab_dl_stats *st, int64_t spin_last_ns)
{
    const uint64_t *rf = st->read_fine;
    int64_t recent = 0;
    for (int k = 0; k < st->wake_n; k++)
        recent = st->wake_recent[k] > recent ? st->wake_recent[k] : recent;
    const char *mode = spin_last_ns < 0 ? "auto" : spin_last_ns > 0 ? "fixed" : "off";
    double margin = spin_last_ns ? (double)mpilab_dl_spin_margin(st, spin_last_ns) * 1e-9
                                 : (double)mpilab_dl_wake_margin(st) * 1e-9;
    return json_pack("{s:{s:I,s:f,s:f,s:f,s:f}, s:{s:s,s:f,s:f,s:I,s:f}}",
        "read_lag", "reads", (json_int_t)st->read_n,
        "p50_s", mpilab_dl_hist_quantile(rf, 0.5, st->read_max_s),
        "p90_s", mpilab_dl_hist_quantile(rf, 0.9, st->read_max_s),
        "p99_s", mpilab_dl_hist_quantile(rf, 0.99, st->read_max_s), "max_s", st->read_max_s,
        "spin_last", "mode", mode, "margin_s", margin, "wake_late_recent_max_s", (double)recent * 1e-9,
        "spin_gaps", (json_int_t)st->spin_gaps, "spin_gap_max_s", st->spin_gap_max_s);
}
