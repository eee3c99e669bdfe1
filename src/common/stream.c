/* Outputs that may be FIFOs, opened without waiting for a reader; standard output checked
 * at exit (stream.h). */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* program_invocation_short_name */
#endif
#include "common/stream.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int mpilab_fifo_writer(const char *path, int blocking)
{
    struct stat st;
    if (stat(path, &st) != 0 || !S_ISFIFO(st.st_mode))
        return -2;
    int fd = open(path, O_WRONLY | O_NOCTTY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0 || !blocking)
        return fd;
    int fl = fcntl(fd, F_GETFL);
    if (fl < 0 || fcntl(fd, F_SETFL, fl & ~O_NONBLOCK) != 0) {
        int e = errno;
        close(fd);
        errno = e;
        return -1;
    }
    return fd;
}

FILE *mpilab_stream_open(const char *path, const char *mode)
{
    int fd = mpilab_fifo_writer(path, 1);
    if (fd == -2)
        return fopen(path, mode);
    if (fd < 0)
        return NULL;
    FILE *f = fdopen(fd, mode);
    if (!f) {
        int e = errno;
        close(fd);
        errno = e;
    }
    return f;
}

const char *mpilab_stream_error(int err)
{
    return err == ENXIO ? "a FIFO with no reader; not waiting for one" : strerror(err);
}

#ifndef MPILAB_SIMULATED
/* Standard output is a pipe or socket whose reader has gone (an earlier write's EPIPE is
 * no longer in errno once stdio reports the stream's error at exit). */
static int reader_gone(void)
{
    struct stat st;
    if (fstat(STDOUT_FILENO, &st) != 0 || !(S_ISFIFO(st.st_mode) || S_ISSOCK(st.st_mode)))
        return 0;
    struct pollfd p = {.fd = STDOUT_FILENO, .events = POLLOUT};
    return poll(&p, 1, 0) == 1 && (p.revents & (POLLERR | POLLHUP)) != 0;
}

static void stdout_at_exit(void)
{
    errno = 0;
    int bad = fflush(stdout) != 0 || ferror(stdout);
    int err = errno;
    if (bad && (err == EPIPE || reader_gone()))
        return; /* a reader that stopped reading: not an error */
    if (!bad && fclose(stdout) == 0)
        return;
    if (!bad)
        err = errno;
    fprintf(stderr, "%s: standard output: %s\n", program_invocation_short_name,
            err ? strerror(err) : "write error (a full disk or an I/O error)");
    _exit(1);
}
#endif

void mpilab_stdout_guard(void)
{
#ifdef MPILAB_SIMULATED
    /* under smpirun the tools run as simulated actors: at the process's exit their standard
     * output reads as failed even when nothing was written to it, so the check would turn
     * every run into an error; smpirun's own output handling stands in for it */
    return;
#else
    signal(SIGPIPE, SIG_IGN);
    atexit(stdout_at_exit);
#endif
}
