/* A deterministic mutation driver for the fuzz targets where libFuzzer is not available
 * (gcc builds, CI): `fuzz_X ITERATIONS SEED CORPUS_DIR [DICT]` runs the seeds of CORPUS_DIR
 * and then ITERATIONS mutated inputs (bit flips, interesting bytes and integers, block
 * insert/erase/copy, dictionary tokens, splices of two seeds) from a fixed xorshift seed, so a
 * failure replays exactly. `fuzz_X FILE...` replays inputs. Built with the tree's flags: under
 * -DMPILAB_SANITIZE=ON every input runs under ASan+UBSan (halt on error). */
#include <dirent.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "fuzz.h"

#define MAXLEN 8192

typedef struct {
    unsigned char *d;
    size_t n;
} blob;

static uint64_t rng_state;
static uint64_t rnd(void)
{
    uint64_t x = rng_state;
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    return rng_state = x;
}
static size_t below(size_t n) { return n ? (size_t)(rnd() % n) : 0; }

static int read_file(const char *path, blob *b)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return -1;
    b->d = malloc(MAXLEN);
    b->n = b->d ? fread(b->d, 1, MAXLEN, f) : 0;
    fclose(f);
    return b->d ? 0 : -1;
}

static size_t load_dir(const char *dir, blob **out)
{
    DIR *d = opendir(dir);
    if (!d)
        return 0;
    size_t n = 0, cap = 0;
    struct dirent *e;
    char **names = NULL;
    while ((e = readdir(d)) != NULL) {
        if (e->d_name[0] == '.')
            continue;
        if (n == cap) {
            cap = cap ? 2 * cap : 16;
            names = realloc(names, cap * sizeof *names);
        }
        names[n++] = strdup(e->d_name);
    }
    closedir(d);
    /* sorted: the same order on every machine */
    for (size_t i = 1; i < n; i++)
        for (size_t j = i; j > 0 && strcmp(names[j - 1], names[j]) > 0; j--) {
            char *t = names[j];
            names[j] = names[j - 1];
            names[j - 1] = t;
        }
    *out = calloc(n ? n : 1, sizeof **out);
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        char path[4096];
        snprintf(path, sizeof path, "%s/%s", dir, names[i]);
        if (read_file(path, &(*out)[k]) == 0)
            k++;
        free(names[i]);
    }
    free(names);
    return k;
}

static size_t load_dict(const char *path, blob **out)
{
    FILE *f = fopen(path, "r");
    size_t n = 0;
    *out = NULL;
    if (!f)
        return 0;
    char line[512];
    while (fgets(line, sizeof line, f)) {
        /* libFuzzer dictionary lines: name="value" or "value"; \\ \" \xNN escapes */
        char *q = strchr(line, '"');
        char *r = q ? strrchr(line, '"') : NULL;
        if (!q || r == q || line[0] == '#')
            continue;
        blob b = {malloc((size_t)(r - q)), 0};
        for (char *p = q + 1; p < r; p++) {
            if (*p == '\\' && p + 1 < r && p[1] == 'x' && p + 3 < r) {
                char hex[3] = {p[2], p[3], 0};
                b.d[b.n++] = (unsigned char)strtol(hex, NULL, 16);
                p += 3;
            } else if (*p == '\\' && p + 1 < r) {
                b.d[b.n++] = (unsigned char)*++p;
            } else {
                b.d[b.n++] = (unsigned char)*p;
            }
        }
        *out = realloc(*out, (n + 1) * sizeof **out);
        (*out)[n++] = b;
    }
    fclose(f);
    return n;
}

