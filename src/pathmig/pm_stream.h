/* Opening a log the path-migration tools stream to (the agent's event log, the ping-pong's
 * round trips): a FIFO only when something reads it. Internal to src/pathmig. */
#ifndef MPILAB_PM_STREAM_H
#define MPILAB_PM_STREAM_H

#include <stdio.h>

/* fopen(path, mode), except that a FIFO with no reader is refused at once instead of
 * waiting in open() for one, and a FIFO with a reader is written with blocking writes.
 * Returns the stream, or NULL with errno set (ENXIO: a FIFO with no reader). */
FILE *mpilab_pm_stream_open(const char *path, const char *mode);

/* The reason for a failed mpilab_pm_stream_open, from its errno. */
const char *mpilab_pm_stream_error(int err);

#endif
