/* Wavefront output files (written under a temporary name, renamed when complete; stale
 * temporaries of killed runs found and removed) and the creation of a generated matrix. */
#include <dirent.h>
#include <pthread.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "wavefront/wf_bandio.h"

#define ERR(...) snprintf(err, errlen, __VA_ARGS__)

/* ---- output files (temporary name, renamed when complete) --------------------------- */

static void wf_sig_set(sigset_t *s)
{
    sigemptyset(s);
    sigaddset(s, SIGINT);
    sigaddset(s, SIGTERM);
    sigaddset(s, SIGHUP);
}

void wf_sig_hold(wf_sighold *g)
{
    sigset_t s;
    wf_sig_set(&s);
    pthread_sigmask(SIG_BLOCK, &s, &g->old);
}

int wf_sig_pending(void)
{
    sigset_t p;
    if (sigpending(&p) != 0)
        return 0;
    const int sigs[] = {SIGINT, SIGTERM, SIGHUP};
    for (size_t i = 0; i < sizeof sigs / sizeof sigs[0]; i++) {
        struct sigaction sa;
        /* a signal this process ignores (nohup, a background job's SIGINT) stops nothing */
        if (sigismember(&p, sigs[i]) == 1 && sigaction(sigs[i], NULL, &sa) == 0 &&
            sa.sa_handler != SIG_IGN)
            return 1;
    }
    return 0;
}

void wf_sig_release(const wf_sighold *g)
{
    pthread_sigmask(SIG_SETMASK, &g->old, NULL);
}

/* `name` is `base` + ".tmp." + a pid (decimal, > 0): returns the pid, else 0. */
static long temp_pid(const char *name, const char *base)
{
    size_t bl = strlen(base);
    if (strncmp(name, base, bl) != 0 || strncmp(name + bl, ".tmp.", 5) != 0)
        return 0;
    const char *p = name + bl + 5;
    if (!*p || strlen(p) > 9)
        return 0;
    long v = 0;
    for (; *p; p++) {
        if (*p < '0' || *p > '9')
            return 0;
        v = v * 10 + (*p - '0');
    }
    return v;
}

int mpilab_wf_stale_temps(const char *out, int remove, char *list, size_t listlen, char *err,
                          size_t errlen)
{
    char dir[4096], base[4096];
    const char *slash = strrchr(out, '/');
    if (slash) {
        snprintf(dir, sizeof dir, "%.*s", (int)(slash - out) ? (int)(slash - out) : 1, out);
        snprintf(base, sizeof base, "%s", slash + 1);
    } else {
        snprintf(dir, sizeof dir, ".");
        snprintf(base, sizeof base, "%s", out);
    }
    if (list && listlen)
        list[0] = '\0';
    DIR *d = opendir(dir);
    if (!d) {
        if (errno == ENOENT)
            return 0;
        ERR("%s: cannot list: %s", dir, strerror(errno));
        return -1;
    }
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        long pid = temp_pid(e->d_name, base);
        if (pid <= 0 || pid == (long)getpid())
            continue;
        /* the process that writes it still runs: not stale */
        if (kill((pid_t)pid, 0) == 0 || errno != ESRCH)
            continue;
        char path[8300];
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        struct stat sb;
        if (lstat(path, &sb) != 0 || !S_ISREG(sb.st_mode))
            continue;
        if (remove && unlink(path) != 0) {
            ERR("%s: cannot remove stale temporary file: %s", path, strerror(errno));
            closedir(d);
            return -1;
        }
        n++;
        if (list && listlen) {
            size_t l = strlen(list);
            snprintf(list + l, listlen - l, "%s\n", path);
        }
    }
    closedir(d);
    return n;
}

int wf_out_create(wf_outfile *o, const char *path, const wf_hdr *h, char *err, size_t errlen)
{
    /* written to PATH.tmp.PID and renamed: only onto a regular file or a new name (a
       FIFO, a device such as /dev/null, or a directory would be replaced or fail late) */
    struct stat pst;
    if (stat(path, &pst) == 0 && !S_ISREG(pst.st_mode)) {
        ERR("%s: %s, expected a matrix file (a regular file)", path,
            S_ISDIR(pst.st_mode) ? "is a directory" : "is not a regular file");
        return -1;
    }
    /* temporary files of an earlier run of ours that was killed are removed first */
    if (mpilab_wf_stale_temps(path, 1, NULL, 0, err, errlen) < 0)
        return -1;
    snprintf(o->path, sizeof o->path, "%s", path);
    snprintf(o->tmp, sizeof o->tmp, "%s.tmp.%ld", path, (long)getpid());
    o->h = *h;
    o->fd = open(o->tmp, O_RDWR | O_CREAT | O_TRUNC, 0644);
    if (o->fd < 0) {
        ERR("%s: cannot create: %s", o->tmp, strerror(errno));
        return -1;
    }
    unsigned char hdr[WF_HDR_BYTES];
    memset(hdr, 0, sizeof hdr);
    memcpy(hdr, h, sizeof *h);
    if (wf_pwrite_full(o->fd, hdr, sizeof hdr, 0, o->tmp, err, errlen))
        return -1;
    return 0;
}

static int wf_out_finish(wf_outfile *o, char *err, size_t errlen)
{
    struct stat sb;
    if (fstat(o->fd, &sb) != 0 || (uint64_t)sb.st_size != WF_HDR_BYTES + o->h.payload) {
        ERR("%s: internal error: output size mismatch", o->tmp);
        return -1;
    }
    if (fdatasync(o->fd) != 0) {
        ERR("%s: sync failed: %s", o->tmp, strerror(errno));
        return -1;
    }
    return 0;
}

