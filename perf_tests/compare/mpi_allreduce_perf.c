/* mpi_allreduce_perf: MPI_Allreduce (float32, MPI_SUM) with all_reduce_perf's sweep, timing
 * and table, for side-by-side comparison (tools/compare/compare.py).
 *   mpirun --allow-run-as-root --oversubscribe -np 4 mpi_allreduce_perf -b 8 -e 128M -f 2 */
#include <mpi.h>

#include "compare_table.h"

static double reduce_time(double sec, int average, int rank, int nranks) {
  double out = sec;
  if (average == 0) {
    MPI_Bcast(&out, 1, MPI_DOUBLE, 0, MPI_COMM_WORLD);
  } else {
    MPI_Allreduce(&sec, &out, 1, MPI_DOUBLE,
                  average == 2   ? MPI_MIN
                  : average == 3 ? MPI_MAX
                                 : MPI_SUM,
                  MPI_COMM_WORLD);
    if (average == 1) out /= nranks;
  }
  (void)rank;
  return out;
}

/* One out-of-place or in-place measurement; returns busbw, adds failing checks to *errors. */
static double bench(const cmp_opts* o, float* send, float* recv, size_t count, int inPlace,
                    int rank, int nranks, int* errors, uint64_t* seed) {
  const void* src = inPlace ? MPI_IN_PLACE : (const void*)send;
  MPI_Barrier(MPI_COMM_WORLD);
  double t0 = cmp_now();
  for (int i = 0; i < o->iters; ++i) {
    MPI_Allreduce(src, recv, (int)count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
  }
  double sec = reduce_time((cmp_now() - t0) / o->iters, o->average, rank, nranks);
  long wrong = 0;
  if (o->check) {
    ++*seed;
    cmp_fill_n(inPlace ? recv : send, count, rank, *seed, nranks);
    MPI_Allreduce(src, recv, (int)count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
    long mine = cmp_wrong(recv, count, *seed, nranks);
    if (mine) ++*errors;
    MPI_Allreduce(&mine, &wrong, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
  }
  double bw = 0;
  if (rank == 0) bw = cmp_result(sec, count, nranks, wrong, o->check);
  return bw;
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank, nranks;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &nranks);
  cmp_opts o;
  if (cmp_parse(argc, argv, &o)) {
    MPI_Finalize();
    return 1;
  }
  setvbuf(stdout, NULL, _IOLBF, 0);
  float* send = (float*)calloc(o.maxBytes / sizeof(float) + 1, sizeof(float));
  float* recv = (float*)calloc(o.maxBytes / sizeof(float) + 1, sizeof(float));
  if (rank == 0) {
    int len = 0;
    char version[MPI_MAX_LIBRARY_VERSION_STRING];
    MPI_Get_library_version(version, &len);
    char* nl = strchr(version, '\n');
    if (nl) *nl = 0;
    cmp_header("mpi_allreduce_perf", version, &o, nranks);
  }
  for (int w = 0; w < o.warmup; ++w) {
    MPI_Allreduce(send, recv, (int)(o.maxBytes / sizeof(float)), MPI_FLOAT, MPI_SUM,
                  MPI_COMM_WORLD);
  }
  int errors = 0, nbw = 0;
  double bwsum = 0;
  uint64_t seed = 0;
  for (size_t size = o.minBytes; size <= o.maxBytes; size = cmp_next(&o, size)) {
    size_t count = size / sizeof(float);
    if (rank == 0) cmp_line_start(count);
    cmp_fill_n(send, count, rank, 99, nranks);
    bwsum += bench(&o, send, recv, count, 0, rank, nranks, &errors, &seed);
    bwsum += bench(&o, send, recv, count, 1, rank, nranks, &errors, &seed);
    nbw += 2;
    if (rank == 0) printf("\n");
    if (size == 0 && o.stepFactor > 1) break;
  }
  int total = 0;
  MPI_Allreduce(&errors, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  if (rank == 0) cmp_footer("mpi_allreduce_perf", total, nbw ? bwsum / nbw : 0);
  free(send);
  free(recv);
  MPI_Finalize();
  return total ? 1 : 0;
}
