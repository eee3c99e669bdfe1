/* mpilab-wavefront's command line as library calls (mpilab/wavefront_cli.h): option parsing
 * (defaults, values, one-line errors), band-file sets, and a run's results document built
 * from hand-made statistics (its fields and its statistics, computed independently here). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "kit.h"
#include "mpilab/results.h"
#include "mpilab/wavefront_cli.h"

static int parse(mpilab_wf_cli *c, char *err, const char *line)
{
    static char buf[1024];
    static char *argv[64];
    int argc = 0;
    snprintf(buf, sizeof buf, "mpilab-wavefront %s", line);
    for (char *save = NULL, *t = strtok_r(buf, " ", &save); t && argc < 63; t = strtok_r(NULL, " ", &save))
        argv[argc++] = t;
    argv[argc] = NULL;
    return mpilab_wf_cli_parse(argc, argv, c, err, 256);
}

MPILAB_TEST(parse)
{
    mpilab_wf_cli c;
    char err[256];
    CHECK(parse(&c, err, "run --data d --coef c") == MPILAB_WF_CLI_RUN);
    CHECK(c.cmd == MPILAB_WF_CMD_RUN && !strcmp(c.data, "d") && !strcmp(c.coef, "c") && !c.json);
    CHECK(c.run.iterations == 1 && c.run.workers == 1 && c.run.waves == 1 && c.run.drop_behind == 1);
    CHECK(c.run.io == MPILAB_WF_IO_PREAD && c.run.chain == MPILAB_WF_CHAIN_BAND && !c.mpi);
    CHECK(parse(&c, err, "run --data d --coef c --iterations 7 --workers 3 --waves 2000000 --io mmap "
                         "--chain block --queue-depth 5 --no-prefetch --no-drop-behind --mpi "
                         "--json r.json --quiet") == MPILAB_WF_CLI_RUN);
    CHECK(c.run.iterations == 7 && c.run.workers == 3 && c.run.waves == 1000000);
    CHECK(c.run.io == MPILAB_WF_IO_MMAP && c.run.chain == MPILAB_WF_CHAIN_BLOCK && c.run.queue_depth == 5);
    CHECK(c.run.no_prefetch && !c.run.drop_behind && c.mpi && c.quiet && !strcmp(c.json, "r.json"));
    CHECK(parse(&c, err, "run --data d --coef c --workers 0") == MPILAB_WF_CLI_BAD);
    CHECKF(!strcmp(err, "--workers '0': expected an integer >= 1"), "%s", err);
    CHECK(parse(&c, err, "run --data d --coef c --queue-depth 33") == MPILAB_WF_CLI_BAD);
    CHECKF(!strcmp(err, "--queue-depth: at most 32"), "%s", err);
    CHECK(parse(&c, err, "run --data d") == MPILAB_WF_CLI_BAD && strstr(err, "--coef are required"));
    CHECK(parse(&c, err, "run --data d --coef c extra") == MPILAB_WF_CLI_BAD);
    CHECK(parse(&c, err, "convert --layout optimized --mb 8 --nb 5 --bands 3 a b out") == MPILAB_WF_CLI_RUN);
    CHECK(c.convert.layout == MPILAB_WF_OPTIMIZED && c.convert.mb == 8 && c.convert.nb == 5);
    CHECK(c.convert.t == 1 && c.convert.nout == 3 && c.nargs == 3 && !strcmp(c.args[2], "out"));
    CHECK(parse(&c, err, "convert --layout diagonal a b") == MPILAB_WF_CLI_BAD && strstr(err, "'diagonal'"));
    CHECK(parse(&c, err, "create --rows 5 --cols 4 d c") == MPILAB_WF_CLI_RUN && c.seed == 1 && c.rows == 5);
    CHECK(parse(&c, err, "create --rows 2 --cols 4 d c") == MPILAB_WF_CLI_BAD);
    CHECK(parse(&c, err, "verify --initial a --coef b x") == MPILAB_WF_CLI_BAD);
    CHECK(parse(&c, err, "verify --initial a --coef b --iterations 0 x") == MPILAB_WF_CLI_RUN);
    CHECK(c.iterations == 0 && !strcmp(c.args[0], "x"));
    CHECK(parse(&c, err, "bounds") == MPILAB_WF_CLI_RUN && c.size == (size_t)256 << 20);
    CHECK(c.rows == 2048 && c.cols == 2048 && c.threads == 1);
    CHECK(parse(&c, err, "bounds --size 1K") == MPILAB_WF_CLI_BAD);
    CHECK(parse(&c, err, "run -h") == MPILAB_WF_CLI_HELP && parse(&c, err, "--help") == MPILAB_WF_CLI_HELP);
    CHECK(parse(&c, err, "--version") == MPILAB_WF_CLI_VERSION);
    CHECK(parse(&c, err, "frobnicate") == MPILAB_WF_CLI_BAD && strstr(err, "unknown command 'frobnicate'"));
    char name[] = "mpilab-wavefront", *argv0[] = {name, NULL};
    CHECK(mpilab_wf_cli_parse(1, argv0, &c, err, sizeof err) == MPILAB_WF_CLI_USAGE);
}

MPILAB_TEST(fileset)
{
    char d[] = "/tmp/mpilab-wfcli-XXXXXX", p[128], err[256];
    CHECK(mkdtemp(d) != NULL);
    for (int i = 0; i < 2; i++) {
        snprintf(p, sizeof p, "%s/m.%d", d, i);
        FILE *f = fopen(p, "w");
        CHECK(f && fclose(f) == 0);
    }
    mpilab_wf_fileset s;
    snprintf(p, sizeof p, "%s/m", d);
    CHECK(mpilab_wf_fileset_resolve(&s, p, err, sizeof err) == 0 && s.n == 2);
    CHECK(s.n == 2 && strstr(s.paths[1], "/m.1"));
    mpilab_wf_fileset_free(&s);
    snprintf(p, sizeof p, "%s/none", d);
    CHECK(mpilab_wf_fileset_resolve(&s, p, err, sizeof err) == -1 && strstr(err, "no such file"));
    for (int i = 0; i < 2; i++) {
        snprintf(p, sizeof p, "%s/m.%d", d, i);
        unlink(p);
    }
    rmdir(d);
}

MPILAB_TEST(results)
{
    double it[4] = {1.0, 2.0, 3.0, 4.0}, cs[2] = {1, 2}, z[2] = {0, 0};
    mpilab_wf_stats st = {.iterations = 4, .total_s = 10.0, .iter_s = it, .bytes_read = 4000,
                          .bytes_written = 2000, .rows = 40, .cols = 36, .mb = 8, .nb = 9, .t = 1,
                          .layout = MPILAB_WF_BLOCK, .workers = 2, .compute_s = cs, .io_wait_s = z,
                          .dep_wait_s = z, .io_busy_s = z, .dev_read_bytes = -1, .dev_write_bytes = 7,
                          .io = MPILAB_WF_IO_MMAP};
    mpilab_wf_run_opts o = {.iterations = 4, .workers = 2, .waves = 3, .drop_behind = 1};
    json_t *prov = json_object();
    json_t *doc = mpilab_wf_results(&st, &o, 0, prov);
    CHECK(json_object_get(json_object_get(prov, "options"), "waves") != NULL);
    json_decref(prov);
    CHECK(!strcmp(json_string_value(json_object_get(doc, "schema")), MPILAB_RESULTS_SCHEMA));
    json_t *wf = json_object_get(doc, "wavefront");
    CHECK(json_integer_value(json_object_get(wf, "T")) == 0); /* only the optimized layout has T */
    CHECK(json_is_null(json_object_get(wf, "dev_read_bytes")));
    CHECK(json_integer_value(json_object_get(wf, "dev_write_bytes")) == 7);
    CHECK_NEAR(json_real_value(json_object_get(wf, "io_bandwidth_Bps")), 600.0, 1e-9);
    CHECK(json_array_size(json_object_get(wf, "per_worker")) == 2);
    json_t *m = json_array_get(json_object_get(doc, "measurements"), 0);
    CHECK(!strcmp(json_string_value(json_object_get(m, "impl")), "block/mmap"));
    CHECK(json_integer_value(json_object_get(m, "bytes")) == 1500);
    CHECK(json_equal(json_object_get(m, "samples"), json_object_get(wf, "iteration_s")));
    CHECK(json_array_size(json_object_get(m, "valid")) == 4);
    json_t *s = json_object_get(m, "stats");
    double sd = sqrt(5.0 / 3.0); /* sample stdev of 1..4; t(0.975, 3) = 3.182446305 */
    CHECK_NEAR(json_real_value(json_object_get(s, "mean")), 2.5, 1e-12);
    CHECK_NEAR(json_real_value(json_object_get(s, "stdev")), sd, 1e-9);
    CHECK_NEAR(json_real_value(json_object_get(s, "ci_half")), 3.182446305 * sd / 2.0, 1e-6);
    CHECK(json_integer_value(json_object_get(s, "reps")) == 4 && json_is_false(json_object_get(s, "converged")));
    CHECK_NEAR(json_real_value(json_object_get(s, "cl")), 0.95, 0);
    json_decref(doc);
    /* nothing run: empty statistics, no samples */
    st.iterations = 0;
    prov = json_object();
    doc = mpilab_wf_results(&st, &o, 1, prov);
    json_decref(prov);
    m = json_array_get(json_object_get(doc, "measurements"), 0);
    CHECK(json_object_size(json_object_get(m, "stats")) == 0 && json_array_size(json_object_get(m, "samples")) == 0);
    json_decref(doc);
}

MPILAB_TEST_MAIN()
