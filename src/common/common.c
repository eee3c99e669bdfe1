#include "common/common.h"
#include "common/stream.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <signal.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>

#include "mpilab/version.h"

/* Where an output goes (see mpilab_write_atomic in common.h). */
static int write_all_fd(int fd, const char *text, size_t len)
{
    while (len > 0) {
        ssize_t w = write(fd, text, len);
        if (w < 0) {
            if (errno == EINTR)
                continue;
            return -1;
        }
        text += w;
        len -= (size_t)w;
    }
    return 0;
}

static int pid_alive(long pid)
{
    if (pid <= 0 || pid > INT_MAX)
        return 0;
    return kill((pid_t)pid, 0) == 0 || errno == EPERM;
}

/* Remove DIR/BASE.tmp.<pid> files whose process no longer exists (left by a killed run). */
static void remove_stale_temporaries(const char *dir, const char *base)
{
    DIR *d = opendir(dir);
    if (!d)
        return;
    size_t bl = strlen(base);
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        const char *n = e->d_name;
        if (strncmp(n, base, bl) != 0 || strncmp(n + bl, ".tmp.", 5) != 0)
            continue;
        const char *digits = n + bl + 5;
        if (!*digits || strspn(digits, "0123456789") != strlen(digits) || strlen(digits) > 9)
            continue;
        long pid = strtol(digits, NULL, 10);
        if (pid == (long)getpid() || pid_alive(pid))
            continue;
        char full[PATH_MAX];
        int k = snprintf(full, sizeof full, "%s/%s", dir, n);
        struct stat st;
        if (k < 0 || (size_t)k >= sizeof full || lstat(full, &st) != 0 || !S_ISREG(st.st_mode))
            continue;
        if (unlink(full) == 0)
            fprintf(stderr, "mpilab: removed %s, a temporary file left by a killed run (pid %ld)\n",
                    full, pid);
    }
    closedir(d);
}

int mpilab_errf(char *err, size_t errlen, const char *fmt, ...)
{
    if (err && errlen) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err, errlen, fmt, ap);
        va_end(ap);
    }
    return -1;
}

int mpilab_write_atomic(const char *path, const char *text, size_t len, char *err, size_t errlen)
{
    if (strcmp(path, "-") == 0) {
        fflush(stdout);
        /* a reader that stopped (`| head`) is not an error: ignore SIGPIPE for this write
         * and treat EPIPE as done, as cat does */
        void (*old)(int) = signal(SIGPIPE, SIG_IGN);
        int bad = write_all_fd(STDOUT_FILENO, text, len);
        int saved = errno;
        signal(SIGPIPE, old == SIG_ERR ? SIG_DFL : old);
        if (bad && saved != EPIPE) {
            snprintf(err, errlen, "standard output: write failed: %s", strerror(saved));
            return -1;
        }
        return 0;
    }
    struct stat st;
    char target[PATH_MAX];
    if (stat(path, &st) == 0) {
        if (S_ISDIR(st.st_mode)) {
            snprintf(err, errlen, "%s: is a directory, expected a file name", path);
            return -1;
        }
        if (!S_ISREG(st.st_mode)) {
            /* a FIFO is opened without waiting: no reader means a one-line error, never a
             * hang; a socket or block device is refused; a character device (/dev/null, a
             * terminal) is written directly */
            if (!S_ISFIFO(st.st_mode) && !S_ISCHR(st.st_mode)) {
                snprintf(err, errlen, "%s: is %s, not a regular file; use --out - to stream",
                         path, S_ISSOCK(st.st_mode) ? "a socket" : "a block device");
                return -1;
            }
            int fd = open(path, O_WRONLY | O_NOCTTY | O_NONBLOCK);
            if (fd < 0) {
                if (errno == ENXIO)
                    snprintf(err, errlen, "%s: a FIFO with no reader; not waiting for one", path);
                else
                    snprintf(err, errlen, "%s: cannot open for writing: %s", path,
                             strerror(errno));
                return -1;
            }
            int fl = fcntl(fd, F_GETFL);
            if (fl >= 0)
                (void)fcntl(fd, F_SETFL, fl & ~O_NONBLOCK);
            int bad = write_all_fd(fd, text, len);
            int saved = errno;
            close(fd);
            if (bad) {
                snprintf(err, errlen, "%s: write failed: %s", path, strerror(saved));
                return -1;
            }
            return 0;
        }
        /* a regular file, possibly through symbolic links: replace the file, keep the links */
        if (!realpath(path, target)) {
            snprintf(err, errlen, "%s: cannot resolve: %s", path, strerror(errno));
            return -1;
        }
    } else if (errno == ENOENT) {
        if (lstat(path, &st) == 0) {
            snprintf(err, errlen, "%s: a symbolic link to a missing file; not writing through it",
                     path);
            return -1;
        }
        if (strlen(path) >= sizeof target) {
            snprintf(err, errlen, "%s: path too long", path);
            return -1;
        }
        strcpy(target, path);
    } else {
        snprintf(err, errlen, "%s: cannot write: %s", path, strerror(errno));
        return -1;
    }

    char dir[PATH_MAX];
    const char *slash = strrchr(target, '/');
    const char *base = slash ? slash + 1 : target;
    if (!slash)
        strcpy(dir, ".");
    else if (slash == target)
        strcpy(dir, "/");
    else
        snprintf(dir, sizeof dir, "%.*s", (int)(slash - target), target);
    remove_stale_temporaries(dir, base);

    char tmp[PATH_MAX];
    int n = snprintf(tmp, sizeof tmp, "%s.tmp.%ld", target, (long)getpid());
    if (n < 0 || (size_t)n >= sizeof tmp) {
        snprintf(err, errlen, "%s: path too long", path);
        return -1;
    }
    unlink(tmp); /* our own leftover from a failed earlier write */
    int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW, 0666);
    if (fd < 0) {
        /* name the file asked for, and the directory the temporary file goes into */
        snprintf(err, errlen, "%s: cannot create a file in %s: %s", path, dir, strerror(errno));
        return -1;
    }
    int bad = write_all_fd(fd, text, len) != 0 || fsync(fd) != 0;
    int saved = errno;
    bad |= (close(fd) != 0);
    if (bad) {
        snprintf(err, errlen, "%s: write failed: %s", tmp, strerror(saved ? saved : errno));
        unlink(tmp);
        return -1;
    }
    if (rename(tmp, target) != 0) {
        snprintf(err, errlen, "%s: cannot rename into place: %s", path, strerror(errno));
        unlink(tmp);
        return -1;
    }
    return 0;
}

