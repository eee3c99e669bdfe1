/* Wavefront: bitwise equality with the sequential reference for every layout, several
 * block sizes (also non-dividing), worker counts, waves in flight and the I/O back ends,
 * band and block wave chaining;
 * layout round trips; optimized-layout space overhead; bad input; the O_DIRECT back end;
 * the run-state marker of in-place runs (a killed run is recognised); stale temporary
 * files of a killed conversion; header fields that would overflow. */
#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "mpilab/wavefront.h"

static int failures;
#define CHECK(cond, ...)                                                                       \
    do {                                                                                       \
        if (!(cond)) {                                                                         \
            failures++;                                                                        \
            fprintf(stderr, "FAIL %s:%d: ", __FILE__, __LINE__);                               \
            fprintf(stderr, __VA_ARGS__);                                                      \
            fputc('\n', stderr);                                                               \
        }                                                                                      \
    } while (0)

static char dir[256];

static const char *P(const char *name)
{
    static char buf[64][512];
    static int k;
    k = (k + 1) % 64;
    snprintf(buf[k], sizeof buf[k], "%s/%s", dir, name);
    return buf[k];
}

static double *load1(const char *path, int64_t *rows, int64_t *cols, int64_t *planes)
{
    char err[1024];
    double *v = NULL;
    const char *in[1] = {path};
    if (mpilab_wf_load(in, 1, &v, rows, cols, planes, err, sizeof err)) {
        fprintf(stderr, "load %s: %s\n", path, err);
        return NULL;
    }
    return v;
}

static long fsize(const char *path)
{
    struct stat sb;
    return stat(path, &sb) == 0 ? (long)sb.st_size : -1;
}

static int same_file(const char *a, const char *b)
{
    FILE *fa = fopen(a, "rb"), *fb = fopen(b, "rb");
    int same = fa && fb;
    while (same) {
        int ca = fgetc(fa), cb = fgetc(fb);
        if (ca != cb)
            same = 0;
        if (ca == EOF || cb == EOF)
            break;
    }
    if (fa)
        fclose(fa);
    if (fb)
        fclose(fb);
    return same;
}

static int tmp_files_left(void)
{
    DIR *d = opendir(dir);
    int n = 0;
    struct dirent *e;
    while (d && (e = readdir(d)))
        if (strstr(e->d_name, ".tmp."))
            n++;
    if (d)
        closedir(d);
    return n;
}

static void copy_file(const char *a, const char *b)
{
    FILE *fa = fopen(a, "rb"), *fb = fopen(b, "wb");
    int c;
    while ((c = fgetc(fa)) != EOF)
        fputc(c, fb);
    fclose(fa);
    fclose(fb);
}

/* The data and coefficients d0, c0 in a blocked layout (dl, cl; nothing for row-major). */
static void blocked_inputs(int lay, int64_t mb, int64_t nb)
{
    char err[1024];
    mpilab_wf_convert_opts co = {lay, mb, nb, 1, 1};
    const char *in0[1] = {P("d0")}, *inc[1] = {P("c0")};
    if (lay != MPILAB_WF_ROWMAJOR) {
        CHECK(mpilab_wf_convert(in0, 1, P("dl"), &co, err, sizeof err) == 0, "%s", err);
        CHECK(mpilab_wf_convert(inc, 1, P("cl"), &co, err, sizeof err) == 0, "%s", err);
    }
}

/* Bytes the engine must read and write for K iterations with P workers (blocks mb x nb,
 * T = 1): per block, the block itself (+4 corner duplicates in the optimized layout), the
 * old left frontier of the next block (h elements), the 5 coefficient blocks and the old
 * top frontier of the block below inside the band (w elements); per worker but the first,
 * the initial top frontiers. Nothing more: in particular no whole neighbour block. The
 * optimized layout reads the east halo with the block in one request, which also spans
 * the next block's top frontier (w1 elements, T = 1). */
static void expected_bytes(int lay, int64_t M, int64_t N, int64_t mb, int64_t nb, int P,
                           int64_t K, int64_t *rd, int64_t *wr)
{
    int64_t nbr = (M + mb - 1) / mb, nbc = (N + nb - 1) / nb, ex = lay == 2 ? 4 : 0;
    *rd = *wr = 0;
    for (int i = 0; i < P; i++) {
        int64_t b0 = nbr * i / P, b1 = nbr * (i + 1) / P;
        for (int64_t bc = 0; bc < nbc && i > 0; bc++)
            *rd += (N - bc * nb < nb ? N - bc * nb : nb) * 8;
        for (int64_t br = b0; br < b1; br++)
            for (int64_t bc = 0; bc < nbc; bc++) {
                int64_t h = M - br * mb < mb ? M - br * mb : mb;
                int64_t w = N - bc * nb < nb ? N - bc * nb : nb;
                int64_t w1 = bc + 1 < nbc ? (N - (bc + 1) * nb < nb ? N - (bc + 1) * nb : nb) : 0;
                /* optimized (format 2): records start at multiples of 4 KiB, and the
                 * block's read runs over its record's zero padding into the next record */
                int64_t pad = lay == 2 && bc + 1 < nbc
                                  ? ((h * w + ex) * 8 + 4095) / 4096 * 4096 - (h * w + ex) * 8
                                  : 0;
                *rd += K * ((h * w + ex) * 8 + (bc + 1 < nbc ? h * 8 : 0) + 5 * h * w * 8 +
                            (lay == 2 ? w1 * 8 : 0) + pad +
                            (br + 1 < b1 ? w * 8 : 0));
                *wr += K * (h * w + ex) * 8;
            }
    }
}


/* Header field offsets (wf_hdr in src/wavefront/wf_internal.h). */
enum { HDR_T = 72, HDR_STATE = 88, HDR_ITERS = 96 };

static uint64_t hdr_u64(const char *path, long off)
{
    uint64_t v = 0;
    FILE *f = fopen(path, "rb");
    if (f && fseek(f, off, SEEK_SET) == 0 && fread(&v, sizeof v, 1, f) != 1)
        v = UINT64_MAX;
    if (f)
        fclose(f);
    return v;
}

