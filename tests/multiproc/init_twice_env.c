/* Two communicators from the launch environment in one job: one destroyed while the other
 * lives on, then a third. Exits non-zero on any error or wrong sum. */
#include <stdio.h>

#include "tutti/tutti.h"

static int check(tuttiComm_t comm, int expectRanks) {
  int rank = -1, n = 0, one = 1, sum = 0;
  if (tuttiCommUserRank(comm, &rank) != tuttiSuccess || tuttiCommCount(comm, &n) != tuttiSuccess)
    return 1;
  if (tuttiAllReduce(&one, &sum, 1, tuttiInt32, tuttiSum, comm, NULL) != tuttiSuccess) {
    fprintf(stderr, "rank %d: %s\n", rank, tuttiGetLastError(comm));
    return 1;
  }
  return n != expectRanks || sum != n;
}

int main(void) {
  tuttiComm_t a = NULL, b = NULL, c = NULL;
  int n = 0, bad = 0;
  if (tuttiCommInitFromEnv(&a, NULL) != tuttiSuccess) goto fail;
  tuttiCommCount(a, &n);
  if (tuttiCommInitFromEnv(&b, NULL) != tuttiSuccess) goto fail;
  bad |= check(a, n) | check(b, n);
  tuttiCommDestroy(a);
  bad |= check(b, n);
  if (tuttiCommInitFromEnv(&c, NULL) != tuttiSuccess) goto fail;
  bad |= check(c, n) | check(b, n);
  tuttiCommDestroy(b);
  tuttiCommDestroy(c);
  return bad;
fail:
  fprintf(stderr, "init failed: %s\n", tuttiGetLastError(NULL));
  return 1;
}
