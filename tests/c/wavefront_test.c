/* Wavefront engine: bitwise equality with the sequential reference for every layout, several
 * block sizes (also non-dividing), worker counts, waves in flight and the I/O back ends,
 * band and block wave chaining, O_DIRECT and io_turns; the exact I/O volume and requests.
 * Conversions, file formats, bad input and the run state: wavefront_files_test.c. Named
 * cases (tests/c/kit.h): ./wavefront_test --list, --case NAME. */
#include "wf_fixture.h"

/* One engine run of layout lay on a fresh copy of its data (d0, or dl for a blocked layout)
 * in "work", with its coefficients (c0 or cl), checked to succeed (`what` names the run in
 * the failure); the run's status. */
static int run_fresh(int lay, const mpilab_wf_run_opts *o, mpilab_wf_stats *st, const char *what)
{
    char err[1024] = "";
    copy_file(lay == MPILAB_WF_ROWMAJOR ? P("d0") : P("dl"), P("work"));
    int rc = mpilab_wf_run(P("work"), lay == MPILAB_WF_ROWMAJOR ? P("c0") : P("cl"), o, st, err,
                           sizeof err);
    CHECKF(rc == 0, "%s: %s", what, err);
    return rc;
}

/* Whether "work" holds `want` (the fixture's M x N values) bit for bit. */
static int work_is(const double *want)
{
    const wf_fixture *fx = wf_fix();
    int64_t r, c, pl;
    double *got = load1(P("work"), &r, &c, &pl);
    const int same = got && memcmp(got, want, (size_t)(fx->M * fx->N) * 8) == 0;
    free(got);
    return same;
}

/* The reference: the interior changes, the boundary does not; coefficient geometry. */
MPILAB_TEST(reference_changes_the_interior)
{
    WF_VARS;
    const double *init = fx->init;
    double *coef = load1(P("c0"), &r, &c, &pl);
    CHECK(coef != NULL);
    CHECKF(r == M && c == N && pl == 5, "coef geometry %lldx%lld/%lld", (long long)r,
           (long long)c, (long long)pl);
    free(coef);
    CHECKF(memcmp(ref, init, (size_t)(M * N) * 8) != 0, "reference did not change the data");
    CHECKF(ref[5] == init[5] && ref[(M - 1) * N + 7] == init[(M - 1) * N + 7], "boundary changed");
}

/* Bitwise equality with the reference: every layout x 6 block sizes (also non-dividing) x
 * 1-3 workers x 1-3 waves x the pread, mmap and io_uring back ends. */
MPILAB_TEST(bitwise_every_layout_block_worker_wave_io)
{
    WF_VARS;
    const int64_t blocks[][2] = {{8, 5}, {5, 7}, {37, 53}, {10, 17}, {10, 53}, {37, 27}};
    int runs = 0, combo = 0;
    for (int lay = 0; lay < 3; lay++)
        for (size_t b = 0; b < sizeof blocks / sizeof blocks[0]; b++) {
            int64_t mb = blocks[b][0], nb = blocks[b][1];
            blocked_inputs(lay, mb, nb);
            int64_t nbr = (M + mb - 1) / mb;
            for (int workers = 1; workers <= 3; workers++)
                for (int waves = 1; waves <= 3; waves += 1)
                    for (int io = 0; io < 3; io++) {
                        if (combo++ % WF_STRIDE || workers > nbr ||
                            (io == MPILAB_WF_IO_URING && !have_uring))
                            continue;
                        /* uring: queue depths 1 (no prefetch) and 2..5 in turn */
                        mpilab_wf_run_opts o = {K, workers, waves, io, 0, 0, (runs % 2), (runs / 2) % 2,
                                                2 + (runs / 4) % 4, MPILAB_WF_CHAIN_BAND, 0, 0};
                        if (lay == MPILAB_WF_ROWMAJOR)
                            o.mb = mb, o.nb = nb;
                        mpilab_wf_stats st;
                        if (run_fresh(lay, &o, &st, "run"))
                            continue;
                        runs++;
                        CHECKF(st.bytes_read > 0 && st.bytes_written > 0 && st.iterations == K,
                              "stats");
                        CHECKF(work_is(ref),
                              "not bitwise equal: layout %s block %lldx%lld workers %d waves %d io %s",
                              mpilab_wf_layout_name(lay), (long long)mb, (long long)nb, workers,
                              waves, mpilab_wf_io_name(io));
                        mpilab_wf_stats_free(&st);
                    }
        }
    CHECKF(runs >= (have_uring ? 300 : 100) / WF_STRIDE, "only %d runs", runs);
    printf("bitwise runs: %d\n", runs);
}