static void hdr_put_u64(const char *path, long off, uint64_t v)
{
    FILE *f = fopen(path, "r+b");
    if (f && fseek(f, off, SEEK_SET) == 0)
        fwrite(&v, sizeof v, 1, f);
    if (f)
        fclose(f);
}

/* O_DIRECT: bitwise equal to the reference for every layout, block sizes (also not
 * dividing), 1-3 workers, with and without the I/O helper, band and block chaining; the
 * engine's transfer volume equals the pread back end's. */
static void test_direct(const double *ref, int64_t M, int64_t N, int64_t K)
{
    char err[1024];
    int64_t r, c, pl;
    const int64_t blocks[][2] = {{8, 5}, {37, 53}};
    int runs = 0;
    for (int lay = 0; lay < 3; lay++)
        for (size_t b = 0; b < sizeof blocks / sizeof blocks[0]; b++) {
            int64_t mb = blocks[b][0], nb = blocks[b][1];
            blocked_inputs(lay, mb, nb);
            int64_t nbr = (M + mb - 1) / mb;
            for (int workers = 1; workers <= 3 && workers <= nbr; workers++)
                for (int v = 0; v < 4; v++) { /* helper on/off x chain band/block */
                    int64_t rd[2] = {0, 0}, wr[2] = {0, 0};
                    for (int io = 0; io < 2; io++) {
                        copy_file(lay == MPILAB_WF_ROWMAJOR ? P("d0") : P("dl"), P("work"));
                        mpilab_wf_run_opts o = {K, workers, 2,
                                                io ? MPILAB_WF_IO_DIRECT : MPILAB_WF_IO_PREAD,
                                                lay ? 0 : mb, lay ? 0 : nb, 1, v & 1, 0,
                                                v & 2 ? MPILAB_WF_CHAIN_BLOCK : MPILAB_WF_CHAIN_BAND, 0};
                        mpilab_wf_stats st;
                        int rc = mpilab_wf_run(P("work"), lay ? P("cl") : P("c0"), &o, &st, err,
                                               sizeof err);
                        CHECK(rc == 0, "direct run: %s", err);
                        if (rc)
                            continue;
                        CHECK(st.io == o.io, "back end used %s", mpilab_wf_io_name(st.io));
                        rd[io] = st.bytes_read;
                        wr[io] = st.bytes_written;
                        mpilab_wf_stats_free(&st);
                        double *got = load1(P("work"), &r, &c, &pl);
                        CHECK(got && memcmp(got, ref, (size_t)(M * N) * 8) == 0,
                              "%s: not bitwise equal: layout %s block %lldx%lld workers %d "
                              "variant %d", mpilab_wf_io_name(o.io), mpilab_wf_layout_name(lay),
                              (long long)mb, (long long)nb, workers, v);
                        free(got);
                        runs += io;
                        /* the whole file (headers, records, padding) as pread leaves it */
                        if (io == 0)
                            copy_file(P("work"), P("wpread"));
                        else
                            CHECK(same_file(P("work"), P("wpread")),
                                  "direct: file differs from pread's: layout %s block %lldx%lld "
                                  "workers %d variant %d", mpilab_wf_layout_name(lay),
                                  (long long)mb, (long long)nb, workers, v);
                    }
                    CHECK(rd[0] == rd[1], "direct read %lld bytes, pread %lld", (long long)rd[1],
                          (long long)rd[0]);
                    /* O_DIRECT writes the optimized records with their padding (no partial
                     * last sector): with band chaining K x the padded payload */
                    if (lay == MPILAB_WF_OPTIMIZED)
                        CHECK(wr[0] < wr[1] && ((v & 2) || wr[1] == K * (fsize(P("dl")) - 4096)),
                              "direct wrote %lld bytes, expected %lld (pread %lld)",
                              (long long)wr[1], (long long)(K * (fsize(P("dl")) - 4096)),
                              (long long)wr[0]);
                    else
                        CHECK(wr[0] == wr[1], "direct wrote %lld bytes, pread %lld",
                              (long long)wr[1], (long long)wr[0]);
                }
        }
    CHECK(runs >= 40, "only %d O_DIRECT runs", runs);
    printf("O_DIRECT bitwise runs: %d\n", runs);
}

/* io_turns (the workers take turns at the storage): every layout x 2 block sizes x 1-3
 * workers x {pread with the helper, pread synchronous, mmap, O_DIRECT} x {band, block
 * chaining}, bitwise against the reference and reading exactly the bytes of the same run
 * without turns (only the order of the workers' transfers changes); io_uring refused. */
