// Pure rank arithmetic shared by the schedule builders: rings, trees, recursive doubling /
// halving partners (with the non-power-of-two fold) and chunk boundaries. No I/O, no state.
#pragma once

#include <cstddef>
#include <span>
#include <string>
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
// relabel(tree, ringOrder). Every subtree of binaryTree, of the in-order trees and of
// binomialTree covers a contiguous segment of positions, and binaryTree / binomialTree keep
// every aligned block of positions [k 2^j, (k+1) 2^j) connected: when the ring order lists
// each host (NUMA node, NVLink clique) as one segment of 2^j positions, the tree enters every
// host once (hosts - 1 edges cross hosts, the fewest possible). With the identity order
// positions are ranks.
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
// Binary tree rooted at position 0 built over segments: the node x that owns the segment
// [x, e) hands [x+1, e) to x+1 when x+1 is its most aligned position (most trailing zero
// bits), else splits it at its most aligned position s into [x+1, s) and [s, e), owned by
// its children x+1 and s (in that order). n = 8: 0->{1,4}, 1->2, 2->3, 4->{5,6}, 6->7.
// Depth <= ceil(log2 n); a subtree is the segment [x, e) its node owns.
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
// Binomial tree rooted at position root over the dyadic blocks of 0..n-1: [0, n) splits into
// [0, h) and [h, n) (h the largest power of two < n), each part again the same way; the part
// holding the root is split on, the other part becomes a child subtree rooted at its first
// position (a standard binomial tree over it). For root 0 this is MPICH's binomial tree
// (parent of v = v minus its lowest set bit, subtree [v, v + lowbit(v))). Children are
// ordered by subtree size, largest first (ties: the larger block first); depth <=
// ceil(log2 n). n = 8, root 5: 5->{0,6,4}, 0->{2,1}, 2->3, 6->7.
Tree binomialTree(int n, int root);
// Step at which each node receives in a broadcast down t where every node sends to its
// children in their order, one per step, from the step after it received (root: -1).
// The broadcast takes 1 + max(steps) steps; binomialTree takes ceil(log2 n).
std::vector<int> broadcastSteps(const Tree& t);
// The tree over positions mapped to ranks: position p becomes rank order[p] (parent, children
// and root relabelled, children kept in the same order, nodes re-indexed by rank). order: a
// permutation of 0..n-1 with n = t.nodes.size() (empty = identity, t returned unchanged).
// Throws tutti::Error when order is not such a permutation.
Tree relabel(const Tree& t, std::span<const int> order);
// Inverse of a ring order: pos[order[p]] = p (identity when order is empty). Validates order.
std::vector<int> ringPositions(std::span<const int> order, int n);

// ---- the trees of the tree algorithms, in rank terms ------------------------------------------
// What the builders run for CollArgs::ringOrder = order over n ranks (order empty = identity):
// allreduce "tree", allreduce "dbtree" (its two trees) and broadcast/reduce "binomial" rooted
// at rank root (the tree over positions rooted at the root's position).
Tree allReduceTreeFor(std::span<const int> order, int n);
DoubleTree dbtreeFor(std::span<const int> order, int n);
Tree binomialFor(std::span<const int> order, int n, int root);
struct NamedTree {
  std::string name;  // "tree", "dbtree[0]", "dbtree[1]", "binomial(root 0)"
  Tree tree;
};
// The four trees above for one ring order (binomial rooted at rank 0), for logs and
// tutti-topo; n >= 1.
std::vector<NamedTree> treesForOrder(std::span<const int> order, int n);
// One line: "<name>: root R, depth D, rank->parent 0->P0 1->P1 ..." (-1 for the root).
std::string treeLine(const NamedTree& t);

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