int mpilab_json_write_atomic(const char *path, const json_t *root, char *err, size_t errlen)
{
    char *text = json_dumps(root, JSON_INDENT(1) | JSON_REAL_PRECISION(10));
    if (!text) {
        snprintf(err, errlen, "%s: cannot serialise results", path);
        return -1;
    }
    size_t len = strlen(text);
    /* end with a newline */
    char *withnl = realloc(text, len + 2);
    if (!withnl) {
        free(text);
        snprintf(err, errlen, "%s: out of memory", path);
        return -1;
    }
    withnl[len] = '\n';
    withnl[len + 1] = '\0';
    int rc = mpilab_write_atomic(path, withnl, len + 1, err, errlen);
    free(withnl);
    return rc;
}

void mpilab_iso_date(char *buf, size_t len)
{
    time_t now = time(NULL);
    struct tm tm;
    gmtime_r(&now, &tm);
    strftime(buf, len, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

/* Where a run's partial results go: OUT with ".partial" before its extension
 * (r.json -> r.partial.json, r -> r.partial). */
int mpilab_partial_path(const char *out, char *buf, size_t n)
{
    const char *slash = strrchr(out, '/');
    const char *dot = strrchr(out, '.');
    if (!dot || (slash && dot < slash) || dot == (slash ? slash + 1 : out))
        dot = out + strlen(out);
    int k = snprintf(buf, n, "%.*s.partial%s", (int)(dot - out), out, dot);
    return k < 0 || (size_t)k >= n ? -1 : 0;
}

/* An output that is a FIFO is checked before any work: no reader is one line now rather
 * than after the measurements; with a reader, the write end stays open in *fd (close it
 * after the final write) so the reader does not see an early end of file. */
int mpilab_output_hold(const char *path, int *fd, char *err, size_t errlen)
{
    *fd = -1;
    if (!path || strcmp(path, "-") == 0)
        return 0;
    int f = mpilab_fifo_writer(path, 0);
    if (f == -2)
        return 0;
    if (f < 0) {
        if (errno == ENXIO)
            snprintf(err, errlen, "%s: %s", path, mpilab_stream_error(errno));
        else
            snprintf(err, errlen, "%s: cannot open for writing: %s", path, strerror(errno));
        return -1;
    }
    *fd = f;
    return 0;
}

int mpilab_output_check(const char *path, char *err, size_t errlen)
{
    struct stat st;
    if (!path || !*path)
        return mpilab_errf(err, errlen, "output: empty file name");
    if (strcmp(path, "-") == 0)
        return 0;
    if (stat(path, &st) == 0)
        return S_ISDIR(st.st_mode) ? mpilab_errf(err, errlen, "%s: is a directory", path) : 0;
    const char *slash = strrchr(path, '/');
    if (!slash)
        return 0;
    size_t n = slash == path ? 1 : (size_t)(slash - path);
    char dir[4096];
    if (n >= sizeof dir)
        return mpilab_errf(err, errlen, "%s: name too long", path);
    memcpy(dir, path, n);
    dir[n] = 0;
    if (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode))
        return mpilab_errf(err, errlen, "%s: its folder %s does not exist", path, dir);
    return 0;
}

/* The output is a regular file or a new name (checkpoints go beside it), not "-", a FIFO
 * or a device. */
int mpilab_output_is_file(const char *path)
{
    struct stat st;
    if (!path || strcmp(path, "-") == 0)
        return 0;
    return stat(path, &st) != 0 || S_ISREG(st.st_mode);
}