/* auto picks io_uring where it works, else pread, and says which. */
MPILAB_TEST(io_auto_picks_uring_else_pread)
{
    WF_VARS;
        mpilab_wf_convert_opts co = {MPILAB_WF_OPTIMIZED, 8, 5, 1, 1};
        const char *in0[1] = {P("d0")}, *inc[1] = {P("c0")};
        CHECKF(mpilab_wf_convert(in0, 1, P("dl"), &co, err, sizeof err) == 0, "%s", err);
        CHECKF(mpilab_wf_convert(inc, 1, P("cl"), &co, err, sizeof err) == 0, "%s", err);
        copy_file(P("dl"), P("work"));
        mpilab_wf_run_opts o = {K, 2, 2, MPILAB_WF_IO_AUTO, 0, 0, 1, 0, 0, 0, 0, 0};
        mpilab_wf_stats st;
        CHECKF(mpilab_wf_run(P("work"), P("cl"), &o, &st, err, sizeof err) == 0, "auto: %s", err);
        CHECKF(st.io == (have_uring ? MPILAB_WF_IO_URING : MPILAB_WF_IO_PREAD) &&
                  st.queue_depth == (have_uring ? 4 : 2),
              "auto chose %s depth %d", mpilab_wf_io_name(st.io), st.queue_depth);
        CHECKF(work_is(ref), "auto: not bitwise equal");
        mpilab_wf_stats_free(&st);
}

/* Exact I/O volume per layout, and the per-worker time accounting. */
MPILAB_TEST(io_volume_and_time_accounting)
{
    WF_VARS;
    for (int lay = 0; lay < 3; lay++)
        for (int pf = 0; pf < 3; pf++) { /* 0 no prefetch, 1 pread helper, 2 io_uring */
            if (pf == 2 && !have_uring)
                continue;
            const int64_t mb = 8, nb = 5, KK = 2;
            const int PW = 3;
            blocked_inputs(lay, mb, nb);
            mpilab_wf_run_opts o = {KK, PW, 2, pf == 2 ? MPILAB_WF_IO_URING : MPILAB_WF_IO_PREAD,
                                    lay ? 0 : mb, lay ? 0 : nb, 1, !pf, 3, MPILAB_WF_CHAIN_BAND, 0, 0};
            mpilab_wf_stats st;
            if (run_fresh(lay, &o, &st, "run"))
                continue;
            int64_t erd, ewr;
            expected_bytes(lay, M, N, mb, nb, PW, KK, &erd, &ewr);
            CHECKF(st.bytes_read == erd && st.bytes_written == ewr,
                  "%s: engine read %lld / wrote %lld bytes, expected %lld / %lld",
                  mpilab_wf_layout_name(lay), (long long)st.bytes_read,
                  (long long)st.bytes_written, (long long)erd, (long long)ewr);
            int64_t eq_r, eq_w;
            expected_reqs(lay, M, N, mb, nb, PW, KK, &eq_r, &eq_w);
            CHECKF(st.requests_read == eq_r && st.requests_written == eq_w,
                  "%s: %lld read / %lld write requests, expected %lld / %lld",
                  mpilab_wf_layout_name(lay), (long long)st.requests_read,
                  (long long)st.requests_written, (long long)eq_r, (long long)eq_w);
            CHECKF(st.prefetch == (pf > 0) && st.compute_s && st.io_wait_s && st.dep_wait_s &&
                      st.io_busy_s, "time accounting missing");
            CHECKF(st.io == (pf == 2 ? MPILAB_WF_IO_URING : MPILAB_WF_IO_PREAD) &&
                      st.queue_depth == (pf == 2 ? 3 : pf ? 2 : 1),
                  "stats: io %d queue depth %d", st.io, st.queue_depth);
            for (int i = 0; st.compute_s && i < PW; i++) {
                double acc = st.compute_s[i] + st.io_wait_s[i] + st.dep_wait_s[i];
                CHECKF(st.compute_s[i] > 0 && st.io_wait_s[i] >= 0 && st.dep_wait_s[i] >= 0,
                      "worker %d: compute %g io %g dep %g", i, st.compute_s[i],
                      st.io_wait_s[i], st.dep_wait_s[i]);
                /* disjoint intervals of one thread: never more than the run's wall time */
                CHECKF(acc <= st.total_s, "worker %d accounted %g s of a %g s run", i, acc,
                      st.total_s);
                /* only the pread helper thread has busy time; io_uring has no helper */
                CHECKF(pf == 1 ? st.io_busy_s[i] > 0 : st.io_busy_s[i] == 0,
                      "worker %d: helper busy %g s with prefetch %d", i, st.io_busy_s[i], pf);
            }
            mpilab_wf_stats_free(&st);
        }
}

