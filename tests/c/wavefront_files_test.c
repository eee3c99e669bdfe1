/* Wavefront files: layout round trips, the optimized layout's space and its format 1, bad
 * input (one-line errors, no partial output), the run-state marker of in-place runs (a
 * killed run is recognised), stale temporary files of a killed conversion, header fields
 * that would overflow. The engine's runs: wavefront_test.c. Named cases (tests/c/kit.h). */
#include "wf_fixture.h"

/* Layout round trips, byte for byte, T = 1 and 2; split into bands and joined back. */
MPILAB_TEST(round_trips_byte_for_byte)
{
    WF_VARS;
    for (int lay = 1; lay < 3; lay++)
        for (int64_t t = 1; t <= 2; t++) {
            mpilab_wf_convert_opts co = {lay, 8, 5, t, 1};
            mpilab_wf_convert_opts back = {MPILAB_WF_ROWMAJOR, 0, 0, 1, 1};
            const char *in0[1] = {P("d0")}, *in1[1] = {P("rt")}, *inc[1] = {P("c0")},
                       *inc1[1] = {P("rtc")};
            int64_t mbx = t == 2 ? 8 : 8, nbx = t == 2 ? 5 : 5;
            co.mb = mbx;
            co.nb = nbx;
            if (t == 2) { /* 37 % 8 = 5 >= 4, 53 % 5 = 3 < 4: needs another NB */
                co.nb = 6; /* 53 % 6 = 5 */
            }
            CHECKF(mpilab_wf_convert(in0, 1, P("rt"), &co, err, sizeof err) == 0, "pre: %s", err);
            CHECKF(mpilab_wf_convert(in1, 1, P("rt0"), &back, err, sizeof err) == 0, "post: %s", err);
            CHECKF(same_file(P("d0"), P("rt0")), "round trip %d T=%lld differs", lay, (long long)t);
            CHECKF(mpilab_wf_convert(inc, 1, P("rtc"), &co, err, sizeof err) == 0, "pre c: %s", err);
            CHECKF(mpilab_wf_convert(inc1, 1, P("rtc0"), &back, err, sizeof err) == 0, "post c: %s", err);
            CHECKF(same_file(P("c0"), P("rtc0")), "coef round trip differs");
            /* split into bands and join back */
            mpilab_wf_convert_opts bands = {lay, co.mb, co.nb, t, 3};
            CHECKF(mpilab_wf_convert(in0, 1, P("bd"), &bands, err, sizeof err) == 0, "bands: %s", err);
            const char *bin[3] = {P("bd.0"), P("bd.1"), P("bd.2")};
            CHECKF(mpilab_wf_convert(bin, 3, P("bj"), &back, err, sizeof err) == 0, "join: %s", err);
            CHECKF(same_file(P("d0"), P("bj")), "band round trip differs");
        }
}

/* Space: an optimized block record holds 4 T^2 doubles beyond the block and, from
 * format version 2, starts at a multiple of 4 KiB (8 x 6 blocks: one 4 KiB record
 * each); the block layout has no overhead; a format-1 file is still read and run. */
