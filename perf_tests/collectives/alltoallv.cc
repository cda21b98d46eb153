// alltoallv_perf: tuttiAllToAllV with an even split (count elements to and from every peer,
// displacements j * count), to compare with alltoall_perf. algbw counts the whole buffer
// (n * count); busbw = algbw * (n-1)/n. In place: sendbuff == recvbuff (checked: the call
// copies the send data first).
#include "driver/collective.h"
#include "driver/types.h"
#include "even_split.h"

namespace {
using tutti_perf::Layout;
using tutti_perf::Pattern;

Layout layout(size_t count, int n) {
  Layout l;
  l.sendCount = l.recvCount = (count / n) * n;
  l.paramCount = count / n;
  return l;
}
double algFactor(int n) { return n; }
double busFactor(int n) { return static_cast<double>(n - 1) / n; }
// Rank r sends block j (to rank j) = its data at global index j*count + i.
void fillInput(const Pattern& p, int rank, int, const Layout& l, void* in) {
  tutti_perf::fillInput(p, rank, in, l.sendCount, 0);
}
// Rank r receives block j = rank j's data at index r*count + i.
bool fillExpected(const Pattern& p, int rank, int, const Layout& l, void* exp) {
  const size_t ws = tutti_perf::typeSize(p.type);
  for (int j = 0; j < p.nranks; ++j) {
    tutti_perf::fillInput(p, j, static_cast<char*>(exp) + j * l.paramCount * ws, l.paramCount,
                          static_cast<size_t>(rank) * l.paramCount);
  }
  return true;
}
tuttiResult_t run(const void* s, void* r, size_t count, tuttiDataType_t t, tuttiRedOp_t, int,
                  tuttiComm_t comm, tuttiStream_t stream) {
  const tutti_perf::EvenSplit* e = nullptr;
  if (tuttiResult_t res = tutti_perf::evenSplit(comm, count, &e); res != tuttiSuccess) return res;
  return tuttiAllToAllV(s, e->counts.data(), e->displs.data(), r, e->counts.data(),
                        e->displs.data(), t, comm, stream);
}
}  // namespace

int main(int argc, char** argv) {
  const tutti_perf::Collective coll{
      "alltoallv_perf", "alltoallv", false,     false,        true, layout,
      algFactor,        busFactor,   fillInput, fillExpected, run};
  return tutti_perf::perfMain(coll, argc, argv);
}
