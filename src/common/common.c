#include "common/common.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "mpilab/version.h"

int mpilab_write_atomic(const char *path, const char *text, size_t len, char *err, size_t errlen)
{
    char tmp[PATH_MAX];
    int n = snprintf(tmp, sizeof tmp, "%s.tmp.%ld", path, (long)getpid());
    if (n < 0 || (size_t)n >= sizeof tmp) {
        snprintf(err, errlen, "%s: path too long", path);
        return -1;
    }
    FILE *f = fopen(tmp, "wb");
    if (!f) {
        snprintf(err, errlen, "%s: cannot create: %s", tmp, strerror(errno));
        return -1;
    }
    size_t w = fwrite(text, 1, len, f);
    int bad = (w != len) | (fflush(f) != 0) | (fsync(fileno(f)) != 0);
    int saved = errno;
    bad |= (fclose(f) != 0);
    if (bad) {
        snprintf(err, errlen, "%s: write failed: %s", tmp, strerror(saved ? saved : errno));
        unlink(tmp);
        return -1;
    }
    if (rename(tmp, path) != 0) {
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
