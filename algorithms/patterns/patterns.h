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
struct TreeNode {
  int parent = -1;            // -1 for the root
  std::vector<int> children;  // in a fixed order
};
struct Tree {
  int root = 0;
  std::vector<TreeNode> nodes;  // indexed by rank
  int depthOf(int rank) const;
  int maxDepth() const;
};
// Heap-shaped binary tree rooted at 0: parent (r-1)/2, children 2r+1, 2r+2.
Tree binaryTree(int n);
// NCCL-style in-order binary tree: rank 0 is the root with one child; odd ranks are leaves.
Tree inorderBinaryTree(int n);
// Two complementary binary trees over 0..n-1 such that every rank is interior (has a child)
// in at most one of them: tree 0 has the even ranks interior, tree 1 the odd ranks.
struct DoubleTree {
  Tree t[2];
};
DoubleTree doubleBinaryTree(int n);
// Binomial tree rooted at root over n ranks. children are ordered by the step at which the
// parent sends to them in a broadcast (step k: vrank v < 2^k sends to v + 2^k).
Tree binomialTree(int n, int root);

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
