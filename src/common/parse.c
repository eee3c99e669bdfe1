/* Strict value parsers (include/mpilab/parse.h). Each checks the grammar itself, ASCII
 * character by character, before any conversion: strtoll/strtod alone would accept leading
 * blanks (" -5" as a size wrapped to a huge count), hexadecimal, "nan" and "inf". */
#include "mpilab/parse.h"

#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

static int is_digit(char c)
{
    return c >= '0' && c <= '9';
}

static size_t digits(const char *s)
{
    size_t n = 0;
    while (is_digit(s[n]))
        n++;
    return n;
}

/* Length of the longest prefix of s that is a real in the grammar of parse.h (0 if none). */
static size_t real_prefix(const char *s)
{
    size_t k = 0;
    if (s[k] == '-')
        k++;
    size_t ip = digits(s + k), fp = 0;
    k += ip;
    if (s[k] == '.') {
        fp = digits(s + k + 1);
        if (fp == 0)
            return 0; /* "1." and "." are not numbers here */
        k += 1 + fp;
    }
    if (ip == 0 && fp == 0)
        return 0;
    if (s[k] == 'e' || s[k] == 'E') {
        size_t e = k + 1;
        if (s[e] == '+' || s[e] == '-')
            e++;
        size_t ed = digits(s + e);
        if (ed == 0)
            return 0;
        k = e + ed;
    }
    return k;
}

static int convert_real(const char *s, size_t len, double *out)
{
    char buf[128];
    if (len == 0 || len >= sizeof buf)
        return -1;
    memcpy(buf, s, len);
    buf[len] = '\0';
    errno = 0;
    char *end = NULL;
    double v = strtod(buf, &end);
    if (*end != '\0' || !isfinite(v) || (errno == ERANGE && fabs(v) > 1.0))
        return -1;
    *out = v;
    return 0;
}

int mpilab_parse_i64(const char *s, long long *out)
{
    if (!s)
        return -1;
    size_t k = s[0] == '-';
    size_t n = digits(s + k);
    if (n == 0 || s[k + n] != '\0')
        return -1;
    errno = 0;
    long long v = strtoll(s, NULL, 10);
    if (errno)
        return -1;
    *out = v;
    return 0;
}

int mpilab_parse_double(const char *s, double *out)
{
    if (!s)
        return -1;
    size_t n = real_prefix(s);
    if (n == 0 || s[n] != '\0')
        return -1;
    return convert_real(s, n, out);
}

int mpilab_parse_size(const char *s, size_t *out)
{
    if (!s)
        return -1;
    size_t n = digits(s);
    if (n == 0)
        return -1;
    const char *u = s + n;
    unsigned long long mult = 1;
    switch (*u) {
    case 'K': case 'k': mult = 1ull << 10; u++; break;
    case 'M': case 'm': mult = 1ull << 20; u++; break;
    case 'G': case 'g': mult = 1ull << 30; u++; break;
    default: break;
    }
    if (*u == 'B')
        u++;
    if (*u != '\0')
        return -1;
    errno = 0;
    unsigned long long v = strtoull(s, NULL, 10);
    if (errno || v > (unsigned long long)SIZE_MAX / mult)
        return -1;
    *out = (size_t)(v * mult);
    return 0;
}

/* A real followed by one of `units` (matched exactly or, with nocase, ignoring ASCII case);
 * `dflt` is the multiplier for no unit (< 0: a unit is required). Non-negative results. */
typedef struct unit { const char *name; double mult; } unit_t;

static int parse_with_unit(const char *s, const unit_t *units, size_t nunits, int nocase, double dflt,
                           double *out)
{
    if (!s)
        return -1;
    size_t n = real_prefix(s);
    if (n == 0)
        return -1;
    const char *u = s + n;
    double mult = dflt;
    if (*u) {
        mult = -1.0;
        for (size_t k = 0; k < nunits; k++)
            if (nocase ? strcasecmp(u, units[k].name) == 0 : strcmp(u, units[k].name) == 0)
                mult = units[k].mult;
    }
    double v;
    if (mult < 0.0 || convert_real(s, n, &v) != 0)
        return -1;
    v *= mult;
    if (!(v >= 0.0) || !isfinite(v))
        return -1;
    *out = v == 0.0 ? 0.0 : v; /* no -0 */
    return 0;
}

int mpilab_parse_duration(const char *s, double *seconds)
{
    static const unit_t units[] = {{"ns", 1e-9}, {"us", 1e-6}, {"ms", 1e-3}, {"s", 1.0}};
    return parse_with_unit(s, units, sizeof units / sizeof units[0], 0, 1.0, seconds);
}

int mpilab_parse_rate(const char *s, double *bits_per_s)
{
    static const unit_t units[] = {{"bit", 1.0}, {"kbit", 1e3}, {"mbit", 1e6}, {"gbit", 1e9}, {"tbit", 1e12}};
    return parse_with_unit(s, units, sizeof units / sizeof units[0], 1, -1.0, bits_per_s);
}

/* ---- size lists ---- */

static int cmp_size(const void *a, const void *b)
{
    size_t x = *(const size_t *)a, y = *(const size_t *)b;
    return (x > y) - (x < y);
}

typedef struct vec {
    size_t *v, n, cap, max;
} vec_t;

static int push(vec_t *v, size_t x, char *err, size_t errlen)
{
    if (v->n >= v->max) {
        snprintf(err, errlen, "too many sizes (more than %zu)", v->max);
        return -1;
    }
    if (v->n == v->cap) {
        size_t nc = v->cap ? 2 * v->cap : 16;
        size_t *nv = realloc(v->v, nc * sizeof *nv);
        if (!nv) {
            snprintf(err, errlen, "out of memory");
            return -1;
        }
        v->v = nv;
        v->cap = nc;
    }
    v->v[v->n++] = x;
    return 0;
}

