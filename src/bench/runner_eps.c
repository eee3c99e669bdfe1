/* Per-measurement precision rules (mpilab/epsrule.h): --eps-for OP[:IMPL]@BYTES=EPS,... */
#include "mpilab/epsrule.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* One name (op or impl): letters, digits, '_', '-', '.', at most MPILAB_EPS_NAME_MAX - 1. */
static int copy_name(const char *s, size_t n, char *out, const char *what, const char *item, char *err,
                     size_t errlen)
{
    if (n == 0 || n >= MPILAB_EPS_NAME_MAX) {
        snprintf(err, errlen, "--eps-for: '%s': %s name empty or longer than %d characters", item, what,
                 MPILAB_EPS_NAME_MAX - 1);
        return -1;
    }
    for (size_t k = 0; k < n; k++) {
        char ch = s[k];
        if (!((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') || ch == '_' ||
              ch == '-' || ch == '.')) {
            snprintf(err, errlen, "--eps-for: '%s': %s name has a character other than letters, digits, _-.",
                     item, what);
            return -1;
        }
    }
    memcpy(out, s, n);
    out[n] = '\0';
    return 0;
}

/* One OP[:IMPL]@BYTES=EPS item of length n at s into *rule. */
static int parse_item(const char *s, size_t n, mpilab_eps_rule_t *rule, char *err, size_t errlen)
{
    char item[256];
    if (n >= sizeof item) {
        snprintf(err, errlen, "--eps-for: an item of %zu characters (at most %zu)", n, sizeof item - 1);
        return -1;
    }
    memcpy(item, s, n);
    item[n] = '\0';
    char *at = strchr(item, '@'), *eq = at ? strchr(at, '=') : NULL;
    if (!at || !eq) {
        snprintf(err, errlen, "--eps-for: '%s': expected OP[:IMPL]@BYTES=EPS", item);
        return -1;
    }
    char *colon = memchr(item, ':', (size_t)(at - item));
    size_t oplen = (size_t)((colon ? colon : at) - item);
    memset(rule, 0, sizeof *rule);
    if (copy_name(item, oplen, rule->op, "operation", item, err, errlen) != 0)
        return -1;
    if (colon && copy_name(colon + 1, (size_t)(at - colon - 1), rule->impl, "implementation", item, err, errlen) != 0)
        return -1;
    char *end;
    errno = 0;
    unsigned long long b = strtoull(at + 1, &end, 10);
    if (end == at + 1 || end != eq || errno != 0 || at[1] == '-' || (uintmax_t)b > SIZE_MAX) {
        snprintf(err, errlen, "--eps-for: '%s': BYTES is not a byte count", item);
        return -1;
    }
    errno = 0;
    double e = strtod(eq + 1, &end);
    if (end == eq + 1 || *end != '\0' || errno != 0 || !(e > 0.0 && e < 1.0)) {
        snprintf(err, errlen, "--eps-for: '%s': EPS outside (0,1)", item);
        return -1;
    }
    rule->bytes = (size_t)b;
    rule->eps = e;
    return 0;
}

int mpilab_eps_rules_parse(const char *spec, mpilab_eps_rules_t *r, char *err, size_t errlen)
{
    size_t items = 1;
    for (const char *p = spec; *p; p++)
        items += *p == ',';
    mpilab_eps_rule_t *grown = realloc(r->rule, (r->n + items) * sizeof *grown);
    if (!grown) {
        snprintf(err, errlen, "--eps-for: out of memory");
        return -1;
    }
    r->rule = grown;
    size_t n = r->n;
    for (const char *p = spec;;) {
        const char *comma = strchr(p, ',');
        size_t len = comma ? (size_t)(comma - p) : strlen(p);
        if (parse_item(p, len, &r->rule[n], err, errlen) != 0)
            return -1; /* r->n unchanged: nothing appended */
        n++;
        if (!comma)
            break;
        p = comma + 1;
    }
    r->n = n;
    return 0;
}

double mpilab_eps_rules_lookup(const mpilab_eps_rules_t *r, const char *op, const char *impl, size_t bytes,
                               double dflt)
{
    for (size_t k = 0; r && k < r->n; k++) {
        const mpilab_eps_rule_t *x = &r->rule[k];
        if (x->bytes == bytes && strcmp(x->op, op) == 0 && (!x->impl[0] || strcmp(x->impl, impl ? impl : "") == 0))
            return x->eps;
    }
    return dflt;
}

void mpilab_eps_rules_free(mpilab_eps_rules_t *r)
{
    free(r->rule);
    r->rule = NULL;
    r->n = 0;
}
