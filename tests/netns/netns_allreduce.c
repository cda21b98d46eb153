/* One rank of the netns communicator test (run under `tuttirun --hosts ...`), public API only:
 * all-reduce (ring and automatic), all-gather and a grouped all-pairs send/recv, each checked
 * element by element. Prints "rank R transports T" and "rank R OK"; exits 1 on any mismatch
 * or error. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tutti/tutti.h"

#define CHECK(call)                                                                          \
  do {                                                                                       \
    tuttiResult_t r_ = (call);                                                               \
    if (r_ != tuttiSuccess) {                                                                \
      fprintf(stderr, "rank %d: %s failed: %s (%s)\n", rank, #call, tuttiGetErrorString(r_), \
              tuttiGetLastError(comm));                                                      \
      exit(1);                                                                               \
    }                                                                                        \
  } while (0)

static int rank = -1;
static tuttiComm_t comm = NULL;

static int allReduce(const char* algo, size_t count) {
  int n = 0, bad = 0;
  CHECK(tuttiCommCount(comm, &n));
  float* buf = malloc(count * sizeof(float));
  for (size_t i = 0; i < count; ++i) buf[i] = (float)(rank + 1) + (float)(i % 7);
  CHECK(tuttiAllReduce(buf, buf, count, tuttiFloat, tuttiSum, comm, NULL));
  for (size_t i = 0; i < count && !bad; ++i) {
    float want = (float)(n * (n + 1) / 2) + (float)(n * (int)(i % 7));
    if (buf[i] != want) {
      fprintf(stderr, "rank %d: all-reduce (%s) [%zu] = %g, want %g\n", rank, algo, i, buf[i],
              want);
      bad = 1;
    }
  }
  printf("rank %d all-reduce %s count %zu algorithm %s\n", rank, algo, count,
         tuttiCommLastAlgorithm(comm));
  free(buf);
  return bad;
}

static tuttiComm_t initWith(const char* algo) {
  tuttiConfig_t cfg = TUTTI_CONFIG_INITIALIZER;
  cfg.algo = algo;
  tuttiComm_t c = NULL;
  tuttiResult_t r = tuttiCommInitFromEnv(&c, &cfg);
  if (r != tuttiSuccess) {
    fprintf(stderr, "rank %d: tuttiCommInitFromEnv(algo=%s) failed: %s (%s)\n", rank,
            algo ? algo : "auto", tuttiGetErrorString(r), tuttiGetLastError(c));
    exit(1);
  }
  return c;
}

int main(void) {
  const char* env = getenv("TUTTI_RANK");
  rank = env ? atoi(env) : -1;
  int bad = 0, n = 0;

  /* Automatic choice, small and large, on the communicator from tuttirun's environment. */
  comm = initWith(NULL);
  CHECK(tuttiCommCount(comm, &n));
  bad |= allReduce("auto", 1000);
  bad |= allReduce("auto", 1 << 20);

  /* Ring all-reduce on a split copy (the store at TUTTI_ADDR serves one communicator). */
  tuttiComm_t parent = comm;
  tuttiConfig_t ringCfg = TUTTI_CONFIG_INITIALIZER;
  ringCfg.algo = "allreduce:ring";
  CHECK(tuttiCommSplit(parent, 0, rank, &comm, &ringCfg));
  bad |= allReduce("ring", 1 << 18);
  CHECK(tuttiBarrier(comm, NULL));
  CHECK(tuttiCommDestroy(comm));
  comm = parent;

  /* All-gather of int32. */
  size_t cnt = 4096;
  int* mine = malloc(cnt * sizeof(int));
  int* all = malloc(cnt * (size_t)n * sizeof(int));
  for (size_t i = 0; i < cnt; ++i) mine[i] = rank * 1000003 + (int)i;
  CHECK(tuttiAllGather(mine, all, cnt, tuttiInt32, comm, NULL));
  for (int r = 0; r < n && !bad; ++r)
    for (size_t i = 0; i < cnt; ++i)
      if (all[(size_t)r * cnt + i] != r * 1000003 + (int)i) {
        fprintf(stderr, "rank %d: all-gather block %d [%zu] wrong\n", rank, r, i);
        bad = 1;
        break;
      }

  /* Grouped all-pairs send/recv: to every peer p, 'cnt' ints of rank*100+p. */
  int* sendb = malloc(cnt * (size_t)n * sizeof(int));
  int* recvb = malloc(cnt * (size_t)n * sizeof(int));
  for (int p = 0; p < n; ++p)
    for (size_t i = 0; i < cnt; ++i) {
      sendb[(size_t)p * cnt + i] = rank * 100 + p + (int)i * 7;
      recvb[(size_t)p * cnt + i] = -1;
    }
  CHECK(tuttiGroupStart());
  for (int p = 0; p < n; ++p) {
    if (p == rank) continue;
    CHECK(tuttiSend(sendb + (size_t)p * cnt, cnt, tuttiInt32, p, comm, NULL));
    CHECK(tuttiRecv(recvb + (size_t)p * cnt, cnt, tuttiInt32, p, comm, NULL));
  }
  CHECK(tuttiGroupEnd());
  for (int p = 0; p < n && !bad; ++p) {
    if (p == rank) continue;
    for (size_t i = 0; i < cnt; ++i)
      if (recvb[(size_t)p * cnt + i] != p * 100 + rank + (int)i * 7) {
        fprintf(stderr, "rank %d: send/recv from %d [%zu] = %d wrong\n", rank, p, i,
                recvb[(size_t)p * cnt + i]);
        bad = 1;
        break;
      }
  }

  printf("rank %d transports %s\n", rank, tuttiCommTransports(comm));
  CHECK(tuttiBarrier(comm, NULL)); /* nobody leaves while a peer still uses rank 0's store */
  CHECK(tuttiCommDestroy(comm));
  free(mine);
  free(all);
  free(sendb);
  free(recvb);
  if (!bad) printf("rank %d OK\n", rank);
  return bad;
}
