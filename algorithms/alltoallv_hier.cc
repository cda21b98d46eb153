// Hierarchical all-to-all-v over a grid of hosts (HostGrid: nh hosts x L ranks): the rounds of
// the uniform hier (alltoall_hier.cc) with every block its own size. S(p, d) below is what
// member p of this rank's host sends to rank d (CollArgs::hostSendCounts, which the
// communicator exchanges inside the host first: hostSendCountsExchange).
//   Round 0: for every member q of its host, the blocks bound for rail q (rank(g, q) for every
//            host g) are packed in host order and sent to q in one message; q's own column
//            goes straight to scratch B. From member p it receives S(p, rank(g, me)) for each g.
//   Round 1: for every other host g, the blocks of every member p bound for rank(g, me) are
//            repacked in member order and sent to that rail peer in one message; the blocks
//            bound for this rank itself go to the output. From rail peer (g, me) it receives
//            the blocks of host g's members, counts[rank(g, p)] each.
//   Round 2: those blocks to the output.
// Scratch: X (round 0's and round 1's packing) then Y (round 0's and round 1's receipts: round
// 1's local copies read Y before its receives write it). In place, the input is read only in
// round 0 and the output written only from round 1.
#include <algorithm>

#include "builder.h"
#include "builders.h"

namespace tutti::algo::detail {
namespace {

// Copies emitted into one round, adjacent ones (both sides contiguous) merged into one.
class CopyList {
 public:
  explicit CopyList(Round& rd) : rd_(rd) {}
  ~CopyList() { flush(); }
  CopyList(const CopyList&) = delete;
  CopyList& operator=(const CopyList&) = delete;
  void add(Slice from, Slice to) {
    if (from.bytes == 0) return;
    if (open_ && from.buf == src_.buf && to.buf == dst_.buf &&
        from.offset == src_.offset + src_.bytes && to.offset == dst_.offset + dst_.bytes) {
      src_.bytes += from.bytes;
      dst_.bytes += to.bytes;
      return;
    }
    flush();
    src_ = from;
    dst_ = to;
    open_ = true;
  }
  void flush() {
    if (open_) copy(rd_, src_, dst_);
    open_ = false;
  }

 private:
  Round& rd_;
  Slice src_, dst_;
  bool open_ = false;
};

// The send counts of the host's members, S(p, d) = at(p, d); the uniform case (no counts at
// all: the simulator and cost model) is `count` everywhere.
class HostSendCounts {
 public:
  HostSendCounts(const CollArgs& a, const HostGrid& grid)
      : a_(a), n_(static_cast<size_t>(a.nranks)) {
    uniform_ = a.counts.empty() && a.sendCounts.empty() && a.hostSendCounts.empty();
    if (uniform_) return;
    const size_t L = static_cast<size_t>(grid.perHost);
    TUTTI_CHECK_ARG(a.hostSendCounts.size() == L * n_,
                    "alltoallv hier: needs the send counts of the ", L,
                    " members of its host (CollArgs::hostSendCounts, ", L * n_, " entries), got ",
                    a.hostSendCounts.size());
    const std::vector<Range> mine = unevenSendBlocks(a);
    for (size_t d = 0; d < n_; ++d)
      TUTTI_CHECK_ARG(
          at(grid.local, static_cast<int>(d)) == mine[d].count,
          "alltoallv hier: the host's send counts disagree with this rank's own (to rank ", d, ")");
  }
  size_t at(int p, int d) const {
    return uniform_ ? a_.count : a_.hostSendCounts[static_cast<size_t>(p) * n_ + d];
  }

