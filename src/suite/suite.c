/* Suite configuration, runner options, registration, counters and derived quantities
 * (include/mpilab/suite.h). */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/common.h"
#include "suite/suite_internal.h"

mpilab_suite_counters_t suite_counters;

static mpilab_suite_config_t g_cfg;
static int g_cfg_init;
static int g_registered;

void mpilab_suite_config_default(mpilab_suite_config_t *c)
{
    static const size_t sweep[] = {0, 100, 1000, 10000, 100000, 1000000};
    memset(c, 0, sizeof *c);
    c->window = 160;
    c->pairs = 0;
    c->npoll = sizeof sweep / sizeof sweep[0];
    memcpy(c->poll_sweep, sweep, sizeof sweep);
    c->comb_msgs = 16;
}

int mpilab_suite_config_check(const mpilab_suite_config_t *c, char *err, size_t errlen)
{
    if (c->window < 1) {
        snprintf(err, errlen, "window must be >= 1");
        return -1;
    }
    if (c->window > 1000000) {
        snprintf(err, errlen, "window %zu too large (at most 1000000)", c->window);
        return -1;
    }
    if (c->pairs > 1000000) {
        snprintf(err, errlen, "pairs %zu too large", c->pairs);
        return -1;
    }
    if (c->comb_msgs < 1 || c->comb_msgs > 1000000) {
        snprintf(err, errlen, "comb messages must be in 1..1000000");
        return -1;
    }
    if (c->npoll < 1 || c->npoll > MPILAB_SUITE_MAX_SWEEP) {
        snprintf(err, errlen, "poll sweep must have 1..%d entries", MPILAB_SUITE_MAX_SWEEP);
        return -1;
    }
    for (size_t k = 0; k < c->npoll; k++) {
        if (c->poll_sweep[k] > ((size_t)1 << 40)) {
            snprintf(err, errlen, "poll interval %zu too large", c->poll_sweep[k]);
            return -1;
        }
        for (size_t j = 0; j < k; j++)
            if (c->poll_sweep[j] == c->poll_sweep[k]) {
                snprintf(err, errlen, "poll sweep names %zu twice", c->poll_sweep[k]);
                return -1;
            }
    }
    return 0;
}

const mpilab_suite_config_t *mpilab_suite_config(void)
{
    if (!g_cfg_init) {
        mpilab_suite_config_default(&g_cfg);
        g_cfg_init = 1;
    }
    return &g_cfg;
}

int mpilab_suite_config_set(const mpilab_suite_config_t *c, char *err, size_t errlen)
{
    if (mpilab_suite_config_check(c, err, errlen) != 0)
        return -1;
    const mpilab_suite_config_t *cur = mpilab_suite_config();
    if (g_registered && (c->npoll != cur->npoll || memcmp(c->poll_sweep, cur->poll_sweep, sizeof c->poll_sweep))) {
        snprintf(err, errlen, "the poll sweep cannot change after the suite entries are registered");
        return -1;
    }
    g_cfg = *c;
    g_cfg_init = 1;
    return 0;
}

/* A count: digits with an optional K/M/G suffix, no sign. */
static int parse_count(const char *s, size_t *out)
{
    if (!s || !*s || *s == '-' || *s == '+')
        return -1;
    return mpilab_parse_size(s, out);
}

static const char *const option_names[] = {"window", "pairs", "poll-sweep", "comb-msgs", NULL};

const char *const *mpilab_suite_option_names(void)
{
    return option_names;
}

