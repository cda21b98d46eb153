// A small 2-rank job for log_subsys_test, started by tuttirun: an all-reduce (the tuner
// chooses), a broadcast with a forced algorithm (tuttiCommSetAlgorithm), a reduce, a send/recv
// alone and a grouped exchange, and a compressed all-reduce. Exits non-zero on any error or
// wrong result; everything else is in the log the test reads.
#include <cstdio>
#include <vector>

#include "tutti/tutti.h"

namespace {

int failed(tuttiComm_t comm, const char* what, tuttiResult_t r) {
  fprintf(stderr, "%s: %s: %s\n", what, tuttiGetErrorString(r), tuttiGetLastError(comm));
  return 1;
}

#define CHECK_OK(call)                                      \
  do {                                                      \
    tuttiResult_t r_ = (call);                              \
    if (r_ != tuttiSuccess) return failed(comm, #call, r_); \
  } while (0)

#define CHECK(cond)                                                \
  do {                                                             \
    if (!(cond)) {                                                 \
      fprintf(stderr, "rank %d: check failed: %s\n", rank, #cond); \
      return 1;                                                    \
    }                                                              \
  } while (0)

}  // namespace

int main() {
  tuttiComm_t comm = nullptr;
  if (tuttiCommInitFromEnv(&comm, nullptr) != tuttiSuccess) {
    fprintf(stderr, "init failed: %s\n", tuttiGetLastError(nullptr));
    return 1;
  }
  int rank = -1, n = 0;
  CHECK_OK(tuttiCommUserRank(comm, &rank));
  CHECK_OK(tuttiCommCount(comm, &n));
  CHECK(n == 2);
  const int peer = 1 - rank;

  std::vector<float> in(1024, static_cast<float>(rank + 1)), out(1024, 0);
  CHECK_OK(tuttiAllReduce(in.data(), out.data(), in.size(), tuttiFloat32, tuttiSum, comm, nullptr));
  CHECK(out[0] == 3 && out[1023] == 3);

  CHECK_OK(tuttiCommSetAlgorithm(comm, "broadcast:binomial"));
  std::vector<int> b(256, rank == 0 ? 7 : 0);
  CHECK_OK(tuttiBroadcast(b.data(), b.data(), b.size(), tuttiInt32, 0, comm, nullptr));
  CHECK(b[0] == 7 && b[255] == 7);
  CHECK_OK(tuttiCommSetAlgorithm(comm, ""));

  int one = 1, sum = 0;
  CHECK_OK(tuttiReduce(&one, &sum, 1, tuttiInt32, tuttiSum, 1, comm, nullptr));
  CHECK(rank != 1 || sum == 2);

  std::vector<double> msg(64, rank == 0 ? 2.5 : 0);
  if (rank == 0)
    CHECK_OK(tuttiSend(msg.data(), msg.size(), tuttiFloat64, peer, comm, nullptr));
  else
    CHECK_OK(tuttiRecv(msg.data(), msg.size(), tuttiFloat64, peer, comm, nullptr));
  CHECK(msg[63] == 2.5);

  int mine = rank + 10, theirs = 0;
  CHECK_OK(tuttiGroupStart());
  CHECK_OK(tuttiSend(&mine, 1, tuttiInt32, peer, comm, nullptr));
  CHECK_OK(tuttiRecv(&theirs, 1, tuttiInt32, peer, comm, nullptr));
  CHECK_OK(tuttiGroupEnd());
  CHECK(theirs == peer + 10);

  std::vector<float> g(512, 1.0f), gs(512, 0);
  CHECK_OK(tuttiAllReduceCompressed(g.data(), gs.data(), g.size(), tuttiFloat32, "none", 1, 0, comm,
                                    nullptr));
  CHECK(gs[0] == 2 && gs[511] == 2);

  CHECK_OK(tuttiBarrier(comm, nullptr));
  if (tuttiCommDestroy(comm) != tuttiSuccess) {
    fprintf(stderr, "tuttiCommDestroy: %s\n", tuttiGetLastError(nullptr));
    return 1;
  }
  return 0;
}