static void test_turns(const double *ref, int64_t M, int64_t N, int64_t K)
{
    char err[1024];
    int64_t r, c, pl;
    const int64_t blocks[][2] = {{8, 5}, {10, 17}};
    const int ios[4] = {MPILAB_WF_IO_PREAD, MPILAB_WF_IO_PREAD, MPILAB_WF_IO_MMAP,
                        MPILAB_WF_IO_DIRECT};
    int runs = 0;
    for (int lay = 0; lay < 3; lay++)
        for (size_t b = 0; b < sizeof blocks / sizeof blocks[0]; b++) {
            int64_t mb = blocks[b][0], nb = blocks[b][1];
            blocked_inputs(lay, mb, nb);
            for (int workers = 1; workers <= 3; workers++)
                for (int v = 0; v < 8; v++) { /* back end x chaining */
                    int64_t rd[2] = {0, 0}, wr[2] = {0, 0};
                    for (int turns = 0; turns < 2; turns++) {
                        copy_file(lay == MPILAB_WF_ROWMAJOR ? P("d0") : P("dl"), P("work"));
                        mpilab_wf_run_opts o = {K, workers, 2, ios[v % 4], lay ? 0 : mb,
                                                lay ? 0 : nb, 1, v % 4 == 1, 0,
                                                v / 4 ? MPILAB_WF_CHAIN_BLOCK : MPILAB_WF_CHAIN_BAND,
                                                turns};
                        mpilab_wf_stats st;
                        int rc = mpilab_wf_run(P("work"), lay ? P("cl") : P("c0"), &o, &st, err,
                                               sizeof err);
                        CHECK(rc == 0, "run with io_turns %d: %s", turns, err);
                        if (rc)
                            continue;
                        rd[turns] = st.bytes_read;
                        wr[turns] = st.bytes_written;
                        mpilab_wf_stats_free(&st);
                        double *got = load1(P("work"), &r, &c, &pl);
                        CHECK(got && memcmp(got, ref, (size_t)(M * N) * 8) == 0,
                              "io_turns %d: not bitwise equal: layout %s block %lldx%lld "
                              "workers %d %s%s %s", turns, mpilab_wf_layout_name(lay),
                              (long long)mb, (long long)nb, workers, mpilab_wf_io_name(o.io),
                              v % 4 == 1 ? " (no helper)" : "", mpilab_wf_chain_name(o.chain));
                        free(got);
                        runs += turns;
                    }
                    CHECK(rd[0] == rd[1] && wr[0] == wr[1],
                          "io_turns read/wrote %lld/%lld bytes, without %lld/%lld",
                          (long long)rd[1], (long long)wr[1], (long long)rd[0], (long long)wr[0]);
                }
        }
    CHECK(runs == 144, "%d io_turns runs, expected 144", runs);
    printf("io_turns bitwise runs: %d\n", runs);
    /* io_uring has no helper to take the turn in: refused with one line, data untouched */
    copy_file(P("dl"), P("work"));
    mpilab_wf_run_opts o = {1, 2, 1, MPILAB_WF_IO_URING, 0, 0, 1, 0, 0, 0, 1};
    mpilab_wf_stats st;
    int rc = mpilab_wf_run(P("work"), P("cl"), &o, &st, err, sizeof err);
    CHECK(rc != 0 && !strchr(err, '\n') &&
              (strstr(err, "io-turns") || strstr(err, "io_uring back end unavailable")),
          "io_turns with io_uring: rc %d, '%s'", rc, err);
    CHECK(same_file(P("work"), P("dl")), "a refused io_turns run changed the data");
}

