/* Wavefront matrix files: names of the I/O back ends and chains, the checksum, the file
 * geometry (block offsets, payload size), opening and validating a file, raw I/O through
 * its back end and page-cache hints. Output files and creation are in wf_outfile.c,
 * band sources and loading in wf_source.c, layout conversion in wf_convert.c. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "wavefront/wf_bandio.h"

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
const char *wf_check_blocking(int layout, int64_t rows, int64_t cols, int64_t mb, int64_t nb,
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
    if (wf_check_blocking(layout, rows, cols, mb, nb, t))
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
    /* O_NONBLOCK: a FIFO named here is refused below instead of blocking the open */
    int fd = open(path, (writable ? O_RDWR : O_RDONLY) | O_NONBLOCK);
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
    int fl = fcntl(fd, F_GETFL);
    if (fl < 0 || fcntl(fd, F_SETFL, fl & ~O_NONBLOCK) != 0) {
        ERR("%s: cannot open: %s", path, strerror(errno));
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
        why = wf_check_blocking((int)h->layout, (int64_t)h->rows, (int64_t)h->cols, (int64_t)h->mb,
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
    long ps = sysconf(_SC_PAGESIZE); /* read from the auxiliary vector: cheap */
    return ps > 0 ? ps : 4096;
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