/* Block-granularity wave chaining: bitwise against the reference for every layout x block
 * size x 1-3 workers x W = 1..4 x K = 1, 3, 5 x pread with and without the I/O helper and
 * mmap. */
MPILAB_TEST(chain_block_bitwise)
{
    WF_VARS;
    const double *init = fx->init, *coef = fx->coef;
    const int64_t Ks[] = {1, 3, 5};
    double *refs[3];
    for (int i = 0; i < 3; i++) {
        refs[i] = malloc((size_t)(M * N) * 8);
        memcpy(refs[i], init, (size_t)(M * N) * 8);
        mpilab_wf_reference(refs[i], coef, M, N, Ks[i]);
    }
    const int64_t blocks[][2] = {{8, 5}, {5, 7}, {37, 53}, {10, 17}, {10, 53}, {37, 27}};
    int runs = 0, combo = 0;
    for (int lay = 0; lay < 3; lay++)
        for (size_t b = 0; b < sizeof blocks / sizeof blocks[0]; b++) {
            int64_t mb = blocks[b][0], nb = blocks[b][1];
            blocked_inputs(lay, mb, nb);
            int64_t nbr = (M + mb - 1) / mb;
            for (int workers = 1; workers <= 3 && workers <= nbr; workers++)
                for (int waves = 1; waves <= 4; waves++)
                    for (int ki = 0; ki < 3; ki++)
                        for (int io = 0; io < 3; io++) { /* pread helper, pread sync, mmap */
                            if (combo++ % WF_STRIDE)
                                continue;
                            mpilab_wf_run_opts o = {Ks[ki], workers, waves,
                                                    io == 2 ? MPILAB_WF_IO_MMAP : MPILAB_WF_IO_PREAD,
                                                    0, 0, runs % 2, io == 1 || (io == 2 && runs % 3 == 0),
                                                    0, MPILAB_WF_CHAIN_BLOCK, 0, 0};
                            if (lay == MPILAB_WF_ROWMAJOR)
                                o.mb = mb, o.nb = nb;
                            mpilab_wf_stats st;
                            if (run_fresh(lay, &o, &st, "chain run"))
                                continue;
                            runs++;
                            CHECKF(st.chain == MPILAB_WF_CHAIN_BLOCK && st.iterations == Ks[ki] &&
                                      st.bytes_written > 0,
                                  "chain stats");
                            CHECKF(work_is(refs[ki]),
                                  "block chaining not bitwise equal: layout %s block %lldx%lld "
                                  "workers %d waves %d K %lld io %d",
                                  mpilab_wf_layout_name(lay), (long long)mb, (long long)nb,
                                  workers, waves, (long long)Ks[ki], io);
                            mpilab_wf_stats_free(&st);
                        }
        }
    CHECKF(runs >= 1000 / WF_STRIDE, "only %d chained runs", runs);
    printf("block-chained bitwise runs: %d\n", runs);
    for (int i = 0; i < 3; i++)
        free(refs[i]);
}

/* Block chaining: K iterations in sweeps of W move exactly what ceil(K/W) band iterations
 * move (each block, its halos and coefficients once per sweep), e.g. 6 iterations with
 * W = 3 read the data twice, not six times; the buffer pool. */
