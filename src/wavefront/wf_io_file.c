/* File I/O back ends of a wf_file: pread/pwrite, the shared mapping, and O_DIRECT. The
 * engine's io_uring transport (wf_xport_uring.c) submits the pread back end's transfers
 * asynchronously and finishes short ones with it. */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "wavefront/wf_internal.h"

#define ERR(...) snprintf(err, errlen, __VA_ARGS__)

int wf_pread_full(int fd, void *dst, size_t len, off_t off, const char *path, char *err,
                  size_t errlen)
{
    unsigned char *p = dst;
    while (len > 0) {
        size_t chunk = len > (1u << 30) ? (1u << 30) : len;
        ssize_t n = pread(fd, p, chunk, off);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            ERR("%s: read failed: %s", path, strerror(errno));
            return -1;
        }
        if (n == 0) {
            ERR("%s: unexpected end of file at offset %lld", path, (long long)off);
            return -1;
        }
        p += n;
        off += n;
        len -= (size_t)n;
    }
    return 0;
}

int wf_pwrite_full(int fd, const void *src, size_t len, off_t off, const char *path, char *err,
                   size_t errlen)
{
    const unsigned char *p = src;
    while (len > 0) {
        size_t chunk = len > (1u << 30) ? (1u << 30) : len;
        ssize_t n = pwrite(fd, p, chunk, off);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) {
            ERR("%s: write failed: %s", path, n < 0 ? strerror(errno) : "no progress");
            return -1;
        }
        p += n;
        off += n;
        len -= (size_t)n;
    }
    return 0;
}

/* ---- pread/pwrite ------------------------------------------------------------------- */

static int pr_read(wf_file *f, void *dst, size_t len, off_t off, char *err, size_t errlen)
{
    return wf_pread_full(f->fd, dst, len, off, f->path, err, errlen);
}

static int pr_write(wf_file *f, const void *src, size_t len, off_t off, char *err, size_t errlen)
{
    return wf_pwrite_full(f->fd, src, len, off, f->path, err, errlen);
}

static const wf_io_ops io_pread = {MPILAB_WF_IO_PREAD, 0, 1, pr_read, pr_write};

/* ---- the shared mapping (wf_open maps the whole file) -------------------------------- */

static int mm_read(wf_file *f, void *dst, size_t len, off_t off, char *err, size_t errlen)
{
    (void)err, (void)errlen;
    memcpy(dst, f->map + off, len);
    return 0;
}

static int mm_write(wf_file *f, const void *src, size_t len, off_t off, char *err, size_t errlen)
{
    (void)err, (void)errlen;
    memcpy(f->map + off, src, len);
    return 0;
}

static const wf_io_ops io_mmap = {MPILAB_WF_IO_MMAP, 0, 1, mm_read, mm_write};

/* ---- O_DIRECT ------------------------------------------------------------------------
 * Transfers bypass the page cache, so every request reaches the device as issued (what an
 * emulated disk with a request cost must see). Offsets, lengths and buffers must be
 * aligned to WF_DIRECT_ALIGN: an unaligned transfer goes through an aligned bounce buffer
 * covering the enclosing sectors; an unaligned write first reads its partial edge
 * sectors (read-modify-write). Writes to one file are serialised (f->wmu) because two
 * blocks written by different workers can share an edge sector. */

static int al(uintptr_t v) { return (v & (WF_DIRECT_ALIGN - 1)) == 0; }

/* The bounce buffer of the calling thread, kept for the thread's life (freed by a key
 * destructor when it ends) and grown as needed. It is aligned to 2 MiB and advised for
 * transparent huge pages: the kernel builds an O_DIRECT request's segments from the
 * buffer's physically contiguous runs, so a buffer of scattered 4 KiB pages caps a request
 * at max_segments pages (128 x 4 KiB = 512 KiB on a loop device), while huge pages let it
 * grow to the device's max_sectors_kb (1280 KiB there): fewer, larger device requests
 * (docs/wavefront-engine.md, "Request sizes"). Allocating it once also saves the page faults and
 * zeroing of a fresh buffer per transfer. */
typedef struct {
    void *p[2]; /* [0] reads, [1] writes (a write's edge-sector reads use [0]) */
    size_t cap[2];
} dio_bounce;
#define WF_DIRECT_HUGE ((size_t)2 << 20)
static pthread_key_t bounce_key;
static pthread_once_t bounce_once = PTHREAD_ONCE_INIT;
static int bounce_key_ok;

static void bounce_free(void *v)
{
    dio_bounce *b = v;
    if (b) {
        free(b->p[0]);
        free(b->p[1]);
    }
    free(b);
}

static void bounce_init(void) { bounce_key_ok = pthread_key_create(&bounce_key, bounce_free) == 0; }

/* Scratch `which` (0 reads, 1 writes) of at least len bytes, aligned for O_DIRECT, owned
 * by the calling thread (NULL: out of memory). */
