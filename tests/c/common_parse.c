/* The strict parsers (mpilab/parse.h) against tests/data/parse_cases.json, the table that
 * python/mpilab/units.py is tested against too (tests/python/test_units.py). */
#include <getopt.h>
#include <jansson.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "kit.h"
#include "mpilab/parse.h"

static int same_real(double got, double want)
{
    return fabs(got - want) <= 1e-12 * fabs(want);
}

/* 1 if the parser of `kind` agrees with the case (value or refusal). */
static int run_case(const char *kind, const char *text, json_t *want)
{
    int refused;
    if (strcmp(kind, "int") == 0) {
        long long v = 12345;
        refused = mpilab_parse_i64(text, &v) != 0;
        return refused ? json_is_null(want) && v == 12345 : json_is_integer(want) && v == json_integer_value(want);
    }
    if (strcmp(kind, "size") == 0) {
        size_t v = 12345;
        refused = mpilab_parse_size(text, &v) != 0;
        return refused ? json_is_null(want) && v == 12345
                       : json_is_integer(want) && v == (size_t)json_integer_value(want);
    }
    if (strcmp(kind, "size_list") == 0) {
        size_t *v = NULL, n = 0;
        char err[200] = "";
        refused = mpilab_parse_size_list(text, 1000, &v, &n, err, sizeof err) != 0;
        int ok;
        if (refused) {
            ok = json_is_null(want) && v == NULL && err[0] && !strchr(err, '\n');
        } else {
            ok = json_is_array(want) && json_array_size(want) == n;
            for (size_t k = 0; ok && k < n; k++)
                ok = v[k] == (size_t)json_integer_value(json_array_get(want, k));
        }
        free(v);
        return ok;
    }
    double v = 12345.0;
    if (strcmp(kind, "real") == 0)
        refused = mpilab_parse_double(text, &v) != 0;
    else if (strcmp(kind, "duration") == 0)
        refused = mpilab_parse_duration(text, &v) != 0;
    else if (strcmp(kind, "rate") == 0)
        refused = mpilab_parse_rate(text, &v) != 0;
    else
        return 0; /* a kind this test does not know */
    if (refused)
        return json_is_null(want) && v == 12345.0;
    return json_is_number(want) && same_real(v, json_number_value(want));
}

/* The case table shared with python/mpilab/units.py (MPILAB_PARSE_CASES): every case parses
 * to its value or is refused as the table says. */
MPILAB_TEST(case_table)
{
    const char *path = getenv("MPILAB_PARSE_CASES");
    json_error_t je;
    json_t *doc = path ? json_load_file(path, JSON_DECODE_ANY, &je) : NULL;
    CHECKF(doc != NULL, "cannot read MPILAB_PARSE_CASES=%s: %s", path ? path : "(unset)", path ? je.text : "");
    json_t *cases = json_object_get(doc, "cases");
    CHECK(json_array_size(cases) > 100);
    size_t idx;
    json_t *c;
    json_array_foreach(cases, idx, c)
    {
        const char *kind = json_string_value(json_object_get(c, "kind"));
        const char *text = json_string_value(json_object_get(c, "text"));
        json_t *want = json_object_get(c, "value");
        CHECKF(kind && text && run_case(kind, text, want), "case %zu: %s '%s'", idx, kind ? kind : "?",
               text ? text : "?");
    }
    json_decref(doc);
}

MPILAB_TEST(null_refused)
{
    /* NULL is refused by every parser */
    long long i;
    double d;
    size_t s;
    CHECK(mpilab_parse_i64(NULL, &i) != 0 && mpilab_parse_double(NULL, &d) != 0 && mpilab_parse_size(NULL, &s) != 0);
    CHECK(mpilab_parse_duration(NULL, &d) != 0 && mpilab_parse_rate(NULL, &d) != 0);
}

MPILAB_TEST(size_list_limit)
{
    /* a list longer than max_count is refused with a reason */
    size_t *v = NULL, n = 0;
    char err[200] = "";
    CHECK(mpilab_parse_size_list("0:1G:1", 1000, &v, &n, err, sizeof err) != 0 && strstr(err, "too many"));
    CHECK(mpilab_parse_size_list("0:100K:1K", 1000, &v, &n, err, sizeof err) == 0 && n == 101 && v[100] == 102400);
    free(v);
}

MPILAB_TEST(getopt_problems)
{
    /* getopt_long's rejections as one line, the option named as written */
    static const struct option lo[] = {{"trials", required_argument, 0, 't'}, {"flag", no_argument, 0, 'f'}, {0, 0, 0, 0}};
    struct {
        const char *args[4];
        int argc;
        const char *want;
    } gcases[] = {
        {{"prog", "--trials"}, 2, "option '--trials' needs a value"},
        {{"prog", "--bogus=3"}, 2, "unknown option '--bogus'"},
        {{"prog", "-q"}, 2, "unknown option '-q'"},
        {{"prog", "-m"}, 2, "option '-m' needs a value"},
        {{"prog", "--flag", "-zq"}, 3, "unknown option '-z'"},
        {{"prog", "-\005"}, 2, "unknown option '-?'"},
    };
    opterr = 0;
    for (size_t k = 0; k < sizeof gcases / sizeof gcases[0]; k++) {
        char *argv[5] = {0};
        for (int a = 0; a < gcases[k].argc; a++)
            argv[a] = (char *)gcases[k].args[a];
        optind = 0; /* a full re-initialisation of glibc's getopt */
        int c, got = 0;
        char why[128] = "";
        while ((c = getopt_long(gcases[k].argc, argv, ":m:", lo, NULL)) != -1) {
            if (c == '?' || c == ':') {
                mpilab_getopt_problem(c, gcases[k].argc, argv, why, sizeof why);
                got = 1;
                break;
            }
        }
        CHECKF(got && strcmp(why, gcases[k].want) == 0, "getopt case %zu: got '%s', want '%s'", k, why,
               gcases[k].want);
    }
}

MPILAB_TEST_MAIN()
