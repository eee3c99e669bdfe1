/* Suite configuration and runner options: defaults, accepted values, and the one-line
 * refusals (window 0, malformed poll sweeps, unknown names). */
#include <string.h>

#include "kit.h"
#include "mpilab/suite.h"

static int refused(const char *name, const char *value, const char *needle)
{
    char err[256] = "";
    int rc = mpilab_suite_parse_option(name, value, err, sizeof err);
    if (rc != -1) {
        fprintf(stderr, "--%s %s: accepted (rc %d)\n", name, value ? value : "(null)", rc);
        return 0;
    }
    if (!strstr(err, needle) || strchr(err, '\n')) {
        fprintf(stderr, "--%s %s: message '%s' lacks '%s'\n", name, value ? value : "(null)", err, needle);
        return 0;
    }
    return 1;
}

MPILAB_TEST(defaults_pass_the_check)
{
    mpilab_suite_config_t c;
    char err[256];
    mpilab_suite_config_default(&c);
    CHECK(c.window == 160);
    CHECK(c.pairs == 0);
    CHECK(c.comb_msgs >= 1);
    CHECK(c.npoll >= 2);
    CHECK(mpilab_suite_config_check(&c, err, sizeof err) == 0);

    c.window = 0;
    CHECK(mpilab_suite_config_check(&c, err, sizeof err) == -1);
    CHECK(strcmp(err, "window must be >= 1") == 0);
}

MPILAB_TEST(options_and_one_line_refusals)
{
    char err[256];
    CHECK(mpilab_suite_parse_option("window", "7", err, sizeof err) == 0);
    CHECK(mpilab_suite_config()->window == 7);
    CHECK(mpilab_suite_parse_option("--pairs", "2", err, sizeof err) == 0);
    CHECK(mpilab_suite_config()->pairs == 2);
    CHECK(mpilab_suite_parse_option("poll-sweep", "0,100,1K", err, sizeof err) == 0);
    CHECK(mpilab_suite_config()->npoll == 3);
    CHECK(mpilab_suite_config()->poll_sweep[2] == 1024);
    CHECK(mpilab_suite_parse_option("comb-msgs", "4", err, sizeof err) == 0);
    CHECK(mpilab_suite_config()->comb_msgs == 4);
    CHECK(mpilab_suite_parse_option("sizes", "4", err, sizeof err) == 1); /* not ours */

    CHECK(refused("window", "0", "window must be >= 1"));
    CHECK(refused("window", "-3", "--window"));
    CHECK(refused("window", "abc", "not a count"));
    CHECK(refused("window", NULL, "missing value"));
    CHECK(refused("poll-sweep", "", "empty list"));
    CHECK(refused("poll-sweep", "1,,2", "malformed"));
    CHECK(refused("poll-sweep", "1,2,", "malformed"));
    CHECK(refused("poll-sweep", "1,x", "'x' is not a count"));
    CHECK(refused("poll-sweep", "5,5", "twice"));
    CHECK(refused("poll-sweep", "1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17", "more than"));
    CHECK(refused("comb-msgs", "0", "comb messages"));
    /* a refused value leaves the configuration as it was */
    CHECK(mpilab_suite_config()->window == 7);
    CHECK(mpilab_suite_config()->npoll == 3);

}

MPILAB_TEST(registration_once_one_comb_entry_per_interval)
{
    char err[256];
    /* the sweep this case registers (a no-op after the options case, which set it) */
    CHECK(mpilab_suite_parse_option("poll-sweep", "0,100,1K", err, sizeof err) == 0);
    /* registration: entries appear once, one COMB entry per poll interval */
    size_t before = mpilab_ops_count();
    CHECK(mpilab_suite_register() == 0);
    size_t after = mpilab_ops_count();
    static const char *const fixed[] = {"pingpong", "pingping", "sendrecv", "exchange", "stream", "stream_multi",
                                        "overlap_isend", "overlap_iallreduce"};
    size_t nfixed = sizeof fixed / sizeof fixed[0];
    for (size_t k = 0; k < nfixed; k++)
        CHECK(mpilab_suite_is_entry(mpilab_ops_find(fixed[k], "mpi")));
    CHECK(after == before + nfixed + mpilab_suite_config()->npoll);
    CHECK(mpilab_suite_config()->npoll == 3);
    CHECK(mpilab_suite_register() == 0);
    CHECK(mpilab_ops_count() == after);
    CHECK(mpilab_ops_find("comb", "poll1024") != NULL);
    CHECK(mpilab_ops_find("stream", "mpi") != NULL);
    CHECK(mpilab_suite_is_entry(mpilab_ops_find("stream", "mpi")));
    CHECK(!mpilab_suite_is_entry(mpilab_ops_find("bcast", "native")));
    /* the sweep is frozen once registered; other values still change */
    CHECK(refused("poll-sweep", "1,2", "cannot change"));
    CHECK(mpilab_suite_parse_option("window", "160", err, sizeof err) == 0);
}

MPILAB_TEST(derive_needs_a_measurement)
{
    CHECK(mpilab_suite_register() == 0);
    /* derive: nothing measured (a run without state) gives nothing; no derive, no keys */
    mpilab_derived_t d;
    const mpilab_op_t *stream = mpilab_ops_find("stream", "mpi"), *bcast = mpilab_ops_find("bcast", "native");
    mpilab_op_run_t run = {.op = stream, .bytes = 64};
    CHECK(stream->derive(&run, 1e-3, &d) == -1);
    CHECK(bcast->derive == NULL && bcast->derived == NULL);
}

MPILAB_TEST_MAIN()
