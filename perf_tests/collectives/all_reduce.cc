// all_reduce_perf: tuttiAllReduce. busbw = algbw * 2(n-1)/n.
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
double busFactor(int n) { return 2.0 * (n - 1) / n; }
void fillInput(const Pattern& p, int rank, int, const Layout& l, void* in) {
  tutti_perf::fillInput(p, rank, in, l.sendCount, 0);
}
bool fillExpected(const Pattern& p, int, int, const Layout& l, void* exp) {
  tutti_perf::fillReduced(p, exp, l.recvCount, 0);
  return true;
}
tuttiResult_t run(const void* s, void* r, size_t count, tuttiDataType_t t, tuttiRedOp_t op, int,
                  tuttiComm_t comm, tuttiStream_t stream) {
  return tuttiAllReduce(s, r, count, t, op, comm, stream);
}
}  // namespace

int main(int argc, char** argv) {
  const tutti_perf::Collective coll{
      "all_reduce_perf", "allreduce", true,      false,        true, layout,
      algFactor,         busFactor,   fillInput, fillExpected, run};
  return tutti_perf::perfMain(coll, argc, argv);
}