static void *dio_scratch(int which, size_t len)
{
    pthread_once(&bounce_once, bounce_init);
    if (!bounce_key_ok)
        return NULL;
    dio_bounce *b = pthread_getspecific(bounce_key);
    if (!b) {
        b = calloc(1, sizeof *b);
        if (!b || pthread_setspecific(bounce_key, b) != 0) {
            free(b);
            return NULL;
        }
    }
    if (b->cap[which] < len) {
        size_t cap = (len + WF_DIRECT_HUGE - 1) & ~(WF_DIRECT_HUGE - 1);
        void *p = NULL;
        if (posix_memalign(&p, WF_DIRECT_HUGE, cap) != 0)
            return NULL;
#ifdef MADV_HUGEPAGE
        madvise(p, cap, MADV_HUGEPAGE); /* a hint: without it requests are just smaller */
#endif
        free(b->p[which]);
        b->p[which] = p;
        b->cap[which] = cap;
    }
    return b->p[which];
}

static int dio_read(wf_file *f, void *dst, size_t len, off_t off, char *err, size_t errlen)
{
    if (len == 0)
        return 0;
    if (al((uintptr_t)dst) && al((uintptr_t)off) && al(len))
        return wf_pread_full(f->fd, dst, len, off, f->path, err, errlen);
    const off_t a = off & ~(off_t)(WF_DIRECT_ALIGN - 1);
    const off_t b = (off + (off_t)len + WF_DIRECT_ALIGN - 1) & ~(off_t)(WF_DIRECT_ALIGN - 1);
    void *bb = dio_scratch(0, (size_t)(b - a));
    if (!bb) {
        ERR("out of memory");
        return -1;
    }
    /* the file size is a multiple of the header size, itself a multiple of the alignment,
     * only if the payload is: the last sector may be short, which pread reports as an
     * early end; read what is there */
    int rc = 0;
    size_t want = (size_t)(b - a), got = 0;
    while (got < want) {
        ssize_t n = pread(f->fd, (char *)bb + got, want - got, a + (off_t)got);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            ERR("%s: read failed: %s", f->path, strerror(errno));
            rc = -1;
            break;
        }
        if (n == 0)
            break;
        got += (size_t)n;
    }
    if (!rc && got < (size_t)(off - a) + len) {
        ERR("%s: unexpected end of file at offset %lld", f->path, (long long)(a + (off_t)got));
        rc = -1;
    }
    if (!rc)
        memcpy(dst, (char *)bb + (off - a), len);
    return rc;
}

/* Sector at `at` into buf (aligned, WF_DIRECT_ALIGN bytes): what the file holds there,
 * zeros past its end. */
static int dio_sector(wf_file *f, void *buf, off_t at, off_t end, char *err, size_t errlen)
{
    memset(buf, 0, WF_DIRECT_ALIGN);
    if (end <= at)
        return 0;
    size_t have = end - at >= WF_DIRECT_ALIGN ? WF_DIRECT_ALIGN : (size_t)(end - at);
    return dio_read(f, buf, have, at, err, errlen);
}

static int dio_write(wf_file *f, const void *src, size_t len, off_t off, char *err,
                     size_t errlen)
{
    if (len == 0)
        return 0;
    pthread_mutex_lock(&f->wmu);
    int rc = 0;
    if (al((uintptr_t)src) && al((uintptr_t)off) && al(len)) {
        rc = wf_pwrite_full(f->fd, src, len, off, f->path, err, errlen);
        pthread_mutex_unlock(&f->wmu);
        return rc;
    }
    const off_t a = off & ~(off_t)(WF_DIRECT_ALIGN - 1);
    const off_t b = (off + (off_t)len + WF_DIRECT_ALIGN - 1) & ~(off_t)(WF_DIRECT_ALIGN - 1);
    const off_t last = b - WF_DIRECT_ALIGN;
    const off_t end = lseek(f->fd, 0, SEEK_END);
    void *bb = end < 0 ? NULL : dio_scratch(1, (size_t)(b - a));
    if (!bb) {
        pthread_mutex_unlock(&f->wmu);
        ERR("%s: cannot prepare an O_DIRECT write", f->path);
        return -1;
    }
    /* the partial edge sectors keep their other bytes */
    if (a < off)
        rc = dio_sector(f, bb, a, end, err, errlen);
    if (!rc && off + (off_t)len < b && (last > a || a == off))
        rc = dio_sector(f, (char *)bb + (last - a), last, end, err, errlen);
    if (!rc) {
        memcpy((char *)bb + (off - a), src, len);
        rc = wf_pwrite_full(f->fd, bb, (size_t)(b - a), a, f->path, err, errlen);
        /* a write ending inside the file's last sector must not extend the file */
        if (!rc && b > end && off + (off_t)len <= end && ftruncate(f->fd, end) != 0) {
            ERR("%s: ftruncate failed: %s", f->path, strerror(errno));
            rc = -1;
        }
    }
    pthread_mutex_unlock(&f->wmu);
    return rc;
}

static const wf_io_ops io_direct = {MPILAB_WF_IO_DIRECT, O_DIRECT, 0, dio_read, dio_write};

const wf_io_ops *wf_io_ops_get(int io)
{
    switch (io) {
    case MPILAB_WF_IO_PREAD:
    case MPILAB_WF_IO_URING: return &io_pread;
    case MPILAB_WF_IO_MMAP: return &io_mmap;
    case MPILAB_WF_IO_DIRECT: return &io_direct;
    default: return NULL;
    }
}
