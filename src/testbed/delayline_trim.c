/* The delay line's trim (see delayline.h): the path's own measured cost, taken off every
 * hold so that what a lone packet sees end to end is the configured delay. */
#include "testbed/delayline.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "mpilab/parse.h"

int64_t mpilab_dl_hold(int64_t delay_ns, int64_t trim_ns)
{
    return trim_ns >= delay_ns ? 0 : delay_ns - trim_ns;
}

int mpilab_dl_parse_trim(const char *text, int64_t *trim_ns)
{
    int neg = text[0] == '-';
    double sec = -1.0;
    if (mpilab_parse_duration(text + neg, &sec) != 0 || sec < 0.0 || sec > 1.0)
        return -1;
    *trim_ns = (int64_t)(sec * 1e9 + 0.5) * (neg ? -1 : 1);
    return 0;
}

int mpilab_dl_read_trim(const char *path, int64_t *trim_ns)
{
    /* opened without blocking and read only if it is a regular file: a FIFO with no writer
     * would hold open() (and the line, which then ignores SIGTERM) for ever */
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    struct stat sb;
    if (fd >= 0 && (fstat(fd, &sb) != 0 || !S_ISREG(sb.st_mode))) {
        close(fd);
        fprintf(stderr, "mpilab-delayline: warning: --trim-file %s: not a regular file (trim unchanged)\n",
                path);
        return -1;
    }
    FILE *f = fd >= 0 ? fdopen(fd, "r") : NULL;
    if (!f) {
        fprintf(stderr, "mpilab-delayline: warning: --trim-file %s: %s (trim unchanged)\n", path,
                strerror(errno));
        if (fd >= 0)
            close(fd);
        return -1;
    }
    char line[64];
    size_t n = fread(line, 1, sizeof(line) - 1, f);
    int err = ferror(f);
    fclose(f);
    line[n] = '\0';
    while (n > 0 && (line[n - 1] == '\n' || line[n - 1] == ' ' || line[n - 1] == '\r'))
        line[--n] = '\0';
    if (err || n == 0 || mpilab_dl_parse_trim(line, trim_ns) != 0) {
        fprintf(stderr, "mpilab-delayline: warning: --trim-file %s:1: '%s' is not a duration of "
                        "-1 s to 1 s (trim unchanged)\n", path, line);
        return -1;
    }
    return 0;
}
