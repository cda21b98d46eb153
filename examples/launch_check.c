/* Checks a launch end to end: init from the launcher's environment (tuttirun, torchrun,
 * mpirun, srun, sbatch), one all-reduce of per-rank distinct values checked against the
 * closed-form sum, print one line per rank, destroy.
 *
 *   launch_check [--count N] [--die-rank R [--die-by-exit]]
 *
 * --die-rank R: after a first all-reduce, rank R kills itself (SIGKILL; with --die-by-exit it
 * ends with _exit(137) instead: no handler, destructor or tutti cleanup runs either way, but
 * MPICH's Hydra ends the whole job when a process dies of a signal) and every other rank
 * runs a second all-reduce, which must fail: it prints "rank r: error: <tutti's message>"
 * (naming rank R) and exits 3. Exit status: 0 all good, 1 init failed, 2 a wrong value,
 * 3 a collective failed. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tutti/tutti.h"

/* Element i of rank r's input: distinct per rank and element, exact in a double. */
static double value(int r, size_t i) { return (double)(r + 1) * 1000.0 + (double)(i % 997); }

static int allReduceChecked(tuttiComm_t comm, int rank, int n, size_t count, int call) {
  double* buf = calloc(count ? count : 1, sizeof(double));
  if (buf == NULL) {
    printf("rank %d: out of memory for %zu doubles\n", rank, count);
    return 3;
  }
  for (size_t i = 0; i < count; ++i) buf[i] = value(rank, i) + call;
  tuttiResult_t res = tuttiAllReduce(buf, buf, count, tuttiFloat64, tuttiSum, comm, NULL);
  if (res != tuttiSuccess) {
    printf("rank %d: error: %s: %s\n", rank, tuttiGetErrorString(res), tuttiGetLastError(comm));
    free(buf);
    return 3;
  }
  size_t wrong = 0;
  for (size_t i = 0; i < count; ++i) {
    /* sum over r of ((r + 1) * 1000 + i % 997 + call) */
    double want = 1000.0 * n * (n + 1) / 2.0 + (double)n * ((double)(i % 997) + call);
    if (buf[i] != want) ++wrong;
  }
  free(buf);
  if (wrong) {
    printf("rank %d: %zu of %zu elements wrong\n", rank, wrong, count);
    return 2;
  }
  return 0;
}

int main(int argc, char** argv) {
  size_t count = 100000;
  int dieRank = -1, dieByExit = 0;
  for (int i = 1; i < argc; ++i) {
    if (!strcmp(argv[i], "--count") && i + 1 < argc) {
      count = strtoull(argv[++i], NULL, 10);
    } else if (!strcmp(argv[i], "--die-rank") && i + 1 < argc) {
      dieRank = atoi(argv[++i]);
    } else if (!strcmp(argv[i], "--die-by-exit")) {
      dieByExit = 1;
    } else {
      fprintf(stderr, "usage: %s [--count N] [--die-rank R [--die-by-exit]]\n", argv[0]);
      return 1;
    }
  }
  /* MPICH's Hydra with -disable-auto-cleanup tells the processes connected to it that one has
   * failed with SIGUSR1, which would end them before tutti reports the failure. */
  if (dieByExit) signal(SIGUSR1, SIG_IGN);
  tuttiComm_t comm = NULL;
  tuttiResult_t res = tuttiCommInitFromEnv(&comm, NULL);
  if (res != tuttiSuccess) {
    fprintf(stderr, "init failed: %s: %s\n", tuttiGetErrorString(res), tuttiGetLastError(NULL));
    return 1;
  }
  int rank = -1, n = 0;
  tuttiCommUserRank(comm, &rank);
  tuttiCommCount(comm, &n);
  int rc = allReduceChecked(comm, rank, n, count, 0);
  if (rc == 0 && dieRank >= 0) {
    fflush(stdout);
    if (rank == dieRank) {
      if (dieByExit) _exit(137);
      raise(SIGKILL);
    }
    rc = allReduceChecked(comm, rank, n, count, 1);
  }
  if (rc == 0) printf("rank %d of %d: all-reduce of %zu doubles correct\n", rank, n, count);
  fflush(stdout);
  if (rc == 3) {
    tuttiCommAbort(comm);
  } else {
    tuttiCommDestroy(comm);
  }
  return rc;
}
