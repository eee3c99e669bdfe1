/* The operation table's one registration path: the built-in lists pass it, and each mistake
 * a contributor can make is refused with one line naming the entry and the problem. */
#include <stddef.h>

#include "kit.h"
#include "mpilab/ops.h"

static int nop_setup(mpilab_op_run_t *r)
{
    r->state = NULL;
    return 0;
}
static int nop_run(mpilab_op_run_t *r)
{
    (void)r;
    return MPI_SUCCESS;
}
static void nop_teardown(mpilab_op_run_t *r)
{
    (void)r;
}
static int nop_derive(const mpilab_op_run_t *r, double t, mpilab_derived_t *d)
{
    (void)r;
    return mpilab_derived_set(d, "latency_s", t);
}

static mpilab_op_t good(const char *name, const char *impl)
{
    return (mpilab_op_t){.name = name, .impl = impl, .setup = nop_setup, .run = nop_run, .validate = nop_run,
                         .teardown = nop_teardown};
}

/* registration refuses op, and the reason names the entry and contains `why` */
static void refused(const mpilab_op_t *op, const char *entry, const char *why)
{
    CHECK(mpilab_ops_register(op) != 0);
    const char *e = mpilab_ops_error();
    CHECKF(strstr(e, entry) && strstr(e, why) && !strchr(e, '\n'), "reason '%s' should name %s and say %s", e,
           entry, why);
}

MPILAB_TEST(builtin_table_passes_the_checks)
{
    char err[300] = "";
    CHECKF(mpilab_ops_init(err, sizeof err) == 0, "%s", err);
    CHECK(mpilab_ops_count() > 0);
    for (size_t k = 0; k < mpilab_ops_count(); k++)
        CHECK_STR(mpilab_ops_origin(mpilab_ops_get(k)), "builtin");
}

MPILAB_TEST(duplicate_name)
{
    mpilab_op_t a = good("kit_dup", "one");
    CHECK(mpilab_ops_register(&a) == 0);
    refused(&a, "kit_dup:one", "defined twice");
    /* a built-in's name and impl too */
    const mpilab_op_t *b = mpilab_ops_get(0);
    mpilab_op_t c = good(b->name, b->impl);
    refused(&c, b->name, "defined twice");
    mpilab_ops_clear_registered();
}

MPILAB_TEST(derived_keys_without_derive)
{
    mpilab_op_t a = good("kit_der", "nofn");
    a.derived = "latency_s,bandwidth_Bps";
    refused(&a, "kit_der:nofn", "no derive function");
    a.derive = nop_derive;
    CHECK(mpilab_ops_register(&a) == 0);
    mpilab_op_t b = good("kit_der", "nokeys");
    b.derive = nop_derive;
    refused(&b, "kit_der:nokeys", "declares no derived keys");
    mpilab_op_t c = good("kit_der", "emptykey");
    c.derived = "latency_s,,x";
    c.derive = nop_derive;
    refused(&c, "kit_der:emptykey", "comma list");
    mpilab_ops_clear_registered();
}

MPILAB_TEST(model_pattern_must_fit)
{
    mpilab_op_t a = good("gather", "kit_model");
    a.model = MPILAB_MODEL_SCATTER_LINEAR;
    refused(&a, "gather:kit_model", "does not fit");
    a.model = MPILAB_MODEL_GATHER_BINOMIAL;
    CHECK(mpilab_ops_register(&a) == 0);
    mpilab_op_t b = good("ring", "kit_fit");
    b.model = MPILAB_MODEL_P2P_FIT; /* the fit needs an all-pairs entry */
    refused(&b, "ring:kit_fit", "does not fit");
    b.flags = MPILAB_OP_ALLPAIRS;
    CHECK(mpilab_ops_register(&b) == 0);
    mpilab_ops_clear_registered();
}

MPILAB_TEST(figure_must_be_known)
{
    mpilab_op_t a = good("kit_fig", "bad");
    a.figure = (mpilab_op_figure_t)(MPILAB_FIGURE_LAST + 1);
    refused(&a, "kit_fig:bad", "figure");
    a.figure = (mpilab_op_figure_t)-1;
    refused(&a, "kit_fig:bad", "figure");
    mpilab_op_t b = good("kit_fig", "rt");
    b.figure = MPILAB_FIGURE_ROUND_TRIP;
    CHECK(mpilab_ops_register(&b) == 0);
    const mpilab_op_t *got = mpilab_ops_find("kit_fig", "rt");
    CHECK(got && got->figure == MPILAB_FIGURE_ROUND_TRIP);
    mpilab_ops_clear_registered();
}

