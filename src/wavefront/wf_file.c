/* Wavefront matrix files: header, layouts, block and frontier I/O, creation,
 * pre/post-processing (layout conversion) and loading. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "wavefront/wf_internal.h"

#define ERR(...) snprintf(err, errlen, __VA_ARGS__)

int mpilab_wf_io_parse(const char *name)
{
    if (!name)
        return -1;
    if (!strcmp(name, "pread"))
        return MPILAB_WF_IO_PREAD;
    if (!strcmp(name, "mmap"))
        return MPILAB_WF_IO_MMAP;
    if (!strcmp(name, "uring") || !strcmp(name, "io_uring"))
        return MPILAB_WF_IO_URING;
    if (!strcmp(name, "direct") || !strcmp(name, "odirect"))
        return MPILAB_WF_IO_DIRECT;
    if (!strcmp(name, "auto"))
        return MPILAB_WF_IO_AUTO;
    return -1;
}

const char *mpilab_wf_io_name(int io)
{
    switch (io) {
    case MPILAB_WF_IO_PREAD: return "pread";
    case MPILAB_WF_IO_MMAP: return "mmap";
    case MPILAB_WF_IO_URING: return "uring";
    case MPILAB_WF_IO_AUTO: return "auto";
    case MPILAB_WF_IO_DIRECT: return "direct";
    default: return "?";
    }
}

int mpilab_wf_chain_parse(const char *name)
{
    if (!name)
        return -1;
    if (!strcmp(name, "band"))
        return MPILAB_WF_CHAIN_BAND;
    if (!strcmp(name, "block"))
        return MPILAB_WF_CHAIN_BLOCK;
    return -1;
}

const char *mpilab_wf_chain_name(int chain)
{
    switch (chain) {
    case MPILAB_WF_CHAIN_BAND: return "band";
    case MPILAB_WF_CHAIN_BLOCK: return "block";
    default: return "?";
    }
}

uint64_t mpilab_wf_checksum(const double *v, size_t n)
{
    const unsigned char *p = (const unsigned char *)v;
    uint64_t h = 1469598103934665603ULL;
    for (size_t i = 0; i < n * sizeof(double); i++) {
        h ^= p[i];
        h *= 1099511628211ULL;
    }
    return h;
}

/* ---- geometry ---------------------------------------------------------------------- */

static int64_t cdiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

static int64_t extra_per_block(int layout, int64_t t)
{
    const wf_layout *l = wf_layout_get(layout);
    return l ? l->extra(t) : 0;
}

/* Byte alignment of a file's block records (1: packed): the layout's, in files of format
 * version 2 and later; version-1 files (packed records) are still read as they are. */
static int64_t rec_align(const wf_layout *l, uint32_t version)
{
    return l && l->rec_align > 1 && version >= WF_VERSION_PADDED ? l->rec_align : 1;
}

/* Bytes of the record of an h x w block of `pl` planes, its padding included. */
static int64_t rec_bytes(int64_t h, int64_t w, int64_t ex, int64_t pl, int64_t al)
{
    int64_t b = (h * w + ex) * pl * 8;
    return (b + al - 1) / al * al;
}

int64_t wf_nblockrows(const wf_hdr *h) { return cdiv((int64_t)h->rows, (int64_t)h->mb); }
int64_t wf_nblockcols(const wf_hdr *h) { return cdiv((int64_t)h->cols, (int64_t)h->nb); }

int64_t wf_block_h(const wf_hdr *h, int64_t br)
{
    int64_t r = (int64_t)h->rows - br * (int64_t)h->mb;
    return r < (int64_t)h->mb ? r : (int64_t)h->mb;
}

int64_t wf_block_w(const wf_hdr *h, int64_t bc)
{
    int64_t c = (int64_t)h->cols - bc * (int64_t)h->nb;
    return c < (int64_t)h->nb ? c : (int64_t)h->nb;
}

off_t wf_block_off(const wf_hdr *h, int64_t br, int64_t bc)
{
    const wf_layout *l = wf_layout_get((int)h->layout);
    int64_t ex = extra_per_block((int)h->layout, (int64_t)h->t), al = rec_align(l, h->version);
    int64_t pl = (int64_t)h->planes, mb = (int64_t)h->mb, nb = (int64_t)h->nb;
    int64_t bcs = wf_nblockcols(h);
    /* a full block row: bcs - 1 full-width records and the last (maybe narrower) one */
    int64_t row = (bcs - 1) * rec_bytes(mb, nb, ex, pl, al) +
                  rec_bytes(mb, wf_block_w(h, bcs - 1), ex, pl, al);
    return (off_t)WF_HDR_BYTES +
           (off_t)(br * row + bc * rec_bytes(wf_block_h(h, br), nb, ex, pl, al));
}

