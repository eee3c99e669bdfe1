/* mpilab-seekfs: a FUSE passthrough file system over a backing directory that serves every
 * read and write through a position-aware disk model (include/mpilab/diskmodel.h): one
 * virtual head, a seek by distance plus a rotational delay whenever a request does not
 * start where the previous one ended, and the transfer time at the disk's rate. Requests
 * are served one at a time, in arrival order or (--elevator) in C-LOOK order of the queued
 * ones. Each file occupies its own region of the virtual disk (assigned when first seen,
 * in that order, at least 512 MiB apart), so moving between files costs a long seek.
 * The modelled time runs on a virtual timeline: a request completes at
 * max(its arrival, the previous completion) + its cost, so a late wake-up of this daemon
 * on a busy machine is caught up by the next request instead of accumulating.
 * Statistics (requests, bytes, seeks, modelled busy time) are written as JSON to --stats
 * every 20 ms. Started by `mpilab disk up` (model "seek"); see docs/disk.md. */
#define FUSE_USE_VERSION 31
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <fuse.h>
#include <getopt.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <time.h>
#include <unistd.h>

#include "common/common.h"
#include "common/stream.h"
#include "mpilab/diskmodel.h"
#include "mpilab/parse.h"
#include "mpilab/version.h"

#define REGION_MIN ((int64_t)512 << 20)
#define MAXQ 256

static const char *prog = "mpilab-seekfs";
static int bfd = -1; /* backing directory */
static char stats_path[4096];
static FILE *trace; /* --trace: one line per request served (diagnosis) */
static int elevator;
static mpilab_disk_model model;

/* the head and its queue */
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static mpilab_disk_state dst;
static int busy;
static int64_t qpos[MAXQ];
static uint64_t qseq[MAXQ];
static int qn;
static uint64_t next_seq, chosen_seq = UINT64_MAX;
static double vclock; /* modelled completion time of the previous request (CLOCK_MONOTONIC) */

/* file regions: inode -> base position */
typedef struct {
    ino_t ino;
    int64_t base;
} region;
static region *regs;
static size_t nregs, capregs;
static int64_t next_base;

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int64_t base_of(int fd)
{
    struct stat sb;
    if (fstat(fd, &sb) != 0)
        return 0;
    for (size_t i = 0; i < nregs; i++)
        if (regs[i].ino == sb.st_ino)
            return regs[i].base;
    if (nregs == capregs) {
        size_t c = capregs ? 2 * capregs : 64;
        region *r = realloc(regs, c * sizeof *r);
        if (!r)
            return 0;
        regs = r;
        capregs = c;
    }
    int64_t b = next_base;
    int64_t span = (int64_t)sb.st_size > REGION_MIN ? (int64_t)sb.st_size : REGION_MIN;
    next_base += (span + REGION_MIN - 1) / REGION_MIN * REGION_MIN;
    regs[nregs++] = (region){sb.st_ino, b};
    return b;
}

static void sleep_until(double t)
{
    struct timespec ts;
    ts.tv_sec = (time_t)t;
    ts.tv_nsec = (long)((t - (double)ts.tv_sec) * 1e9);
    while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
        ;
}

/* Wait for the head, pay the model's cost for (pos, len), run the transfer. */
static ssize_t serve(int fd, void *buf, size_t len, off_t off, int write)
{
    double arrival = now_s();
    pthread_mutex_lock(&mu);
    int64_t pos = base_of(fd) + (int64_t)off;
    while (qn >= MAXQ)
        pthread_cond_wait(&cv, &mu);
    uint64_t me = next_seq++;
    qpos[qn] = pos;
    qseq[qn] = me;
    qn++;
    for (;;) {
        if (!busy && chosen_seq == UINT64_MAX) {
            int k = 0;
            if (elevator) {
                k = mpilab_disk_elevator_pick(qpos, qn, dst.head);
            } else {
                for (int i = 1; i < qn; i++)
                    if (qseq[i] < qseq[k])
                        k = i;
            }
            chosen_seq = qseq[k];
            pthread_cond_broadcast(&cv);
        }
        if (chosen_seq == me)
            break;
        pthread_cond_wait(&cv, &mu);
    }
    for (int i = 0; i < qn; i++)
        if (qseq[i] == me) {
            qpos[i] = qpos[qn - 1];
            qseq[i] = qseq[qn - 1];
            qn--;
            break;
        }
    busy = 1;
    chosen_seq = UINT64_MAX;
    const int64_t head = dst.head;
    double cost = mpilab_disk_serve(&model, &dst, pos, (int64_t)len, write);
    double start = vclock > arrival ? vclock : arrival;
    vclock = start + cost;
    if (trace)
        fprintf(trace, "%.6f %c %lld %zu %lld %.6f %d\n", start, write ? 'W' : 'R',
                (long long)pos, len, (long long)(pos - head), cost, qn);
    double until = vclock;
    pthread_mutex_unlock(&mu);
    sleep_until(until);
    ssize_t n = write ? pwrite(fd, buf, len, off) : pread(fd, buf, len, off);
    if (n < 0)
        n = -errno;
    pthread_mutex_lock(&mu);
    busy = 0;
    pthread_cond_broadcast(&cv);
    pthread_mutex_unlock(&mu);
    return n;
}