MPILAB_TEST(chain_block_io_volume_and_pool)
{
    WF_VARS;
    for (int lay = 0; lay < 3; lay++)
        for (int pf = 0; pf < 3; pf++) { /* pread sync, pread helper, mmap */
            const int64_t mb = 8, nb = 5;
            const int PW = 3;
            blocked_inputs(lay, mb, nb);
            const int64_t cases[][2] = {{6, 3}, {6, 1}, {5, 3}, {6, 4}, {7, 2}};
            int64_t rd_w1 = 0;
            for (size_t ci = 0; ci < sizeof cases / sizeof cases[0]; ci++) {
                const int64_t KK = cases[ci][0], W = cases[ci][1];
                mpilab_wf_run_opts o = {KK, PW, (int)W, pf == 2 ? MPILAB_WF_IO_MMAP : MPILAB_WF_IO_PREAD,
                                        lay ? 0 : mb, lay ? 0 : nb, 1, pf == 0, 0,
                                        MPILAB_WF_CHAIN_BLOCK, 0, 0};
                mpilab_wf_stats st;
                if (run_fresh(lay, &o, &st, "run"))
                    continue;
                int64_t erd, ewr;
                expected_bytes(lay, M, N, mb, nb, PW, (KK + W - 1) / W, &erd, &ewr);
                CHECKF(st.bytes_read == erd && st.bytes_written == ewr,
                      "%s K=%lld W=%lld: engine read %lld / wrote %lld bytes, expected %lld / %lld",
                      mpilab_wf_layout_name(lay), (long long)KK, (long long)W,
                      (long long)st.bytes_read, (long long)st.bytes_written, (long long)erd,
                      (long long)ewr);
                if (KK == 6 && W == 1)
                    rd_w1 = st.bytes_read;
                if (KK == 6 && W == 3 && rd_w1 == 0) {
                    int64_t b1r, b1w;
                    expected_bytes(lay, M, N, mb, nb, PW, 6, &b1r, &b1w);
                    /* the band schedule reads every block every iteration */
                    CHECKF(st.bytes_written * 3 == b1w && st.bytes_read * 5 / 2 < b1r,
                          "no 3-fold reduction: wrote %lld vs %lld", (long long)st.bytes_written,
                          (long long)b1w);
                }
                /* buffer pool: worker 0 owns one block row of 11 blocks here: 2W slots
                 * (+2 reads ahead with the I/O helper), at most the 11 */
                int64_t pool = 2 * W + (pf ? 2 : 0);
                if (pool > 11)
                    pool = 11;
                CHECKF(st.queue_depth == pool, "pool %d, expected %lld", st.queue_depth,
                      (long long)pool);
                CHECKF(st.buffer_bytes >= PW * pool * ((mb + 2) * (nb + 2) + 5 * mb * nb) * 8,
                      "buffer bytes %lld", (long long)st.buffer_bytes);
                mpilab_wf_stats_free(&st);
            }
            CHECKF(rd_w1 > 0, "W=1 run missing");
        }
}

/* Block chaining: io_uring refused, auto is pread, unknown chaining refused, zero
 * iterations move nothing; the chain names. */
MPILAB_TEST(chain_refusals_and_zero_iterations)
{
    WF_VARS;
        mpilab_wf_run_opts o = {2, 1, 2, MPILAB_WF_IO_URING, 8, 5, 1, 0, 0, MPILAB_WF_CHAIN_BLOCK, 0, 0};
        mpilab_wf_stats st;
        copy_file(P("d0"), P("work"));
        CHECKF(mpilab_wf_run(P("work"), P("c0"), &o, &st, err, sizeof err) != 0 &&
                  strstr(err, "io_uring") && strstr(err, "block chaining") && !strchr(err, '\n'),
              "uring with block chaining: %s", err);
        CHECKF(same_file(P("work"), P("d0")), "refused run changed the data");
        o.io = MPILAB_WF_IO_AUTO; /* auto: pread under block chaining */
        CHECKF(mpilab_wf_run(P("work"), P("c0"), &o, &st, err, sizeof err) == 0 &&
                  st.io == MPILAB_WF_IO_PREAD,
              "auto with block chaining: %s", err);
        mpilab_wf_stats_free(&st);
        o.chain = 7;
        o.io = MPILAB_WF_IO_PREAD;
        CHECKF(mpilab_wf_run(P("work"), P("c0"), &o, &st, err, sizeof err) != 0 &&
                  strstr(err, "chaining"),
              "unknown chaining: %s", err);
        o.chain = MPILAB_WF_CHAIN_BLOCK;
        o.iterations = 0;
        o.workers = 3;
        copy_file(P("d0"), P("work"));
        CHECKF(mpilab_wf_run(P("work"), P("c0"), &o, &st, err, sizeof err) == 0 &&
                  st.bytes_read == 0 && st.bytes_written == 0 && same_file(P("work"), P("d0")),
              "zero iterations: %s", err);
        mpilab_wf_stats_free(&st);
        CHECKF(mpilab_wf_chain_parse("block") == MPILAB_WF_CHAIN_BLOCK &&
                  mpilab_wf_chain_parse("band") == MPILAB_WF_CHAIN_BAND &&
                  mpilab_wf_chain_parse("blocks") == -1 &&
                  !strcmp(mpilab_wf_chain_name(MPILAB_WF_CHAIN_BLOCK), "block"),
              "chain names");
}

