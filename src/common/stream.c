/* Outputs that may be FIFOs, opened without waiting for a reader (stream.h). */
#include "common/stream.h"

#include <errno.h>
#include <fcntl.h>
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
