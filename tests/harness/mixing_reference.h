// Test-side definitions of the neighbour all-reduce's graphs and the reference result: the
// mixing matrix W of each built-in graph built here from the graphs' definitions (not from the
// library's graph code), and x_i <- W_ii x_i + sum_j W_ij x_j evaluated in the documented order
// (self, then in-neighbours by ascending rank; float32 for float32/float16/bfloat16, float64
// for float64; each product and sum rounded, no fused multiply-add). Compile users with
// -ffp-contract=off.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <set>
#include <vector>

namespace tutti::test {

enum class RefGraph { kRing, kTorus, kGrid, kHypercube, kExponential, kOnePeer };

inline int refMod(long a, int n) { return static_cast<int>(((a % n) + n) % n); }

// Rows of the squarest rows x cols shape (rows <= cols).
inline int refRows(int n) {
  int rows = 1;
  for (int r = 1; r * r <= n; ++r)
    if (n % r == 0) rows = r;
  return rows;
}

inline int refPeriod(int n) {
  int k = 0;
  while ((1L << k) < n) ++k;
  return std::max(k, 1);
}

// W (row-major n x n) of graph g at call `step`; rows = 0: the squarest shape.
inline std::vector<double> refMatrix(RefGraph g, int n, uint64_t step, int rows = 0) {
  std::vector<double> w(static_cast<size_t>(n) * n, 0.0);
  auto at = [&](int i, int j) -> double& { return w[static_cast<size_t>(i) * n + j]; };
  if (g == RefGraph::kExponential || g == RefGraph::kOnePeer) {
    int K = 0;
    while ((1L << K) < n) ++K;
    if (K == 0) {
      at(0, 0) = 1.0;
      return w;
    }
    for (int i = 0; i < n; ++i) {
      if (g == RefGraph::kExponential) {
        at(i, i) = 1.0 / (K + 1);
        for (int k = 0; k < K; ++k) at(i, refMod(i - (1L << k), n)) = 1.0 / (K + 1);
      } else {
        int k = static_cast<int>(step % K);
        at(i, i) = 0.5;
        at(i, refMod(i - (1L << k), n)) = 0.5;
      }
    }
    return w;
  }
  std::vector<std::set<int>> nb(n);
  int R = rows ? rows : refRows(n), C = n / R;
  for (int i = 0; i < n; ++i) {
    std::set<int>& s = nb[i];
    switch (g) {
      case RefGraph::kRing:
        s = {refMod(i - 1, n), refMod(i + 1, n)};
        break;
      case RefGraph::kTorus:
      case RefGraph::kGrid: {
        int r = i / C, c = i % C;
        const int d[4][2] = {{-1, 0}, {1, 0}, {0, -1}, {0, 1}};
        for (auto& dd : d) {
          int rr = r + dd[0], cc = c + dd[1];
          if (g == RefGraph::kTorus) {
            s.insert(refMod(rr, R) * C + refMod(cc, C));
          } else if (rr >= 0 && rr < R && cc >= 0 && cc < C) {
            s.insert(rr * C + cc);
          }
        }
        break;
      }
      case RefGraph::kHypercube:
        for (int b = 1; b < n; b <<= 1) s.insert(i ^ b);
        break;
      default:
        break;
    }
    s.erase(i);
  }
  for (int i = 0; i < n; ++i) {
    double sum = 0;
    for (int j : nb[i]) {  // ascending
      double wij = 1.0 / (1.0 + static_cast<double>(std::max(nb[i].size(), nb[j].size())));
      at(i, j) = wij;
      sum += wij;
    }
    at(i, i) = g == RefGraph::kGrid || nb[i].empty() ? 1.0 - sum : 1.0 / (1.0 + nb[i].size());
  }
  return w;
}

// Rank i's result element from every rank's element value x[j] (already in the working
// precision: the stored value converted to float / double), in the documented order.
template <typename Acc>
Acc refMixElement(const std::vector<double>& w, int n, int i, const std::vector<Acc>& x) {
  Acc acc = static_cast<Acc>(w[static_cast<size_t>(i) * n + i]) * x[i];
  for (int j = 0; j < n; ++j) {
    if (j == i || w[static_cast<size_t>(i) * n + j] == 0.0) continue;
    Acc p = static_cast<Acc>(w[static_cast<size_t>(i) * n + j]) * x[j];
    acc = acc + p;
  }
  return acc;
}

}  // namespace tutti::test
