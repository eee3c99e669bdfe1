#include "bench/sizes.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/common.h"

static int cmp_size(const void *a, const void *b)
{
    size_t x = *(const size_t *)a, y = *(const size_t *)b;
    return (x > y) - (x < y);
}

static int push(size_t **v, size_t *n, size_t *cap, size_t max_count, size_t x, char *err, size_t errlen)
{
    if (*n >= max_count) {
        snprintf(err, errlen, "too many sizes (more than %zu)", max_count);
        return -1;
    }
    if (*n == *cap) {
        size_t nc = *cap ? 2 * *cap : 16;
        size_t *nv = realloc(*v, nc * sizeof *nv);
        if (!nv) {
            snprintf(err, errlen, "out of memory");
            return -1;
        }
        *v = nv;
        *cap = nc;
    }
    (*v)[(*n)++] = x;
    return 0;
}

static int item(const char *it, size_t **v, size_t *n, size_t *cap, size_t max_count, char *err, size_t errlen)
{
    char *parts[3] = {NULL, NULL, NULL};
    char *copy = strdup(it);
    if (!copy) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    int np = 1, rc = -1;
    parts[0] = copy;
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
    if (np == 1) {
        if (mpilab_parse_size(parts[0], &a) != 0)
            snprintf(err, errlen, "bad size '%s' (want a non-negative number, optional K/M/G)", it);
        else
            rc = push(v, n, cap, max_count, a, err, errlen);
    } else if (np != 3) {
        snprintf(err, errlen, "bad size range '%s' (want A:B:STEP or A:B:xF)", it);
    } else if (mpilab_parse_size(parts[0], &a) != 0 || mpilab_parse_size(parts[1], &b) != 0) {
        snprintf(err, errlen, "bad size range '%s' (bounds must be non-negative sizes)", it);
    } else if (a > b) {
        snprintf(err, errlen, "bad size range '%s' (start above end)", it);
    } else if (parts[2][0] == 'x' || parts[2][0] == 'X') {
        long long f;
        if (mpilab_parse_i64(parts[2] + 1, &f) != 0 || f < 2) {
            snprintf(err, errlen, "bad size range '%s' (factor must be an integer >= 2)", it);
        } else {
            rc = 0;
            size_t x = a;
            if (x == 0) {
                rc = push(v, n, cap, max_count, 0, err, errlen);
                x = 1;
            }
            while (rc == 0 && x <= b) {
                rc = push(v, n, cap, max_count, x, err, errlen);
                if (x > b / (size_t)f)
                    break;
                x *= (size_t)f;
            }
        }
    } else if (mpilab_parse_size(parts[2], &step) != 0 || step == 0) {
        snprintf(err, errlen, "bad size range '%s' (step must be a positive size)", it);
    } else {
        rc = 0;
        for (size_t x = a; rc == 0 && x <= b; x += step) {
            rc = push(v, n, cap, max_count, x, err, errlen);
            if (b - x < step)
                break;
        }
    }
    free(copy);
    return rc;
}

int mpilab_sizes_parse(const char *spec, size_t max_count, size_t **out, size_t *count,
                       char *err, size_t errlen)
{
    *out = NULL;
    *count = 0;
    if (!spec || !*spec) {
        snprintf(err, errlen, "empty size list");
        return -1;
    }
    char *copy = strdup(spec);
    if (!copy) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    size_t *v = NULL, n = 0, cap = 0;
    int rc = 0;
    char *save = NULL;
    const char *last = spec + strlen(spec) - 1;
    if (*spec == ',' || *last == ',' || strstr(spec, ",,")) {
        snprintf(err, errlen, "empty item in size list '%s'", spec);
        rc = -1;
    }
    for (char *t = strtok_r(copy, ",", &save); rc == 0 && t; t = strtok_r(NULL, ",", &save))
        rc = item(t, &v, &n, &cap, max_count, err, errlen);
    free(copy);
    if (rc != 0) {
        free(v);
        return -1;
    }
    qsort(v, n, sizeof *v, cmp_size);
    size_t m = 0;
    for (size_t k = 0; k < n; k++)
        if (m == 0 || v[m - 1] != v[k])
            v[m++] = v[k];
    *out = v;
    *count = m;
    return 0;
}
