// Ring all-reduce: ring reduce-scatter (n-1 steps) then ring all-gather (n-1 steps), along
// CollArgs::ringOrder when given.
#include <algorithm>

#include "builder.h"
#include "builders.h"

namespace tutti::algo::detail {

Schedule allReduceRing(const CollArgs& a) {
  if (a.deterministic) return detAllReduce(a, "ring");
  Schedule s = start(a, "ring");
  Ctx c(a);
  if (singleRankCopy(s, c, a.count)) return s;
  std::vector<int> ring = patterns::ringOrderOrIdentity(a.ringOrder, c.n);
  int pos = static_cast<int>(std::find(ring.begin(), ring.end(), c.r) - ring.begin());
  size_t t = ringReduceScatter(s, 0, c, ring, pos, 0, a.count, Buf::kInput);
  ringAllGather(s, t, ring, pos, 1, [&](int k) { return c.out(c.block(a.count, c.n, k)); });
  trim(s);
  return s;
}

}  // namespace tutti::algo::detail
