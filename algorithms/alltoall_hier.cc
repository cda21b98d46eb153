// Hierarchical all-to-all over a grid of hosts (HostGrid: nh hosts x L ranks): two exchanges
// of few, large messages instead of n - 1 rounds of one block each.
//   Round 0: each rank packs, for every member q of its host, the blocks bound for rail q
//            (rank(g, q) for every host g) and sends them to q in one message (L - 1 messages
//            inside the host).
//   Round 1: it now holds, from every member p of its host, the blocks bound for its own
//            rail; it repacks them by destination host and sends each rail peer its L blocks
//            in one message (nh - 1 messages across hosts); the blocks for its own host go
//            straight to the output.
//   Round 2: it unpacks the blocks from the other hosts into the output.
// Scratch A and B of n blocks each; in place, the input is read only by round 0 and the
// output written only from round 1.
#include "builder.h"
#include "builders.h"

namespace tutti::algo::detail {

Schedule allToAllHier(const CollArgs& a) {
  Schedule s = start(a, "hier");
  Ctx c(a);
  HostGrid grid = hostGrid(a);
  size_t cnt = a.count;
  int L = grid.perHost, nh = grid.hosts, h = grid.host, me = grid.local;
  size_t n = static_cast<size_t>(c.n);
  needScratch(s, 2 * n * cnt * c.es);
  auto A = [&](size_t i, size_t k) { return c.tmp(i * cnt, k * cnt); };
  auto B = [&](size_t i, size_t k) { return c.tmp((n + i) * cnt, k * cnt); };
  // Round 0: member q's blocks at A[q * nh + g] (this rank's own column straight into B).
  Round& r0 = at(s, 0);
  for (int q = 0; q < L; ++q) {
    std::vector<int> rail = grid.rail(q);
    for (auto [f, l] : consecutiveRuns(rail)) {
      size_t i = static_cast<size_t>(q) * nh + f, k = l - f;
      copy(r0, c.in(rail[f] * cnt, k * cnt), q == me ? B(i, k) : A(i, k));
    }
  }
  for (int q = 0; q < L; ++q) {
    if (q == me) continue;
    send(r0, grid.rank(h, q), A(static_cast<size_t>(q) * nh, nh));
    recv(r0, grid.rank(h, q), B(static_cast<size_t>(q) * nh, nh));
  }
  // Round 1: B[p * nh + g] is member p's block for rank(g, me). Repack by host into A[g * L + p]
  // (own host: to the output), then exchange along the rail into B[g * L + p].
  Round& r1 = at(s, 1);
  for (int p = 0; p < L; ++p)
    for (int g = 0; g < nh; ++g) {
      Slice from = B(static_cast<size_t>(p) * nh + g, 1);
      copy(r1, from, g == h ? c.out(grid.rank(h, p) * cnt, cnt) : A(g * L + p, 1));
    }
  for (int g = 0; g < nh; ++g) {
    if (g == h) continue;
    send(r1, grid.rank(g, me), A(static_cast<size_t>(g) * L, L));
    recv(r1, grid.rank(g, me), B(static_cast<size_t>(g) * L, L));
  }
  // Round 2: host g's blocks to the output.
  Round& r2 = at(s, 2);
  for (int g = 0; g < nh; ++g) {
    if (g == h) continue;
    std::vector<int> members = grid.groups[g];
    for (auto [f, l] : consecutiveRuns(members))
      copy(r2, B(static_cast<size_t>(g) * L + f, l - f), c.out(members[f] * cnt, (l - f) * cnt));
  }
  trim(s);
  return s;
}

}  // namespace tutti::algo::detail