static void *stats_thread(void *arg)
{
    (void)arg;
    char tmp[4200];
    snprintf(tmp, sizeof tmp, "%s.tmp", stats_path);
    for (;;) {
        pthread_mutex_lock(&mu);
        mpilab_disk_state s = dst;
        pthread_mutex_unlock(&mu);
        FILE *f = fopen(tmp, "w");
        if (f) {
            fprintf(f, "{\"reads\": %lld, \"writes\": %lld, \"bytes_read\": %lld, "
                       "\"bytes_written\": %lld, \"seeks\": %lld, \"busy_s\": %.9f}\n",
                    (long long)s.reads, (long long)s.writes, (long long)s.bytes_read,
                    (long long)s.bytes_written, (long long)s.seeks, s.busy_s);
            if (fclose(f) == 0)
                rename(tmp, stats_path);
        }
        if (trace)
            fflush(trace);
        struct timespec ts = {0, 20000000};
        nanosleep(&ts, NULL);
    }
    return NULL;
}

/* ---- passthrough operations (paths relative to the backing directory) ---- */

static const char *rel(const char *path) { return path[1] ? path + 1 : "."; }

static void *fs_init(struct fuse_conn_info *conn, struct fuse_config *cfg)
{
    /* requests of up to 1 MiB (the kernel's max_pages follows max_write) */
    conn->max_write = 1u << 20;
    conn->max_read = 1u << 20;
    conn->max_readahead = 1u << 20;
    /* Every change reaches the backing files through this mount, so the kernel's cached
     * pages stay valid: without this, a write's new mtime made the kernel drop ALL cached
     * pages of the file at its next attribute check (libfuse's default auto_inval_data),
     * i.e. every block write-back discarded the pages read ahead for the next block, and
     * they were read again (a local file system keeps them). */
    conn->want &= ~FUSE_CAP_AUTO_INVAL_DATA;
    cfg->use_ino = 1;
    cfg->attr_timeout = 0;
    cfg->entry_timeout = 0;
    cfg->negative_timeout = 0;
    if (stats_path[0]) {
        pthread_t t;
        if (pthread_create(&t, NULL, stats_thread, NULL) == 0)
            pthread_detach(t);
    }
    return NULL;
}

static int fs_getattr(const char *path, struct stat *st, struct fuse_file_info *fi)
{
    int rc = fi ? fstat((int)fi->fh, st) : fstatat(bfd, rel(path), st, AT_SYMLINK_NOFOLLOW);
    return rc ? -errno : 0;
}

static int fs_readdir(const char *path, void *buf, fuse_fill_dir_t fill, off_t off,
                      struct fuse_file_info *fi, enum fuse_readdir_flags fl)
{
    (void)off, (void)fi, (void)fl;
    int fd = openat(bfd, rel(path), O_RDONLY | O_DIRECTORY);
    if (fd < 0)
        return -errno;
    DIR *d = fdopendir(fd);
    if (!d) {
        close(fd);
        return -errno;
    }
    struct dirent *e;
    while ((e = readdir(d)))
        if (fill(buf, e->d_name, NULL, 0, 0))
            break;
    closedir(d);
    return 0;
}

static int fs_open(const char *path, struct fuse_file_info *fi)
{
    int fd = openat(bfd, rel(path), fi->flags & ~(O_DIRECT | O_CREAT | O_EXCL));
    if (fd < 0)
        return -errno;
    fi->fh = (uint64_t)fd;
    /* O_DIRECT opens bypass the kernel's page cache: every request reaches the model */
    if (fi->flags & O_DIRECT)
        fi->direct_io = 1;
    return 0;
}

static int fs_create(const char *path, mode_t mode, struct fuse_file_info *fi)
{
    int fd = openat(bfd, rel(path), (fi->flags & ~O_DIRECT) | O_CREAT, mode);
    if (fd < 0)
        return -errno;
    fi->fh = (uint64_t)fd;
    if (fi->flags & O_DIRECT)
        fi->direct_io = 1;
    return 0;
}

