/* Shared between the multilane files (grid.c, multilane.c): the grid's layout and the
 * error message of the last failure. */
#ifndef MPILAB_MULTILANE_INTERNAL_H
#define MPILAB_MULTILANE_INTERNAL_H

#include "mpilab/multilane.h"

struct mpilab_grid {
    int nranks, nsites;
    int *site;        /* site of each rank */
    int *site_start;  /* nsites + 1 offsets into members */
    int *members;     /* ranks of site 0 ascending, then site 1, ... */
};

/* Record a one-line reason (printf format); returns `code` for convenience. */
int mpilab_ml_fail(int code, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* A copy of g (NULL on ENOMEM). */
mpilab_grid_t *mpilab_ml_grid_copy(const mpilab_grid_t *g);

/* Waits that sleep 50 us between tests after a few spins (polite.c): same semantics as
 * MPI_Waitall (st may be NULL) / MPI_Send / MPI_Recv / MPI_Barrier / MPI_Allreduce. */
int mpilab_ml_wait(int n, MPI_Request *req, MPI_Status *st);
int mpilab_ml_send(const void *buf, int count, MPI_Datatype type, int dst, int tag, MPI_Comm comm);
int mpilab_ml_recv(void *buf, int count, MPI_Datatype type, int src, int tag, MPI_Comm comm,
                   MPI_Status *st);
int mpilab_ml_barrier(MPI_Comm comm);
int mpilab_ml_allreduce(const void *in, void *out, int count, MPI_Datatype type, MPI_Op op,
                        MPI_Comm comm);

/* Phase marks of the calling rank's last multilane call (multilane.c): MPI_Wtime of the
 * first and the last time this rank passed mark `which` (NAN if never); reset before a
 * timed call.  WAN_START: a lane's data is ready at its sending end (scatter: the prepare
 * message arrived at the sender, or the root finished the prepare; gather: the remote
 * receiver collected its run); WAN_END: a lane arrived across the WAN (scatter: at the
 * remote receiver; gather: at a sender k >= 1). */
enum { MPILAB_ML_MARK_WAN_START = 0, MPILAB_ML_MARK_WAN_END = 1, MPILAB_ML_NMARKS = 2 };
void mpilab_ml_marks_reset(void);
void mpilab_ml_mark(int which);
/* first (last = 0) or last (last = 1) time of mark `which`; NAN if unset */
double mpilab_ml_mark_get(int which, int last);

#endif