void wf_out_abort(wf_outfile *o, int n)
{
    for (int i = 0; i < n; i++) {
        if (o[i].fd >= 0)
            close(o[i].fd);
        o[i].fd = -1;
        unlink(o[i].tmp);
    }
}

int wf_out_commit(wf_outfile *o, int n, char *err, size_t errlen)
{
    for (int i = 0; i < n; i++)
        if (wf_out_finish(&o[i], err, errlen)) {
            wf_out_abort(o, n);
            return -1;
        }
    if (wf_sig_pending()) { /* last look before the renames (the sync takes a while) */
        ERR("interrupted: no output written");
        wf_out_abort(o, n);
        return -1;
    }
    for (int i = 0; i < n; i++) {
        close(o[i].fd);
        o[i].fd = -1;
        if (rename(o[i].tmp, o[i].path) != 0) {
            ERR("%s: cannot rename into place: %s", o[i].path, strerror(errno));
            wf_out_abort(o, n);
            return -1;
        }
    }
    return 0;
}

void wf_fill_hdr(wf_hdr *h, int layout, int64_t planes, int64_t rows, int64_t cols,
                 int64_t row0, int64_t total, int64_t mb, int64_t nb, int64_t t)
{
    memset(h, 0, sizeof *h);
    memcpy(h->magic, WF_MAGIC, 8);
    h->version = WF_VERSION;
    h->layout = (uint32_t)layout;
    h->elem = WF_ELEM_F64;
    h->planes = (uint32_t)planes;
    h->rows = (uint64_t)rows;
    h->cols = (uint64_t)cols;
    h->row0 = (uint64_t)row0;
    h->total_rows = (uint64_t)total;
    const wf_layout *l = wf_layout_get(layout);
    if (l->blocked) {
        h->mb = (uint64_t)mb;
        h->nb = (uint64_t)nb;
    }
    h->t = l->uses_t ? (uint64_t)t : 0;
    h->payload = (uint64_t)mpilab_wf_payload_bytes(layout, rows, cols, mb, nb, t, planes);
}

/* ---- create ------------------------------------------------------------------------- */

static uint64_t mix64(uint64_t z)
{
    z += 0x9e3779b97f4a7c15ULL;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

static double gen_value(uint64_t seed, int plane, int64_t r, int64_t c)
{
    uint64_t x = mix64(seed ^ mix64((uint64_t)plane * 0x100000001b3ULL ^ mix64((uint64_t)r) ^
                                    ((uint64_t)c << 1)));
    double u = (double)(x >> 11) * (1.0 / 9007199254740992.0); /* [0, 1) */
    if (plane == 0)
        return u;                /* data */
    if (plane <= 4)
        return 0.2 * u;          /* zb zu zv zr: weights summing below 0.8 */
    return u - 0.5;              /* zz */
}

static int wf_create(const char *data_path, const char *coef_path, int64_t rows, int64_t cols,
                     uint64_t seed, char *err, size_t errlen)
{
    if (rows < 3 || cols < 3) {
        ERR("matrix %lldx%lld: need at least 3x3 (interior points)", (long long)rows,
            (long long)cols);
        return -1;
    }
    if (mpilab_wf_payload_bytes(MPILAB_WF_ROWMAJOR, rows, cols, 0, 0, 0, 5) < 0) {
        ERR("matrix %lldx%lld: too large", (long long)rows, (long long)cols);
        return -1;
    }
    wf_outfile o[2];
    wf_hdr hd, hc;
    wf_fill_hdr(&hd, MPILAB_WF_ROWMAJOR, 1, rows, cols, 0, rows, 0, 0, 0);
    wf_fill_hdr(&hc, MPILAB_WF_ROWMAJOR, 5, rows, cols, 0, rows, 0, 0, 0);
    o[0].fd = o[1].fd = -1;
    if (wf_out_create(&o[0], data_path, &hd, err, errlen)) {
        wf_out_abort(o, 1);
        return -1;
    }
    if (wf_out_create(&o[1], coef_path, &hc, err, errlen)) {
        wf_out_abort(o, 2);
        return -1;
    }
    int64_t chunk = (4 << 20) / (cols * 8);
    if (chunk < 1)
        chunk = 1;
    double *buf = malloc((size_t)(chunk * cols) * 8);
    if (!buf) {
        ERR("out of memory");
        wf_out_abort(o, 2);
        return -1;
    }
    int rc = 0;
    for (int plane = 0; plane < 6 && !rc; plane++) {
        wf_outfile *op = plane == 0 ? &o[0] : &o[1];
        int p = plane == 0 ? 0 : plane - 1;
        for (int64_t r = 0; r < rows && !rc; r += chunk) {
            if (wf_sig_pending()) {
                ERR("interrupted: no output written");
                rc = -1;
                break;
            }
            int64_t h = rows - r < chunk ? rows - r : chunk;
            for (int64_t i = 0; i < h; i++)
                for (int64_t c = 0; c < cols; c++)
                    buf[i * cols + c] = gen_value(seed, plane, r + i, c);
            rc = wf_pwrite_full(op->fd, buf, (size_t)(h * cols) * 8, wf_rowmajor_off(&op->h, p, r, 0), op->tmp,
                             err, errlen);
        }
    }
    free(buf);
    if (rc) {
        wf_out_abort(o, 2);
        return -1;
    }
    return wf_out_commit(o, 2, err, errlen);
}

int mpilab_wf_create(const char *data_path, const char *coef_path, int64_t rows, int64_t cols,
                     uint64_t seed, char *err, size_t errlen)
{
    wf_sighold g;
    wf_sig_hold(&g);
    int rc = wf_create(data_path, coef_path, rows, cols, seed, err, errlen);
    wf_sig_release(&g); /* a signal held meanwhile acts now, the temporaries gone */
    return rc;
}