MPILAB_TEST(optimized_space_and_format_1)
{
    WF_VARS;
    CHECKF(mpilab_wf_create(P("e0"), P("ec"), 40, 60, 7, err, sizeof err) == 0, "create: %s", err);
    for (int64_t t = 1; t <= 2; t++) {
        const char *in0[1] = {P("e0")};
        mpilab_wf_convert_opts ob = {MPILAB_WF_BLOCK, 8, 6, t, 1}, oo = {MPILAB_WF_OPTIMIZED, 8, 6, t, 1};
        CHECKF(mpilab_wf_convert(in0, 1, P("eb"), &ob, err, sizeof err) == 0, "%s", err);
        CHECKF(mpilab_wf_convert(in0, 1, P("eo"), &oo, err, sizeof err) == 0, "%s", err);
        long expect = 4096L * (60 / 6) * (40 / 8);
        CHECKF(fsize(P("eo")) == 4096 + expect, "optimized size %ld, expected %ld", fsize(P("eo")),
              4096 + expect);
        CHECKF(fsize(P("eb")) == fsize(P("e0")), "block layout should have no overhead");
        CHECKF(mpilab_wf_payload_bytes(2, 40, 60, 8, 6, t, 1) == expect &&
                  mpilab_wf_payload_bytes(1, 40, 60, 8, 6, t, 1) == 40 * 60 * 8,
              "payload_bytes");
        /* a format-1 file (records packed back to back: 4 T^2 doubles of overhead per
         * block, no padding) is still read: repack eo's records without their padding */
        {
            FILE *fi = fopen(P("eo"), "rb"), *fo = fopen(P("eo1"), "wb");
            unsigned char hdr[4096], rec[4096];
            long data = (8 * 6 + 4 * t * t) * 8;
            int ok = fi && fo && fread(hdr, 1, sizeof hdr, fi) == sizeof hdr;
            uint32_t v1 = 1;
            uint64_t pay1 = (uint64_t)(40 * 60 + 4 * t * t * 50) * 8;
            memcpy(hdr + 8, &v1, 4);
            memcpy(hdr + 80, &pay1, 8);
            ok = ok && fwrite(hdr, 1, sizeof hdr, fo) == sizeof hdr;
            for (int k = 0; k < 50 && ok; k++)
                ok = fread(rec, 1, sizeof rec, fi) == sizeof rec &&
                     fwrite(rec, 1, (size_t)data, fo) == (size_t)data;
            if (fi)
                fclose(fi);
            if (fo)
                fclose(fo);
            CHECKF(ok, "cannot write the format-1 file");
            const char *in1[1] = {P("eo1")};
            mpilab_wf_convert_opts rm = {MPILAB_WF_ROWMAJOR, 0, 0, 0, 1};
            CHECKF(mpilab_wf_convert(in1, 1, P("er1"), &rm, err, sizeof err) == 0, "format 1: %s", err);
            CHECKF(same_file(P("e0"), P("er1")), "format-1 optimized file read differently");
            mpilab_wf_run_opts o1 = {1, 2, 1, MPILAB_WF_IO_PREAD, 0, 0, 1, 0, 0, 0, 0, 0};
            mpilab_wf_stats st1;
            const char *inc[1] = {P("ec")};
            CHECKF(mpilab_wf_convert(inc, 1, P("ecb"), &oo, err, sizeof err) == 0, "coef: %s", err);
            CHECKF(mpilab_wf_run(P("eo1"), P("ecb"), &o1, &st1, err, sizeof err) == 0,
                  "run on a format-1 file: %s", err);
            mpilab_wf_stats_free(&st1);
            CHECKF(mpilab_wf_run(P("eo"), P("ecb"), &o1, &st1, err, sizeof err) == 0, "run: %s", err);
            mpilab_wf_stats_free(&st1);
            const char *ina[1] = {P("eo")}, *inb[1] = {P("eo1")};
            CHECKF(mpilab_wf_convert(ina, 1, P("era"), &rm, err, sizeof err) == 0 &&
                      mpilab_wf_convert(inb, 1, P("erb"), &rm, err, sizeof err) == 0 &&
                      same_file(P("era"), P("erb")),
                  "formats 1 and 2 differ after a run: %s", err);
            remove(P("eo1"));
            remove(P("er1"));
            remove(P("era"));
            remove(P("erb"));
            remove(P("ecb"));
        }
    }
}