/* data bytes of block (br, bc), without the record's padding */
size_t wf_block_bytes(const wf_hdr *h, int64_t br, int64_t bc)
{
    int64_t ex = extra_per_block((int)h->layout, (int64_t)h->t);
    return (size_t)((wf_block_h(h, br) * wf_block_w(h, bc) + ex) * (int64_t)h->planes * 8);
}

/* Check the blocking; returns NULL if fine, else a static reason. */
static const char *check_blocking(int layout, int64_t rows, int64_t cols, int64_t mb, int64_t nb,
                                  int64_t t)
{
    const wf_layout *l = wf_layout_get(layout);
    if (!l)
        return "unknown layout";
    return l->blocked ? l->check(rows, cols, mb, nb, t) : NULL;
}

static int64_t payload_bytes(int layout, int64_t rows, int64_t cols, int64_t mb, int64_t nb,
                             int64_t t, int64_t planes, uint32_t version)
{
    const wf_layout *l = wf_layout_get(layout);
    if (rows < 1 || cols < 1 || planes < 1 || !l)
        return -1;
    if (check_blocking(layout, rows, cols, mb, nb, t))
        return -1;
    if (rows > INT64_MAX / 8 / planes / cols)
        return -1;
    int64_t el = rows * cols;
    if (!l->blocked)
        return el * planes * 8;
    /* t <= min(mb, nb) / 2 here (or unused), so the extra is at most a block's size */
    int64_t ex = l->extra(t), nbr = cdiv(rows, mb), nbc = cdiv(cols, nb), nblk = nbr * nbc;
    if (ex < 0 || (ex > 0 && nblk > (INT64_MAX / 8 / planes - el) / ex))
        return -1;
    el += nblk * ex;
    int64_t al = rec_align(l, version), bytes = el * planes * 8;
    if (al == 1)
        return bytes;
    if (nblk > (INT64_MAX - bytes) / al) /* each record gains less than al bytes */
        return -1;
    int64_t hl = rows - (nbr - 1) * mb, wl = cols - (nbc - 1) * nb;
    int64_t row = (nbc - 1) * rec_bytes(mb, nb, ex, planes, al) +
                  rec_bytes(mb, wl, ex, planes, al);
    return (nbr - 1) * row + (nbc - 1) * rec_bytes(hl, nb, ex, planes, al) +
           rec_bytes(hl, wl, ex, planes, al);
}

/* the payload of a file of the current format version */
int64_t mpilab_wf_payload_bytes(int layout, int64_t rows, int64_t cols, int64_t mb, int64_t nb,
                                int64_t t, int64_t planes)
{
    return payload_bytes(layout, rows, cols, mb, nb, t, planes, WF_VERSION);
}

/* ---- open / raw I/O ----------------------------------------------------------------- */

