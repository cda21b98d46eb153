// Scatter: block r (count elements at element offset r * count) of the root's input lands in
// rank r's output.
// linear: one round; the root sends every block straight to its rank.
// binomial: ceil(log2 n) rounds over ranks relative to the root (MPICH's tree, as gather's run
//   backwards): a rank receives its subtree's blocks from its parent into scratch (the root
//   sends them from its input, in two pieces where the run wraps past rank n - 1), forwards
//   each child's part, largest subtree first, and copies its own block out (a leaf receives
//   straight into its output). Non-root ranks never touch their input (it may be NULL).
#include "builder.h"
#include "builders.h"
#include "rooted_blocks.h"

namespace tutti::algo::detail {

Schedule scatterLinear(const CollArgs& a) {
  Schedule s = start(a, "linear");
  Ctx c(a);
  const size_t m = a.count;
  Round& rd = at(s, 0);
  if (c.r != a.root) {
    recv(rd, a.root, c.out(0, m));
  } else {
    copy(rd, c.in(c.r * m, m), c.out(0, m));
    for (int p = 0; p < c.n; ++p)
      if (p != c.r) send(rd, p, c.in(p * m, m));
  }
  trim(s);
  return s;
}

Schedule scatterBinomial(const CollArgs& a) {
  Schedule s = start(a, "binomial");
  Ctx c(a);
  const size_t m = a.count;
  const int n = c.n, root = a.root, v = relativeRank(c.r, root, n);
  int top = 1;  // masks are the powers of two below top; the largest goes first (round 0)
  while (top < n) top <<= 1;
  auto roundOf = [top](int mask) {
    size_t t = 0;
    for (int x = top >> 1; x > mask; x >>= 1) ++t;
    return t;
  };
  const int low = v == 0 ? top : (v & -v);
  if (v == 0) {
    copy(at(s, 0), c.in(root * m, m), c.out(0, m));
  } else {
    const int len = subtreeBlocks(v, n), parentV = v - low;
    const int parent = absoluteRank(parentV, root, n);
    const size_t t = roundOf(low);
    // A leaf (a subtree of one block) receives straight into its output; an inner rank
    // receives its subtree in scratch.
    const bool leaf = len == 1;
    auto subtree = [&](int first, int blocks) {
      return leaf ? c.out(0, m) : c.tmp(first * m, blocks * m);
    };
    if (!leaf) needScratch(s, len * m * c.es);
    if (parentV == 0) {
      forEachRankOrderPiece(v, len, root, n, [&](int first, int, int blocks) {
        recv(at(s, t), parent, subtree(first, blocks));
      });
    } else {
      recv(at(s, t), parent, subtree(0, len));
    }
    if (!leaf) copy(at(s, t + 1), c.tmp(0, m), c.out(0, m));
  }
  for (int mask = low >> 1; mask >= 1; mask >>= 1) {
    const int childV = v + mask;
    if (childV >= n) continue;
    const int child = absoluteRank(childV, root, n), len = subtreeBlocks(childV, n);
    if (v == 0) {
      forEachRankOrderPiece(childV, len, root, n, [&](int, int rank, int blocks) {
        send(at(s, roundOf(mask)), child, c.in(rank * m, blocks * m));
      });
    } else {
      send(at(s, roundOf(mask)), child, c.tmp(mask * m, len * m));
    }
  }
  trim(s);
  return s;
}

}  // namespace tutti::algo::detail
