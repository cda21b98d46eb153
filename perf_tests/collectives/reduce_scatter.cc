// reduce_scatter_perf: tuttiReduceScatter. size = n * recvcount elements; algbw counts the
// whole input; busbw = algbw * (n-1)/n.
// Built a second time, with TUTTI_PERF_EVEN_SPLIT, as reducescatterv_perf.
#include "driver/collective.h"
#include "driver/types.h"
#include "even_split.h"

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
void fillInput(const Pattern& p, int rank, int, const Layout& l, void* in) {
  tutti_perf::fillInput(p, rank, in, l.sendCount, 0);
}
bool fillExpected(const Pattern& p, int rank, int, const Layout& l, void* exp) {
  tutti_perf::fillReduced(p, exp, l.recvCount, static_cast<size_t>(rank) * l.recvCount);
  return true;
}
#ifdef TUTTI_PERF_EVEN_SPLIT
// reducescatterv_perf: the same sweep through tuttiReduceScatterV with the even split (count
// elements per rank at r * count), to compare with reduce_scatter_perf.
constexpr const char* kProgram = "reducescatterv_perf";
constexpr const char* kAlgoKey = "reducescatterv";
tuttiResult_t run(const void* s, void* r, size_t count, tuttiDataType_t t, tuttiRedOp_t op, int,
                  tuttiComm_t comm, tuttiStream_t stream) {
  const tutti_perf::EvenSplit* e = nullptr;
  if (tuttiResult_t res = tutti_perf::evenSplit(comm, count, &e); res != tuttiSuccess) return res;
  return tuttiReduceScatterV(s, r, e->counts.data(), e->displs.data(), t, op, comm, stream);
}
#else
constexpr const char* kProgram = "reduce_scatter_perf";
constexpr const char* kAlgoKey = "reducescatter";
tuttiResult_t run(const void* s, void* r, size_t count, tuttiDataType_t t, tuttiRedOp_t op, int,
                  tuttiComm_t comm, tuttiStream_t stream) {
  return tuttiReduceScatter(s, r, count, t, op, comm, stream);
}
#endif
}  // namespace

int main(int argc, char** argv) {
  const tutti_perf::Collective coll{kProgram,  kAlgoKey,  true,      false,        true, layout,
                                    algFactor, busFactor, fillInput, fillExpected, run};
  return tutti_perf::perfMain(coll, argc, argv);
}
