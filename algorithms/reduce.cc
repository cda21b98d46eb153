// Reduce to a root: pipelined chain (reverse of the broadcast chain: chunk i leaves the chain
// tail at round i; intermediate ranks accumulate in two alternating scratch slots) and
// binomial tree (the broadcast tree run backwards, non-roots accumulate in scratch). Non-root
// ranks never write their output buffer.
#include <algorithm>

#include "builder.h"
#include "builders.h"

namespace tutti::algo::detail {

std::vector<int> chainFromRoot(const CollArgs& a);  // broadcast.cc

Schedule reduceChain(const CollArgs& a) {
  if (a.deterministic) return detReduce(a, "chain");
  Schedule s = start(a, "chain");
  Ctx c(a);
  size_t m = a.count;
  int n = c.n;
  if (singleRankCopy(s, c, m)) return s;
  std::vector<int> chain = chainFromRoot(a);
  int k = static_cast<int>(std::find(chain.begin(), chain.end(), c.r) - chain.begin());
  size_t nch = patterns::numChunks(m * c.es, kChunkBytes, kMaxChunks);
  size_t maxChunk = 0;
  for (size_t i = 0; i < nch; ++i) maxChunk = std::max(maxChunk, c.block(m, nch, i).count);
  for (size_t i = 0; i < nch; ++i) {
    Range ch = c.block(m, nch, i);
    if (k == n - 1) {
      send(at(s, i), chain[k - 1], c.in(ch));
      continue;
    }
    Slice acc = k == 0 ? c.out(ch) : c.tmp((i % 2) * maxChunk, ch.count);
    recvReduce(at(s, i + (n - 2 - k)), chain[k + 1], c.in(ch), acc);
    if (k > 0) send(at(s, i + (n - 1 - k)), chain[k - 1], acc);
  }
  if (k > 0 && k < n - 1) needScratch(s, 2 * maxChunk * c.es);
  trim(s);
  return s;
}

Schedule reduceBinomial(const CollArgs& a) {
  if (a.deterministic) return detReduce(a, "binomial");
  Schedule s = start(a, "binomial");
  Ctx c(a);
  size_t m = a.count;
  // The broadcast tree (patterns::binomialFor) run backwards: broadcast step k becomes
  // reduce round R-1-k (R = broadcast steps); children are received last-sent first.
  patterns::Tree tree = patterns::binomialFor(a.ringOrder, c.n, a.root);
  std::vector<int> step = patterns::broadcastSteps(tree);
  int R = 1 + *std::max_element(step.begin(), step.end());
  const patterns::TreeNode& node = tree.nodes[c.r];
  bool isRoot = c.r == a.root;
  Slice acc = isRoot ? c.out(0, m) : c.tmp(0, m);
  bool first = true;
  for (auto it = node.children.rbegin(); it != node.children.rend(); ++it) {
    recvReduce(at(s, R - 1 - step[*it]), *it, first ? c.in(0, m) : acc, acc);
    first = false;
  }
  if (isRoot) {
    if (first) copy(at(s, 0), c.in(0, m), acc);
  } else {
    if (!first) needScratch(s, m * c.es);
    send(at(s, R - 1 - step[c.r]), node.parent, first ? c.in(0, m) : acc);
  }
  trim(s);
  return s;
}

}  // namespace tutti::algo::detail
