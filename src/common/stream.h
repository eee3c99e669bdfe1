/* Opening an output that may be a FIFO without waiting in open() for a reader. MPI-free,
 * so that the path-migration tools (which do not link MPI) share it with the library.
 * Internal: not part of the public API. */
#ifndef MPILAB_SRC_STREAM_H
#define MPILAB_SRC_STREAM_H

#include <stdio.h>

/* If path is a FIFO: its write end, opened without waiting (blocking writes when
 * `blocking`), or -1 with errno set (ENXIO: no reader). If path is not a FIFO (or does not
 * exist): -2, nothing opened. */
int mpilab_fifo_writer(const char *path, int blocking);

/* fopen(path, mode), except that a FIFO with no reader is refused at once instead of
 * waiting in open() for one, and a FIFO with a reader is written with blocking writes.
 * Returns the stream, or NULL with errno set (ENXIO: a FIFO with no reader). */
FILE *mpilab_stream_open(const char *path, const char *mode);

/* The reason for a failed mpilab_fifo_writer or mpilab_stream_open, from its errno. */
const char *mpilab_stream_error(int err);

/* Standard output checked at exit, for every tool: SIGPIPE ignored, and at exit the
 * stream flushed and closed; a closed pipe (EPIPE) ends the tool quietly with its own
 * status, a failed write (a full disk, /dev/full, an I/O error) prints one line
 * "PROGRAM: standard output: REASON" and exits 1 (never 0 with the output lost). Call once,
 * first thing in main(). */
void mpilab_stdout_guard(void);

#endif