static int geometric(vec_t *v, size_t a, size_t b, size_t f, char *err, size_t errlen)
{
    int rc = 0;
    size_t x = a;
    if (x == 0) {
        rc = push(v, 0, err, errlen);
        x = 1;
    }
    while (rc == 0 && x <= b) {
        rc = push(v, x, err, errlen);
        if (x > b / f)
            break;
        x *= f;
    }
    return rc;
}

static int linear(vec_t *v, size_t a, size_t b, size_t step, char *err, size_t errlen)
{
    int rc = 0;
    for (size_t x = a; rc == 0 && x <= b; x += step) {
        rc = push(v, x, err, errlen);
        if (b - x < step)
            break;
    }
    return rc;
}

static int item(const char *it, vec_t *v, char *err, size_t errlen)
{
    char copy[128];
    char *parts[3] = {copy, NULL, NULL};
    int np = 1;
    if (strlen(it) >= sizeof copy) {
        snprintf(err, errlen, "bad size '%.40s...' (too long)", it);
        return -1;
    }
    strcpy(copy, it);
    for (char *c = copy; *c; c++) {
        if (*c != ':')
            continue;
        if (np == 3) {
            np = 4; /* too many fields */
            break;
        }
        *c = '\0';
        parts[np++] = c + 1;
    }
    size_t a, b, step;
    long long f;
    if (np == 1) {
        if (mpilab_parse_size(parts[0], &a) == 0)
            return push(v, a, err, errlen);
        snprintf(err, errlen, "bad size '%s' (want a non-negative number, optional K/M/G)", it);
    } else if (np != 3) {
        snprintf(err, errlen, "bad size range '%s' (want A:B:STEP or A:B:xF)", it);
    } else if (mpilab_parse_size(parts[0], &a) != 0 || mpilab_parse_size(parts[1], &b) != 0) {
        snprintf(err, errlen, "bad size range '%s' (bounds must be non-negative sizes)", it);
    } else if (a > b) {
        snprintf(err, errlen, "bad size range '%s' (start above end)", it);
    } else if (parts[2][0] == 'x' || parts[2][0] == 'X') {
        if (mpilab_parse_i64(parts[2] + 1, &f) == 0 && f >= 2)
            return geometric(v, a, b, (size_t)f, err, errlen);
        snprintf(err, errlen, "bad size range '%s' (factor must be an integer >= 2)", it);
    } else if (mpilab_parse_size(parts[2], &step) != 0 || step == 0) {
        snprintf(err, errlen, "bad size range '%s' (step must be a positive size)", it);
    } else {
        return linear(v, a, b, step, err, errlen);
    }
    return -1;
}

/* The reason quotes the user's text: keep it one printable line (issue 11). */
static void one_line(char *err)
{
    for (unsigned char *c = (unsigned char *)err; *c; c++)
        if (*c < 0x20 || *c == 0x7f)
            *c = '?';
}

int mpilab_parse_size_list(const char *spec, size_t max_count, size_t **out, size_t *count, char *err,
                           size_t errlen)
{
    *out = NULL;
    *count = 0;
    if (!spec || !*spec) {
        snprintf(err, errlen, "empty size list");
        return -1;
    }
    size_t len = strlen(spec);
    if (spec[0] == ',' || spec[len - 1] == ',' || strstr(spec, ",,")) {
        snprintf(err, errlen, "empty item in size list '%s'", spec);
        one_line(err);
        return -1;
    }
    vec_t v = {NULL, 0, 0, max_count};
    int rc = 0;
    for (const char *p = spec; rc == 0 && *p;) {
        const char *comma = strchr(p, ',');
        size_t n = comma ? (size_t)(comma - p) : strlen(p);
        char it[128];
        if (n >= sizeof it) {
            snprintf(err, errlen, "bad size '%.40s...' (too long)", p);
            rc = -1;
            break;
        }
        memcpy(it, p, n);
        it[n] = '\0';
        rc = item(it, &v, err, errlen);
        p += n + (comma != NULL);
    }
    if (rc != 0) {
        free(v.v);
        one_line(err);
        return -1;
    }
    qsort(v.v, v.n, sizeof *v.v, cmp_size);
    size_t m = 0;
    for (size_t k = 0; k < v.n; k++)
        if (m == 0 || v.v[m - 1] != v.v[k])
            v.v[m++] = v.v[k];
    *out = v.v;
    *count = m;
    return 0;
}

char *mpilab_getopt_problem(int c, int argc, char *const argv[], char *buf, size_t len)
{
    char name[64];
    const char *arg = (optind >= 1 && optind - 1 < argc && argv[optind - 1]) ? argv[optind - 1] : "";
    if (strncmp(arg, "--", 2) == 0 && (c == ':' || optopt == 0)) {
        /* the long option as written, without any "=value" */
        size_t n = strcspn(arg, "=");
        snprintf(name, sizeof name, "%.*s", (int)(n < sizeof name - 1 ? n : sizeof name - 1), arg);
    } else {
        snprintf(name, sizeof name, "-%c", optopt > 0 && optopt < 256 ? optopt : '?');
    }
    for (char *q = name; *q; q++)
        if ((unsigned char)*q < 0x20 || (unsigned char)*q >= 0x7f)
            *q = '?';
    if (c == ':')
        snprintf(buf, len, "option '%s' needs a value", name);
    else
        snprintf(buf, len, "unknown option '%s'", name);
    return buf;
}