int wf_open(wf_file *f, const char *path, int writable, int io, char *err, size_t errlen)
{
    memset(f, 0, sizeof *f);
    f->fd = -1;
    snprintf(f->path, sizeof f->path, "%s", path);
    f->io = io;
    f->writable = writable;
    int fd = open(path, writable ? O_RDWR : O_RDONLY);
    if (fd < 0) {
        ERR("%s: cannot open: %s", path, strerror(errno));
        return -1;
    }
    struct stat sb;
    if (fstat(fd, &sb) != 0 || !S_ISREG(sb.st_mode)) {
        ERR("%s: not a regular file", path);
        close(fd);
        return -1;
    }
    wf_hdr *h = &f->h;
    ssize_t n = pread(fd, h, sizeof *h, 0);
    if (n < (ssize_t)sizeof *h || memcmp(h->magic, WF_MAGIC, 8) != 0) {
        ERR("%s: not an mpilab wavefront matrix file (bad magic or shorter than the header)",
            path);
        close(fd);
        return -1;
    }
    const char *why = NULL;
    if (h->version != WF_VERSION && h->version != 1) /* 1: packed records, still read */
        why = "unsupported format version";
    else if (h->elem != WF_ELEM_F64)
        why = "unsupported element type";
    else if (!(f->lay = wf_layout_get((int)h->layout)))
        why = "unknown layout";
    else if (h->planes != 1 && h->planes != 5)
        why = "plane count must be 1 (data) or 5 (coefficients)";
    else if (wf_layout_for_planes((int)h->layout, h->planes) != (int)h->layout)
        why = "coefficient files cannot use this layout";
    else if (h->state != WF_STATE_CLEAN && h->state != WF_STATE_RUNNING)
        why = "bad run-state marker";
    else if (h->t > 1024 || (f->lay->uses_t ? h->t < 1 : h->t != 0))
        why = "bad frontier thickness for this layout";
    else if (!f->lay->blocked && (h->mb != 0 || h->nb != 0))
        why = "blocking set in a row-major header";
    else if (h->rows < 1 || h->cols < 1 || h->rows > (1ULL << 40) || h->cols > (1ULL << 40) ||
             h->total_rows < h->rows || h->row0 > h->total_rows - h->rows)
        why = "bad matrix dimensions";
    else if (f->lay->blocked && (h->mb < 1 || h->nb < 1 || h->mb > h->rows || h->nb > h->cols))
        why = "bad blocking";
    else if (f->lay->blocked && h->row0 % h->mb != 0)
        why = "band does not start at a block-row boundary";
    if (!why && f->lay->blocked)
        why = check_blocking((int)h->layout, (int64_t)h->rows, (int64_t)h->cols, (int64_t)h->mb,
                             (int64_t)h->nb, (int64_t)h->t);
    if (why) {
        ERR("%s: %s", path, why);
        close(fd);
        return -1;
    }
    int64_t pay = payload_bytes((int)h->layout, (int64_t)h->rows, (int64_t)h->cols,
                                (int64_t)h->mb, (int64_t)h->nb, (int64_t)h->t,
                                (int64_t)h->planes, h->version);
    if (pay < 0 || (uint64_t)pay != h->payload) {
        ERR("%s: header payload size inconsistent with its geometry", path);
        close(fd);
        return -1;
    }
    if ((uint64_t)sb.st_size != WF_HDR_BYTES + h->payload) {
        ERR("%s: %s (%lld bytes, expected %llu for a %llux%llu %s matrix)", path,
            (uint64_t)sb.st_size < WF_HDR_BYTES + h->payload ? "truncated" : "wrong size",
            (long long)sb.st_size, (unsigned long long)(WF_HDR_BYTES + h->payload),
            (unsigned long long)h->rows, (unsigned long long)h->cols,
            mpilab_wf_layout_name((int)h->layout));
        close(fd);
        return -1;
    }
    f->fd = fd;
    if (!(f->ops = wf_io_ops_get(io))) {
        ERR("%s: unknown I/O back end", path);
        wf_close(f);
        return -1;
    }
    if (f->ops->open_flags) {
        int fl = fcntl(fd, F_GETFL);
        if (fl < 0 || fcntl(fd, F_SETFL, fl | f->ops->open_flags) != 0) {
            ERR("%s: cannot use %s I/O on this file system: %s", path, mpilab_wf_io_name(io),
                strerror(errno));
            wf_close(f);
            return -1;
        }
    }
    if (pthread_mutex_init(&f->wmu, NULL) != 0) {
        ERR("%s: cannot create a mutex", path);
        wf_close(f);
        return -1;
    }
    f->wmu_ok = 1;
    if (io == MPILAB_WF_IO_MMAP) {
        f->maplen = (size_t)sb.st_size;
        void *m = mmap(NULL, f->maplen, PROT_READ | (writable ? PROT_WRITE : 0), MAP_SHARED, fd,
                       0);
        if (m == MAP_FAILED) {
            ERR("%s: mmap failed: %s", path, strerror(errno));
            wf_close(f);
            return -1;
        }
        f->map = m;
    }
    return 0;
}

void wf_close(wf_file *f)
{
    if (f->map)
        munmap(f->map, f->maplen);
    f->map = NULL;
    if (f->fd >= 0)
        close(f->fd);
    f->fd = -1;
    if (f->wmu_ok)
        pthread_mutex_destroy(&f->wmu);
    f->wmu_ok = 0;
}

int wf_read(wf_file *f, void *dst, size_t len, off_t off, wf_ctr *ctr, char *err, size_t errlen)
{
    if (ctr) {
        ctr->bytes += (int64_t)len;
        ctr->reqs++;
    }
    return f->ops->read(f, dst, len, off, err, errlen);
}

int wf_write(wf_file *f, const void *src, size_t len, off_t off, wf_ctr *ctr, char *err,
             size_t errlen)
{
    if (ctr) {
        ctr->bytes += (int64_t)len;
        ctr->reqs++;
    }
    return f->ops->write(f, src, len, off, err, errlen);
}

