// Broadcast: pipelined chain (along the ring order, starting at the root; chunk i leaves
// the root at round i and reaches chain position k at round i + k - 1) and binomial tree
// (ceil(log2 n) rounds, whole buffer per step, built over the dyadic blocks of ring positions
// rooted at the root's position and mapped to ranks through the ring order). Non-root ranks
// never read their input.
#include <algorithm>

#include "builder.h"
#include "builders.h"

namespace tutti::algo::detail {

std::vector<int> chainFromRoot(const CollArgs& a) {
  std::vector<int> ring = patterns::ringOrderOrIdentity(a.ringOrder, a.nranks);
  int rp = static_cast<int>(std::find(ring.begin(), ring.end(), a.root) - ring.begin());
  std::vector<int> chain(a.nranks);
  for (int k = 0; k < a.nranks; ++k) chain[k] = ring[(rp + k) % a.nranks];
  return chain;
}

Schedule broadcastChain(const CollArgs& a) {
  Schedule s = start(a, "chain");
  Ctx c(a);
  size_t m = a.count;
  std::vector<int> chain = chainFromRoot(a);
  int n = c.n;
  int k = static_cast<int>(std::find(chain.begin(), chain.end(), c.r) - chain.begin());
  size_t nch = patterns::numChunks(m * c.es, kChunkBytes, kMaxChunks);
  if (k == 0) copy(at(s, 0), c.in(0, m), c.out(0, m));
  for (size_t i = 0; i < nch; ++i) {
    Range ch = c.block(m, nch, i);
    if (k == 0) {
      if (n > 1) send(at(s, i), chain[1], c.in(ch));
      continue;
    }
    recv(at(s, i + k - 1), chain[k - 1], c.out(ch));
    if (k < n - 1) send(at(s, i + k), chain[k + 1], c.out(ch));
  }
  trim(s);
  return s;
}

Schedule broadcastBinomial(const CollArgs& a) {
  Schedule s = start(a, "binomial");
  Ctx c(a);
  size_t m = a.count;
  // The tree is built over ring positions, rooted at the root's position, and mapped to ranks
  // through the ring order; a node sends to its children largest subtree first, one per step.
  patterns::Tree tree = patterns::binomialFor(a.ringOrder, c.n, a.root);
  std::vector<int> step = patterns::broadcastSteps(tree);
  if (c.r == a.root)
    copy(at(s, 0), c.in(0, m), c.out(0, m));
  else
    recv(at(s, step[c.r]), tree.nodes[c.r].parent, c.out(0, m));
  for (int kid : tree.nodes[c.r].children)
    send(at(s, step[kid]), kid, c.r == a.root ? c.in(0, m) : c.out(0, m));
  trim(s);
  return s;
}

}  // namespace tutti::algo::detail