static int fs_read(const char *path, char *buf, size_t len, off_t off, struct fuse_file_info *fi)
{
    (void)path;
    return (int)serve((int)fi->fh, buf, len, off, 0);
}

static int fs_write(const char *path, const char *buf, size_t len, off_t off,
                    struct fuse_file_info *fi)
{
    (void)path;
    return (int)serve((int)fi->fh, (void *)buf, len, off, 1);
}

static int fs_release(const char *path, struct fuse_file_info *fi)
{
    (void)path;
    close((int)fi->fh);
    return 0;
}

static int fs_fsync(const char *path, int datasync, struct fuse_file_info *fi)
{
    (void)path;
    return (datasync ? fdatasync((int)fi->fh) : fsync((int)fi->fh)) ? -errno : 0;
}

static int fs_unlink(const char *path) { return unlinkat(bfd, rel(path), 0) ? -errno : 0; }
static int fs_mkdir(const char *path, mode_t m) { return mkdirat(bfd, rel(path), m) ? -errno : 0; }
static int fs_rmdir(const char *path)
{
    return unlinkat(bfd, rel(path), AT_REMOVEDIR) ? -errno : 0;
}

static int fs_rename(const char *from, const char *to, unsigned int flags)
{
    if (flags)
        return -EINVAL;
    return renameat(bfd, rel(from), bfd, rel(to)) ? -errno : 0;
}

static int fs_truncate(const char *path, off_t size, struct fuse_file_info *fi)
{
    if (fi)
        return ftruncate((int)fi->fh, size) ? -errno : 0;
    int fd = openat(bfd, rel(path), O_WRONLY);
    if (fd < 0)
        return -errno;
    int rc = ftruncate(fd, size) ? -errno : 0;
    close(fd);
    return rc;
}

static int fs_chmod(const char *path, mode_t m, struct fuse_file_info *fi)
{
    (void)fi;
    return fchmodat(bfd, rel(path), m, 0) ? -errno : 0;
}

static int fs_chown(const char *path, uid_t u, gid_t g, struct fuse_file_info *fi)
{
    (void)fi;
    return fchownat(bfd, rel(path), u, g, AT_SYMLINK_NOFOLLOW) ? -errno : 0;
}

static int fs_utimens(const char *path, const struct timespec tv[2], struct fuse_file_info *fi)
{
    (void)fi;
    return utimensat(bfd, rel(path), tv, AT_SYMLINK_NOFOLLOW) ? -errno : 0;
}

static int fs_statfs(const char *path, struct statvfs *sv)
{
    (void)path;
    return fstatvfs(bfd, sv) ? -errno : 0;
}

static const struct fuse_operations ops = {
    .init = fs_init,
    .getattr = fs_getattr,
    .readdir = fs_readdir,
    .open = fs_open,
    .create = fs_create,
    .read = fs_read,
    .write = fs_write,
    .release = fs_release,
    .fsync = fs_fsync,
    .unlink = fs_unlink,
    .mkdir = fs_mkdir,
    .rmdir = fs_rmdir,
    .rename = fs_rename,
    .truncate = fs_truncate,
    .chmod = fs_chmod,
    .chown = fs_chown,
    .utimens = fs_utimens,
    .statfs = fs_statfs,
};

static int bad(const char *opt, const char *v)
{
    fprintf(stderr, "%s: %s '%s': expected a non-negative number\n", prog, opt, v);
    return 2;
}

static int num(const char *s, double *out)
{
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (errno || end == s || *end || !(v >= 0) || v > 1e15)
        return -1;
    *out = v;
    return 0;
}

static void help(FILE *f)
{
    fprintf(f,
            "usage: %s --backing DIR --size BYTES [--seek-min S] [--seek-max S] [--rpm R]\n"
            "       [--rate BYTES_PER_S] [--elevator] [--stats FILE] [--foreground] MOUNTPOINT\n"
            "  --backing DIR       directory holding the files (e.g. on tmpfs)\n"
            "  --size BYTES        size of the virtual disk (seek distances are relative to it)\n"
            "  --seek-min S        shortest seek in seconds (default 0.0005)\n"
            "  --seek-max S        full-stroke seek in seconds (default 0.008)\n"
            "  --rpm R             spindle speed; rotational delay 30/R s per seek (default 7200;"
            " 0: none)\n"
            "  --rate BYTES_PER_S  transfer rate (default 150000000)\n"
            "  --elevator          serve queued requests in C-LOOK order (default: arrival order)\n"
            "  --stats FILE        write the model's counters as JSON every 20 ms\n"
            "  --trace FILE        append one line per request: start time (s, modelled),\n"
            "                      R|W, position, length, position - head, cost (s), requests\n"
            "                      still queued (for diagnosis)\n"
            "  --foreground        do not detach\n"
            "  -h, --help; --version\n",
            prog);
}