/* O_DIRECT: bitwise equal to the reference for every layout, block sizes (also not
 * dividing), 1-3 workers, with and without the I/O helper, band and block chaining; the
 * engine's transfer volume equals the pread back end's. */
MPILAB_TEST(direct_bitwise_and_same_volume)
{
    WF_VARS;
    const int64_t blocks[][2] = {{8, 5}, {37, 53}};
    int runs = 0, combo = 0;
    for (int lay = 0; lay < 3; lay++)
        for (size_t b = 0; b < sizeof blocks / sizeof blocks[0]; b++) {
            int64_t mb = blocks[b][0], nb = blocks[b][1];
            blocked_inputs(lay, mb, nb);
            int64_t nbr = (M + mb - 1) / mb;
            for (int workers = 1; workers <= 3 && workers <= nbr; workers++)
                for (int v = 0; v < 4; v++) { /* helper on/off x chain band/block */
                    if (combo++ % WF_STRIDE)
                        continue;
                    int64_t rd[2] = {0, 0}, wr[2] = {0, 0};
                    for (int io = 0; io < 2; io++) {
                        mpilab_wf_run_opts o = {K, workers, 2,
                                                io ? MPILAB_WF_IO_DIRECT : MPILAB_WF_IO_PREAD,
                                                lay ? 0 : mb, lay ? 0 : nb, 1, v & 1, 0,
                                                v & 2 ? MPILAB_WF_CHAIN_BLOCK : MPILAB_WF_CHAIN_BAND, 0, 0};
                        mpilab_wf_stats st;
                        if (run_fresh(lay, &o, &st, "direct run"))
                            continue;
                        CHECKF(st.io == o.io, "back end used %s", mpilab_wf_io_name(st.io));
                        rd[io] = st.bytes_read;
                        wr[io] = st.bytes_written;
                        mpilab_wf_stats_free(&st);
                        CHECKF(work_is(ref),
                              "%s: not bitwise equal: layout %s block %lldx%lld workers %d "
                              "variant %d", mpilab_wf_io_name(o.io), mpilab_wf_layout_name(lay),
                              (long long)mb, (long long)nb, workers, v);
                        runs += io;
                        /* the whole file (headers, records, padding) as pread leaves it */
                        if (io == 0)
                            copy_file(P("work"), P("wpread"));
                        else
                            CHECKF(same_file(P("work"), P("wpread")),
                                  "direct: file differs from pread's: layout %s block %lldx%lld "
                                  "workers %d variant %d", mpilab_wf_layout_name(lay),
                                  (long long)mb, (long long)nb, workers, v);
                    }
                    CHECKF(rd[0] == rd[1], "direct read %lld bytes, pread %lld", (long long)rd[1],
                          (long long)rd[0]);
                    /* O_DIRECT writes the optimized records with their padding (no partial
                     * last sector): with band chaining K x the padded payload */
                    if (lay == MPILAB_WF_OPTIMIZED)
                        CHECKF(wr[0] < wr[1] && ((v & 2) || wr[1] == K * (fsize(P("dl")) - 4096)),
                              "direct wrote %lld bytes, expected %lld (pread %lld)",
                              (long long)wr[1], (long long)(K * (fsize(P("dl")) - 4096)),
                              (long long)wr[0]);
                    else
                        CHECKF(wr[0] == wr[1], "direct wrote %lld bytes, pread %lld",
                              (long long)wr[1], (long long)wr[0]);
                }
        }
    CHECKF(runs >= 40 / WF_STRIDE, "only %d O_DIRECT runs", runs);
    printf("O_DIRECT bitwise runs: %d\n", runs);
}

