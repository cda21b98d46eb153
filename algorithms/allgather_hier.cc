// Hierarchical all-gather over a grid of hosts (HostGrid: nh hosts x L ranks). First a ring
// all-gather along each rail (the ranks with one member index, one per host): every block
// crosses into each other host once, so a host's link carries (nh - 1) x L blocks each way,
// the least any algorithm can. Then a ring all-gather inside each host whose step passes a
// whole column (the nh blocks of one rail) to the next member, as one slice per run of
// consecutive ranks (one slice when ranks are interleaved across hosts).
#include "builder.h"
#include "builders.h"

namespace tutti::algo::detail {

Schedule allGatherHier(const CollArgs& a) {
  Ctx c(a);
  Schedule s = start(a, "hier");
  HostGrid grid = hostGrid(a);
  size_t cnt = a.count;
  copy(at(s, 0), c.in(0, cnt), c.out(c.r * cnt, cnt));
  std::vector<int> myRail = grid.rail(grid.local);
  size_t t =
      ringAllGather(s, 0, myRail, grid.host, 0, [&](int k) { return c.out(myRail[k] * cnt, cnt); });
  int L = grid.perHost;
  const std::vector<int>& local = grid.groups[grid.host];
  int next = local[(grid.local + 1) % L], prev = local[(grid.local + L - 1) % L];
  // The column of member p, as slices of the output.
  auto column = [&](int p) {
    std::vector<int> rail = grid.rail(p);
    std::vector<Slice> out;
    for (auto [first, last] : consecutiveRuns(rail))
      out.push_back(c.out(rail[first] * cnt, (last - first) * cnt));
    return out;
  };
  for (int st = 0; st < L - 1; ++st) {
    Round& rd = at(s, t + st);
    for (Slice x : column(((grid.local - st) % L + L) % L)) send(rd, next, x);
    for (Slice x : column(((grid.local - st - 1) % L + L) % L)) recv(rd, prev, x);
  }
  trim(s);
  return s;
}

}  // namespace tutti::algo::detail
