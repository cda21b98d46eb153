// sendrecv_perf: each rank sends to rank+1 and receives from rank-1 in one group
// (tuttiGroupStart / tuttiSend / tuttiRecv / tuttiGroupEnd). busbw = algbw.
// In-place results are not checked (as nccl-tests).
// --grouped 0 (this program's own flag, taken out before the driver's): the receive, then the
// send, posted one by one without a group. On --memory host-stream they progress
// independently (tutti.h, "Host streams"); with blocking calls that would deadlock, so there
// even ranks send first and odd ranks receive first.
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "driver/collective.h"
#include "driver/types.h"

namespace {
using tutti_perf::Layout;
using tutti_perf::Pattern;

bool grouped = true;  // --grouped

Layout layout(size_t count, int) {
  Layout l;
  l.sendCount = l.recvCount = l.paramCount = count;
  return l;
}
double algFactor(int) { return 1.0; }
double busFactor(int) { return 1.0; }
void fillInput(const Pattern& p, int rank, int, const Layout& l, void* in) {
  tutti_perf::fillInput(p, rank, in, l.sendCount, 0);
}
bool fillExpected(const Pattern& p, int rank, int, const Layout& l, void* exp) {
  tutti_perf::fillInput(p, (rank - 1 + p.nranks) % p.nranks, exp, l.recvCount, 0);
  return true;
}
tuttiResult_t run(const void* s, void* r, size_t count, tuttiDataType_t t, tuttiRedOp_t, int,
                  tuttiComm_t comm, tuttiStream_t stream) {
  int n = 0, rank = 0;
  tuttiResult_t res = tuttiCommCount(comm, &n);
  if (res == tuttiSuccess) res = tuttiCommUserRank(comm, &rank);
  if (res != tuttiSuccess) return res;
  const int next = (rank + 1) % n, prev = (rank - 1 + n) % n;
  if (!grouped && n > 1) {
    const bool recvFirst = stream != nullptr || rank % 2 == 1;
    tuttiResult_t a = recvFirst ? tuttiRecv(r, count, t, prev, comm, stream)
                                : tuttiSend(s, count, t, next, comm, stream);
    if (a != tuttiSuccess) return a;
    return recvFirst ? tuttiSend(s, count, t, next, comm, stream)
                     : tuttiRecv(r, count, t, prev, comm, stream);
  }
  res = tuttiGroupStart();
  if (res != tuttiSuccess) return res;
  tuttiResult_t a = tuttiSend(s, count, t, next, comm, stream);
  tuttiResult_t b = tuttiRecv(r, count, t, prev, comm, stream);
  res = tuttiGroupEnd();
  return a != tuttiSuccess ? a : b != tuttiSuccess ? b : res;
}

// Takes "--grouped 0|1" out of argv (the rest goes to the driver); false on a bad value.
bool takeGroupedFlag(std::vector<char*>& args) {
  for (size_t i = 1; i < args.size(); ++i) {
    if (std::strcmp(args[i], "--grouped") != 0) continue;
    if (i + 1 >= args.size() ||
        (std::string(args[i + 1]) != "0" && std::string(args[i + 1]) != "1"))
      return false;
    grouped = args[i + 1][0] == '1';
    args.erase(args.begin() + static_cast<long>(i), args.begin() + static_cast<long>(i) + 2);
    return true;
  }
  return true;
}
}  // namespace

int main(int argc, char** argv) {
  const tutti_perf::Collective coll{"sendrecv_perf", "sendrecv",   false,     false,
                                    false,           layout,       algFactor, busFactor,
                                    fillInput,       fillExpected, run};
  std::vector<char*> args(argv, argv + argc);
  if (!takeGroupedFlag(args)) {
    std::fprintf(stderr, "sendrecv_perf: --grouped takes 0 or 1\n");
    return 1;
  }
  args.push_back(nullptr);
  return tutti_perf::perfMain(coll, static_cast<int>(args.size()) - 1, args.data());
}
