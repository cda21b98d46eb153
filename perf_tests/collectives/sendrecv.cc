// sendrecv_perf: each rank sends to rank+1 and receives from rank-1 in one group
// (tuttiGroupStart / tuttiSend / tuttiRecv / tuttiGroupEnd). busbw = algbw.
// In-place results are not checked (as nccl-tests).
#include "driver/collective.h"
#include "driver/types.h"

namespace {
using tutti_perf::Layout;
using tutti_perf::Pattern;

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
  res = tuttiGroupStart();
  if (res != tuttiSuccess) return res;
  tuttiResult_t a = tuttiSend(s, count, t, (rank + 1) % n, comm, stream);
  tuttiResult_t b = tuttiRecv(r, count, t, (rank - 1 + n) % n, comm, stream);
  res = tuttiGroupEnd();
  return a != tuttiSuccess ? a : b != tuttiSuccess ? b : res;
}
}  // namespace

int main(int argc, char** argv) {
  const tutti_perf::Collective coll{"sendrecv_perf", "sendrecv",   false,     false,
                                    false,           layout,       algFactor, busFactor,
                                    fillInput,       fillExpected, run};
  return tutti_perf::perfMain(coll, argc, argv);
}
