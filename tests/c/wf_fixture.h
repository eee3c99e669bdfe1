/* What the wavefront tests share (tests/c/wavefront_test.c: the engine's runs;
 * tests/c/wavefront_files_test.c: conversions, file formats, bad input, run state): the
 * problem every case runs (37 x 53, K = 3: data d0, coefficients c0 and the sequential
 * reference, made once per program in a temporary folder, removed at exit when no case
 * failed), the files' helpers and the exact I/O volumes the engine must move. Every case
 * calls wf_fix() first, so any case runs alone (./wavefront_test --case NAME). Split out of
 * wavefront_test.c (889 lines, a 316-line main) for issue 27. */
#ifndef MPILAB_TESTS_WF_FIXTURE_H
#define MPILAB_TESTS_WF_FIXTURE_H

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "kit.h"
#include "mpilab/wavefront.h"

/* Under AddressSanitizer+UBSan (every access checked: 2-10x slower, and much more on a loaded
 * machine at low priority) the cases that walk a cross product of options run every
 * WF_STRIDE-th combination: 7, prime to the size of every option list (2, 3, 4, 6, 8), so
 * every value of every option still runs; the plain build runs them all. */
#if defined(__SANITIZE_ADDRESS__)
#define WF_STRIDE 7
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define WF_STRIDE 7
#endif
#endif
#ifndef WF_STRIDE
#define WF_STRIDE 1
#endif

typedef struct wf_fixture {
    int64_t M, N, K;
    double *init, *coef, *ref; /* d0, c0 and d0 after K reference iterations */
    int have_uring;
} wf_fixture;

static char dir[256];
static wf_fixture wf_fix_data;

/* The start of every case: the fixture and its usual names (any of them may go unused). */
#define WF_VARS                                                                                    \
    const wf_fixture *fx = wf_fix();                                                               \
    const int64_t M = fx->M, N = fx->N, K = fx->K;                                                 \
    const double *ref = fx->ref;                                                                   \
    const int have_uring = fx->have_uring;                                                         \
    char err[1024] = "";                                                                           \
    int64_t r = 0, c = 0, pl = 0;                                                                  \
    (void)M, (void)N, (void)K, (void)ref, (void)have_uring, (void)err, (void)r, (void)c, (void)pl

/* DIR/name, in one of 64 rotating buffers (a call may hold several at once). */
static inline const char *P(const char *name)
{
    static char buf[64][512];
    static int k;
    k = (k + 1) % 64;
    snprintf(buf[k], sizeof buf[k], "%s/%s", dir, name);
    return buf[k];
}

static inline double *load1(const char *path, int64_t *rows, int64_t *cols, int64_t *planes)
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

static inline long fsize(const char *path)
{
    struct stat sb;
    return stat(path, &sb) == 0 ? (long)sb.st_size : -1;
}

static inline int same_file(const char *a, const char *b)
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

static inline int tmp_files_left(void)
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

static inline void copy_file(const char *a, const char *b)
{
    FILE *fa = fopen(a, "rb"), *fb = fopen(b, "wb");
    int c;
    while ((c = fgetc(fa)) != EOF)
        fputc(c, fb);
    fclose(fa);
    fclose(fb);
}

/* The data and coefficients d0, c0 in a blocked layout (dl, cl; nothing for row-major). */
static inline void blocked_inputs(int lay, int64_t mb, int64_t nb)
{
    char err[1024];
    mpilab_wf_convert_opts co = {lay, mb, nb, 1, 1};
    const char *in0[1] = {P("d0")}, *inc[1] = {P("c0")};
    if (lay != MPILAB_WF_ROWMAJOR) {
        CHECKF(mpilab_wf_convert(in0, 1, P("dl"), &co, err, sizeof err) == 0, "%s", err);
        CHECKF(mpilab_wf_convert(inc, 1, P("cl"), &co, err, sizeof err) == 0, "%s", err);
    }
}

/* Bytes the engine must read and write for K iterations with P workers (blocks mb x nb,
 * T = 1): per block, the block itself (+4 corner duplicates in the optimized layout), the
 * old left frontier of the next block (h elements), the 5 coefficient blocks and the old
 * top frontier of the block below inside the band (w elements); per worker but the first,
 * the initial top frontiers. Nothing more: in particular no whole neighbour block. The
 * optimized layout reads the east halo with the block in one request, which also spans
 * the next block's top frontier (w1 elements, T = 1). */
static inline void expected_bytes(int lay, int64_t M, int64_t N, int64_t mb, int64_t nb, int P,
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

static inline uint64_t hdr_u64(const char *path, long off)
{
    uint64_t v = 0;
    FILE *f = fopen(path, "rb");
    if (f && fseek(f, off, SEEK_SET) == 0 && fread(&v, sizeof v, 1, f) != 1)
        v = UINT64_MAX;
    if (f)
        fclose(f);
    return v;
}

static inline void hdr_put_u64(const char *path, long off, uint64_t v)
{
    FILE *f = fopen(path, "r+b");
    if (f && fseek(f, off, SEEK_SET) == 0)
        fwrite(&v, sizeof v, 1, f);
    if (f)
        fclose(f);
}

/* Requests the engine issues for K band-chained iterations (the same walk as
 * expected_bytes): per block, the block (one request; h rows in row-major) with its east
 * halo (the optimized layout folds it into the block's request; block and row-major
 * layouts gather it with h single-element reads), the coefficient block (its 5 planes in
 * one request; 5 x h rows in row-major) and the top frontier below; one write per block (h rows in
 * row-major); the initial top frontiers of every worker but the first. */
static inline void expected_reqs(int lay, int64_t M, int64_t N, int64_t mb, int64_t nb, int P,
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

static inline void wf_fix_cleanup(void)
{
    free(wf_fix_data.init);
    free(wf_fix_data.coef);
    free(wf_fix_data.ref);
    if (!kit_failures) {
        char cmd[600];
        snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
        if (system(cmd) != 0)
            fprintf(stderr, "could not remove %s\n", dir);
    }
}

/* The shared problem, made on the first call (d0, c0, a pristine copy d0.orig). */
static inline const wf_fixture *wf_fix(void)
{
    wf_fixture *f = &wf_fix_data;
    if (f->init)
        return f;
    snprintf(dir, sizeof dir, "/tmp/mpilab-wf-test-XXXXXX");
    if (!mkdtemp(dir)) {
        perror("mkdtemp");
        exit(1);
    }
    atexit(wf_fix_cleanup);
    char err[1024], why[256] = "";
    f->M = 37, f->N = 53, f->K = 3;
    f->have_uring = mpilab_wf_io_available(MPILAB_WF_IO_URING, why, sizeof why);
    printf("io_uring back end: %s%s\n", f->have_uring ? "available" : "not available: ", why);
    if (mpilab_wf_create(P("d0"), P("c0"), f->M, f->N, 42, err, sizeof err) != 0) {
        fprintf(stderr, "create: %s\n", err);
        exit(1);
    }
    copy_file(P("d0"), P("d0.orig"));
    int64_t r, c, pl;
    f->init = load1(P("d0"), &r, &c, &pl);
    f->coef = load1(P("c0"), &r, &c, &pl);
    if (!f->init || !f->coef)
        exit(1);
    f->ref = malloc((size_t)(f->M * f->N) * 8);
    memcpy(f->ref, f->init, (size_t)(f->M * f->N) * 8);
    mpilab_wf_reference(f->ref, f->coef, f->M, f->N, f->K);
    return f;
}

#endif
