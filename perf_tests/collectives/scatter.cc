// scatter_perf: tuttiScatter from root (-r); size = n * count elements (the root's buffer);
// algbw counts the whole scattered buffer; busbw = algbw * (n-1)/n. In place on the root:
// recvbuff = sendbuff + root * count.
// Built a second time, with TUTTI_PERF_EVEN_SPLIT, as scatterv_perf.
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
void fillInput(const Pattern& p, int rank, int root, const Layout& l, void* in) {
  if (rank == root) tutti_perf::fillInput(p, rank, in, l.sendCount, 0);
}
// Rank r receives block r of the root's input.
bool fillExpected(const Pattern& p, int rank, int root, const Layout& l, void* exp) {
  tutti_perf::fillInput(p, root, exp, l.recvCount, static_cast<size_t>(rank) * l.recvCount);
  return true;
}
#ifdef TUTTI_PERF_EVEN_SPLIT
// scatterv_perf: the same sweep through tuttiScatterV with the even split (count elements per rank
// at r * count), to compare with scatter_perf.
constexpr const char* kProgram = "scatterv_perf";
constexpr const char* kAlgoKey = "scatterv";
tuttiResult_t run(const void* s, void* r, size_t count, tuttiDataType_t t, tuttiRedOp_t, int root,
                  tuttiComm_t comm, tuttiStream_t stream) {
  const tutti_perf::EvenSplit* e = nullptr;
  if (tuttiResult_t res = tutti_perf::evenSplit(comm, count, &e); res != tuttiSuccess) return res;
  return tuttiScatterV(s, e->counts.data(), e->displs.data(), r, count, t, root, comm, stream);
}
#else
constexpr const char* kProgram = "scatter_perf";
constexpr const char* kAlgoKey = "scatter";
tuttiResult_t run(const void* s, void* r, size_t count, tuttiDataType_t t, tuttiRedOp_t, int root,
                  tuttiComm_t comm, tuttiStream_t stream) {
  return tuttiScatter(s, r, count, t, root, comm, stream);
}
#endif
}  // namespace

int main(int argc, char** argv) {
  const tutti_perf::Collective coll{kProgram,  kAlgoKey,  false,     true,         true, layout,
                                    algFactor, busFactor, fillInput, fillExpected, run};
  return tutti_perf::perfMain(coll, argc, argv);
}