int mpilab_suite_parse_option(const char *name, const char *value, char *err, size_t errlen)
{
    if (!name)
        return 1;
    while (*name == '-')
        name++;
    int known = 0;
    for (size_t k = 0; option_names[k]; k++)
        known |= strcmp(name, option_names[k]) == 0;
    if (!known)
        return 1;
    mpilab_suite_config_t c = *mpilab_suite_config();
    char why[160];
    if (!value) {
        snprintf(err, errlen, "--%s: missing value", name);
        return -1;
    }
    if (strcmp(name, "poll-sweep") == 0) {
        size_t n = 0;
        const char *p = value;
        if (!*p) {
            snprintf(err, errlen, "--poll-sweep: empty list");
            return -1;
        }
        for (;;) {
            const char *comma = strchr(p, ',');
            size_t len = comma ? (size_t)(comma - p) : strlen(p);
            char item[64];
            if (len == 0 || len >= sizeof item) {
                snprintf(err, errlen, "--poll-sweep: malformed list '%s' (comma list of counts, e.g. 0,100,1K)",
                         value);
                return -1;
            }
            memcpy(item, p, len);
            item[len] = '\0';
            size_t v;
            if (parse_count(item, &v) != 0) {
                snprintf(err, errlen, "--poll-sweep: '%s' is not a count in '%s'", item, value);
                return -1;
            }
            if (n >= MPILAB_SUITE_MAX_SWEEP) {
                snprintf(err, errlen, "--poll-sweep: more than %d intervals", MPILAB_SUITE_MAX_SWEEP);
                return -1;
            }
            c.poll_sweep[n++] = v;
            if (!comma)
                break;
            p = comma + 1;
        }
        c.npoll = n;
    } else {
        size_t v;
        if (parse_count(value, &v) != 0) {
            snprintf(err, errlen, "--%s: '%s' is not a count", name, value);
            return -1;
        }
        if (strcmp(name, "window") == 0)
            c.window = v;
        else if (strcmp(name, "pairs") == 0)
            c.pairs = v;
        else
            c.comb_msgs = v;
    }
    if (mpilab_suite_config_set(&c, why, sizeof why) != 0) {
        snprintf(err, errlen, "--%s: %s", name, why);
        return -1;
    }
    return 0;
}

int mpilab_suite_register(void)
{
    if (g_registered)
        return 0;
    if (suite_register_entries(mpilab_suite_config()) != 0)
        return -1;
    g_registered = 1;
    return 0;
}

int mpilab_suite_is_entry(const mpilab_op_t *op)
{
    if (!op || !op->name || !op->impl || !suite_owns(op))
        return 0;
    const mpilab_op_t *f = mpilab_ops_find(op->name, op->impl);
    return f && f->run == op->run;
}

void mpilab_suite_counters_get(mpilab_suite_counters_t *out)
{
    *out = suite_counters;
}

void mpilab_suite_counters_reset(void)
{
    memset(&suite_counters, 0, sizeof suite_counters);
}

/* ---- records of finished measurements ---- */

static suite_record_t *records;
static size_t nrecords, caprecords;

void suite_record_store(const suite_record_t *r)
{
    for (size_t k = 0; k < nrecords; k++)
        if (records[k].bytes == r->bytes && strcmp(records[k].name, r->name) == 0 &&
            strcmp(records[k].impl, r->impl) == 0) {
            records[k] = *r;
            return;
        }
    if (nrecords == caprecords) {
        size_t nc = caprecords ? 2 * caprecords : 32;
        suite_record_t *n = realloc(records, nc * sizeof *n);
        if (!n)
            return; /* derive will report "not measured" */
        records = n;
        caprecords = nc;
    }
    records[nrecords++] = *r;
}

const suite_record_t *suite_record_find(const char *name, const char *impl, size_t bytes)
{
    for (size_t k = 0; k < nrecords; k++)
        if (records[k].bytes == bytes && strcmp(records[k].name, name) == 0 && strcmp(records[k].impl, impl) == 0)
            return &records[k];
    return NULL;
}

int mpilab_suite_derive(const mpilab_op_t *op, size_t bytes, double t, mpilab_derived_t *d)
{
    mpilab_derived_clear(d);
    if (!op || !suite_owns(op) || !op->derive)
        return -1;
    return op->derive(op, bytes, t, d);
}

