/* tuttiCommInitMPI under mpirun: the communicator mirrors MPI_COMM_WORLD. */
#include <mpi.h>
#include <stdio.h>

#include "tutti/tutti.h"

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int mrank = 0, msize = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &mrank);
  MPI_Comm_size(MPI_COMM_WORLD, &msize);
  MPI_Comm world = MPI_COMM_WORLD;
  tuttiComm_t comm = NULL;
  int bad = 0;
  if (tuttiCommInitMPI(&comm, &world, NULL) != tuttiSuccess) {
    fprintf(stderr, "rank %d: %s\n", mrank, tuttiGetLastError(NULL));
    bad = 1;
  } else {
    int rank = -1, n = 0, v = mrank + 1, sum = 0;
    tuttiCommUserRank(comm, &rank);
    tuttiCommCount(comm, &n);
    if (tuttiAllReduce(&v, &sum, 1, tuttiInt32, tuttiSum, comm, NULL) != tuttiSuccess) bad = 1;
    if (rank != mrank || n != msize || sum != msize * (msize + 1) / 2) bad = 1;
    MPI_Barrier(MPI_COMM_WORLD);
    tuttiCommDestroy(comm);
  }
  int anyBad = 0;
  MPI_Allreduce(&bad, &anyBad, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  if (mrank == 0) printf("tuttiCommInitMPI over %d MPI ranks: %s\n", msize, anyBad ? "FAILED" : "ok");
  MPI_Finalize();
  return anyBad;
}