/* Bad input: one-line errors, no partial output, source untouched. */
MPILAB_TEST(bad_input_one_line_no_output)
{
    WF_VARS;
        const char *in0[1] = {P("d0")};
        mpilab_wf_convert_opts big = {MPILAB_WF_BLOCK, 38, 5, 1, 1};
        CHECKF(mpilab_wf_convert(in0, 1, P("bad1"), &big, err, sizeof err) != 0, "block > matrix accepted");
        CHECKF(strstr(err, "larger than") && !strchr(err, '\n'), "message: %s", err);
        CHECKF(access(P("bad1"), F_OK) != 0 && tmp_files_left() == 0, "partial output left");
        mpilab_wf_convert_opts thin = {MPILAB_WF_OPTIMIZED, 8, 4, 1, 1}; /* 53 % 4 = 1 */
        CHECKF(mpilab_wf_convert(in0, 1, P("bad2"), &thin, err, sizeof err) != 0, "1-wide edge block accepted");
        mpilab_wf_run_opts o0 = {1, 0, 1, 0, 8, 5, 1, 0, 0, 0, 0, 0};
        mpilab_wf_stats st;
        CHECKF(mpilab_wf_run(P("d0"), P("c0"), &o0, &st, err, sizeof err) != 0 && strstr(err, "workers"),
              "zero workers: %s", err);
        mpilab_wf_run_opts o1 = {1, 1, 1, 0, 38, 5, 1, 0, 0, 0, 0, 0};
        CHECKF(mpilab_wf_run(P("d0"), P("c0"), &o1, &st, err, sizeof err) != 0 && strstr(err, "larger"),
              "big block run: %s", err);
        mpilab_wf_run_opts oq = {1, 1, 1, MPILAB_WF_IO_URING, 8, 5, 1, 0, 33, 0, 0, 0};
        CHECKF(mpilab_wf_run(P("d0"), P("c0"), &oq, &st, err, sizeof err) != 0 &&
                  strstr(err, "queue depth") && !strchr(err, '\n'),
              "queue depth 33: %s", err);
        oq.queue_depth = 4;
        oq.io = 7;
        CHECKF(mpilab_wf_run(P("d0"), P("c0"), &oq, &st, err, sizeof err) != 0 &&
                  strstr(err, "back end"),
              "unknown back end: %s", err);
        mpilab_wf_run_opts o5 = {1, 5, 1, 0, 8, 5, 1, 0, 0, 0, 0, 0}; /* 5 block rows: fine; 6 workers is not */
        o5.workers = 6;
        CHECKF(mpilab_wf_run(P("d0"), P("c0"), &o5, &st, err, sizeof err) != 0, "too many workers");
        /* truncated */
        copy_file(P("d0"), P("tr"));
        CHECKF(truncate(P("tr"), fsize(P("d0")) - 8) == 0, "truncate");
        const char *tin[1] = {P("tr")};
        CHECKF(mpilab_wf_convert(tin, 1, P("bad3"), &big, err, sizeof err) != 0 && strstr(err, "truncated") &&
                  strstr(err, P("tr")),
              "truncated: %s", err);
        mpilab_wf_run_opts ok = {1, 1, 1, 0, 8, 5, 1, 0, 0, 0, 0, 0};
        CHECKF(mpilab_wf_run(P("tr"), P("c0"), &ok, &st, err, sizeof err) != 0 && strstr(err, "truncated"),
              "truncated run: %s", err);
        /* wrong size */
        copy_file(P("d0"), P("ws"));
        FILE *f = fopen(P("ws"), "ab");
        fputs("extra", f);
        fclose(f);
        CHECKF(mpilab_wf_run(P("ws"), P("c0"), &ok, &st, err, sizeof err) != 0 && strstr(err, "wrong size"),
              "wrong size: %s", err);
        /* missing */
        CHECKF(mpilab_wf_run(P("nope"), P("c0"), &ok, &st, err, sizeof err) != 0 && strstr(err, "nope"),
              "missing: %s", err);
        /* data and coefficients swapped */
        CHECKF(mpilab_wf_run(P("c0"), P("d0"), &ok, &st, err, sizeof err) != 0, "swapped files accepted");
        /* not a matrix file */
        f = fopen(P("junk"), "wb");
        fputs("hello", f);
        fclose(f);
        CHECKF(mpilab_wf_run(P("junk"), P("c0"), &ok, &st, err, sizeof err) != 0 && strstr(err, "magic"),
              "junk: %s", err);
        /* blocked input to another blocked layout is refused, nothing written */
        mpilab_wf_convert_opts ob = {MPILAB_WF_BLOCK, 8, 5, 1, 1};
        CHECKF(mpilab_wf_convert(in0, 1, P("blk"), &ob, err, sizeof err) == 0, "%s", err);
        const char *bin[1] = {P("blk")};
        mpilab_wf_convert_opts oo = {MPILAB_WF_OPTIMIZED, 8, 5, 1, 1};
        CHECKF(mpilab_wf_convert(bin, 1, P("bad4"), &oo, err, sizeof err) != 0, "block->opt accepted");
        CHECKF(access(P("bad4"), F_OK) != 0 && tmp_files_left() == 0, "partial output left");
        /* the source is never modified by a failed conversion */
        CHECKF(same_file(P("d0.orig"), P("d0")), "source changed");
}

