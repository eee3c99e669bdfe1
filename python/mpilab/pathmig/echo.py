"""The MPI echo ping-pong of the path migration tail test and bench (tests/python/
test_pathmig_tail.py, bench/pathmig_mpich.py): one C program, compiled with the MPI's own
mpicc (Open MPI or MPICH), so that both use the same message pattern.

Rank 0 fills a buffer, sends it and waits for it back; rank 1 answers as soon as a message
is in, every byte incremented; rank 0 checks every byte and, when given a log file, logs
each round trip as `ITERATION END DURATION ERRORS` (end on CLOCK_REALTIME, duration in s,
data errors so far, written before MPI_Finalize so that a job that hangs there still shows
its data). Output lines (rank 0): `progress N` every 10 round trips, then `pingpong ok: N`
(or `pingpong BAD E`), then `finalized` after MPI_Finalize returned.
Arguments: ROUND_TRIPS [BYTES [LOG [LINGER_MS]]] (defaults 1000, 65536, no log, 0).

LINGER_MS > 0 reproduces MPICH 4.0's finalize hang at will (docs/pathmig.md, "MPICH"):
rank 1 goes into MPI_Finalize right after its last send, and rank 0, still progressing in
its probe loop, answers the flush request rank 1's endpoint close sends; rank 1's close is
then complete and it waits in the PMI barrier, no longer reading its socket, and rank 0's
own close request is never answered."""
from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

from mpilab.errors import MpilabError

SOURCE = r"""
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
static double now_real(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}
int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, n = argc > 1 ? atoi(argv[1]) : 1000, len = argc > 2 ? atoi(argv[2]) : 65536;
    FILE *log = NULL;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    if (rank == 0 && argc > 3 && !(log = fopen(argv[3], "w"))) {
        perror(argv[3]);
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    unsigned char *b = malloc((size_t)len);
    int bad = 0;
    for (int it = 0; it < n; it++) {
        if (rank == 0) {
            for (int k = 0; k < len; k++) b[k] = (unsigned char)(it * 7 + k);
            double t = MPI_Wtime();
            MPI_Send(b, len, MPI_BYTE, 1, 0, MPI_COMM_WORLD);
            MPI_Recv(b, len, MPI_BYTE, 1, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            double d = MPI_Wtime() - t;
            for (int k = 0; k < len; k++) bad += b[k] != (unsigned char)(it * 7 + k + 1);
            if (log) fprintf(log, "%d %.6f %.9f %d\n", it, now_real(), d, bad);
            if ((it + 1) % 10 == 0) { printf("progress %d\n", it + 1); fflush(stdout); }
        } else if (rank == 1) {
            MPI_Recv(b, len, MPI_BYTE, 0, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            for (int k = 0; k < len; k++) b[k]++;
            MPI_Send(b, len, MPI_BYTE, 0, 0, MPI_COMM_WORLD);
        }
    }
    if (log) fclose(log);
    if (rank == 0) {
        if (bad) printf("pingpong BAD %d\n", bad);
        else printf("pingpong ok: %d\n", n);
        fflush(stdout);
    }
    /* linger: rank 0 keeps the MPI library progressing (a probe that finds nothing) for
     * LINGER_MS before MPI_Finalize, while rank 1 is already in it */
    double linger = argc > 4 ? atof(argv[4]) / 1e3 : 0.0, t0 = MPI_Wtime();
    while (rank == 0 && MPI_Wtime() - t0 < linger) {
        int flag;
        MPI_Iprobe(MPI_ANY_SOURCE, 99, MPI_COMM_WORLD, &flag, MPI_STATUS_IGNORE);
    }
    MPI_Finalize();
    if (rank == 0) { printf("finalized\n"); fflush(stdout); }
    free(b);
    return bad != 0;
}
"""

MPICC = {"mpich": "mpicc.mpich", "openmpi": "mpicc.openmpi"}


def mpicc_of(mpi: str) -> str | None:
    """The MPI's C compiler wrapper (Open MPI: also a plain `mpicc`), or None."""
    if mpi not in MPICC:
        raise MpilabError(f"--mpi {mpi}: expected one of {', '.join(sorted(MPICC))}")
    return shutil.which(MPICC[mpi]) or (shutil.which("mpicc") if mpi == "openmpi" else None)


def build(work: Path, mpi: str, name: str | None = None) -> Path:
    """Compile the program with `mpi`'s mpicc into WORK/NAME (default pp-MPI); returns the
    executable's path."""
    cc = mpicc_of(mpi)
    if not cc:
        raise MpilabError(f"{MPICC[mpi]} not found (install the MPI's development package)")
    src, exe = work / "echo_pingpong.c", work / (name or f"pp-{mpi}")
    src.write_text(SOURCE)
    p = subprocess.run([cc, "-O2", "-o", str(exe), str(src)], capture_output=True, text=True)
    if p.returncode != 0:
        raise MpilabError(f"{cc}: could not compile the echo ping-pong: "
                          f"{(p.stderr.strip().splitlines() or ['?'])[-1]}")
    return exe
