// gather_perf: tuttiGather to root (-r); size = n * count elements (the root's buffer); algbw
// counts the whole gathered buffer; busbw = algbw * (n-1)/n. Only the root's result is
// checked; in place on the root: sendbuff = recvbuff + root * count.
// Built a second time, with TUTTI_PERF_EVEN_SPLIT, as gatherv_perf.
#include "driver/collective.h"
#include "driver/types.h"
#include "even_split.h"

namespace {
using tutti_perf::Layout;
using tutti_perf::Pattern;

Layout layout(size_t count, int n) {
  Layout l;
  l.sendCount = count / n;
  l.recvCount = (count / n) * n;
  l.paramCount = l.sendCount;
  l.sendInplaceOffset = count / n;
  return l;
}
double algFactor(int n) { return n; }
double busFactor(int n) { return static_cast<double>(n - 1) / n; }
void fillInput(const Pattern& p, int rank, int, const Layout& l, void* in) {
  tutti_perf::fillInput(p, rank, in, l.sendCount, 0);
}
bool fillExpected(const Pattern& p, int rank, int root, const Layout& l, void* exp) {
  if (rank != root) return false;
  const size_t ws = tutti_perf::typeSize(p.type);
  for (int j = 0; j < p.nranks; ++j) {
    tutti_perf::fillInput(p, j, static_cast<char*>(exp) + j * l.sendCount * ws, l.sendCount, 0);
  }
  return true;
}
#ifdef TUTTI_PERF_EVEN_SPLIT
// gatherv_perf: the same sweep through tuttiGatherV with the even split
// (count elements per rank at r * count), to compare with gather_perf.
constexpr const char* kProgram = "gatherv_perf";
constexpr const char* kAlgoKey = "gatherv";
tuttiResult_t run(const void* s, void* r, size_t count, tuttiDataType_t t, tuttiRedOp_t, int root,
                  tuttiComm_t comm, tuttiStream_t stream) {
  const tutti_perf::EvenSplit* e = nullptr;
  if (tuttiResult_t res = tutti_perf::evenSplit(comm, count, &e); res != tuttiSuccess) return res;
  return tuttiGatherV(s, count, r, e->counts.data(), e->displs.data(), t, root, comm, stream);
}
#else
constexpr const char* kProgram = "gather_perf";
constexpr const char* kAlgoKey = "gather";
tuttiResult_t run(const void* s, void* r, size_t count, tuttiDataType_t t, tuttiRedOp_t, int root,
                  tuttiComm_t comm, tuttiStream_t stream) {
  return tuttiGather(s, r, count, t, root, comm, stream);
}
#endif
}  // namespace

int main(int argc, char** argv) {
  const tutti_perf::Collective coll{kProgram,  kAlgoKey,  false,     true,         true, layout,
                                    algFactor, busFactor, fillInput, fillExpected, run};
  return tutti_perf::perfMain(coll, argc, argv);
}
