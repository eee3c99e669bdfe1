/* Strict parsers for command-line and file values: one per notion (integers, reals, sizes,
 * size lists, durations, rates), shared by every tool. python/mpilab/units.py implements the
 * same grammar; tests/data/parse_cases.json holds the cases both are tested against.
 *
 * Common rules: the whole string is the value. ASCII only (no Unicode digits), no blanks
 * anywhere (so no " -5"), no hexadecimal, no "nan"/"inf", no digit separators. Every
 * function returns 0 and stores the value, or -1 and leaves *out untouched. */
#ifndef MPILAB_PARSE_H
#define MPILAB_PARSE_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* An integer: [-]DIGITS, within the range of long long. */
int mpilab_parse_i64(const char *s, long long *out);

/* A finite real: [-]DIGITS[.DIGITS][e[+-]DIGITS] or [-].DIGITS[e..]; no overflow. */
int mpilab_parse_double(const char *s, double *out);

/* A size or count: DIGITS with an optional binary suffix K, M or G (either case; K = 1024,
 * M = 1024^2, G = 1024^3) and an optional trailing B: "100", "4K", "64M", "1GB". */
int mpilab_parse_size(const char *s, size_t *out);

/* A duration: a real with an optional unit ns, us, ms or s (no unit = seconds), e.g.
 * "5ms", "0.2", "1e-3s". Never negative. Result in seconds. */
int mpilab_parse_duration(const char *s, double *seconds);

/* A rate: a real with a unit bit, kbit, Mbit, Gbit or Tbit (either case; decimal: 1 kbit =
 * 1000 bit/s), e.g. "100Mbit". Never negative. Result in bits per second. */
int mpilab_parse_rate(const char *s, double *bits_per_s);

/* A comma list of items: a size ("4K"), an inclusive linear range "A:B:STEP" or a geometric
 * range "A:B:xF" (integer F >= 2; A == 0 contributes 0 and continues from 1). The result is
 * sorted and without duplicates; at most max_count sizes. Returns 0 with a malloc'd array in
 * *out, or -1 with a one-line reason in err. */
int mpilab_parse_size_list(const char *spec, size_t max_count, size_t **out, size_t *count, char *err,
                           size_t errlen);

/* One line saying what getopt_long rejected, for a loop run with opterr = 0 and an option
 * string starting with ':' (so a missing value returns ':' and an unknown option '?'):
 * "option '--trials' needs a value" or "unknown option '--bogus'". `c` is what getopt_long
 * returned; call it right then (it reads optind and optopt). Control characters in the
 * offending argument are shown as '?'. Returns buf. */
char *mpilab_getopt_problem(int c, int argc, char *const argv[], char *buf, size_t len);

#ifdef __cplusplus
}
#endif
#endif