/* io_turns (the workers take turns at the storage): every layout x 2 block sizes x 1-3
 * workers x {pread with the helper, pread synchronous, mmap, O_DIRECT} x {band, block
 * chaining}, bitwise against the reference and reading exactly the bytes of the same run
 * without turns (only the order of the workers' transfers changes); io_uring refused. */
MPILAB_TEST(io_turns_bitwise_same_volume_uring_refused)
{
    WF_VARS;
    const int64_t blocks[][2] = {{8, 5}, {10, 17}};
    const int ios[4] = {MPILAB_WF_IO_PREAD, MPILAB_WF_IO_PREAD, MPILAB_WF_IO_MMAP,
                        MPILAB_WF_IO_DIRECT};
    int runs = 0, combo = 0;
    for (int lay = 0; lay < 3; lay++)
        for (size_t b = 0; b < sizeof blocks / sizeof blocks[0]; b++) {
            int64_t mb = blocks[b][0], nb = blocks[b][1];
            blocked_inputs(lay, mb, nb);
            for (int workers = 1; workers <= 3; workers++)
                for (int v = 0; v < 8; v++) { /* back end x chaining */
                    if (combo++ % WF_STRIDE)
                        continue;
                    int64_t rd[2] = {0, 0}, wr[2] = {0, 0};
                    for (int turns = 0; turns < 2; turns++) {
                        mpilab_wf_run_opts o = {K, workers, 2, ios[v % 4], lay ? 0 : mb,
                                                lay ? 0 : nb, 1, v % 4 == 1, 0,
                                                v / 4 ? MPILAB_WF_CHAIN_BLOCK : MPILAB_WF_CHAIN_BAND,
                                                turns, 0};
                        mpilab_wf_stats st;
                        if (run_fresh(lay, &o, &st,
                                      turns ? "run with io_turns 1" : "run with io_turns 0"))
                            continue;
                        rd[turns] = st.bytes_read;
                        wr[turns] = st.bytes_written;
                        mpilab_wf_stats_free(&st);
                        CHECKF(work_is(ref),
                              "io_turns %d: not bitwise equal: layout %s block %lldx%lld "
                              "workers %d %s%s %s", turns, mpilab_wf_layout_name(lay),
                              (long long)mb, (long long)nb, workers, mpilab_wf_io_name(o.io),
                              v % 4 == 1 ? " (no helper)" : "", mpilab_wf_chain_name(o.chain));
                        runs += turns;
                    }
                    CHECKF(rd[0] == rd[1] && wr[0] == wr[1],
                          "io_turns read/wrote %lld/%lld bytes, without %lld/%lld",
                          (long long)rd[1], (long long)wr[1], (long long)rd[0], (long long)wr[0]);
                }
        }
    CHECKF(runs == (144 + WF_STRIDE - 1) / WF_STRIDE, "%d io_turns runs, expected %d", runs,
           (144 + WF_STRIDE - 1) / WF_STRIDE);
    printf("io_turns bitwise runs: %d\n", runs);
    /* io_uring has no helper to take the turn in: refused with one line, data untouched */
    copy_file(P("dl"), P("work"));
    mpilab_wf_run_opts o = {1, 2, 1, MPILAB_WF_IO_URING, 0, 0, 1, 0, 0, 0, 1, 0};
    mpilab_wf_stats st;
    int rc = mpilab_wf_run(P("work"), P("cl"), &o, &st, err, sizeof err);
    CHECKF(rc != 0 && !strchr(err, '\n') &&
              (strstr(err, "io-turns") || strstr(err, "io_uring back end unavailable")),
          "io_turns with io_uring: rc %d, '%s'", rc, err);
    CHECKF(same_file(P("work"), P("dl")), "a refused io_turns run changed the data");
}

MPILAB_TEST_MAIN()
