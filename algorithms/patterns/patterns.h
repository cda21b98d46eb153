// Pure rank arithmetic shared by the schedule builders: rings, trees, recursive doubling /
// halving partners (with the non-power-of-two fold) and chunk boundaries. No I/O, no state.
#pragma once

#include <cstddef>
#include <span>
#include <vector>

namespace tutti::algo::patterns {

// ---- rings ---------------------------------------------------------------------------------
struct RingPos {
  int index = 0;  // position of the rank in the ring order
  int prev = 0;   // rank before it (receives from)
  int next = 0;   // rank after it (sends to)
};
// order: a permutation of 0..n-1 (empty = identity). Throws tutti::Error when order is not a
// permutation of 0..n-1 or rank is out of range.
RingPos ringNeighbors(std::span<const int> order, int n, int rank);
// Validated ring order (identity when order is empty).
std::vector<int> ringOrderOrIdentity(std::span<const int> order, int n);

// ---- trees ---------------------------------------------------------------------------------
// The shapes below are built over ring POSITIONS 0..n-1; builders map them to ranks with
// relabel(tree, ringOrder), so that a subtree covers consecutive positions of the ring order
// (the ranks of one host / NUMA node stay together, as ring segments do). With the identity
// order positions are ranks.
struct TreeNode {
  int parent = -1;            // -1 for the root
  std::vector<int> children;  // in a fixed order
};
struct Tree {
  int root = 0;
  std::vector<TreeNode> nodes;  // indexed by rank (by position before relabel)
  int depthOf(int rank) const;
  int maxDepth() const;
};
// Heap-shaped binary tree rooted at 0: parent (p-1)/2, children 2p+1, 2p+2.
Tree binaryTree(int n);
// NCCL-style in-order binary tree: position 0 is the root with one child; odd positions are
// leaves.
Tree inorderBinaryTree(int n);
// Two complementary binary trees over 0..n-1 such that every position is interior (has a
// child) in at most one of them: tree 0 has the even positions interior, tree 1 the odd ones.
struct DoubleTree {
  Tree t[2];
};
DoubleTree doubleBinaryTree(int n);
// Binomial tree rooted at root over n positions. children are ordered by the step at which
// the parent sends to them in a broadcast (step k: vpos v < 2^k sends to v + 2^k, where
// v = (p - root) mod n).
Tree binomialTree(int n, int root);
// The tree over positions mapped to ranks: position p becomes rank order[p] (parent, children
// and root relabelled, children kept in the same order, nodes re-indexed by rank). order: a
// permutation of 0..n-1 with n = t.nodes.size() (empty = identity, t returned unchanged).
// Throws tutti::Error when order is not such a permutation.
Tree relabel(const Tree& t, std::span<const int> order);
// Inverse of a ring order: pos[order[p]] = p (identity when order is empty). Validates order.
std::vector<int> ringPositions(std::span<const int> order, int n);

// ---- recursive doubling / halving -----------------------------------------------------------
// Non-power-of-two fold: p = largest power of two <= n, rem = n - p. Ranks p..n-1 ("extra")
// pair with ranks 0..rem-1 first: extra rank p+i folds into rank i and takes no part in the
// power-of-two phase. Active ranks keep vrank == rank.
struct Fold {
  int pof2 = 1;
  int rem = 0;
  bool extra = false;  // this rank folds into partner and sits out
  int partner = -1;    // fold partner (-1 when none)
};
Fold foldPow2(int n, int rank);
int largestPow2AtMost(int n);
bool isPow2(int n);
int log2Floor(int n);
// Partner at step k of recursive doubling over p (power of two) ranks: v ^ (1 << k).
inline int rdPartner(int vrank, int step) { return vrank ^ (1 << step); }

// ---- chunk / block boundaries -----------------------------------------------------------------
struct Range {
  size_t offset = 0;  // elements
  size_t count = 0;   // elements
};
// Splits totalElems elements into nblocks near-equal blocks (block i returned). Block byte
// boundaries are multiples of 16 bytes where possible (blocks are made of 16-byte units,
// the remainder goes to the last block); when there are fewer units than blocks the split
// is per element. Blocks cover [0, totalElems) exactly, in order, without overlap; blocks may
// be empty (count < nblocks, count == 0).
Range blockRange(size_t totalElems, size_t nblocks, size_t i, size_t elemSize);
// Number of pipeline chunks for a message: ceil(bytes / chunkBytes) clamped to [1, maxChunks].
size_t numChunks(size_t bytes, size_t chunkBytes, size_t maxChunks);

}  // namespace tutti::algo::patterns
