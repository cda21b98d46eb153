// Shared by the gather and scatter builders: ranks relative to the root (v = (r - root) mod n,
// the MPICH binomial tree over them: parent of v = v minus its lowest set bit), the subtree a
// relative rank covers, and the pieces of a run of relative blocks that are contiguous in rank
// order (a run wraps past rank n - 1 at most once).
#pragma once

#include <algorithm>

namespace tutti::algo::detail {

inline int relativeRank(int rank, int root, int n) { return (rank - root + n) % n; }
inline int absoluteRank(int v, int root, int n) { return (v + root) % n; }

// Blocks of the subtree rooted at relative rank v: [v, v + subtreeBlocks(v, n)); the root's
// subtree is every block.
inline int subtreeBlocks(int v, int n) { return v == 0 ? n : std::min(v & -v, n - v); }

// fn(first, rank, blocks) for each piece of the relative blocks [v, v + len): `first` counts
// from v, `rank` is the rank (block index) the piece starts at.
template <class Fn>
void forEachRankOrderPiece(int v, int len, int root, int n, Fn fn) {
  const int start = absoluteRank(v, root, n);
  const int head = std::min(len, n - start);
  fn(0, start, head);
  if (head < len) fn(head, 0, len - head);
}

}  // namespace tutti::algo::detail
