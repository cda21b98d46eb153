// Pipelined tree all-reduce: chunks move up the tree (reduce) and back down (broadcast) one
// level per round. "tree" uses one binary tree whose subtrees are aligned segments of ring
// positions (patterns::binaryTree); "dbtree" splits the buffer in two halves, each
// reduced/broadcast on one of two complementary in-order binary trees (NCCL style). The trees
// are built over positions of CollArgs::ringOrder and mapped to ranks through it
// (patterns::allReduceTreeFor / dbtreeFor), so subtrees are ring segments.
//
// Global round plan for a tree of depth D, node at depth d, chunk i:
//   up:   children send chunk i at round i + D - d - 1; the node sends it up at i + D - d
//   down: the node receives chunk i at i + D + d - 1 and forwards it at i + D + d
// The first child's chunk is recv-reduced in place; further children's chunks land in a
// scratch slot and are reduced by a local op at the start of the next round.
#include <algorithm>

#include "builder.h"
#include "builders.h"

namespace tutti::algo::detail {
namespace {

size_t maxChildren(const patterns::Tree& t) {
  size_t m = 0;
  for (const auto& nd : t.nodes) m = std::max(m, nd.children.size());
  return m;
}

// Emits one tree's all-reduce of elements [off, off+cnt); returns scratch bytes used from
// tmpOff on.
size_t treeAllReduce(Schedule& s, const Ctx& c, const patterns::Tree& tree, size_t off, size_t cnt,
                     size_t tmpOff) {
  const patterns::TreeNode& node = tree.nodes[c.r];
  size_t nch = patterns::numChunks(cnt * c.es, kChunkBytes, kMaxChunks);
  size_t D = tree.maxDepth(), d = tree.depthOf(c.r);
  size_t maxChunk = 0;
  for (size_t i = 0; i < nch; ++i) maxChunk = std::max(maxChunk, c.block(cnt, nch, i).count);
  for (size_t i = 0; i < nch; ++i) {
    Range ch = c.block(cnt, nch, i);
    ch.offset += off;
    if (ch.count == 0) continue;
    bool hasKids = !node.children.empty();
    if (hasKids) {
      Round& rd = at(s, i + D - d - 1);
      for (size_t j = 0; j < node.children.size(); ++j) {
        if (j == 0) {
          recvReduce(rd, node.children[0], c.in(ch), c.out(ch));
        } else {
          Slice slot{Buf::kScratch, tmpOff + (j - 1) * maxChunk * c.es, ch.count * c.es};
          recv(rd, node.children[j], slot);
          reduce(at(s, i + D - d), c.out(ch), slot, c.out(ch));
        }
      }
    }
    if (node.parent >= 0) {
      send(at(s, i + D - d), node.parent, hasKids ? c.out(ch) : c.in(ch));
      recv(at(s, i + D + d - 1), node.parent, c.out(ch));
    } else if (!hasKids) {
      copy(at(s, i), c.in(ch), c.out(ch));
    }
    for (int kid : node.children) send(at(s, i + D + d), kid, c.out(ch));
  }
  size_t kids = maxChildren(tree);
  return kids > 1 ? (kids - 1) * maxChunk * c.es : 0;
}

}  // namespace

Schedule allReduceTree(const CollArgs& a) {
  if (a.deterministic) return detAllReduce(a, "tree");
  Schedule s = start(a, "tree");
  Ctx c(a);
  patterns::Tree tree = patterns::allReduceTreeFor(a.ringOrder, c.n);
  needScratch(s, treeAllReduce(s, c, tree, 0, a.count, 0));
  trim(s);
  return s;
}

Schedule allReduceDbtree(const CollArgs& a) {
  if (a.deterministic) return detAllReduce(a, "dbtree");
  Schedule s = start(a, "dbtree");
  Ctx c(a);
  patterns::DoubleTree dt = patterns::dbtreeFor(a.ringOrder, c.n);
  Range h0 = c.block(a.count, 2, 0), h1 = c.block(a.count, 2, 1);
  size_t used = treeAllReduce(s, c, dt.t[0], h0.offset, h0.count, 0);
  used += treeAllReduce(s, c, dt.t[1], h1.offset, h1.count, used);
  needScratch(s, used);
  trim(s);
  return s;
}

}  // namespace tutti::algo::detail
