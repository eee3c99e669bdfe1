/* A trivial MPI program for checking SimGrid platform files (docs/sim.md): a ping-pong
   between rank 0 and the last rank, 1 byte and 1 MB; prints "oneway BYTES SECONDS". Under
   SMPI, every rank then computes 1e9 simulated flops (smpi_execute_flops) and rank 0
   prints "compute RANK SECONDS" for each: 1e9 / the host's speed. An MPI_Alltoall of one
   int makes every pair of ranks communicate ("alltoall N ranks 0 wrong").
   Built outside the tree's build dirs:  smpicc -O1 -o pp examples/platforms/pingpong.c
   Run:  smpirun -np N -platform P.xml -hostfile HOSTS ./pp
   (not in examples/CMakeLists.txt's glob: that builds the .c files of examples/ itself) */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
/* rank 0 and the last rank: 1-byte and 1 MB ping-pongs; one-way time = (11 - 1 round
   trips) / 20, so the barrier's skew before the first round trip cancels */
static double run(char *buf, int n, int reps, int rank, int peer) {
  MPI_Barrier(MPI_COMM_WORLD);
  double t0 = MPI_Wtime();
  for (int i = 0; i < reps; i++) {
    if (rank == 0) {
      MPI_Send(buf, n, MPI_CHAR, peer, 0, MPI_COMM_WORLD);
      MPI_Recv(buf, n, MPI_CHAR, peer, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    } else if (rank == peer) {
      MPI_Recv(buf, n, MPI_CHAR, 0, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      MPI_Send(buf, n, MPI_CHAR, 0, 0, MPI_COMM_WORLD);
    }
  }
  return MPI_Wtime() - t0;
}
int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int rank, size;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  char *buf = calloc(1000000, 1);
  int sizes[2] = {1, 1000000};
  for (int k = 0; k < 2; k++) {
    double a = run(buf, sizes[k], 1, rank, size - 1);
    double b = run(buf, sizes[k], 11, rank, size - 1);
    if (rank == 0) printf("oneway %d %.12e\n", sizes[k], (b - a) / 20);
  }
  /* every pair of ranks exchanges one int (a platform whose routes fail for some pair
     fails here); rank 0 checks what it received */
  int *out = malloc(sizeof(int) * (size_t)size), *in = malloc(sizeof(int) * (size_t)size);
  for (int r = 0; r < size; r++) out[r] = rank * size + r;
  MPI_Alltoall(out, 1, MPI_INT, in, 1, MPI_INT, MPI_COMM_WORLD);
  int bad = 0;
  for (int r = 0; r < size; r++) bad += in[r] != r * size + rank;
  int allbad = 0;
  MPI_Reduce(&bad, &allbad, 1, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD);
  if (rank == 0) printf("alltoall %d ranks %d wrong\n", size, allbad);
  free(out);
  free(in);
  free(buf);
#ifdef SMPI_H
  double c0 = MPI_Wtime();
  smpi_execute_flops(1e9);
  double c = MPI_Wtime() - c0;
  double *all = rank == 0 ? malloc(sizeof(double) * (size_t)size) : NULL;
  MPI_Gather(&c, 1, MPI_DOUBLE, all, 1, MPI_DOUBLE, 0, MPI_COMM_WORLD);
  if (rank == 0)
    for (int r = 0; r < size; r++) printf("compute %d %.12e\n", r, all[r]);
  free(all);
#endif
  MPI_Finalize();
  return 0;
}