/* In-place runs record what the file holds; a killed run is recognised; header fields
 * that would overflow are refused. */
MPILAB_TEST(run_state_marks_a_killed_run)
{
    WF_VARS;
    int64_t done = -1;
    int intr = -1;
    mpilab_wf_convert_opts co = {MPILAB_WF_OPTIMIZED, 8, 5, 1, 1};
    const char *in0[1] = {P("d0")}, *inc[1] = {P("c0")};
    CHECKF(mpilab_wf_convert(in0, 1, P("sd"), &co, err, sizeof err) == 0, "%s", err);
    CHECKF(mpilab_wf_convert(inc, 1, P("sc"), &co, err, sizeof err) == 0, "%s", err);
    CHECKF(mpilab_wf_file_state(P("sd"), &done, &intr, err, sizeof err) == 0 && done == 0 &&
              intr == 0, "fresh file: %lld done, interrupted %d", (long long)done, intr);
    mpilab_wf_run_opts o = {2, 2, 1, MPILAB_WF_IO_PREAD, 0, 0, 1, 0, 0, 0, 0, 0};
    mpilab_wf_stats st;
    CHECKF(mpilab_wf_run(P("sd"), P("sc"), &o, &st, err, sizeof err) == 0, "%s", err);
    mpilab_wf_stats_free(&st);
    CHECKF(mpilab_wf_run(P("sd"), P("sc"), &o, &st, err, sizeof err) == 0, "%s", err);
    mpilab_wf_stats_free(&st);
    CHECKF(mpilab_wf_file_state(P("sd"), &done, &intr, err, sizeof err) == 0 && done == 4 &&
              intr == 0, "after 2+2: %lld done, interrupted %d", (long long)done, intr);
    /* post-processing keeps the count */
    mpilab_wf_convert_opts back = {MPILAB_WF_ROWMAJOR, 0, 0, 1, 1};
    const char *sin[1] = {P("sd")};
    CHECKF(mpilab_wf_convert(sin, 1, P("sdr"), &back, err, sizeof err) == 0, "%s", err);
    CHECKF(mpilab_wf_file_state(P("sdr"), &done, &intr, err, sizeof err) == 0 && done == 4,
          "post-processed: %lld done", (long long)done);
    /* a run killed while it runs: the child is killed once its marker is observed on
     * disk (no timing: progress decides), with enough iterations to be caught running */
    int caught = 0;
    for (int64_t iters = 100000; iters <= 100000000 && !caught; iters *= 10) {
        copy_file(P("sdr"), P("kd"));
        CHECKF(mpilab_wf_convert((const char *[]){P("sdr")}, 1, P("kd"), &co, err, sizeof err) == 0,
              "%s", err);
        pid_t pid = fork();
        if (pid == 0) {
            mpilab_wf_run_opts ol = {iters, 2, 2, MPILAB_WF_IO_PREAD, 0, 0, 1, 0, 0, 0, 0, 0};
            mpilab_wf_stats s2;
            _exit(mpilab_wf_run(P("kd"), P("sc"), &ol, &s2, err, sizeof err) == 0 ? 0 : 1);
        }
        int status;
        while (waitpid(pid, &status, WNOHANG) == 0) {
            if (hdr_u64(P("kd"), HDR_STATE) % (1ull << 32) == 1) {
                kill(pid, SIGKILL);
                waitpid(pid, &status, 0);
                caught = 1;
                break;
            }
            usleep(1000);
        }
    }
    CHECKF(caught, "never observed a run in progress");
    if (caught) {
        CHECKF(mpilab_wf_file_state(P("kd"), &done, &intr, err, sizeof err) == 0 && intr == 1 &&
                  done == 4, "killed run: %lld done, interrupted %d", (long long)done, intr);
        CHECKF(mpilab_wf_run(P("kd"), P("sc"), &o, &st, err, sizeof err) != 0 &&
                  strstr(err, "interrupted") && !strchr(err, '\n'),
              "re-run of an interrupted file: %s", err);
        double *v = NULL;
        int64_t r, c, pl;
        const char *kin[1] = {P("kd")};
        CHECKF(mpilab_wf_load(kin, 1, &v, &r, &c, &pl, err, sizeof err) != 0 &&
                  strstr(err, "interrupted"), "verify of an interrupted file: %s", err);
        free(v);
    }
    /* a row-major header whose frontier thickness would overflow 4*t*t is refused */
    copy_file(P("d0"), P("ht"));
    hdr_put_u64(P("ht"), HDR_T, (1ull << 40) + 1);
    CHECKF(mpilab_wf_file_state(P("ht"), &done, &intr, err, sizeof err) != 0 &&
              strstr(err, "frontier thickness"), "t = 2^40+1: %s", err);
    copy_file(P("sd"), P("ht2"));
    hdr_put_u64(P("ht2"), HDR_T, (1ull << 40) + 1);
    CHECKF(mpilab_wf_file_state(P("ht2"), &done, &intr, err, sizeof err) != 0,
          "optimized t = 2^40+1 accepted");
    CHECKF(hdr_u64(P("sd"), HDR_ITERS) == 4, "iteration count field");
}

