// Inputs and expected outputs of the neighbour all-reduce tests over real transports
// (tests/multiproc/neighbor_allreduce_test.cc: shm and tcp; tests/netns/netns_neighbor.cc:
// tcp across namespaces; tests/verbs/verbs_collectives_test.cc: ibverbs): the built-in graphs
// with their reference definitions, every rank's input from the verifiable data
// (support/verifiable.h, kind kSumInOrder: full precision, magnitudes 2^-10 .. 2^10, a hash
// of call, rank and element, so the weighted sums round and another order gives other bits),
// and the expected bytes of harness/mixing_reference.h's W applied to all ranks' inputs.
// Users link tutti_verifiable and compile with -ffp-contract=off.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "harness/mixing_reference.h"
#include "support/verifiable.h"
#include "tutti/tutti.h"

namespace tutti::test {

struct MixGraph {
  tuttiGraphKind_t kind;
  RefGraph ref;
  const char* name;
};
inline constexpr MixGraph kMixGraphs[] = {
    {tuttiGraphRing, RefGraph::kRing, "ring"},
    {tuttiGraphTorus2D, RefGraph::kTorus, "torus"},
    {tuttiGraphGrid2D, RefGraph::kGrid, "grid"},
    {tuttiGraphHypercube, RefGraph::kHypercube, "hypercube"},
    {tuttiGraphExponential, RefGraph::kExponential, "exponential"},
    {tuttiGraphOnePeerExponential, RefGraph::kOnePeer, "one-peer exponential"}};

// The graph kinds the API accepts at n ranks (the hypercube needs a power of two).
inline bool mixGraphApplies(const MixGraph& g, int n) {
  return g.kind != tuttiGraphHypercube || (n & (n - 1)) == 0;
}

// The data of call `call` (one per call of the whole run) in type t.
inline verifiable::Spec mixSpec(uint64_t call, tuttiDataType_t t) {
  return {t, verifiable::Kind::kSumInOrder, 1, verifiable::seedOf({0x6e6569676862ull, call})};
}

// Element e of rank `rank`'s input of call `call`, exactly representable in t. With
// t = tuttiBfloat16 (8 significant bits, exponents -10 .. 10) sums of a few such values and
// halvings are exact in float64: for the tests that expect the exact average.
inline double mixValue(int rank, size_t e, uint64_t call, tuttiDataType_t t) {
  return verifiable::value(mixSpec(call, t), rank, e);
}

// Rank `rank`'s input of call `call`: count elements of t.
inline std::vector<std::byte> mixInput(int rank, uint64_t call, size_t count, tuttiDataType_t t) {
  std::vector<std::byte> v(count * verifiable::elementSize(t));
  verifiable::fill(mixSpec(call, t), rank, v.data(), count);
  return v;
}

// The expected bytes of rank `rank` for call `call` over W (n x n): every rank's input mixed
// in the documented order and precision (refMixElement), rounded to t.
inline std::vector<std::byte> mixExpected(const std::vector<double>& w, int n, int rank,
                                          uint64_t call, size_t count, tuttiDataType_t t) {
  const verifiable::Spec s = mixSpec(call, t);
  std::vector<std::byte> out(count * verifiable::elementSize(t));
  std::vector<double> xd(n);
  std::vector<float> xf(n);
  for (size_t e = 0; e < count; ++e) {
    double v;
    if (t == tuttiFloat64) {
      for (int j = 0; j < n; ++j) xd[j] = verifiable::value(s, j, e);
      v = refMixElement<double>(w, n, rank, xd);
    } else {  // float32, float16, bfloat16: mixed in float32
      for (int j = 0; j < n; ++j) xf[j] = static_cast<float>(verifiable::value(s, j, e));
      v = refMixElement<float>(w, n, rank, xf);
    }
    verifiable::store(t, out.data(), e, v);
  }
  return out;
}

// "" or the number of wrong elements of got (want.size() bytes) and the first (compared bit
// for bit).
inline std::string mixFirstDiff(const void* got, const std::vector<std::byte>& want,
                                tuttiDataType_t t) {
  return verifiable::firstMismatch(mixSpec(0, t), got, want.data(),
                                   want.size() / verifiable::elementSize(t));
}
inline std::string mixFirstDiff(const std::vector<std::byte>& got,
                                const std::vector<std::byte>& want, tuttiDataType_t t) {
  if (got.size() != want.size())
    return "size " + std::to_string(got.size()) + " B, expected " + std::to_string(want.size());
  return mixFirstDiff(got.data(), want, t);
}

// The path graph 0-1-..-(n-1) made with tuttiGraphCreateAdjacent and its default
// (Metropolis-Hastings) weights, and its mixing matrix computed here: w_ij = 1 / (1 +
// max(d_i, d_j)) for neighbours, the rest of each row on the diagonal.
inline tuttiResult_t createPathGraph(tuttiComm_t comm, int rank, int n, tuttiGraph_t* graph) {
  std::vector<int> nb;
  if (rank > 0) nb.push_back(rank - 1);
  if (rank < n - 1) nb.push_back(rank + 1);
  return tuttiGraphCreateAdjacent(comm, static_cast<int>(nb.size()), nb.data(), nullptr, 0.0,
                                  static_cast<int>(nb.size()), nb.data(), graph);
}
inline std::vector<double> pathMatrix(int n) {
  auto degree = [&](int i) { return (i > 0) + (i < n - 1); };
  std::vector<double> w(static_cast<size_t>(n) * n, 0.0);
  for (int i = 0; i < n; ++i) {
    double sum = 0;
    for (int j : {i - 1, i + 1}) {
      if (j < 0 || j >= n) continue;
      w[i * n + j] = 1.0 / (1 + std::max(degree(i), degree(j)));
      sum += w[i * n + j];
    }
    w[i * n + i] = 1.0 - sum;
  }
  return w;
}

}  // namespace tutti::test
