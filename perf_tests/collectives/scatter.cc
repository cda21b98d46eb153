// scatter_perf: tuttiScatter from root (-r); size = n * count elements (the root's buffer);
// algbw counts the whole scattered buffer; busbw = algbw * (n-1)/n. In place on the root:
// recvbuff = sendbuff + root * count.
#include "driver/collective.h"
#include "driver/types.h"

namespace {
using tutti_perf::Layout;
using tutti_perf::Pattern;

Layout layout(size_t count, int n) {
  Layout l;
  l.sendCount = (count / n) * n;
  l.recvCount = count / n;
  l.paramCount = l.recvCount;
  l.recvInplaceOffset = count / n;
  return l;
}
double algFactor(int n) { return n; }
double busFactor(int n) { return static_cast<double>(n - 1) / n; }
void fillInput(const Pattern& p, int rank, int root, const Layout& l, void* in) {
  if (rank == root) tutti_perf::fillInput(p, rank, in, l.sendCount, 0);
}
// Rank r receives block r of the root's input.
bool fillExpected(const Pattern& p, int rank, int root, const Layout& l, void* exp) {
  tutti_perf::fillInput(p, root, exp, l.recvCount, static_cast<size_t>(rank) * l.recvCount);
  return true;
}
tuttiResult_t run(const void* s, void* r, size_t count, tuttiDataType_t t, tuttiRedOp_t, int root,
                  tuttiComm_t comm, tuttiStream_t stream) {
  return tuttiScatter(s, r, count, t, root, comm, stream);
}
}  // namespace

int main(int argc, char** argv) {
  const tutti_perf::Collective coll{"scatter_perf", "scatter",    false,     true,
                                    true,           layout,       algFactor, busFactor,
                                    fillInput,      fillExpected, run};
  return tutti_perf::perfMain(coll, argc, argv);
}