/* In-place runs record what the file holds; a killed run is recognised. */
static void test_state(void)
{
    char err[1024];
    int64_t done = -1;
    int intr = -1;
    mpilab_wf_convert_opts co = {MPILAB_WF_OPTIMIZED, 8, 5, 1, 1};
    const char *in0[1] = {P("d0")}, *inc[1] = {P("c0")};
    CHECK(mpilab_wf_convert(in0, 1, P("sd"), &co, err, sizeof err) == 0, "%s", err);
    CHECK(mpilab_wf_convert(inc, 1, P("sc"), &co, err, sizeof err) == 0, "%s", err);
    CHECK(mpilab_wf_file_state(P("sd"), &done, &intr, err, sizeof err) == 0 && done == 0 &&
              intr == 0, "fresh file: %lld done, interrupted %d", (long long)done, intr);
    mpilab_wf_run_opts o = {2, 2, 1, MPILAB_WF_IO_PREAD, 0, 0, 1, 0, 0, 0, 0};
    mpilab_wf_stats st;
    CHECK(mpilab_wf_run(P("sd"), P("sc"), &o, &st, err, sizeof err) == 0, "%s", err);
    mpilab_wf_stats_free(&st);
    CHECK(mpilab_wf_run(P("sd"), P("sc"), &o, &st, err, sizeof err) == 0, "%s", err);
    mpilab_wf_stats_free(&st);
    CHECK(mpilab_wf_file_state(P("sd"), &done, &intr, err, sizeof err) == 0 && done == 4 &&
              intr == 0, "after 2+2: %lld done, interrupted %d", (long long)done, intr);
    /* post-processing keeps the count */
    mpilab_wf_convert_opts back = {MPILAB_WF_ROWMAJOR, 0, 0, 1, 1};
    const char *sin[1] = {P("sd")};
    CHECK(mpilab_wf_convert(sin, 1, P("sdr"), &back, err, sizeof err) == 0, "%s", err);
    CHECK(mpilab_wf_file_state(P("sdr"), &done, &intr, err, sizeof err) == 0 && done == 4,
          "post-processed: %lld done", (long long)done);
    /* a run killed while it runs: the child is killed once its marker is observed on
     * disk (no timing: progress decides), with enough iterations to be caught running */
    int caught = 0;
    for (int64_t iters = 100000; iters <= 100000000 && !caught; iters *= 10) {
        copy_file(P("sdr"), P("kd"));
        CHECK(mpilab_wf_convert((const char *[]){P("sdr")}, 1, P("kd"), &co, err, sizeof err) == 0,
              "%s", err);
        pid_t pid = fork();
        if (pid == 0) {
            mpilab_wf_run_opts ol = {iters, 2, 2, MPILAB_WF_IO_PREAD, 0, 0, 1, 0, 0, 0, 0};
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
    CHECK(caught, "never observed a run in progress");
    if (caught) {
        CHECK(mpilab_wf_file_state(P("kd"), &done, &intr, err, sizeof err) == 0 && intr == 1 &&
                  done == 4, "killed run: %lld done, interrupted %d", (long long)done, intr);
        CHECK(mpilab_wf_run(P("kd"), P("sc"), &o, &st, err, sizeof err) != 0 &&
                  strstr(err, "interrupted") && !strchr(err, '\n'),
              "re-run of an interrupted file: %s", err);
        double *v = NULL;
        int64_t r, c, pl;
        const char *kin[1] = {P("kd")};
        CHECK(mpilab_wf_load(kin, 1, &v, &r, &c, &pl, err, sizeof err) != 0 &&
                  strstr(err, "interrupted"), "verify of an interrupted file: %s", err);
        free(v);
    }
    /* a row-major header whose frontier thickness would overflow 4*t*t is refused */
    copy_file(P("d0"), P("ht"));
    hdr_put_u64(P("ht"), HDR_T, (1ull << 40) + 1);
    CHECK(mpilab_wf_file_state(P("ht"), &done, &intr, err, sizeof err) != 0 &&
              strstr(err, "frontier thickness"), "t = 2^40+1: %s", err);
    copy_file(P("sd"), P("ht2"));
    hdr_put_u64(P("ht2"), HDR_T, (1ull << 40) + 1);
    CHECK(mpilab_wf_file_state(P("ht2"), &done, &intr, err, sizeof err) != 0,
          "optimized t = 2^40+1 accepted");
    CHECK(hdr_u64(P("sd"), HDR_ITERS) == 4, "iteration count field");
}

/* Temporary outputs of a killed conversion are recognised and removed by the next one;
 * those of a live process are left alone. */
static void test_stale(void)
{
    char err[1024], list[2048];
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
    CHECK(mpilab_wf_stale_temps(P("so"), 0, list, sizeof list, err, sizeof err) == 1 &&
              strstr(list, stale), "stale temps found: %s", list);
    mpilab_wf_convert_opts co = {MPILAB_WF_BLOCK, 8, 5, 1, 1};
    const char *in0[1] = {P("d0")};
    CHECK(mpilab_wf_convert(in0, 1, P("so"), &co, err, sizeof err) == 0, "%s", err);
    CHECK(access(stale, F_OK) != 0, "stale temporary file left after the next conversion");
    CHECK(access(live, F_OK) == 0, "a live process's temporary file was removed");
    unlink(live);
}

/* Requests the engine issues for K band-chained iterations (the same walk as
 * expected_bytes): per block, the block (one request; h rows in row-major) with its east
 * halo (the optimized layout folds it into the block's request; block and row-major
 * layouts gather it with h single-element reads), the coefficient block (its 5 planes in
 * one request; 5 x h rows in row-major) and the top frontier below; one write per block (h rows in
 * row-major); the initial top frontiers of every worker but the first. */
static void expected_reqs(int lay, int64_t M, int64_t N, int64_t mb, int64_t nb, int P,
                          int64_t K, int64_t *rd, int64_t *wr)
{
    int64_t nbr = (M + mb - 1) / mb, nbc = (N + nb - 1) / nb;
    *rd = *wr = 0;
    for (int i = 0; i < P; i++) {
        int64_t b0 = nbr * i / P, b1 = nbr * (i + 1) / P;
        if (i > 0)
            *rd += nbc;
        for (int64_t br = b0; br < b1; br++)
            for (int64_t bc = 0; bc < nbc; bc++) {
                int64_t h = M - br * mb < mb ? M - br * mb : mb;
                int64_t rows = lay == 0 ? h : 1;
                int64_t east = bc + 1 < nbc ? (lay == 2 ? 0 : h) : 0;
                *rd += K * (rows + east + (lay == 0 ? 5 * rows : 1) + (br + 1 < b1 ? 1 : 0));
                *wr += K * rows;
            }
    }
}

/* Block-granularity wave chaining: bitwise against the reference for every layout x block
 * size x 1-3 workers x W = 1..4 x K = 1, 3, 5 x pread with and without the I/O helper and
 * mmap; the W-fold drop of the engine's I/O volume, exactly; the buffer pool; refusals. */
static void test_chain(const double *init, const double *coef, int64_t M, int64_t N)
{
    char err[1024];
    int64_t r, c, pl;
    const int64_t Ks[] = {1, 3, 5};
    double *refs[3];
    for (int i = 0; i < 3; i++) {
        refs[i] = malloc((size_t)(M * N) * 8);
        memcpy(refs[i], init, (size_t)(M * N) * 8);
        mpilab_wf_reference(refs[i], coef, M, N, Ks[i]);
    }
    const int64_t blocks[][2] = {{8, 5}, {5, 7}, {37, 53}, {10, 17}, {10, 53}, {37, 27}};
    int runs = 0;
    for (int lay = 0; lay < 3; lay++)
        for (size_t b = 0; b < sizeof blocks / sizeof blocks[0]; b++) {
            int64_t mb = blocks[b][0], nb = blocks[b][1];
            blocked_inputs(lay, mb, nb);
            int64_t nbr = (M + mb - 1) / mb;
            for (int workers = 1; workers <= 3 && workers <= nbr; workers++)
                for (int waves = 1; waves <= 4; waves++)
                    for (int ki = 0; ki < 3; ki++)
                        for (int io = 0; io < 3; io++) { /* pread helper, pread sync, mmap */
                            copy_file(lay == MPILAB_WF_ROWMAJOR ? P("d0") : P("dl"), P("work"));
                            mpilab_wf_run_opts o = {Ks[ki], workers, waves,
                                                    io == 2 ? MPILAB_WF_IO_MMAP : MPILAB_WF_IO_PREAD,
                                                    0, 0, runs % 2, io == 1 || (io == 2 && runs % 3 == 0),
                                                    0, MPILAB_WF_CHAIN_BLOCK, 0};
                            if (lay == MPILAB_WF_ROWMAJOR)
                                o.mb = mb, o.nb = nb;
                            mpilab_wf_stats st;
                            int rc = mpilab_wf_run(P("work"), lay == MPILAB_WF_ROWMAJOR ? P("c0") : P("cl"),
                                                   &o, &st, err, sizeof err);
                            CHECK(rc == 0, "chain run: %s", err);
                            if (rc)
                                continue;
                            runs++;
                            CHECK(st.chain == MPILAB_WF_CHAIN_BLOCK && st.iterations == Ks[ki] &&
                                      st.bytes_written > 0,
                                  "chain stats");
                            double *got = load1(P("work"), &r, &c, &pl);
                            CHECK(got && memcmp(got, refs[ki], (size_t)(M * N) * 8) == 0,
                                  "block chaining not bitwise equal: layout %s block %lldx%lld "
                                  "workers %d waves %d K %lld io %d",
                                  mpilab_wf_layout_name(lay), (long long)mb, (long long)nb,
                                  workers, waves, (long long)Ks[ki], io);
                            free(got);
                            mpilab_wf_stats_free(&st);
                        }
        }
    CHECK(runs >= 1000, "only %d chained runs", runs);
    printf("block-chained bitwise runs: %d\n", runs);

    /* I/O volume: K iterations in sweeps of W move exactly what ceil(K/W) band iterations
     * move (each block, its halos and coefficients once per sweep), e.g. 6 iterations with
     * W = 3 read the data twice, not six times. */
    for (int lay = 0; lay < 3; lay++)
        for (int pf = 0; pf < 3; pf++) { /* pread sync, pread helper, mmap */
            const int64_t mb = 8, nb = 5;
            const int PW = 3;
            blocked_inputs(lay, mb, nb);
            const int64_t cases[][2] = {{6, 3}, {6, 1}, {5, 3}, {6, 4}, {7, 2}};
            int64_t rd_w1 = 0;
            for (size_t ci = 0; ci < sizeof cases / sizeof cases[0]; ci++) {
                const int64_t KK = cases[ci][0], W = cases[ci][1];
                copy_file(lay == MPILAB_WF_ROWMAJOR ? P("d0") : P("dl"), P("work"));
                mpilab_wf_run_opts o = {KK, PW, (int)W, pf == 2 ? MPILAB_WF_IO_MMAP : MPILAB_WF_IO_PREAD,
                                        lay ? 0 : mb, lay ? 0 : nb, 1, pf == 0, 0,
                                        MPILAB_WF_CHAIN_BLOCK, 0};
                mpilab_wf_stats st;
                int rc = mpilab_wf_run(P("work"), lay == MPILAB_WF_ROWMAJOR ? P("c0") : P("cl"), &o,
                                       &st, err, sizeof err);
                CHECK(rc == 0, "run: %s", err);
                if (rc)
                    continue;
                int64_t erd, ewr;
                expected_bytes(lay, M, N, mb, nb, PW, (KK + W - 1) / W, &erd, &ewr);
                CHECK(st.bytes_read == erd && st.bytes_written == ewr,
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
                    CHECK(st.bytes_written * 3 == b1w && st.bytes_read * 5 / 2 < b1r,
                          "no 3-fold reduction: wrote %lld vs %lld", (long long)st.bytes_written,
                          (long long)b1w);
                }
                /* buffer pool: worker 0 owns one block row of 11 blocks here: 2W slots
                 * (+2 reads ahead with the I/O helper), at most the 11 */
                int64_t pool = 2 * W + (pf ? 2 : 0);
                if (pool > 11)
                    pool = 11;
                CHECK(st.queue_depth == pool, "pool %d, expected %lld", st.queue_depth,
                      (long long)pool);
                CHECK(st.buffer_bytes >= PW * pool * ((mb + 2) * (nb + 2) + 5 * mb * nb) * 8,
                      "buffer bytes %lld", (long long)st.buffer_bytes);
                mpilab_wf_stats_free(&st);
            }
            CHECK(rd_w1 > 0, "W=1 run missing");
        }

    /* refusals and zero iterations */
    {
        mpilab_wf_run_opts o = {2, 1, 2, MPILAB_WF_IO_URING, 8, 5, 1, 0, 0, MPILAB_WF_CHAIN_BLOCK, 0};
        mpilab_wf_stats st;
        copy_file(P("d0"), P("work"));
        CHECK(mpilab_wf_run(P("work"), P("c0"), &o, &st, err, sizeof err) != 0 &&
                  strstr(err, "io_uring") && strstr(err, "block chaining") && !strchr(err, '\n'),
              "uring with block chaining: %s", err);
        CHECK(same_file(P("work"), P("d0")), "refused run changed the data");
        o.io = MPILAB_WF_IO_AUTO; /* auto: pread under block chaining */
        CHECK(mpilab_wf_run(P("work"), P("c0"), &o, &st, err, sizeof err) == 0 &&
                  st.io == MPILAB_WF_IO_PREAD,
              "auto with block chaining: %s", err);
        mpilab_wf_stats_free(&st);
        o.chain = 7;
        o.io = MPILAB_WF_IO_PREAD;
        CHECK(mpilab_wf_run(P("work"), P("c0"), &o, &st, err, sizeof err) != 0 &&
                  strstr(err, "chaining"),
              "unknown chaining: %s", err);
        o.chain = MPILAB_WF_CHAIN_BLOCK;
        o.iterations = 0;
        o.workers = 3;
        copy_file(P("d0"), P("work"));
        CHECK(mpilab_wf_run(P("work"), P("c0"), &o, &st, err, sizeof err) == 0 &&
                  st.bytes_read == 0 && st.bytes_written == 0 && same_file(P("work"), P("d0")),
              "zero iterations: %s", err);
        mpilab_wf_stats_free(&st);
        CHECK(mpilab_wf_chain_parse("block") == MPILAB_WF_CHAIN_BLOCK &&
                  mpilab_wf_chain_parse("band") == MPILAB_WF_CHAIN_BAND &&
                  mpilab_wf_chain_parse("blocks") == -1 &&
                  !strcmp(mpilab_wf_chain_name(MPILAB_WF_CHAIN_BLOCK), "block"),
              "chain names");
    }
    for (int i = 0; i < 3; i++)
        free(refs[i]);
}

int main(void)
{
    snprintf(dir, sizeof dir, "/tmp/mpilab-wf-test-XXXXXX");
    if (!mkdtemp(dir)) {
        perror("mkdtemp");
        return 1;
    }
    char err[1024];
    const int64_t M = 37, N = 53, K = 3;
    char why[256] = "";
    const int have_uring = mpilab_wf_io_available(MPILAB_WF_IO_URING, why, sizeof why);
    printf("io_uring back end: %s%s\n", have_uring ? "available" : "not available: ", why);
    CHECK(mpilab_wf_create(P("d0"), P("c0"), M, N, 42, err, sizeof err) == 0, "create: %s", err);
    int64_t r, c, pl;
    double *init = load1(P("d0"), &r, &c, &pl);
    double *coef = load1(P("c0"), &r, &c, &pl);
    if (!init || !coef)
        return 1;
    CHECK(r == M && c == N && pl == 5, "coef geometry %lldx%lld/%lld", (long long)r, (long long)c,
          (long long)pl);
    double *ref = malloc((size_t)(M * N) * 8);
    memcpy(ref, init, (size_t)(M * N) * 8);
    mpilab_wf_reference(ref, coef, M, N, K);
    CHECK(memcmp(ref, init, (size_t)(M * N) * 8) != 0, "reference did not change the data");
    /* boundary untouched, interior changed */
    CHECK(ref[5] == init[5] && ref[(M - 1) * N + 7] == init[(M - 1) * N + 7], "boundary changed");

    /* exhaustive matrix */
    const int64_t blocks[][2] = {{8, 5}, {5, 7}, {37, 53}, {10, 17}, {10, 53}, {37, 27}};
    int runs = 0;
    for (int lay = 0; lay < 3; lay++)
        for (size_t b = 0; b < sizeof blocks / sizeof blocks[0]; b++) {
            int64_t mb = blocks[b][0], nb = blocks[b][1];
            mpilab_wf_convert_opts co = {lay, mb, nb, 1, 1};
            const char *in0[1] = {P("d0")}, *inc[1] = {P("c0")};
            if (lay != MPILAB_WF_ROWMAJOR) {
                CHECK(mpilab_wf_convert(in0, 1, P("dl"), &co, err, sizeof err) == 0,
                      "convert %d: %s", lay, err);
                CHECK(mpilab_wf_convert(inc, 1, P("cl"), &co, err, sizeof err) == 0,
                      "convert coef %d: %s", lay, err);
            }
            int64_t nbr = (M + mb - 1) / mb;
            for (int workers = 1; workers <= 3; workers++)
                for (int waves = 1; waves <= 3; waves += 1)
                    for (int io = 0; io < 3; io++) {
                        if (workers > nbr || (io == MPILAB_WF_IO_URING && !have_uring))
                            continue;
                        copy_file(lay == MPILAB_WF_ROWMAJOR ? P("d0") : P("dl"), P("work"));
                        /* uring: queue depths 1 (no prefetch) and 2..5 in turn */
                        mpilab_wf_run_opts o = {K, workers, waves, io, 0, 0, (runs % 2), (runs / 2) % 2,
                                                2 + (runs / 4) % 4, MPILAB_WF_CHAIN_BAND, 0};
                        if (lay == MPILAB_WF_ROWMAJOR)
                            o.mb = mb, o.nb = nb;
                        mpilab_wf_stats st;
                        int rc = mpilab_wf_run(P("work"), lay == MPILAB_WF_ROWMAJOR ? P("c0") : P("cl"),
                                               &o, &st, err, sizeof err);
                        CHECK(rc == 0, "run: %s", err);
                        if (rc)
                            continue;
                        runs++;
                        CHECK(st.bytes_read > 0 && st.bytes_written > 0 && st.iterations == K,
                              "stats");
                        double *got = load1(P("work"), &r, &c, &pl);
                        CHECK(got && memcmp(got, ref, (size_t)(M * N) * 8) == 0,
                              "not bitwise equal: layout %s block %lldx%lld workers %d waves %d io %s",
                              mpilab_wf_layout_name(lay), (long long)mb, (long long)nb, workers,
                              waves, mpilab_wf_io_name(io));
                        free(got);
                        mpilab_wf_stats_free(&st);
                    }
        }
    CHECK(runs >= (have_uring ? 300 : 100), "only %d runs", runs);
    printf("bitwise runs: %d\n", runs);

    /* auto picks io_uring where it works, else pread, and says which */
    {
        mpilab_wf_convert_opts co = {MPILAB_WF_OPTIMIZED, 8, 5, 1, 1};
        const char *in0[1] = {P("d0")}, *inc[1] = {P("c0")};
        CHECK(mpilab_wf_convert(in0, 1, P("dl"), &co, err, sizeof err) == 0, "%s", err);
        CHECK(mpilab_wf_convert(inc, 1, P("cl"), &co, err, sizeof err) == 0, "%s", err);
        copy_file(P("dl"), P("work"));
        mpilab_wf_run_opts o = {K, 2, 2, MPILAB_WF_IO_AUTO, 0, 0, 1, 0, 0, 0, 0};
        mpilab_wf_stats st;
        CHECK(mpilab_wf_run(P("work"), P("cl"), &o, &st, err, sizeof err) == 0, "auto: %s", err);
        CHECK(st.io == (have_uring ? MPILAB_WF_IO_URING : MPILAB_WF_IO_PREAD) &&
                  st.queue_depth == (have_uring ? 4 : 2),
              "auto chose %s depth %d", mpilab_wf_io_name(st.io), st.queue_depth);
        double *got = load1(P("work"), &r, &c, &pl);
        CHECK(got && memcmp(got, ref, (size_t)(M * N) * 8) == 0, "auto: not bitwise equal");
        free(got);
        mpilab_wf_stats_free(&st);
    }

    /* exact I/O volume per layout, and the per-worker time accounting */
    for (int lay = 0; lay < 3; lay++)
        for (int pf = 0; pf < 3; pf++) { /* 0 no prefetch, 1 pread helper, 2 io_uring */
            if (pf == 2 && !have_uring)
                continue;
            const int64_t mb = 8, nb = 5, KK = 2;
            const int PW = 3;
            blocked_inputs(lay, mb, nb);
            copy_file(lay == MPILAB_WF_ROWMAJOR ? P("d0") : P("dl"), P("work"));
            mpilab_wf_run_opts o = {KK, PW, 2, pf == 2 ? MPILAB_WF_IO_URING : MPILAB_WF_IO_PREAD,
                                    lay ? 0 : mb, lay ? 0 : nb, 1, !pf, 3, MPILAB_WF_CHAIN_BAND, 0};
            mpilab_wf_stats st;
            int rc = mpilab_wf_run(P("work"), lay == MPILAB_WF_ROWMAJOR ? P("c0") : P("cl"), &o,
                                   &st, err, sizeof err);
            CHECK(rc == 0, "run: %s", err);
            if (rc)
                continue;
            int64_t erd, ewr;
            expected_bytes(lay, M, N, mb, nb, PW, KK, &erd, &ewr);
            CHECK(st.bytes_read == erd && st.bytes_written == ewr,
                  "%s: engine read %lld / wrote %lld bytes, expected %lld / %lld",
                  mpilab_wf_layout_name(lay), (long long)st.bytes_read,
                  (long long)st.bytes_written, (long long)erd, (long long)ewr);
            int64_t eq_r, eq_w;
            expected_reqs(lay, M, N, mb, nb, PW, KK, &eq_r, &eq_w);
            CHECK(st.requests_read == eq_r && st.requests_written == eq_w,
                  "%s: %lld read / %lld write requests, expected %lld / %lld",
                  mpilab_wf_layout_name(lay), (long long)st.requests_read,
                  (long long)st.requests_written, (long long)eq_r, (long long)eq_w);
            CHECK(st.prefetch == (pf > 0) && st.compute_s && st.io_wait_s && st.dep_wait_s &&
                      st.io_busy_s, "time accounting missing");
            CHECK(st.io == (pf == 2 ? MPILAB_WF_IO_URING : MPILAB_WF_IO_PREAD) &&
                      st.queue_depth == (pf == 2 ? 3 : pf ? 2 : 1),
                  "stats: io %d queue depth %d", st.io, st.queue_depth);
            for (int i = 0; st.compute_s && i < PW; i++) {
                double acc = st.compute_s[i] + st.io_wait_s[i] + st.dep_wait_s[i];
                CHECK(st.compute_s[i] > 0 && st.io_wait_s[i] >= 0 && st.dep_wait_s[i] >= 0,
                      "worker %d: compute %g io %g dep %g", i, st.compute_s[i],
                      st.io_wait_s[i], st.dep_wait_s[i]);
                /* disjoint intervals of one thread: never more than the run's wall time */
                CHECK(acc <= st.total_s, "worker %d accounted %g s of a %g s run", i, acc,
                      st.total_s);
                /* only the pread helper thread has busy time; io_uring has no helper */
                CHECK(pf == 1 ? st.io_busy_s[i] > 0 : st.io_busy_s[i] == 0,
                      "worker %d: helper busy %g s with prefetch %d", i, st.io_busy_s[i], pf);
            }
            mpilab_wf_stats_free(&st);
        }

    /* round trips, byte for byte; T = 1 and 2 */
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
            CHECK(mpilab_wf_convert(in0, 1, P("rt"), &co, err, sizeof err) == 0, "pre: %s", err);
            CHECK(mpilab_wf_convert(in1, 1, P("rt0"), &back, err, sizeof err) == 0, "post: %s", err);
            CHECK(same_file(P("d0"), P("rt0")), "round trip %d T=%lld differs", lay, (long long)t);
            CHECK(mpilab_wf_convert(inc, 1, P("rtc"), &co, err, sizeof err) == 0, "pre c: %s", err);
            CHECK(mpilab_wf_convert(inc1, 1, P("rtc0"), &back, err, sizeof err) == 0, "post c: %s", err);
            CHECK(same_file(P("c0"), P("rtc0")), "coef round trip differs");
            /* split into bands and join back */
            mpilab_wf_convert_opts bands = {lay, co.mb, co.nb, t, 3};
            CHECK(mpilab_wf_convert(in0, 1, P("bd"), &bands, err, sizeof err) == 0, "bands: %s", err);
            const char *bin[3] = {P("bd.0"), P("bd.1"), P("bd.2")};
            CHECK(mpilab_wf_convert(bin, 3, P("bj"), &back, err, sizeof err) == 0, "join: %s", err);
            CHECK(same_file(P("d0"), P("bj")), "band round trip differs");
        }

    /* space: an optimized block record holds 4 T^2 doubles beyond the block and, from
     * format version 2, starts at a multiple of 4 KiB (8 x 6 blocks: one 4 KiB record
     * each); the block layout has no overhead */
    CHECK(mpilab_wf_create(P("e0"), P("ec"), 40, 60, 7, err, sizeof err) == 0, "create: %s", err);
    for (int64_t t = 1; t <= 2; t++) {
        const char *in0[1] = {P("e0")};
        mpilab_wf_convert_opts ob = {MPILAB_WF_BLOCK, 8, 6, t, 1}, oo = {MPILAB_WF_OPTIMIZED, 8, 6, t, 1};
        CHECK(mpilab_wf_convert(in0, 1, P("eb"), &ob, err, sizeof err) == 0, "%s", err);
        CHECK(mpilab_wf_convert(in0, 1, P("eo"), &oo, err, sizeof err) == 0, "%s", err);
        long expect = 4096L * (60 / 6) * (40 / 8);
        CHECK(fsize(P("eo")) == 4096 + expect, "optimized size %ld, expected %ld", fsize(P("eo")),
              4096 + expect);
        CHECK(fsize(P("eb")) == fsize(P("e0")), "block layout should have no overhead");
        CHECK(mpilab_wf_payload_bytes(2, 40, 60, 8, 6, t, 1) == expect &&
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
            CHECK(ok, "cannot write the format-1 file");
            const char *in1[1] = {P("eo1")};
            mpilab_wf_convert_opts rm = {MPILAB_WF_ROWMAJOR, 0, 0, 0, 1};
            CHECK(mpilab_wf_convert(in1, 1, P("er1"), &rm, err, sizeof err) == 0, "format 1: %s", err);
            CHECK(same_file(P("e0"), P("er1")), "format-1 optimized file read differently");
            mpilab_wf_run_opts o1 = {1, 2, 1, MPILAB_WF_IO_PREAD, 0, 0, 1, 0, 0, 0, 0};
            mpilab_wf_stats st1;
            const char *inc[1] = {P("ec")};
            CHECK(mpilab_wf_convert(inc, 1, P("ecb"), &oo, err, sizeof err) == 0, "coef: %s", err);
            CHECK(mpilab_wf_run(P("eo1"), P("ecb"), &o1, &st1, err, sizeof err) == 0,
                  "run on a format-1 file: %s", err);
            mpilab_wf_stats_free(&st1);
            CHECK(mpilab_wf_run(P("eo"), P("ecb"), &o1, &st1, err, sizeof err) == 0, "run: %s", err);
            mpilab_wf_stats_free(&st1);
            const char *ina[1] = {P("eo")}, *inb[1] = {P("eo1")};
            CHECK(mpilab_wf_convert(ina, 1, P("era"), &rm, err, sizeof err) == 0 &&
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

    /* bad input: one-line errors, no partial output, source untouched */
    {
        const char *in0[1] = {P("d0")};
        mpilab_wf_convert_opts big = {MPILAB_WF_BLOCK, 38, 5, 1, 1};
        CHECK(mpilab_wf_convert(in0, 1, P("bad1"), &big, err, sizeof err) != 0, "block > matrix accepted");
        CHECK(strstr(err, "larger than") && !strchr(err, '\n'), "message: %s", err);
        CHECK(access(P("bad1"), F_OK) != 0 && tmp_files_left() == 0, "partial output left");
        mpilab_wf_convert_opts thin = {MPILAB_WF_OPTIMIZED, 8, 4, 1, 1}; /* 53 % 4 = 1 */
        CHECK(mpilab_wf_convert(in0, 1, P("bad2"), &thin, err, sizeof err) != 0, "1-wide edge block accepted");
        mpilab_wf_run_opts o0 = {1, 0, 1, 0, 8, 5, 1, 0, 0, 0, 0};
        mpilab_wf_stats st;
        CHECK(mpilab_wf_run(P("d0"), P("c0"), &o0, &st, err, sizeof err) != 0 && strstr(err, "workers"),
              "zero workers: %s", err);
        mpilab_wf_run_opts o1 = {1, 1, 1, 0, 38, 5, 1, 0, 0, 0, 0};
        CHECK(mpilab_wf_run(P("d0"), P("c0"), &o1, &st, err, sizeof err) != 0 && strstr(err, "larger"),
              "big block run: %s", err);
        mpilab_wf_run_opts oq = {1, 1, 1, MPILAB_WF_IO_URING, 8, 5, 1, 0, 33, 0, 0};
        CHECK(mpilab_wf_run(P("d0"), P("c0"), &oq, &st, err, sizeof err) != 0 &&
                  strstr(err, "queue depth") && !strchr(err, '\n'),
              "queue depth 33: %s", err);
        oq.queue_depth = 4;
        oq.io = 7;
        CHECK(mpilab_wf_run(P("d0"), P("c0"), &oq, &st, err, sizeof err) != 0 &&
                  strstr(err, "back end"),
              "unknown back end: %s", err);
        mpilab_wf_run_opts o5 = {1, 5, 1, 0, 8, 5, 1, 0, 0, 0, 0}; /* 5 block rows: fine; 6 workers is not */
        o5.workers = 6;
        CHECK(mpilab_wf_run(P("d0"), P("c0"), &o5, &st, err, sizeof err) != 0, "too many workers");
        /* truncated */
        copy_file(P("d0"), P("tr"));
        CHECK(truncate(P("tr"), fsize(P("d0")) - 8) == 0, "truncate");
        const char *tin[1] = {P("tr")};
        CHECK(mpilab_wf_convert(tin, 1, P("bad3"), &big, err, sizeof err) != 0 && strstr(err, "truncated") &&
                  strstr(err, P("tr")),
              "truncated: %s", err);
        mpilab_wf_run_opts ok = {1, 1, 1, 0, 8, 5, 1, 0, 0, 0, 0};
        CHECK(mpilab_wf_run(P("tr"), P("c0"), &ok, &st, err, sizeof err) != 0 && strstr(err, "truncated"),
              "truncated run: %s", err);
        /* wrong size */
        copy_file(P("d0"), P("ws"));
        FILE *f = fopen(P("ws"), "ab");
        fputs("extra", f);
        fclose(f);
        CHECK(mpilab_wf_run(P("ws"), P("c0"), &ok, &st, err, sizeof err) != 0 && strstr(err, "wrong size"),
              "wrong size: %s", err);
        /* missing */
        CHECK(mpilab_wf_run(P("nope"), P("c0"), &ok, &st, err, sizeof err) != 0 && strstr(err, "nope"),
              "missing: %s", err);
        /* data and coefficients swapped */
        CHECK(mpilab_wf_run(P("c0"), P("d0"), &ok, &st, err, sizeof err) != 0, "swapped files accepted");
        /* not a matrix file */
        f = fopen(P("junk"), "wb");
        fputs("hello", f);
        fclose(f);
        CHECK(mpilab_wf_run(P("junk"), P("c0"), &ok, &st, err, sizeof err) != 0 && strstr(err, "magic"),
              "junk: %s", err);
        /* blocked input to another blocked layout is refused, nothing written */
        mpilab_wf_convert_opts ob = {MPILAB_WF_BLOCK, 8, 5, 1, 1};
        CHECK(mpilab_wf_convert(in0, 1, P("blk"), &ob, err, sizeof err) == 0, "%s", err);
        const char *bin[1] = {P("blk")};
        mpilab_wf_convert_opts oo = {MPILAB_WF_OPTIMIZED, 8, 5, 1, 1};
        CHECK(mpilab_wf_convert(bin, 1, P("bad4"), &oo, err, sizeof err) != 0, "block->opt accepted");
        CHECK(access(P("bad4"), F_OK) != 0 && tmp_files_left() == 0, "partial output left");
        /* the source is never modified by a failed conversion */
        CHECK(same_file(P("rt0"), P("d0")), "source changed");
    }

    test_chain(init, coef, M, N);
    test_direct(ref, M, N, K);
    test_turns(ref, M, N, K);
    test_state();
    test_stale();

    free(init);
    free(coef);
    free(ref);
    if (!failures) {
        char cmd[600];
        snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
        if (system(cmd) != 0)
            fprintf(stderr, "could not remove %s\n", dir);
    }
    printf("%s\n", failures ? "FAILED" : "ok");
    return failures ? 1 : 0;
}
