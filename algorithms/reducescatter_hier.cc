// Hierarchical reduce-scatter over a grid of hosts (HostGrid: nh hosts x L ranks), the
// all-gather's mirror. First a ring reduce-scatter inside each host over columns (member p's
// column is the nh blocks of rail p: the ranks with member index p): afterwards member p holds
// its host's sum of its rail's blocks. Then a ring reduce-scatter along each rail, one block
// per host: only (nh - 1) x L blocks cross a host's link each way, the least possible. Partial
// sums live in two alternating scratch slots per phase.
#include "builder.h"
#include "builders.h"

namespace tutti::algo::detail {
namespace {

// Phase 1: the ring reduce-scatter of columns inside the host, from round 0. Returns the
// slice of this member's column sum for host g (scratch; the input itself with one member).
std::function<Slice(int)> hostColumnSums(Schedule& s, const Ctx& c, const HostGrid& grid) {
  size_t cnt = c.a.count;
  int L = grid.perHost, me = grid.local;
  size_t col = grid.hosts * cnt;
  if (L == 1) return [&c, &grid, cnt](int g) { return c.in(grid.rank(g, 0) * cnt, cnt); };
  const std::vector<int>& local = grid.groups[grid.host];
  int next = local[(me + 1) % L], prev = local[(me + L - 1) % L];
  auto slot = [&c, col](int st, size_t off, size_t k) { return c.tmp((st % 2) * col + off, k); };
  for (int st = 0; st < L - 1; ++st) {
    Round& rd = at(s, st);
    int sendCol = ((me - st - 1) % L + L) % L, recvCol = ((me - st - 2) % L + L) % L;
    std::vector<int> sendRail = grid.rail(sendCol), recvRail = grid.rail(recvCol);
    for (auto [f, l] : consecutiveRuns(sendRail)) {
      size_t k = (l - f) * cnt;
      send(rd, next, st == 0 ? c.in(sendRail[f] * cnt, k) : slot(st - 1, f * cnt, k));
    }
    for (auto [f, l] : consecutiveRuns(recvRail)) {
      size_t k = (l - f) * cnt;
      recvReduce(rd, prev, c.in(recvRail[f] * cnt, k), slot(st, f * cnt, k));
    }
  }
  int last = L - 2;
  return [&c, cnt, col, last](int g) { return c.tmp((last % 2) * col + g * cnt, cnt); };
}

}  // namespace

Schedule reduceScatterHier(const CollArgs& a) {
  if (a.deterministic) return detReduceScatter(a, "hier");
  Schedule s = start(a, "hier");
  Ctx c(a);
  HostGrid grid = hostGrid(a);
  size_t cnt = a.count;
  int L = grid.perHost, nh = grid.hosts, h = grid.host;
  std::function<Slice(int)> colSum = hostColumnSums(s, c, grid);
  // Phase 2 along the rail; its slots in the phase-1 slot not holding the column sums.
  size_t base2 = L > 1 ? ((L - 1) % 2) * nh * cnt : 0;
  auto slot2 = [&](int st) { return c.tmp(base2 + (st % 2) * cnt, cnt); };
  needScratch(s, (L > 1 ? 2 * nh * cnt : 2 * cnt) * c.es);
  std::vector<int> rail = grid.rail(grid.local);
  int next = rail[(h + 1) % nh], prev = rail[(h + nh - 1) % nh];
  size_t t0 = L > 1 ? L - 1 : 0;
  for (int st = 0; st < nh - 1; ++st) {
    Round& rd = at(s, t0 + st);
    int sb = ((h - st - 1) % nh + nh) % nh, rb = ((h - st - 2) % nh + nh) % nh;
    send(rd, next, st == 0 ? colSum(sb) : slot2(st - 1));
    recvReduce(rd, prev, colSum(rb), st == nh - 2 ? c.out(0, cnt) : slot2(st));
  }
  trim(s);
  return s;
}

}  // namespace tutti::algo::detail