/* Temporary outputs of a killed conversion are recognised and removed by the next one;
 * those of a live process are left alone. */
MPILAB_TEST(stale_temporaries_removed)
{
    WF_VARS;
    char list[2048];
    pid_t dead = fork();
    if (dead == 0)
        _exit(0);
    waitpid(dead, NULL, 0);
    char stale[600], live[600];
    snprintf(stale, sizeof stale, "%s.tmp.%ld", P("so"), (long)dead);
    snprintf(live, sizeof live, "%s.tmp.%ld", P("so"), (long)getppid());
    FILE *f = fopen(stale, "wb");
    fputs("x", f);
    fclose(f);
    f = fopen(live, "wb");
    fputs("x", f);
    fclose(f);
    CHECKF(mpilab_wf_stale_temps(P("so"), 0, list, sizeof list, err, sizeof err) == 1 &&
              strstr(list, stale), "stale temps found: %s", list);
    mpilab_wf_convert_opts co = {MPILAB_WF_BLOCK, 8, 5, 1, 1};
    const char *in0[1] = {P("d0")};
    CHECKF(mpilab_wf_convert(in0, 1, P("so"), &co, err, sizeof err) == 0, "%s", err);
    CHECKF(access(stale, F_OK) != 0, "stale temporary file left after the next conversion");
    CHECKF(access(live, F_OK) == 0, "a live process's temporary file was removed");
    unlink(live);
}

MPILAB_TEST_MAIN()
