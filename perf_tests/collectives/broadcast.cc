// broadcast_perf: tuttiBroadcast from root (-r). busbw = algbw.
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
void fillInput(const Pattern& p, int rank, int root, const Layout& l, void* in) {
  if (rank == root) tutti_perf::fillInput(p, rank, in, l.sendCount, 0);
}
bool fillExpected(const Pattern& p, int, int root, const Layout& l, void* exp) {
  tutti_perf::fillInput(p, root, exp, l.recvCount, 0);
  return true;
}
tuttiResult_t run(const void* s, void* r, size_t count, tuttiDataType_t t, tuttiRedOp_t, int root,
                  tuttiComm_t comm, tuttiStream_t stream) {
  return tuttiBroadcast(s, r, count, t, root, comm, stream);
}
}  // namespace

int main(int argc, char** argv) {
  const tutti_perf::Collective coll{
      "broadcast_perf", "broadcast", false,     true,         true, layout,
      algFactor,        busFactor,   fillInput, fillExpected, run};
  return tutti_perf::perfMain(coll, argc, argv);
}