static void mutate(unsigned char *d, size_t *n, const blob *seeds, size_t nseeds,
                   const blob *dict, size_t ndict)
{
    static const int64_t interesting[] = {0, 1, -1, 2, 7, 8, 16, 64, 127, 128, 255, 256, 1024,
                                          4096, 65535, 65536, INT32_MAX, INT32_MIN,
                                          (int64_t)1 << 40, ((int64_t)1 << 40) + 1, INT64_MAX,
                                          INT64_MIN};
    int rounds = 1 + (int)below(8);
    for (int r = 0; r < rounds; r++) {
        size_t pos = below(*n + 1);
        switch (below(9)) {
        case 0: /* flip a bit */
            if (*n)
                d[below(*n)] ^= (unsigned char)(1u << below(8));
            break;
        case 1: /* an interesting byte */
            if (*n)
                d[below(*n)] = (unsigned char)interesting[below(11)];
            break;
        case 2: /* an interesting 2/4/8-byte integer, native order */
        {
            size_t w = (size_t)1 << (1 + below(3));
            int64_t v = interesting[below(sizeof interesting / sizeof *interesting)];
            if (*n >= w) {
                size_t at = below(*n - w + 1);
                memcpy(d + at, &v, w);
            }
            break;
        }
        case 3: /* erase a block */
            if (*n) {
                size_t len = 1 + below(*n - pos < 16 ? (*n - pos ? *n - pos : 1) : 16);
                if (pos + len <= *n) {
                    memmove(d + pos, d + pos + len, *n - pos - len);
                    *n -= len;
                }
            }
            break;
        case 4: /* insert random bytes */
        {
            size_t len = 1 + below(8);
            if (*n + len <= MAXLEN) {
                memmove(d + pos + len, d + pos, *n - pos);
                for (size_t k = 0; k < len; k++)
                    d[pos + k] = (unsigned char)rnd();
                *n += len;
            }
            break;
        }
        case 5: /* copy a block inside the input */
            if (*n > 1) {
                size_t from = below(*n), len = 1 + below(*n - from);
                size_t to = below(*n);
                if (to + len > *n)
                    len = *n - to;
                memmove(d + to, d + from, len);
            }
            break;
        case 6:
        case 7: /* insert or overwrite with a dictionary token */
            if (ndict) {
                const blob *t = &dict[below(ndict)];
                if (below(2) && pos + t->n <= *n) {
                    memcpy(d + pos, t->d, t->n);
                } else if (*n + t->n <= MAXLEN) {
                    memmove(d + pos + t->n, d + pos, *n - pos);
                    memcpy(d + pos, t->d, t->n);
                    *n += t->n;
                }
            }
            break;
        default: /* splice: a prefix of this input, a suffix of a seed */
            if (nseeds) {
                const blob *s = &seeds[below(nseeds)];
                size_t from = below(s->n + 1);
                size_t len = s->n - from;
                if (pos + len > MAXLEN)
                    len = MAXLEN - pos;
                memcpy(d + pos, s->d + from, len);
                *n = pos + len;
            }
            break;
        }
    }
}

int main(int argc, char **argv)
{
    char *end = NULL;
    long long iters = argc >= 4 ? strtoll(argv[1], &end, 10) : -1;
    if (argc < 4 || !end || *end || iters < 0) {
        /* replay */
        if (argc < 2) {
            fprintf(stderr, "usage: %s ITERATIONS SEED CORPUS_DIR [DICT] | %s FILE...\n",
                    argv[0], argv[0]);
            return 2;
        }
        for (int i = 1; i < argc; i++) {
            blob b;
            if (read_file(argv[i], &b) != 0) {
                fprintf(stderr, "%s: %s\n", argv[i], strerror(errno));
                return 2;
            }
            LLVMFuzzerTestOneInput(b.d, b.n);
            free(b.d);
        }
        return 0;
    }
    rng_state = strtoull(argv[2], NULL, 10) * 2654435761u + 88172645463325252ull;
    blob *seeds = NULL, *dict = NULL;
    size_t nseeds = load_dir(argv[3], &seeds);
    size_t ndict = argc >= 5 ? load_dict(argv[4], &dict) : 0;
    for (size_t i = 0; i < nseeds; i++)
        LLVMFuzzerTestOneInput(seeds[i].d, seeds[i].n);
    unsigned char *d = malloc(MAXLEN);
    const char *save = getenv("FUZZ_SAVE_INPUT"); /* the current input, for a crash */
    for (long long it = 0; it < iters; it++) {
        size_t n = 0;
        if (nseeds) {
            const blob *s = &seeds[below(nseeds)];
            memcpy(d, s->d, s->n);
            n = s->n;
        }
        mutate(d, &n, seeds, nseeds, dict, ndict);
        if (save) {
            FILE *f = fopen(save, "wb");
            if (f) {
                fwrite(d, 1, n, f);
                fclose(f);
            }
        }
        LLVMFuzzerTestOneInput(d, n);
    }
    printf("%s: %zu seeds and %lld mutated inputs, no invariant failed\n", argv[0], nseeds, iters);
    free(d);
    for (size_t i = 0; i < nseeds; i++)
        free(seeds[i].d);
    for (size_t i = 0; i < ndict; i++)
        free(dict[i].d);
    free(seeds);
    free(dict);
    return 0;
}
