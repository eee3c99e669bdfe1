/* A position-aware disk model: one head; a request at byte position `pos` of `len` bytes
 * costs, when the head is elsewhere, a seek growing with the distance d
 *     seek(d) = seek_min + (seek_max - seek_min) * sqrt(d / size)
 * plus a rotational delay (half a revolution on average: rot_s = 30 / rpm), and always its
 * transfer time len / rate. The head ends at pos + len. Used by mpilab-seekfs (the
 * emulated seek disk of `mpilab disk`) and by its tests. */
#ifndef MPILAB_DISKMODEL_H
#define MPILAB_DISKMODEL_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct {
    double seek_min_s, seek_max_s; /* seconds */
    double rot_s;                  /* rotational delay per seek, seconds */
    double rate_Bps;               /* transfer rate, bytes per second (> 0) */
    int64_t size;                  /* positions 0..size (> 0) */
} mpilab_disk_model;

typedef struct {
    int64_t head;                  /* byte position of the head */
    double busy_s;                 /* modelled time of all requests served */
    int64_t reads, writes, seeks, bytes_read, bytes_written;
} mpilab_disk_state;

/* Cost in seconds of a request at pos of len bytes with the head at `head`. */
double mpilab_disk_cost(const mpilab_disk_model *m, int64_t head, int64_t pos, int64_t len);

/* Serve a request: its cost, with the state updated (head, counters, busy time). */
double mpilab_disk_serve(const mpilab_disk_model *m, mpilab_disk_state *s, int64_t pos,
                         int64_t len, int write);

/* Elevator (C-LOOK): of n queued request positions, the index to serve next with the head
 * at `head`: the lowest position >= head, else the lowest position. -1 if n == 0. */
int mpilab_disk_elevator_pick(const int64_t *pos, int n, int64_t head);

#ifdef __cplusplus
}
#endif
#endif
