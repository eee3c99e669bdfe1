/* Per-measurement precision rules (--eps-for, mpilab/epsrule.h). */
#include <string.h>

#include "mpilab/epsrule.h"
#include "kit.h"

static int bad(const char *spec)
{
    mpilab_eps_rules_t r = {0};
    char err[200] = "";
    int rc = mpilab_eps_rules_parse(spec, &r, err, sizeof err);
    int ok = rc != 0 && r.n == 0 && err[0] != '\0' && strchr(err, '\n') == NULL;
    mpilab_eps_rules_free(&r);
    return ok;
}

MPILAB_TEST(rules_and_lookup)
{
    mpilab_eps_rules_t r = {0};
    char err[200];
    CHECK(mpilab_eps_rules_parse("p2p@1024=0.2,bcast:native@1048576=0.3", &r, err, sizeof err) == 0);
    CHECK(r.n == 2);
    CHECK(mpilab_eps_rules_lookup(&r, "p2p", "roundtrip", 1024, 0.025) == 0.2); /* any impl */
    CHECK(mpilab_eps_rules_lookup(&r, "p2p", "roundtrip", 4096, 0.025) == 0.025);
    CHECK(mpilab_eps_rules_lookup(&r, "bcast", "native", 1048576, 0.025) == 0.3);
    CHECK(mpilab_eps_rules_lookup(&r, "bcast", "binomial", 1048576, 0.025) == 0.025);
    CHECK(mpilab_eps_rules_lookup(&r, "scatter", "", 1024, 0.05) == 0.05);
    /* a second option appends; a bad one appends nothing */
    CHECK(mpilab_eps_rules_parse("gather:linear@0=0.5", &r, err, sizeof err) == 0 && r.n == 3);
    CHECK(mpilab_eps_rules_parse("gather@1=0.1,gather@", &r, err, sizeof err) != 0 && r.n == 3);
    CHECK(mpilab_eps_rules_lookup(&r, "gather", "linear", 0, 0.025) == 0.5);
    CHECK(mpilab_eps_rules_lookup(NULL, "gather", "linear", 0, 0.025) == 0.025);
    mpilab_eps_rules_free(&r);
    CHECK(r.n == 0 && r.rule == NULL);
}

MPILAB_TEST(bad_rules_are_one_line)
{
    CHECK(bad(""));
    CHECK(bad("p2p"));
    CHECK(bad("p2p@1024"));
    CHECK(bad("p2p@x=0.1"));
    CHECK(bad("p2p@-1=0.1"));
    CHECK(bad("p2p@1024=0"));
    CHECK(bad("p2p@1024=1"));
    CHECK(bad("p2p@1024=nan"));
    CHECK(bad("p2p@1024=0.1x"));
    CHECK(bad("@1024=0.1"));
    CHECK(bad("p2p:@1024=0.1"));
    CHECK(bad("p$p@1024=0.1"));
    CHECK(bad("p2p@99999999999999999999999=0.1"));
    CHECK(bad("p2p@1=0.1,"));
    CHECK(bad("aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa@1=0.1"));
}

MPILAB_TEST_MAIN()
