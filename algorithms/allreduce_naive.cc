// All-reduce "naive" (everyone sends everything to everyone) and "ps" (parameter server:
// reduce at rank 0, then rank 0 sends the result to all). Both reduce in rank order, so they
// are deterministic by construction.
#include "builder.h"
#include "builders.h"

namespace tutti::algo::detail {

Schedule allReduceNaive(const CollArgs& a) {
  Schedule s = start(a, "naive");
  Ctx c(a);
  size_t m = a.count;
  if (singleRankCopy(s, c, m)) return s;
  if (m == 0) return s;
  std::vector<Slice> x(c.n);
  for (int k = 0; k < c.n; ++k) {
    if (k == c.r) {
      x[k] = c.in(0, m);
      continue;
    }
    int slot = k < c.r ? k : k - 1;
    x[k] = c.tmp(slot * m, m);
    send(at(s, 0), k, c.in(0, m));
    recv(at(s, 0), k, x[k]);
  }
  needScratch(s, (c.n - 1) * m * c.es);
  rankOrderReduce(at(s, 1), x, c.r, c.out(0, m));
  trim(s);
  return s;
}

Schedule allReducePs(const CollArgs& a) {
  Schedule s = start(a, "ps");
  Ctx c(a);
  size_t m = a.count;
  if (singleRankCopy(s, c, m)) return s;
  if (m == 0) return s;
  if (c.r == 0) {
    std::vector<Slice> x(c.n);
    x[0] = c.in(0, m);
    for (int k = 1; k < c.n; ++k) {
      x[k] = c.tmp((k - 1) * m, m);
      recv(at(s, 0), k, x[k]);
    }
    needScratch(s, (c.n - 1) * m * c.es);
    rankOrderReduce(at(s, 1), x, 0, c.out(0, m));
    for (int k = 1; k < c.n; ++k) send(at(s, 1), k, c.out(0, m));
  } else {
    send(at(s, 0), 0, c.in(0, m));
    recv(at(s, 1), 0, c.out(0, m));
  }
  trim(s);
  return s;
}

}  // namespace tutti::algo::detail