int wf_write_header(wf_file *f, char *err, size_t errlen)
{
    unsigned char hdr[WF_HDR_BYTES];
    memset(hdr, 0, sizeof hdr);
    memcpy(hdr, &f->h, sizeof f->h);
    if (wf_write(f, hdr, sizeof hdr, 0, NULL, err, errlen))
        return -1;
    if (f->map && msync(f->map, WF_HDR_BYTES, MS_SYNC) != 0) {
        ERR("%s: msync failed: %s", f->path, strerror(errno));
        return -1;
    }
    if (fdatasync(f->fd) != 0) {
        ERR("%s: fdatasync failed: %s", f->path, strerror(errno));
        return -1;
    }
    return 0;
}

static long page_size(void)
{
    static long ps;
    if (!ps)
        ps = sysconf(_SC_PAGESIZE);
    return ps;
}

void wf_willneed(wf_file *f, off_t off, size_t len)
{
    if (len == 0 || !f->ops->hints)
        return;
    if (f->map) {
        off_t a = off & ~(off_t)(page_size() - 1);
        posix_madvise(f->map + a, len + (size_t)(off - a), POSIX_MADV_WILLNEED);
    } else {
        posix_fadvise(f->fd, off, (off_t)len, POSIX_FADV_WILLNEED);
    }
}

void wf_done(wf_file *f, off_t off, size_t len, int dirty)
{
    if (len == 0 || !f->ops->hints)
        return;
    if (f->map) {
        /* Unmap the pages fully inside the range from this process (the data stays in the
         * page cache, dirty pages are written back by the kernel): keeps RSS at the blocks
         * in flight. glibc's posix_madvise ignores DONTNEED, so use madvise. */
        off_t ps = page_size();
        off_t a = (off + ps - 1) & ~(ps - 1), b = (off + (off_t)len) & ~(ps - 1);
        if (b > a)
            madvise(f->map + a, (size_t)(b - a), MADV_DONTNEED);
    }
    if (dirty)
        sync_file_range(f->fd, off, (off_t)len, SYNC_FILE_RANGE_WRITE);
    posix_fadvise(f->fd, off, (off_t)len, POSIX_FADV_DONTNEED);
}

/* ---- block I/O (the layouts are in wf_layout_*.c) ----------------------------------- */

size_t wf_scratch_doubles(const wf_hdr *h, int64_t mb, int64_t nb)
{
    int64_t t = h->t ? (int64_t)h->t : 1;
    /* a block of all planes with its frontier copies, plus (optimized layout) the next
     * block's top and left frontiers read with it */
    const wf_layout *l = wf_layout_get((int)h->layout);
    int64_t pad = l && l->rec_align > 1 ? l->rec_align / 8 : 0; /* the record's padding */
    int64_t a = mb * nb * (int64_t)h->planes + 4 * t * t + pad + t * nb + mb * t;
    int64_t b = mb * t;
    return (size_t)(a > b ? a : b);
}

/* ---- output files (temporary name, renamed when complete) --------------------------- */

typedef struct {
    char path[4096], tmp[4200];
    int fd;
    wf_hdr h;
} outfile;

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

static int out_create(outfile *o, const char *path, const wf_hdr *h, char *err, size_t errlen)
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

static int out_finish(outfile *o, char *err, size_t errlen)
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

static void out_abort(outfile *o, int n)
{
    for (int i = 0; i < n; i++) {
        if (o[i].fd >= 0)
            close(o[i].fd);
        o[i].fd = -1;
        unlink(o[i].tmp);
    }
}

static int out_commit(outfile *o, int n, char *err, size_t errlen)
{
    for (int i = 0; i < n; i++)
        if (out_finish(&o[i], err, errlen)) {
            out_abort(o, n);
            return -1;
        }
    for (int i = 0; i < n; i++) {
        close(o[i].fd);
        o[i].fd = -1;
        if (rename(o[i].tmp, o[i].path) != 0) {
            ERR("%s: cannot rename into place: %s", o[i].path, strerror(errno));
            out_abort(o, n);
            return -1;
        }
    }
    return 0;
}

