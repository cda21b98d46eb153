#include "algorithms/neighbor_graph.h"

#include <algorithm>
#include <cmath>
#include <set>
#include <sstream>
#include <tuple>

#include "common/error.h"

namespace tutti::algo {
namespace {

// Exponents k with 2^k < n (the exponential graphs' offsets): ceil(log2 n).
int offsetCount(int n) {
  int k = 0;
  while ((int64_t{1} << k) < n) ++k;
  return k;
}

int mod(int64_t a, int n) { return static_cast<int>(((a % n) + n) % n); }

}  // namespace

const char* graphKindName(GraphKind k) {
  switch (k) {
    case GraphKind::kRing:
      return "ring";
    case GraphKind::kTorus2D:
      return "2-D torus";
    case GraphKind::kGrid2D:
      return "2-D grid";
    case GraphKind::kHypercube:
      return "hypercube";
    case GraphKind::kExponential:
      return "static exponential-2";
    case GraphKind::kOnePeerExponential:
      return "one-peer exponential";
    case GraphKind::kUser:
      return "user";
  }
  return "?";
}

NeighborGraph NeighborGraph::builtin(GraphKind kind, int n, int rows) {
  TUTTI_CHECK_ARG(n >= 1, "graph: ", n, " ranks (must be >= 1)");
  TUTTI_CHECK_ARG(kind != GraphKind::kUser, "graph: user graphs are made from lists");
  NeighborGraph g;
  g.kind_ = kind;
  g.n_ = n;
  bool twoD = kind == GraphKind::kTorus2D || kind == GraphKind::kGrid2D;
  TUTTI_CHECK_ARG(twoD || rows == 0, "graph: rows = ", rows, " given for the ", graphKindName(kind),
                  " graph (only 2-D torus and grid take rows; pass 0)");
  if (twoD) {
    TUTTI_CHECK_ARG(rows >= 0, "graph: rows = ", rows, " (must be >= 0; 0 picks the squarest)");
    if (rows == 0) {
      rows = 1;
      for (int r = 1; static_cast<int64_t>(r) * r <= n; ++r)
        if (n % r == 0) rows = r;
    }
    TUTTI_CHECK_ARG(n % rows == 0, "graph: rows = ", rows, " does not divide ", n, " ranks");
    g.rows_ = rows;
    g.cols_ = n / rows;
  }
  if (kind == GraphKind::kHypercube)
    TUTTI_CHECK_ARG((n & (n - 1)) == 0, "graph: a hypercube needs a power-of-two rank count (got ",
                    n, ")");
  return g;
}

NeighborGraph NeighborGraph::fromLists(std::vector<UserLists> lists) {
  const int n = static_cast<int>(lists.size());
  TUTTI_CHECK_ARG(n >= 1, "graph: no ranks");
  // Weighted when any rank with sources gave weights; then every rank with sources must.
  bool anyWeights = false;
  for (const UserLists& l : lists) anyWeights = anyWeights || (l.weighted && !l.sources.empty());
  std::vector<std::set<int>> in(n), out(n);
  for (int i = 0; i < n; ++i) {
    const UserLists& l = lists[i];
    for (auto [list, name, sets] : {std::tuple{&l.sources, "sources", &in[i]},
                                    std::tuple{&l.destinations, "destinations", &out[i]}}) {
      for (size_t k = 0; k < list->size(); ++k) {
        int j = (*list)[k];
        TUTTI_CHECK_ARG(j >= 0 && j < n, "graph: rank ", i, ": ", name, "[", k, "] = ", j,
                        " is out of range [0, ", n, ")");
        TUTTI_CHECK_ARG(j != i, "graph: rank ", i, ": ", name, "[", k,
                        "] is the rank itself (its own weight is selfWeight)");
        TUTTI_CHECK_ARG(sets->insert(j).second, "graph: rank ", i, ": ", name, " lists rank ", j,
                        " twice");
      }
    }
    if (anyWeights)
      TUTTI_CHECK_ARG(l.sources.empty() || l.weighted, "graph: rank ", i,
                      " gives no weights but other ranks do (weights on every rank or on none)");
    TUTTI_CHECK_ARG(!l.weighted || l.weights.size() == l.sources.size(), "graph: rank ", i, ": ",
                    l.weights.size(), " weights for ", l.sources.size(), " sources");
  }
  for (int i = 0; i < n; ++i)
    for (int j : out[i])
      TUTTI_CHECK_ARG(in[j].count(i), "graph: rank ", i, " lists rank ", j,
                      " as a destination but rank ", j, " does not list ", i, " as a source");
  for (int i = 0; i < n; ++i)
    for (int j : in[i])
      TUTTI_CHECK_ARG(out[j].count(i), "graph: rank ", i, " lists rank ", j,
                      " as a source but rank ", j, " does not list ", i, " as a destination");
  NeighborGraph g;
  g.kind_ = GraphKind::kUser;
  g.n_ = n;
  g.user_.resize(n);
  for (int i = 0; i < n; ++i) {
    NeighborStep& st = g.user_[i];
    st.out.assign(out[i].begin(), out[i].end());
    const UserLists& l = lists[i];
    if (anyWeights) {
      // A rank without sources keeps its value (weight 1) unless it gave its own weight.
      double self = l.weighted ? l.selfWeight : 1.0;
      double sum = self;
      TUTTI_CHECK_ARG(std::isfinite(self), "graph: rank ", i, ": selfWeight is not finite");
      for (size_t k = 0; k < l.sources.size(); ++k) {
        TUTTI_CHECK_ARG(std::isfinite(l.weights[k]), "graph: rank ", i, ": weight of source ",
                        l.sources[k], " is not finite");
        st.in.push_back({l.sources[k], l.weights[k]});
        sum += l.weights[k];
      }
      TUTTI_CHECK_ARG(std::fabs(sum - 1.0) <= 1e-6, "graph: rank ", i,
                      ": selfWeight + source weights = ", sum, " (must be 1)");
      st.selfWeight = self;
    } else {
      TUTTI_CHECK_ARG(in[i] == out[i], "graph: rank ", i,
                      ": sources differ from destinations; Metropolis-Hastings weights (no "
                      "weights given) need an undirected graph");
      for (int j : in[i]) {
        double w = 1.0 / (1.0 + static_cast<double>(std::max(in[i].size(), in[j].size())));
        st.in.push_back({j, w});
      }
    }
    std::sort(st.in.begin(), st.in.end(),
              [](const WeightedPeer& a, const WeightedPeer& b) { return a.rank < b.rank; });
    if (!anyWeights) {
      double sum = 0;
      for (const WeightedPeer& p : st.in) sum += p.weight;
      st.selfWeight = 1.0 - sum;
    }
  }
  return g;
}

int NeighborGraph::period() const {
  if (kind_ != GraphKind::kOnePeerExponential) return 1;
  return std::max(1, offsetCount(n_));
}

std::vector<int> NeighborGraph::undirectedNeighbors(int i) const {
  std::vector<int> v;
  const int n = n_;
  switch (kind_) {
    case GraphKind::kRing:
      if (n >= 2) v = {mod(i - 1, n), mod(i + 1, n)};
      break;
    case GraphKind::kTorus2D:
    case GraphKind::kGrid2D: {
      const bool wrap = kind_ == GraphKind::kTorus2D;
      const int r = i / cols_, c = i % cols_;
      const int dr[4] = {-1, 1, 0, 0}, dc[4] = {0, 0, -1, 1};
      for (int d = 0; d < 4; ++d) {
        int rr = r + dr[d], cc = c + dc[d];
        if (wrap) {
          rr = mod(rr, rows_);
          cc = mod(cc, cols_);
        } else if (rr < 0 || rr >= rows_ || cc < 0 || cc >= cols_) {
          continue;
        }
        v.push_back(rr * cols_ + cc);
      }
      break;
    }
    case GraphKind::kHypercube:
      for (int k = 0; (1 << k) < n; ++k) v.push_back(i ^ (1 << k));
      break;
    default:
      break;
  }
  std::sort(v.begin(), v.end());
  v.erase(std::unique(v.begin(), v.end()), v.end());
  v.erase(std::remove(v.begin(), v.end(), i), v.end());
  return v;
}

NeighborStep NeighborGraph::at(int rank, uint64_t step) const {
  TUTTI_CHECK_ARG(rank >= 0 && rank < n_, "graph: rank ", rank, " out of range [0, ", n_, ")");
  NeighborStep st;
  const int n = n_;
  switch (kind_) {
    case GraphKind::kUser:
      return user_[rank];
    case GraphKind::kExponential: {
      const int k = offsetCount(n);
      for (int e = 0; e < k; ++e) {
        st.in.push_back({mod(int64_t{rank} - (int64_t{1} << e), n), 1.0 / (k + 1)});
        st.out.push_back(mod(int64_t{rank} + (int64_t{1} << e), n));
      }
      st.selfWeight = 1.0 / (k + 1);
      break;
    }
    case GraphKind::kOnePeerExponential: {
      if (n == 1) break;
      const int e = static_cast<int>(step % static_cast<uint64_t>(period()));
      st.in.push_back({mod(int64_t{rank} - (int64_t{1} << e), n), 0.5});
      st.out.push_back(mod(int64_t{rank} + (int64_t{1} << e), n));
      st.selfWeight = 0.5;
      break;
    }
    default: {
      // Undirected: Metropolis-Hastings, w_ij = 1 / (1 + max(d_i, d_j)), w_ii = 1 - sum;
      // uniform 1 / (1 + d) on the regular graphs (ring, torus, hypercube).
      std::vector<int> mine = undirectedNeighbors(rank);
      double sum = 0;
      for (int j : mine) {
        size_t dj = undirectedNeighbors(j).size();
        double w = 1.0 / (1.0 + static_cast<double>(std::max(mine.size(), dj)));
        st.in.push_back({j, w});
        sum += w;
      }
      st.out = mine;
      st.selfWeight = 1.0 - sum;
      if (kind_ != GraphKind::kGrid2D && !mine.empty()) st.selfWeight = 1.0 / (1.0 + mine.size());
      break;
    }
  }
  std::sort(st.in.begin(), st.in.end(),
            [](const WeightedPeer& a, const WeightedPeer& b) { return a.rank < b.rank; });
  std::sort(st.out.begin(), st.out.end());
  return st;
}

std::vector<double> NeighborGraph::matrix(uint64_t step) const {
  std::vector<double> w(static_cast<size_t>(n_) * n_, 0.0);
  for (int i = 0; i < n_; ++i) {
    NeighborStep st = at(i, step);
    w[static_cast<size_t>(i) * n_ + i] += st.selfWeight;
    for (const WeightedPeer& p : st.in) w[static_cast<size_t>(i) * n_ + p.rank] += p.weight;
  }
  return w;
}

std::string NeighborGraph::describe() const {
  std::ostringstream os;
  os << graphKindName(kind_) << " (" << n_ << " ranks";
  if (rows_ > 0) os << ", " << rows_ << " x " << cols_;
  if (period() > 1) os << ", period " << period();
  os << ")";
  return os.str();
}

}  // namespace tutti::algo
