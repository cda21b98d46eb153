// Gather: rank r's count elements land at element offset r * count of the root's output.
// linear: one round; every rank sends its block straight to the root, which receives them all
//   at once (n - 1 messages into one rank: the fewest bytes, most messages at the root).
// binomial: ceil(log2 n) rounds over ranks relative to the root (MPICH's tree); a non-root
//   rank collects its subtree's blocks in scratch (its own first) and sends them to its parent
//   as one message, or as two where the run wraps past rank n - 1 and the parent is the root,
//   which receives straight into its output (a leaf sends its input as it is). Fewer messages,
//   more bytes (each block travels once per tree level). Non-root ranks never touch their
//   output (it may be NULL).
#include "builder.h"
#include "builders.h"
#include "rooted_blocks.h"

namespace tutti::algo::detail {

Schedule gatherLinear(const CollArgs& a) {
  Schedule s = start(a, "linear");
  Ctx c(a);
  const size_t m = a.count;
  Round& rd = at(s, 0);
  if (c.r != a.root) {
    send(rd, a.root, c.in(0, m));
  } else {
    copy(rd, c.in(0, m), c.out(c.r * m, m));
    for (int p = 0; p < c.n; ++p)
      if (p != c.r) recv(rd, p, c.out(p * m, m));
  }
  trim(s);
  return s;
}

Schedule gatherBinomial(const CollArgs& a) {
  Schedule s = start(a, "binomial");
  Ctx c(a);
  const size_t m = a.count;
  const int n = c.n, root = a.root, v = relativeRank(c.r, root, n);
  // A leaf (a subtree of one block) sends its input as it is; an inner rank gathers in scratch.
  const bool leaf = v != 0 && subtreeBlocks(v, n) == 1;
  auto subtree = [&](int first, int blocks) {
    return leaf ? c.in(0, m) : c.tmp(first * m, blocks * m);
  };
  if (v == 0) {
    copy(at(s, 0), c.in(0, m), c.out(root * m, m));
  } else if (!leaf) {
    needScratch(s, subtreeBlocks(v, n) * m * c.es);
    copy(at(s, 0), c.in(0, m), c.tmp(0, m));
  }
  size_t t = 0;
  for (int mask = 1; mask < n; mask <<= 1, ++t) {
    if (v & mask) {  // the subtree is complete: up to the parent, then done
      const int parentV = v - mask, parent = absoluteRank(parentV, root, n);
      const int len = subtreeBlocks(v, n);
      if (parentV == 0) {
        forEachRankOrderPiece(v, len, root, n, [&](int first, int, int blocks) {
          send(at(s, t), parent, subtree(first, blocks));
        });
      } else {
        send(at(s, t), parent, subtree(0, len));
      }
      break;
    }
    const int childV = v + mask;
    if (childV >= n) continue;
    const int child = absoluteRank(childV, root, n), len = subtreeBlocks(childV, n);
    if (v == 0) {
      forEachRankOrderPiece(childV, len, root, n, [&](int, int rank, int blocks) {
        recv(at(s, t), child, c.out(rank * m, blocks * m));
      });
    } else {
      recv(at(s, t), child, c.tmp(mask * m, len * m));  // child - v = mask blocks in
    }
  }
  trim(s);
  return s;
}

}  // namespace tutti::algo::detail
