/* Internal helpers shared by every capability: one-line errors, atomic file output,
 * result-file provenance. Not part of the public API. */
#ifndef MPILAB_SRC_COMMON_H
#define MPILAB_SRC_COMMON_H

#include <jansson.h>
#include <mpi.h>
#include <stddef.h>

#include "mpilab/parse.h" /* the strict value parsers */

#include "mpilab/results.h" /* MPILAB_RESULTS_SCHEMA */

/* A one-line reason (printf format) into err (if given); returns -1, so that
 * `return mpilab_errf(err, errlen, "...", ...);` reports and fails in one statement. */
int mpilab_errf(char *err, size_t errlen, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Write `text` (length `len`) to `path`, following one rule (python/mpilab/fsutil.py
 * follows the same): "-" is standard output; an existing device, FIFO or socket is written
 * directly, never replaced; a regular file or a new name is written to `path.tmp.<pid>` and
 * renamed onto it when complete (a symbolic link is followed: the file it names is replaced,
 * the link stays); a directory or a dangling link is refused. Temporary files
 * `path.tmp.<pid>` whose process is gone (a killed run) are removed first, with a note on
 * stderr. Returns 0 on success; on failure removes the temporary file, writes a one-line
 * reason to `err` and returns -1. */
int mpilab_write_atomic(const char *path, const char *text, size_t len, char *err, size_t errlen);

/* A run's partial results file: OUT with ".partial" before the extension (r.json ->
 * r.partial.json). 0, or -1 if it does not fit in n bytes. */
int mpilab_partial_path(const char *out, char *buf, size_t n);

/* Check an output before any work: a FIFO with no reader is refused (one line in err, -1);
 * a FIFO with a reader stays open for writing in *fd (close it after the final write),
 * else *fd = -1. Anything else returns 0 (mpilab_write_atomic checks it when writing). */
int mpilab_output_hold(const char *path, int *fd, char *err, size_t errlen);

/* Check before any work that an output can be written where it is named: not an empty
 * name, not a directory, its folder present. 0, or -1 with one line in err. */
int mpilab_output_check(const char *path, char *err, size_t errlen);

/* 1 if path is a regular file or a new name (not "-", a FIFO or a device). */
int mpilab_output_is_file(const char *path);

/* Dump `root` as indented JSON to `path` atomically. Same contract as above. */
int mpilab_json_write_atomic(const char *path, const json_t *root, char *err, size_t errlen);

/* Build the "provenance" object of the results schema ("cpu_idle" is read on rank 0
 * only, the rank that keeps it). Collective over `comm` when MPI is
 * initialised (gathers host names and the rank->host/core mapping); with
 * comm == MPI_COMM_NULL or MPI not initialised it describes the calling process only.
 * `tool` is the program name, argv is recorded as "command". Returns a new reference. */
json_t *mpilab_provenance(MPI_Comm comm, const char *tool, int argc, char **argv);

/* Current UTC time as ISO 8601 (YYYY-MM-DDTHH:MM:SSZ) into buf. */
void mpilab_iso_date(char *buf, size_t len);

#endif
