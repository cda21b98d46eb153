// Graphs of neighbour averaging (decentralized SGD): who sends to whom and with what weights.
// Pure rank math, no I/O. Call `step` t of a graph mixes, on every rank i,
//   x_i <- W_ii x_i + sum_{j in in(i, t)} W_ij x_j
// where W = W(t) is the graph's mixing matrix; static graphs have one W, the one-peer
// exponential graph cycles through period() of them. docs/decentralized.md.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace tutti::algo {

enum class GraphKind {
  kRing,                // i <-> i +- 1 (n = 2: one neighbour)
  kTorus2D,             // rows x cols, wrap-around, i <-> up/down/left/right (deduplicated)
  kGrid2D,              // rows x cols, no wrap-around (irregular: Metropolis-Hastings weights)
  kHypercube,           // i <-> i xor 2^k (n a power of two)
  kExponential,         // static exponential-2: i -> i + 2^k mod n for every 2^k < n
  kOnePeerExponential,  // dynamic: at step t, i -> i + 2^(t mod period) mod n, weights 1/2
  kUser,                // in/out lists given per rank
};
const char* graphKindName(GraphKind k);

struct WeightedPeer {
  int rank = 0;
  double weight = 0;
};

// One rank's part of a step: its own weight, whom it receives from (ascending rank, with the
// weight it gives their values) and whom it sends to (ascending rank).
struct NeighborStep {
  double selfWeight = 1.0;
  std::vector<WeightedPeer> in;
  std::vector<int> out;
};

// A rank's declared lists for a user graph (tuttiGraphCreateAdjacent).
struct UserLists {
  std::vector<int> sources;
  bool weighted = false;        // false: Metropolis-Hastings (the graph must be undirected)
  std::vector<double> weights;  // weighted: one per source
  double selfWeight = 0;        // weighted: the rank's own weight
  std::vector<int> destinations;
};

class NeighborGraph {
 public:
  // Throws tutti::Error (tuttiInvalidArgument) naming the problem: n < 1, hypercube with n not
  // a power of two, rows not dividing n, rows given for a kind without rows.
  static NeighborGraph builtin(GraphKind kind, int n, int rows = 0);
  // Validates the lists of all n ranks: ranks in range, no self or duplicate entries, every
  // edge declared at both ends (j in sources(i) <=> i in destinations(j)), weights on every
  // rank or on none, finite weights whose row (self + sources) sums to 1, and an undirected
  // graph when weights are left to Metropolis-Hastings. Throws naming rank and problem.
  static NeighborGraph fromLists(std::vector<UserLists> lists);

  int size() const { return n_; }
  GraphKind kind() const { return kind_; }
  int rows() const { return rows_; }
  // Distinct steps before the pattern repeats: ceil(log2 n) for one-peer exponential (1 when
  // n = 1), 1 for the static graphs.
  int period() const;
  // Rank `rank`'s part of call `step` (only step % period() matters).
  NeighborStep at(int rank, uint64_t step) const;
  // Dense W(step), row-major n x n (W[i * n + j]: the weight rank i gives rank j's value).
  std::vector<double> matrix(uint64_t step) const;
  // "one-peer exponential (8 ranks, period 3)".
  std::string describe() const;

 private:
  NeighborGraph() = default;
  std::vector<int> undirectedNeighbors(int rank) const;  // ring, torus, grid, hypercube

  GraphKind kind_ = GraphKind::kRing;
  int n_ = 1;
  int rows_ = 0, cols_ = 0;
  std::vector<NeighborStep> user_;  // kUser: per rank
};

}  // namespace tutti::algo
