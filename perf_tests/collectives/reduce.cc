// reduce_perf: tuttiReduce to root (-r); only the root's result is checked. busbw = algbw.
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
bool fillExpected(const Pattern& p, int rank, int root, const Layout& l, void* exp) {
  if (rank != root) return false;
  tutti_perf::fillReduced(p, exp, l.recvCount, 0);
  return true;
}
tuttiResult_t run(const void* s, void* r, size_t count, tuttiDataType_t t, tuttiRedOp_t op,
                  int root, tuttiComm_t comm, tuttiStream_t stream) {
  return tuttiReduce(s, r, count, t, op, root, comm, stream);
}
}  // namespace

int main(int argc, char** argv) {
  const tutti_perf::Collective coll{"reduce_perf", "reduce",  true,      true,         true, layout,
                                    algFactor,     busFactor, fillInput, fillExpected, run};
  return tutti_perf::perfMain(coll, argc, argv);
}