/* The record of op at bytes (NULL if none), with d cleared; *ok: t usable as a time. */
static const suite_record_t *begin(const mpilab_op_t *op, size_t bytes, double t, mpilab_derived_t *d, int *ok)
{
    mpilab_derived_clear(d);
    *ok = t > 0.0 && isfinite(t);
    return suite_record_find(op->name, op->impl, bytes);
}

/* latency = t / div, bandwidth = bytes * moved / t (moved: message lengths per run time) */
static int derive_simple(const mpilab_op_t *op, size_t bytes, double t, mpilab_derived_t *d, double div,
                         double moved)
{
    int ok;
    if (!begin(op, bytes, t, d, &ok))
        return -1;
    if (ok && div > 0.0)
        d->latency_s = t / div;
    if (ok)
        d->bandwidth_Bps = moved * (double)bytes / t;
    return 0;
}

int suite_derive_pingpong(const mpilab_op_t *op, size_t bytes, double t, mpilab_derived_t *d)
{
    return derive_simple(op, bytes, t, d, 2.0, 2.0); /* bytes / (t / 2) */
}

int suite_derive_pingping(const mpilab_op_t *op, size_t bytes, double t, mpilab_derived_t *d)
{
    return derive_simple(op, bytes, t, d, 1.0, 1.0);
}

int suite_derive_sendrecv(const mpilab_op_t *op, size_t bytes, double t, mpilab_derived_t *d)
{
    return derive_simple(op, bytes, t, d, 0.0, 2.0);
}

int suite_derive_exchange(const mpilab_op_t *op, size_t bytes, double t, mpilab_derived_t *d)
{
    return derive_simple(op, bytes, t, d, 0.0, 4.0); /* IMB */
}

int suite_derive_stream(const mpilab_op_t *op, size_t bytes, double t, mpilab_derived_t *d)
{
    int ok;
    const suite_record_t *r = begin(op, bytes, t, d, &ok);
    if (!r)
        return -1;
    int multi = r->kind == SK_STREAM_MULTI;
    d->window = r->window;
    d->pairs = multi ? r->pairs : 1;
    if (ok) {
        d->msg_rate = (double)d->pairs * (double)r->window / t;
        d->bandwidth_Bps = d->msg_rate * (double)bytes;
    }
    return 0;
}

int suite_derive_comb(const mpilab_op_t *op, size_t bytes, double t, mpilab_derived_t *d)
{
    int ok;
    const suite_record_t *r = begin(op, bytes, t, d, &ok);
    if (!r)
        return -1;
    d->msgs = r->msgs;
    d->poll_interval = r->poll_iters;
    d->work_rate = r->work_rate;
    if (r->work_rate > 0.0) {
        d->poll_interval_s = r->poll_iters / r->work_rate;
        if (r->run_time > 0.0)
            d->cpu_avail = (r->work_iters / r->run_time) / r->work_rate;
    }
    if (r->peer_work_rate > 0.0 && r->peer_run_time > 0.0) /* false for NaN */
        d->cpu_avail_peer = (r->peer_work_iters / r->peer_run_time) / r->peer_work_rate;
    if (ok) {
        d->msg_rate = (double)r->msgs / t;
        d->bandwidth_Bps = d->msg_rate * (double)bytes;
    }
    return 0;
}

int suite_derive_overlap(const mpilab_op_t *op, size_t bytes, double t, mpilab_derived_t *d)
{
    int ok;
    const suite_record_t *r = begin(op, bytes, t, d, &ok);
    if (!r)
        return -1;
    d->t_comm = r->t_comm;
    d->t_comp = r->t_comp;
    if (ok) {
        d->t_total = t;
        double m = r->t_comm < r->t_comp ? r->t_comm : r->t_comp;
        if (m > 0.0) {
            double o = 100.0 * (r->t_comm + r->t_comp - t) / m;
            d->overlap_pct = o < 0.0 ? 0.0 : (o > 100.0 ? 100.0 : o);
        }
    }
    return 0;
}
