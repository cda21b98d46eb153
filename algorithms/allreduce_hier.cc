// Hierarchical all-reduce over hosts (CollArgs::hostOf), hosts and their members taken in
// ring order (hostGroups: the ranks of a host in the order CollArgs::ringOrder lists them,
// hosts in the order their segments appear; empty order: host index, rank order).
// Same number L of ranks on every host ("2D ring"): intra-host ring reduce-scatter, then
// for each local index p an inter-host ring all-reduce of the block that p owns among the
// ranks with local index p, then intra-host ring all-gather.
// Uneven hosts ("leader"): intra-host ring reduce-scatter, members send their block to the
// host leader (the first rank of the host's segment of the ring order, its NIC-nearest end;
// the lowest rank with an empty order), leaders ring all-reduce the whole buffer, leaders send each
// member its block back, intra-host ring all-gather.
#include <algorithm>

#include "builder.h"
#include "builders.h"

namespace tutti::algo::detail {
namespace {

// Ring all-reduce of [off, off+cnt) over group starting at round t0; src holds this rank's
// contribution. Returns the next free round.
size_t ringAllReduceRegion(Schedule& s, size_t t0, const Ctx& c, std::span<const int> group,
                           int pos, size_t off, size_t cnt, Buf src) {
  int g = static_cast<int>(group.size());
  if (g == 1) {
    copy(at(s, t0), c.sl(src, off, cnt), c.out(off, cnt));
    return t0;
  }
  size_t t = ringReduceScatter(s, t0, c, group, pos, off, cnt, src);
  return ringAllGather(s, t, group, pos, 1, [&](int k) {
    Range b = c.block(cnt, g, k);
    return c.out(off + b.offset, b.count);
  });
}

}  // namespace

Schedule allReduceHier(const CollArgs& a) {
  if (a.deterministic) return detAllReduce(a, "hier");
  Schedule s = start(a, "hier");
  Ctx c(a);
  size_t m = a.count;
  // Hosts and their members in ring order; a host's leader (member 0) is the first rank of
  // its segment of the ring order.
  std::vector<std::vector<int>> hosts = hostGroups(a);
  int nh = static_cast<int>(hosts.size());
  int myHost = 0;
  while (std::find(hosts[myHost].begin(), hosts[myHost].end(), c.r) == hosts[myHost].end())
    ++myHost;
  const std::vector<int>& local = hosts[myHost];
  int L = static_cast<int>(local.size());
  int lpos = static_cast<int>(std::find(local.begin(), local.end(), c.r) - local.begin());
  size_t maxL = 0;
  bool uniform = true;
  for (auto& h : hosts) {
    maxL = std::max(maxL, h.size());
    uniform = uniform && static_cast<int>(h.size()) == L;
  }
  auto lblock = [&](int k) { return c.block(m, L, k); };
  Buf after1 = L > 1 ? Buf::kOutput : Buf::kInput;  // where the host-partial sum lives
  // Phase 1: intra-host ring reduce-scatter; local position p owns block (p+1) % L.
  size_t t = ringReduceScatter(s, 0, c, local, lpos, 0, m, Buf::kInput);
  t = maxL - 1;  // align phases across hosts
  int own = (lpos + 1) % L;
  if (uniform) {
    std::vector<int> peers(nh);
    for (int h = 0; h < nh; ++h) peers[h] = hosts[h][lpos];
    Range b = lblock(own);
    t = ringAllReduceRegion(s, t, c, peers, myHost, b.offset, b.count, after1);
    if (nh == 1) ++t;
  } else {
    int leader = local[0];
    if (lpos != 0) {
      send(at(s, t), leader, c.out(lblock(own)));
    } else {
      for (int p = 1; p < L; ++p) recv(at(s, t), local[p], c.out(lblock((p + 1) % L)));
    }
    ++t;
    size_t tAfter = t + 2 * (nh - 1);
    if (lpos == 0) {
      std::vector<int> leaders(nh);
      for (int h = 0; h < nh; ++h) leaders[h] = hosts[h][0];
      ringAllReduceRegion(s, t, c, leaders, myHost, 0, m, after1);
    }
    t = tAfter;
    if (lpos != 0) {
      recv(at(s, t), leader, c.out(lblock(own)));
    } else {
      for (int p = 1; p < L; ++p) send(at(s, t), local[p], c.out(lblock((p + 1) % L)));
    }
    ++t;
  }
  // Phase 3: intra-host ring all-gather.
  ringAllGather(s, t, local, lpos, 1, [&](int k) { return c.out(lblock(k)); });
  trim(s);
  return s;
}

}  // namespace tutti::algo::detail