/* Every figure has a name, a line of text and a scale; only a round trip is shown halved. */
MPILAB_TEST(every_figure_is_named)
{
    for (int f = MPILAB_FIGURE_CALL; f <= MPILAB_FIGURE_LAST; f++) {
        const char *n = mpilab_op_figure_name((mpilab_op_figure_t)f);
        const char *t = mpilab_op_figure_text((mpilab_op_figure_t)f);
        CHECKF(n && *n && t && *t && !strchr(t, '\n'), "figure %d: name '%s' text '%s'", f, n ? n : "(null)",
               t ? t : "(null)");
        double s = mpilab_op_figure_scale((mpilab_op_figure_t)f);
        CHECKF(s == (f == MPILAB_FIGURE_ROUND_TRIP ? 0.5 : 1.0), "figure %s: scale %g", n, s);
    }
    CHECK(mpilab_op_figure_name((mpilab_op_figure_t)(MPILAB_FIGURE_LAST + 1)) == NULL);
    CHECK(mpilab_op_figure_text((mpilab_op_figure_t)(MPILAB_FIGURE_LAST + 1)) == NULL);
    /* the built-in all-pairs entry declares a round trip, the collectives a call */
    const mpilab_op_t *p = mpilab_ops_find("p2p", "roundtrip"), *b = mpilab_ops_find("bcast", "native");
    CHECK(p && p->figure == MPILAB_FIGURE_ROUND_TRIP);
    CHECK(b && b->figure == MPILAB_FIGURE_CALL);
}

MPILAB_TEST(missing_function_and_bad_names)
{
    mpilab_op_t a = good("kit_fn", "norun");
    a.run = NULL;
    refused(&a, "kit_fn:norun", "no run function");
    mpilab_op_t b = good("kit:fn", "x");
    refused(&b, "kit:fn", "non-empty words");
    mpilab_op_t c = good("kit_fn", "");
    refused(&c, "kit_fn:", "non-empty words");
    CHECK(mpilab_ops_register(NULL) != 0);
}

MPILAB_TEST(registered_copy_owns_its_strings)
{
    char name[16] = "kit_copy", impl[16] = "mine";
    mpilab_op_t a = good(name, impl);
    CHECK(mpilab_ops_register(&a) == 0);
    strcpy(name, "changed");
    const mpilab_op_t *r = mpilab_ops_find("kit_copy", "mine");
    CHECK(r != NULL);
    CHECK(r && strcmp(r->family, "user") == 0);
    CHECK_STR(mpilab_ops_origin(r), "registered");
    mpilab_ops_clear_registered();
    CHECK(mpilab_ops_find("kit_copy", "mine") == NULL);
}

MPILAB_TEST(plugin_errors_name_the_file)
{
    char err[400];
    CHECK(mpilab_ops_load("/nonexistent/kit.so", err, sizeof err) != 0);
    CHECKF(strstr(err, "/nonexistent/kit.so") != NULL, "%s", err);
}

MPILAB_TEST(derived_set_get)
{
    mpilab_derived_t d;
    mpilab_derived_clear(&d);
    CHECK(isnan(mpilab_derived_get(&d, "x")));
    CHECK(mpilab_derived_set(&d, "x", NAN) == 0 && d.n == 0); /* not finite: unset */
    CHECK(mpilab_derived_set_count(&d, "n", 0) == 0 && d.n == 0);
    CHECK(mpilab_derived_set(&d, "x", 2.5) == 0 && mpilab_derived_get(&d, "x") == 2.5);
    CHECK(mpilab_derived_set(&d, "x", 3.0) == 0 && d.n == 1 && mpilab_derived_get(&d, "x") == 3.0);
    CHECK(mpilab_derived_set_count(&d, "n", 7) == 0 && d.v[1].count == 1);
}

/* A derive that sets a key its entry does not declare: refused in one line naming the entry
 * and the key (the results would otherwise drop the value without a word). */
MPILAB_TEST(derived_undeclared_key_refused)
{
    mpilab_op_t a = good("kit_undecl", "one");
    a.derived = "latency_s,bandwidth_Bps";
    a.derive = nop_derive;
    mpilab_derived_t d;
    mpilab_derived_clear(&d);
    char err[256] = "";
    CHECK(mpilab_derived_check(&a, &d, err, sizeof err) == 0); /* nothing set */
    mpilab_derived_set(&d, "bandwidth_Bps", 1.0);
    mpilab_derived_set(&d, "latency_s", 2.0);
    CHECKF(mpilab_derived_check(&a, &d, err, sizeof err) == 0, "declared keys refused: %s", err);
    mpilab_derived_set(&d, "latency", 3.0); /* a prefix of a declared key is another key */
    CHECK(mpilab_derived_check(&a, &d, err, sizeof err) != 0);
    CHECKF(strstr(err, "kit_undecl:one") && strstr(err, "'latency'") && !strchr(err, '\n'),
           "reason '%s' should name the entry and the key", err);
    a.derived = "latency_s,bandwidth_Bps,latency";
    CHECK(mpilab_derived_check(&a, &d, err, sizeof err) == 0);
}

MPILAB_TEST_MAIN()