int main(int argc, char **argv)
{
    static const struct option lo[] = {{"backing", required_argument, 0, 'b'},
                                       {"size", required_argument, 0, 's'},
                                       {"seek-min", required_argument, 0, 'm'},
                                       {"seek-max", required_argument, 0, 'M'},
                                       {"rpm", required_argument, 0, 'r'},
                                       {"rate", required_argument, 0, 'R'},
                                       {"elevator", no_argument, 0, 'e'},
                                       {"stats", required_argument, 0, 'S'},
                                       {"trace", required_argument, 0, 'T'},
                                       {"foreground", no_argument, 0, 'f'},
                                       {"help", no_argument, 0, 'h'},
                                       {"version", no_argument, 0, 'V'},
                                       {0, 0, 0, 0}};
    const char *backing = NULL, *trace_path = NULL;
    double size = 0, smin = 0.0005, smax = 0.008, rpm = 7200, rate = 150e6;
    int fg = 0, c;
    opterr = 0;
    while ((c = getopt_long(argc, argv, ":h", lo, NULL)) != -1) {
        switch (c) {
        case 'b': backing = optarg; break;
        case 's': if (num(optarg, &size)) return bad("--size", optarg); break;
        case 'm': if (num(optarg, &smin)) return bad("--seek-min", optarg); break;
        case 'M': if (num(optarg, &smax)) return bad("--seek-max", optarg); break;
        case 'r': if (num(optarg, &rpm)) return bad("--rpm", optarg); break;
        case 'R': if (num(optarg, &rate)) return bad("--rate", optarg); break;
        case 'e': elevator = 1; break;
        case 'S': snprintf(stats_path, sizeof stats_path, "%s", optarg); break;
        case 'T': trace_path = optarg; break;
        case 'f': fg = 1; break;
        case 'h': help(stdout); return 0;
        case 'V': printf("%s %s\n", prog, MPILAB_VERSION_STRING); return 0;
        default: {
            char why[128];
            fprintf(stderr, "%s: %s (see --help)\n", prog, mpilab_getopt_problem(c, argc, argv, why, sizeof why));
            return 2;
        }
        }
    }
    if (!backing || size < 1 || rate < 1 || smax < smin || argc - optind != 1) {
        fprintf(stderr, "%s: --backing, --size >= 1, --rate >= 1, --seek-max >= --seek-min and "
                        "one MOUNTPOINT are required\n", prog);
        return 2;
    }
    if (stats_path[0]) {
        /* rewritten every 20 ms through a rename: only a regular file or a new name (a
           FIFO or device would be replaced); absolute, because FUSE changes the working
           directory to / (a relative name ended up in /) */
        struct stat sst;
        if (stat(stats_path, &sst) == 0 && !S_ISREG(sst.st_mode)) {
            fprintf(stderr, "%s: --stats %s: not a regular file\n", prog, stats_path);
            return 2;
        }
        if (stats_path[0] != '/') {
            char cwd[4096];
            size_t lc, lr = strlen(stats_path);
            if (!getcwd(cwd, sizeof cwd) || (lc = strlen(cwd)) + 1 + lr + 8 >= sizeof stats_path) {
                fprintf(stderr, "%s: --stats %s: path too long\n", prog, stats_path);
                return 2;
            }
            memmove(stats_path + lc + 1, stats_path, lr + 1);
            memcpy(stats_path, cwd, lc);
            stats_path[lc] = '/';
        }
    }
    if (trace_path) { /* a FIFO is traced to only when something reads it (no wait for ever) */
        trace = mpilab_stream_open(trace_path, "a");
        if (!trace) {
            fprintf(stderr, "%s: --trace %s: %s\n", prog, trace_path, mpilab_stream_error(errno));
            return 2;
        }
    }
    bfd = open(backing, O_RDONLY | O_DIRECTORY);
    if (bfd < 0) {
        fprintf(stderr, "%s: %s: %s\n", prog, backing, strerror(errno));
        return 2;
    }
    model = (mpilab_disk_model){smin, smax, rpm > 0 ? 30.0 / rpm : 0.0, rate, (int64_t)size};
    vclock = now_s();
    char *fargv[8];
    int fargc = 0;
    fargv[fargc++] = argv[0];
    if (fg)
        fargv[fargc++] = "-f";
    fargv[fargc++] = "-o";
    fargv[fargc++] = "fsname=mpilab-seekfs,subtype=mpilab-seekfs,max_read=1048576";
    fargv[fargc++] = argv[optind];
    fargv[fargc] = NULL;
    return fuse_main(fargc, fargv, &ops, NULL) ? 2 : 0;
}
