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

/* ---- derived values (mpilab_op_t.derive of each suite entry) ---- */

/* The measurement of r (NULL if none), with d cleared; *ok: t usable as a time. */
static const suite_measured_t *begin(const mpilab_op_run_t *r, double t, mpilab_derived_t *d, int *ok,
                                     suite_measured_t *m)
{
    mpilab_derived_clear(d);
    *ok = t > 0.0 && isfinite(t);
    return suite_measured(r, m);
}

/* latency = t / div, bandwidth = bytes * moved / t (moved: message lengths per run time) */
static int derive_simple(const mpilab_op_run_t *r, double t, mpilab_derived_t *d, double div, double moved)
{
    int ok;
    suite_measured_t m;
    if (!begin(r, t, d, &ok, &m))
        return -1;
    if (ok)
        mpilab_derived_set(d, "bandwidth_Bps", moved * (double)r->bytes / t);
    if (ok && div > 0.0)
        mpilab_derived_set(d, "latency_s", t / div);
    return 0;
}

int suite_derive_pingpong(const mpilab_op_run_t *r, double t, mpilab_derived_t *d)
{
    return derive_simple(r, t, d, 2.0, 2.0); /* bytes / (t / 2) */
}

int suite_derive_pingping(const mpilab_op_run_t *r, double t, mpilab_derived_t *d)
{
    return derive_simple(r, t, d, 1.0, 1.0);
}

int suite_derive_sendrecv(const mpilab_op_run_t *r, double t, mpilab_derived_t *d)
{
    return derive_simple(r, t, d, 0.0, 2.0);
}

int suite_derive_exchange(const mpilab_op_run_t *r, double t, mpilab_derived_t *d)
{
    return derive_simple(r, t, d, 0.0, 4.0); /* IMB */
}

int suite_derive_stream(const mpilab_op_run_t *r, double t, mpilab_derived_t *d)
{
    int ok;
    suite_measured_t m;
    if (!begin(r, t, d, &ok, &m))
        return -1;
    int64_t pairs = m.multi ? m.pairs : 1;
    if (ok) {
        double rate = (double)pairs * (double)m.window / t;
        mpilab_derived_set(d, "bandwidth_Bps", rate * (double)r->bytes);
        mpilab_derived_set(d, "msg_rate", rate);
    }
    mpilab_derived_set_count(d, "window", m.window);
    mpilab_derived_set_count(d, "pairs", pairs);
    return 0;
}

int suite_derive_comb(const mpilab_op_run_t *r, double t, mpilab_derived_t *d)
{
    int ok;
    suite_measured_t m;
    if (!begin(r, t, d, &ok, &m))
        return -1;
    if (ok) {
        mpilab_derived_set(d, "bandwidth_Bps", (double)m.msgs / t * (double)r->bytes);
        mpilab_derived_set(d, "msg_rate", (double)m.msgs / t);
    }
    if (m.work_rate > 0.0 && m.run_time > 0.0)
        mpilab_derived_set(d, "cpu_avail", (m.work_iters / m.run_time) / m.work_rate);
    if (m.peer_work_rate > 0.0 && m.peer_run_time > 0.0) /* false for NaN */
        mpilab_derived_set(d, "cpu_avail_peer", (m.peer_work_iters / m.peer_run_time) / m.peer_work_rate);
    mpilab_derived_set(d, "poll_interval", m.poll_iters);
    if (m.work_rate > 0.0)
        mpilab_derived_set(d, "poll_interval_s", m.poll_iters / m.work_rate);
    mpilab_derived_set(d, "work_rate", m.work_rate);
    mpilab_derived_set_count(d, "msgs", m.msgs);
    return 0;
}

int suite_derive_overlap(const mpilab_op_run_t *r, double t, mpilab_derived_t *d)
{
    int ok;
    suite_measured_t m;
    if (!begin(r, t, d, &ok, &m))
        return -1;
    if (ok) {
        double lo = m.t_comm < m.t_comp ? m.t_comm : m.t_comp;
        if (lo > 0.0) {
            double o = 100.0 * (m.t_comm + m.t_comp - t) / lo;
            mpilab_derived_set(d, "overlap_pct", o < 0.0 ? 0.0 : (o > 100.0 ? 100.0 : o));
        }
    }
    mpilab_derived_set(d, "t_comm", m.t_comm);
    mpilab_derived_set(d, "t_comp", m.t_comp);
    if (ok)
        mpilab_derived_set(d, "t_total", t);
    return 0;
}