 private:
  const CollArgs& a_;
  size_t n_;
  bool uniform_ = true;
};

}  // namespace

Schedule allToAllVHier(const CollArgs& a) {
  Schedule s = start(a, "hier");
  Ctx c(a);
  const HostGrid grid = hostGrid(a);
  const int L = grid.perHost, nh = grid.hosts, h = grid.host, me = grid.local;
  const HostSendCounts S(a, grid);
  const std::vector<Range> in = unevenSendBlocks(a), out = unevenBlocks(a);
  // Round 0's receipts in Y: member p's blocks for rank(g, me), g = 0..nh-1, from yAt[p].
  std::vector<size_t> yAt(L + 1, 0), xAt(L + 1, 0);
  for (int p = 0; p < L; ++p) {
    size_t from = 0, to = 0;
    for (int g = 0; g < nh; ++g) {
      from += S.at(p, grid.rank(g, me));
      if (p != me) to += S.at(me, grid.rank(g, p));
    }
    yAt[p + 1] = yAt[p] + from;
    xAt[p + 1] = xAt[p] + to;
  }
  // Round 1: packed per other host g (member order) from x1At[g]; received from rail peer
  // (g, me) at y1At[g]: host g's members' blocks for this rank.
  std::vector<size_t> x1At(nh + 1, 0), y1At(nh + 1, 0);
  for (int g = 0; g < nh; ++g) {
    size_t pack = 0, take = 0;
    for (int p = 0; p < L && g != h; ++p) {
      pack += S.at(p, grid.rank(g, me));
      take += out[grid.rank(g, p)].count;
    }
    x1At[g + 1] = x1At[g] + pack;
    y1At[g + 1] = y1At[g] + take;
  }
  const size_t xSize = std::max(xAt[L], x1At[nh]), ySize = std::max(yAt[L], y1At[nh]);
  needScratch(s, (xSize + ySize) * c.es);
  auto X = [&](size_t off, size_t cnt) { return c.tmp(off, cnt); };
  auto Y = [&](size_t off, size_t cnt) { return c.tmp(xSize + off, cnt); };

  Round& r0 = at(s, 0);
  {
    CopyList copies(r0);
    for (int q = 0; q < L; ++q) {
      size_t off = q == me ? yAt[me] : xAt[q];
      for (int g = 0; g < nh; ++g) {
        const Range b = in[grid.rank(g, q)];
        copies.add(c.in(b), q == me ? Y(off, b.count) : X(off, b.count));
        off += b.count;
      }
    }
  }
  for (int q = 0; q < L; ++q) {
    if (q == me) continue;
    send(r0, grid.rank(h, q), X(xAt[q], xAt[q + 1] - xAt[q]));
    recv(r0, grid.rank(h, q), Y(yAt[q], yAt[q + 1] - yAt[q]));
  }

  Round& r1 = at(s, 1);
  {
    CopyList copies(r1);
    std::vector<size_t> packed(x1At.begin(), x1At.end() - 1);
    for (int p = 0; p < L; ++p) {
      size_t off = yAt[p];
      for (int g = 0; g < nh; ++g) {
        const size_t k = S.at(p, grid.rank(g, me));
        if (g == h) {
          const Range o = out[grid.rank(h, p)];
          TUTTI_CHECK_ARG(o.count == k, "alltoallv hier: rank ", grid.rank(h, p), " sends ", k,
                          " elements to rank ", a.rank, ", which expects ", o.count);
          copies.add(Y(off, k), c.out(o));
        } else {
          copies.add(Y(off, k), X(packed[g], k));
          packed[g] += k;
        }
        off += k;
      }
    }
  }
  for (int g = 0; g < nh; ++g) {
    if (g == h) continue;
    send(r1, grid.rank(g, me), X(x1At[g], x1At[g + 1] - x1At[g]));
    recv(r1, grid.rank(g, me), Y(y1At[g], y1At[g + 1] - y1At[g]));
  }

  Round& r2 = at(s, 2);
  {
    CopyList copies(r2);
    for (int g = 0; g < nh; ++g) {
      if (g == h) continue;
      size_t off = y1At[g];
      for (int p = 0; p < L; ++p) {
        const Range o = out[grid.rank(g, p)];
        copies.add(Y(off, o.count), c.out(o));
        off += o.count;
      }
    }
  }
  trim(s);
  return s;
}

Schedule hostSendCountsExchange(const CollArgs& a) {
  CollArgs args = a;
  args.dtype = tuttiUint64;
  Schedule s = start(args, "host-send-counts");
  Ctx c(args);
  const HostGrid grid = hostGrid(args);
  const size_t n = static_cast<size_t>(c.n);
  Round& rd = at(s, 0);
  copy(rd, c.in(0, n), c.out(grid.local * n, n));
  for (int q = 0; q < grid.perHost; ++q) {
    if (q == grid.local) continue;
    send(rd, grid.rank(grid.host, q), c.in(0, n));
    recv(rd, grid.rank(grid.host, q), c.out(q * n, n));
  }
  trim(s);
  return s;
}

}  // namespace tutti::algo::detail
