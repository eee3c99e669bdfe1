/* Per-measurement precision: the relative precision (eps) one measurement is measured to when
 * it differs from the run's --eps. A caller that knows the machine's launch-to-launch
 * variation for a measurement (mpilab bench's stored variation) asks for no more precision
 * inside one launch than that variation leaves useful. */
#ifndef MPILAB_EPSRULE_H
#define MPILAB_EPSRULE_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

#define MPILAB_EPS_NAME_MAX 48

typedef struct mpilab_eps_rule {
    char op[MPILAB_EPS_NAME_MAX];   /* operation name */
    char impl[MPILAB_EPS_NAME_MAX]; /* implementation ("" = any) */
    size_t bytes;
    double eps; /* in (0,1) */
} mpilab_eps_rule_t;

typedef struct mpilab_eps_rules {
    mpilab_eps_rule_t *rule;
    size_t n;
} mpilab_eps_rules_t;

/* Parse a comma list of OP[:IMPL]@BYTES=EPS (BYTES a plain byte count, EPS in (0,1)) and
 * append its rules to *r. 0, or -1 with one line in err (nothing appended). */
int mpilab_eps_rules_parse(const char *spec, mpilab_eps_rules_t *r, char *err, size_t errlen);
/* The eps of op:impl at bytes: the rule's when one matches, else dflt. */
double mpilab_eps_rules_lookup(const mpilab_eps_rules_t *r, const char *op, const char *impl, size_t bytes,
                               double dflt);
void mpilab_eps_rules_free(mpilab_eps_rules_t *r);

#ifdef __cplusplus
}
#endif
#endif
