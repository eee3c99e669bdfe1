/* The library's timer with an optional injected clock error (include/mpilab/wtime.h). */
#include "mpilab/wtime.h"

#include "mpilab/parse.h"

#include <gsl/gsl_rng.h>
#include <math.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static mpilab_clock_inject_t injected; /* zero: no error */

double mpilab_clock_inject_apply(const mpilab_clock_inject_t *c, double raw)
{
    return raw + c->offset + c->drift * (raw - c->base);
}

double mpilab_clock_inject_invert(const mpilab_clock_inject_t *c, double reading)
{
    /* reading = raw (1 + d) + offset - d base */
    return (reading - c->offset + c->drift * c->base) / (1.0 + c->drift);
}

double mpilab_wtime(void)
{
    double raw = MPI_Wtime();
    if (injected.offset == 0.0 && injected.drift == 0.0)
        return raw;
    return mpilab_clock_inject_apply(&injected, raw);
}

void mpilab_clock_inject_set(const mpilab_clock_inject_t *c)
{
    if (c)
        injected = *c;
    else
        memset(&injected, 0, sizeof injected);
}

void mpilab_clock_inject_get(mpilab_clock_inject_t *c)
{
    *c = injected;
}

int mpilab_inject_plan_parse(const char *spec, mpilab_inject_plan_t *out, char *err, size_t errlen)
{
    mpilab_inject_plan_t p = {10e-3, 100e-6, 1};
    if (!spec || !*spec) {
        snprintf(err, errlen, "empty clock injection spec (expected e.g. offset=10ms,drift=100ppm,seed=1)");
        return -1;
    }
    char buf[256];
    if (strlen(spec) >= sizeof buf) {
        snprintf(err, errlen, "clock injection spec too long");
        return -1;
    }
    strcpy(buf, spec);
    char *save = NULL;
    unsigned seen = 0;
    for (char *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        char *eq = strchr(tok, '=');
        if (!eq) {
            snprintf(err, errlen, "clock injection: '%s' is not key=value", tok);
            return -1;
        }
        *eq = 0;
        const char *k = tok, *v = eq + 1;
        /* a key given twice would silently keep the last: refuse it */
        unsigned bit = strcmp(k, "offset") == 0 ? 1u : strcmp(k, "drift") == 0 ? 2u
                       : strcmp(k, "seed") == 0 ? 4u : 0u;
        if (bit & seen) {
            snprintf(err, errlen, "clock injection: '%s' given twice", k);
            return -1;
        }
        seen |= bit;
        if (strcmp(k, "offset") == 0) {
            if (mpilab_parse_duration(v, &p.max_offset) != 0 || p.max_offset > 1000.0) {
                snprintf(err, errlen, "clock injection: offset '%s' is not a duration like 10ms (0..1000s)", v);
                return -1;
            }
        } else if (strcmp(k, "drift") == 0) {
            char num[64];
            size_t len = strlen(v);
            if (len > 3 && strcmp(v + len - 3, "ppm") == 0)
                len -= 3;
            double d = -1;
            if (len < sizeof num) {
                memcpy(num, v, len);
                num[len] = 0;
                if (mpilab_parse_double(num, &d) != 0)
                    d = -1;
            }
            if (!(d >= 0 && d <= 10000)) {
                snprintf(err, errlen, "clock injection: drift '%s' is not ppm like 100ppm (0..10000)", v);
                return -1;
            }
            p.max_drift = d * 1e-6;
        } else if (strcmp(k, "seed") == 0) {
            long long s;
            if (mpilab_parse_i64(v, &s) != 0 || s < 0) {
                snprintf(err, errlen, "clock injection: seed '%s' is not a non-negative integer", v);
                return -1;
            }
            p.seed = (unsigned long)s;
        } else {
            snprintf(err, errlen, "clock injection: unknown key '%s' (offset, drift, seed)", k);
            return -1;
        }
    }
    *out = p;
    return 0;
}

void mpilab_inject_plan_rank(const mpilab_inject_plan_t *p, int rank, mpilab_clock_inject_t *out)
{
    gsl_rng *r = gsl_rng_alloc(gsl_rng_mt19937);
    memset(out, 0, sizeof *out);
    if (!r)
        return;
    gsl_rng_set(r, p->seed * 1000003ul + (unsigned long)rank + 1ul);
    out->offset = p->max_offset * (2.0 * gsl_rng_uniform(r) - 1.0);
    out->drift = p->max_drift * (2.0 * gsl_rng_uniform(r) - 1.0);
    gsl_rng_free(r);
}