static void fill_hdr(wf_hdr *h, int layout, int64_t planes, int64_t rows, int64_t cols,
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

int mpilab_wf_create(const char *data_path, const char *coef_path, int64_t rows, int64_t cols,
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
    outfile o[2];
    wf_hdr hd, hc;
    fill_hdr(&hd, MPILAB_WF_ROWMAJOR, 1, rows, cols, 0, rows, 0, 0, 0);
    fill_hdr(&hc, MPILAB_WF_ROWMAJOR, 5, rows, cols, 0, rows, 0, 0, 0);
    o[0].fd = o[1].fd = -1;
    if (out_create(&o[0], data_path, &hd, err, errlen)) {
        out_abort(o, 1);
        return -1;
    }
    if (out_create(&o[1], coef_path, &hc, err, errlen)) {
        out_abort(o, 2);
        return -1;
    }
    int64_t chunk = (4 << 20) / (cols * 8);
    if (chunk < 1)
        chunk = 1;
    double *buf = malloc((size_t)(chunk * cols) * 8);
    if (!buf) {
        ERR("out of memory");
        out_abort(o, 2);
        return -1;
    }
    int rc = 0;
    for (int plane = 0; plane < 6 && !rc; plane++) {
        outfile *op = plane == 0 ? &o[0] : &o[1];
        int p = plane == 0 ? 0 : plane - 1;
        for (int64_t r = 0; r < rows && !rc; r += chunk) {
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
        out_abort(o, 2);
        return -1;
    }
    return out_commit(o, 2, err, errlen);
}

/* ---- sources: one matrix stored as band files --------------------------------------- */

typedef struct {
    wf_file *f;
    int n;
    int64_t rows, cols, planes;
    int layout;
    uint64_t iters_done;
} source;

static void src_close(source *s)
{
    for (int i = 0; i < s->n; i++)
        wf_close(&s->f[i]);
    free(s->f);
    s->f = NULL;
}

static int src_open(source *s, const char *const *in, int nin, char *err, size_t errlen)
{
    memset(s, 0, sizeof *s);
    if (nin < 1) {
        ERR("no input file");
        return -1;
    }
    s->f = calloc((size_t)nin, sizeof *s->f);
    if (!s->f) {
        ERR("out of memory");
        return -1;
    }
    for (int i = 0; i < nin; i++) {
        if (wf_open(&s->f[i], in[i], 0, MPILAB_WF_IO_PREAD, err, errlen)) {
            src_close(s);
            return -1;
        }
        s->n = i + 1;
        const wf_hdr *a = &s->f[0].h, *b = &s->f[i].h;
        uint64_t expect0 = i ? s->f[i - 1].h.row0 + s->f[i - 1].h.rows : 0;
        if (b->row0 != expect0 || b->layout != a->layout || b->planes != a->planes ||
            b->cols != a->cols || b->total_rows != a->total_rows || b->mb != a->mb ||
            b->nb != a->nb || b->t != a->t || b->iters_done != a->iters_done) {
            ERR("%s: band does not continue %s (rows %llu.., layout, blocking or iterations "
                "differ)", in[i], i ? in[i - 1] : "the matrix", (unsigned long long)b->row0);
            src_close(s);
            return -1;
        }
        if (b->state == WF_STATE_RUNNING) {
            ERR("%s: an in-place run of iterations %llu.. was interrupted: the file holds a mix "
                "of iterations (make it again from the initial matrix)",
                in[i], (unsigned long long)b->iters_done);
            src_close(s);
            return -1;
        }
    }
    const wf_hdr *last = &s->f[nin - 1].h;
    if (last->row0 + last->rows != last->total_rows) {
        ERR("%s: bands end at row %llu of %llu (missing band files?)", in[nin - 1],
            (unsigned long long)(last->row0 + last->rows), (unsigned long long)last->total_rows);
        src_close(s);
        return -1;
    }
    s->rows = (int64_t)last->total_rows;
    s->cols = (int64_t)last->cols;
    s->planes = (int64_t)last->planes;
    s->layout = (int)last->layout;
    s->iters_done = last->iters_done;
    return 0;
}

/* Strip callback: rows [r, r+h) of all planes in buf (plane-major, row stride cols). */
typedef int (*strip_fn)(void *ctx, int64_t r, int64_t h, const double *buf, char *err,
                        size_t errlen);

/* Read a row-major source rows [r, r+h) into buf (plane-major). */
static int src_read_rows(source *s, int64_t r, int64_t h, double *buf, char *err, size_t errlen)
{
    for (int64_t p = 0; p < s->planes; p++) {
        int64_t done = 0;
        for (int i = 0; i < s->n && done < h; i++) {
            const wf_hdr *fh = &s->f[i].h;
            int64_t a = (int64_t)fh->row0, b = a + (int64_t)fh->rows;
            int64_t lo = r + done;
            if (lo < a || lo >= b)
                continue;
            int64_t cnt = (r + h < b ? r + h : b) - lo;
            if (wf_read(&s->f[i], buf + (size_t)(p * h + done) * (size_t)s->cols,
                        (size_t)(cnt * s->cols) * 8, wf_rowmajor_off(fh, (int)p, lo - a, 0), NULL, err,
                        errlen))
                return -1;
            done += cnt;
        }
    }
    return 0;
}

/* Walk a source strip by strip. Row-major sources: strips ending at the given boundaries
 * `bound(ctx2, r)` (next row at which a strip must end); blocked: one block row each. */
static int src_walk(source *s, int64_t (*bound)(void *, int64_t), void *bctx, strip_fn fn,
                    void *ctx, char *err, size_t errlen)
{
    int64_t n = s->cols, pl = s->planes;
    const wf_layout *lay = wf_layout_get(s->layout);
    if (!lay->blocked) {
        int64_t cap = (8 << 20) / (n * 8 * pl);
        if (cap < 1)
            cap = 1;
        int64_t maxh = cap;
        for (int64_t r = 0; r < s->rows;) {
            int64_t e = bound ? bound(bctx, r) : r + cap;
            if (e > s->rows)
                e = s->rows;
            if (e - r > maxh)
                maxh = e - r;
            r = e;
        }
        double *buf = malloc((size_t)(maxh * n * pl) * 8);
        if (!buf) {
            ERR("out of memory");
            return -1;
        }
        int rc = 0;
        for (int64_t r = 0; r < s->rows && !rc;) {
            int64_t e = bound ? bound(bctx, r) : r + cap;
            if (e > s->rows)
                e = s->rows;
            rc = src_read_rows(s, r, e - r, buf, err, errlen);
            if (!rc)
                rc = fn(ctx, r, e - r, buf, err, errlen);
            r = e;
        }
        free(buf);
        return rc;
    }
    const wf_hdr *h0 = &s->f[0].h;
    int64_t mb = (int64_t)h0->mb, bcs = wf_nblockcols(h0);
    size_t rowbytes = 0;
    for (int i = 0; i < s->n; i++) {
        size_t rb = (size_t)(wf_block_off(&s->f[i].h, 1, 0) - WF_HDR_BYTES);
        if (wf_nblockrows(&s->f[i].h) == 1)
            rb = (size_t)s->f[i].h.payload;
        if (rb > rowbytes)
            rowbytes = rb;
    }
    double *strip = malloc((size_t)(mb * n * pl) * 8);
    double *raw = malloc(rowbytes);
    if (!strip || !raw) {
        free(strip);
        free(raw);
        ERR("out of memory");
        return -1;
    }
    int rc = 0;
    for (int i = 0; i < s->n && !rc; i++) {
        wf_file *f = &s->f[i];
        for (int64_t br = 0; br < wf_nblockrows(&f->h) && !rc; br++) {
            int64_t h = wf_block_h(&f->h, br);
            off_t off0 = wf_block_off(&f->h, br, 0);
            off_t end = br + 1 < wf_nblockrows(&f->h) ? wf_block_off(&f->h, br + 1, 0)
                                                       : (off_t)(WF_HDR_BYTES + f->h.payload);
            rc = wf_read(f, raw, (size_t)(end - off0), off0, NULL, err, errlen);
            for (int64_t bc = 0; bc < bcs && !rc; bc++) {
                int64_t w = wf_block_w(&f->h, bc);
                const double *src = raw + (wf_block_off(&f->h, br, bc) - off0) / 8;
                lay->unpack(src, h, w, (int64_t)f->h.t, pl, strip + bc * (int64_t)f->h.nb,
                            (size_t)n, (size_t)(h * n));
            }
            if (!rc)
                rc = fn(ctx, (int64_t)f->h.row0 + br * mb, h, strip, err, errlen);
        }
    }
    free(strip);
    free(raw);
    return rc;
}

/* ---- convert ------------------------------------------------------------------------ */

typedef struct {
    outfile *o;
    int nout;
    int64_t *band0; /* nout + 1 row boundaries */
    int64_t cols, planes, mb;
    int64_t chunk;  /* strip height for row-major -> row-major */
    double *tmp;
} conv_ctx;

static int64_t conv_bound(void *vc, int64_t r)
{
    conv_ctx *c = vc;
    int64_t e = r + c->chunk;
    for (int i = 1; i <= c->nout; i++)
        if (c->band0[i] > r) {
            if (c->band0[i] < e)
                e = c->band0[i];
            break;
        }
    return e;
}

static int conv_strip(void *vc, int64_t r, int64_t h, const double *buf, char *err, size_t errlen)
{
    conv_ctx *c = vc;
    int k = 0;
    while (k + 1 < c->nout && c->band0[k + 1] <= r)
        k++;
    outfile *o = &c->o[k];
    int64_t lr = r - (int64_t)o->h.row0, n = c->cols;
    if (lr + h > (int64_t)o->h.rows) {
        ERR("%s: internal error: strip crosses a band boundary", o->tmp);
        return -1;
    }
    const wf_layout *lay = wf_layout_get((int)o->h.layout);
    if (!lay->blocked) {
        for (int64_t p = 0; p < c->planes; p++)
            if (wf_pwrite_full(o->fd, buf + (size_t)(p * h * n), (size_t)(h * n) * 8,
                            wf_rowmajor_off(&o->h, (int)p, lr, 0), o->tmp, err, errlen))
                return -1;
        return 0;
    }
    int64_t br = lr / (int64_t)o->h.mb;
    if (lr % (int64_t)o->h.mb || h != wf_block_h(&o->h, br)) {
        ERR("%s: internal error: strip is not a block row", o->tmp);
        return -1;
    }
    off_t off0 = wf_block_off(&o->h, br, 0);
    off_t end = br + 1 < wf_nblockrows(&o->h) ? wf_block_off(&o->h, br + 1, 0)
                                               : (off_t)(WF_HDR_BYTES + o->h.payload);
    memset(c->tmp, 0, (size_t)(end - off0)); /* the records' padding, if any */
    for (int64_t bc = 0; bc < wf_nblockcols(&o->h); bc++) {
        int64_t w = wf_block_w(&o->h, bc);
        lay->pack(buf + bc * (int64_t)o->h.nb, (size_t)n, (size_t)(h * n), h, w,
                  (int64_t)o->h.t, c->planes, c->tmp + (wf_block_off(&o->h, br, bc) - off0) / 8);
    }
    return wf_pwrite_full(o->fd, c->tmp, (size_t)(end - off0), off0, o->tmp, err, errlen);
}

int mpilab_wf_convert(const char *const *in, int nin, const char *out,
                      const mpilab_wf_convert_opts *opt, char *err, size_t errlen)
{
    source s;
    if (src_open(&s, in, nin, err, errlen))
        return -1;
    int layout = wf_layout_for_planes(opt->layout, s.planes);
    const wf_layout *inl = wf_layout_get(s.layout), *outl = wf_layout_get(layout);
    int rc = -1;
    conv_ctx c;
    memset(&c, 0, sizeof c);
    int nout = opt->nout < 1 ? 1 : opt->nout;
    int64_t mb = opt->mb, nb = opt->nb, t = opt->t < 1 ? 1 : opt->t;
    const char *why;
    if (!outl) {
        ERR("unknown layout");
        goto done;
    }
    if (inl->blocked && outl->blocked) {
        ERR("%s: is in %s layout; convert it to rowmajor first", in[0],
            mpilab_wf_layout_name(s.layout));
        goto done;
    }
    if (inl->blocked) /* post-processing: bands follow the input blocking */
        mb = (int64_t)s.f[0].h.mb, nb = (int64_t)s.f[0].h.nb;
    if (outl->blocked || nout > 1) {
        if (mb < 1 || (outl->blocked && nb < 1)) {
            ERR("block size missing (--mb/--nb)");
            goto done;
        }
        if (mb > s.rows || (outl->blocked && nb > s.cols)) {
            ERR("block %lldx%lld larger than the %lldx%lld matrix", (long long)mb, (long long)nb,
                (long long)s.rows, (long long)s.cols);
            goto done;
        }
        if ((why = check_blocking(layout, s.rows, s.cols, mb, nb, t))) {
            ERR("block %lldx%lld: %s", (long long)mb, (long long)nb, why);
            goto done;
        }
    }
    int64_t nbr = mb > 0 ? (s.rows + mb - 1) / mb : s.rows;
    if (nout > nbr) {
        ERR("%d bands but only %lld block rows", nout, (long long)nbr);
        goto done;
    }
    c.nout = nout;
    c.cols = s.cols;
    c.planes = s.planes;
    c.mb = mb;
    c.o = calloc((size_t)nout, sizeof *c.o);
    c.band0 = calloc((size_t)nout + 1, sizeof *c.band0);
    if (!c.o || !c.band0) {
        ERR("out of memory");
        goto done;
    }
    for (int k = 0; k <= nout; k++) {
        int64_t b = nbr * k / nout;
        c.band0[k] = nout == 1 ? (k ? s.rows : 0) : (b * mb > s.rows ? s.rows : b * mb);
    }
    for (int k = 0; k < nout; k++)
        c.o[k].fd = -1;
    for (int k = 0; k < nout; k++) {
        char path[4096];
        if (nout == 1)
            snprintf(path, sizeof path, "%s", out);
        else
            snprintf(path, sizeof path, "%s.%d", out, k);
        for (int i = 0; i < nin; i++)
            if (!strcmp(path, in[i])) {
                ERR("%s: output would overwrite an input", path);
                out_abort(c.o, nout);
                goto done;
            }
        wf_hdr h;
        fill_hdr(&h, layout, s.planes, c.band0[k + 1] - c.band0[k], s.cols, c.band0[k], s.rows,
                 mb, nb, t);
        h.iters_done = s.iters_done; /* post-processing keeps what a run recorded */
        if (out_create(&c.o[k], path, &h, err, errlen)) {
            out_abort(c.o, k + 1);
            goto done;
        }
    }
    if (outl->blocked) {
        c.chunk = mb;
        c.tmp = malloc((size_t)(mb * s.cols * s.planes +
                                (s.cols / nb + 1) * outl->extra(t) * s.planes) * 8 +
                       (size_t)((s.cols / nb + 1) * outl->rec_align));
    } else {
        c.chunk = (8 << 20) / (s.cols * 8 * s.planes);
        if (c.chunk < 1)
            c.chunk = 1;
    }
    if (outl->blocked && !c.tmp) {
        ERR("out of memory");
        out_abort(c.o, nout);
        goto done;
    }
    /* blocked output: strips are the output block rows (band boundaries are block rows) */
    if (!inl->blocked)
        rc = src_walk(&s, conv_bound, &c, conv_strip, &c, err, errlen);
    else
        rc = src_walk(&s, NULL, NULL, conv_strip, &c, err, errlen);
    if (rc) {
        out_abort(c.o, nout);
        goto done;
    }
    rc = out_commit(c.o, nout, err, errlen);
done:
    free(c.tmp);
    free(c.o);
    free(c.band0);
    src_close(&s);
    return rc;
}

/* ---- load --------------------------------------------------------------------------- */

typedef struct {
    double *dst;
    int64_t rows, cols, planes;
} load_ctx;

static int load_strip(void *vc, int64_t r, int64_t h, const double *buf, char *err, size_t el)
{
    (void)err;
    (void)el;
    load_ctx *c = vc;
    for (int64_t p = 0; p < c->planes; p++)
        memcpy(c->dst + (size_t)((p * c->rows + r) * c->cols), buf + (size_t)(p * h * c->cols),
               (size_t)(h * c->cols) * 8);
    return 0;
}

int mpilab_wf_load(const char *const *in, int nin, double **out, int64_t *rows, int64_t *cols,
                   int64_t *planes, char *err, size_t errlen)
{
    source s;
    if (src_open(&s, in, nin, err, errlen))
        return -1;
    load_ctx c = {NULL, s.rows, s.cols, s.planes};
    c.dst = malloc((size_t)(s.rows * s.cols * s.planes) * 8);
    if (!c.dst) {
        ERR("%s: matrix does not fit in memory", in[0]);
        src_close(&s);
        return -1;
    }
    int rc = src_walk(&s, NULL, NULL, load_strip, &c, err, errlen);
    src_close(&s);
    if (rc) {
        free(c.dst);
        return -1;
    }
    *out = c.dst;
    *rows = s.rows;
    *cols = s.cols;
    *planes = s.planes;
    return 0;
}

void mpilab_wf_reference(double *d, const double *coef, int64_t rows, int64_t cols,
                         int64_t iterations)
{
    size_t pl = (size_t)(rows * cols);
    const double *zb = coef, *zu = coef + pl, *zv = coef + 2 * pl, *zr = coef + 3 * pl,
                 *zz = coef + 4 * pl;
    for (int64_t it = 0; it < iterations; it++)
        for (int64_t i = 1; i < rows - 1; i++)
            for (int64_t j = 1; j < cols - 1; j++) {
                size_t k = (size_t)(i * cols + j);
                d[k] = wf_kernel(d[k], d[k - (size_t)cols], d[k + (size_t)cols], d[k - 1],
                                 d[k + 1], zb[k], zu[k], zv[k], zr[k], zz[k]);
            }
}

int mpilab_wf_file_state(const char *path, int64_t *iters_done, int *interrupted, char *err,
                         size_t errlen)
{
    wf_file f;
    if (wf_open(&f, path, 0, MPILAB_WF_IO_PREAD, err, errlen))
        return -1;
    *iters_done = (int64_t)f.h.iters_done;
    *interrupted = f.h.state == WF_STATE_RUNNING;
    wf_close(&f);
    return 0;
}
