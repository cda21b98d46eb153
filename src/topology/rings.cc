#include "topology/rings.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <numeric>

#include "common/error.h"

namespace tutti::topo {
namespace {

constexpr int kExactMax = 16;

struct Edges {
  int n = 0;
  std::vector<int64_t> bw;  // MB/s
  std::vector<int> slow;    // 1 for SYS/NET
  std::vector<int> socket;  // 1 for a socket or host change
  int64_t at(const std::vector<int64_t>& v, int i, int j) const { return v[i * n + j]; }
};

int socketOf(const Topology& t, DeviceRef d) {
  int numa = -1;
  if (d.kind == DevKind::kCpu)
    numa = d.index;
  else if (d.kind == DevKind::kNic)
    numa = t.nics[d.index].numa;
  else
    numa = t.numaOfPci(t.gpus[d.index].pci);
  return t.socketOfNuma(numa);
}

Edges buildEdges(const Topology& t, std::span<const DeviceRef> devs) {
  Edges e;
  e.n = static_cast<int>(devs.size());
  e.bw.assign(e.n * e.n, 0);
  e.slow.assign(e.n * e.n, 0);
  e.socket.assign(e.n * e.n, 0);
  for (int i = 0; i < e.n; ++i) {
    for (int j = 0; j < e.n; ++j) {
      if (i == j) continue;
      Path p = pathBetween(t, devs[i], devs[j]);
      e.bw[i * e.n + j] = static_cast<int64_t>(std::llround(p.bandwidthGBps * 1000.0));
      e.slow[i * e.n + j] = p.cls == LinkClass::kSYS || p.cls == LinkClass::kNET;
      e.socket[i * e.n + j] =
          devs[i].host != devs[j].host || socketOf(t, devs[i]) != socketOf(t, devs[j]);
    }
  }
  return e;
}

RingScore score(const Edges& e, std::span<const int> order) {
  RingScore s;
  int n = static_cast<int>(order.size());
  if (n < 2) return s;
  s.bottleneckMBps = std::numeric_limits<int64_t>::max();
  for (int k = 0; k < n; ++k) {
    int a = order[k], b = order[(k + 1) % n];
    if (n == 2 && k == 1) break;  // a 2-ring has one distinct edge
    int64_t bw = e.bw[a * e.n + b];
    s.bottleneckMBps = std::min(s.bottleneckMBps, bw);
    s.slowEdges += e.slow[a * e.n + b];
    s.socketChanges += static_cast<int>(e.socket[a * e.n + b]);
    s.totalMBps += bw;
  }
  return s;
}

// Packs (slow, socketChanges, -total) into one additive int64 minimised lexicographically.
int64_t packedCost(const Edges& e, int a, int b) {
  return (int64_t(e.slow[a * e.n + b]) << 48) + (int64_t(e.socket[a * e.n + b]) << 40) -
         e.bw[a * e.n + b];
}

// Held-Karp: best ring using only edges with bw >= threshold; empty when none exists.
std::vector<int> exactRing(const Edges& e, int64_t threshold) {
  const int n = e.n;
  const int64_t inf = std::numeric_limits<int64_t>::max() / 4;
  const size_t full = size_t{1} << n;
  std::vector<int64_t> dp(full * n, inf);
  std::vector<int8_t> prev(full * n, -1);
  dp[1 * n + 0] = 0;
  for (size_t mask = 1; mask < full; mask += 2) {  // node 0 always in the path
    for (int j = 0; j < n; ++j) {
      int64_t cur = dp[mask * n + j];
      if (cur >= inf || !(mask & (size_t{1} << j))) continue;
      for (int k = 1; k < n; ++k) {
        if (mask & (size_t{1} << k)) continue;
        if (e.bw[j * n + k] < threshold) continue;
        size_t nm = mask | (size_t{1} << k);
        int64_t c = cur + packedCost(e, j, k);
        if (c < dp[nm * n + k]) {
          dp[nm * n + k] = c;
          prev[nm * n + k] = static_cast<int8_t>(j);
        }
      }
    }
  }
  int64_t best = inf;
  int last = -1;
  size_t all = full - 1;
  for (int j = 1; j < n; ++j) {
    if (dp[all * n + j] >= inf || e.bw[j * n + 0] < threshold) continue;
    int64_t c = dp[all * n + j] + packedCost(e, j, 0);
    if (c < best) {
      best = c;
      last = j;
    }
  }
  if (last < 0) return {};
  std::vector<int> order;
  size_t mask = all;
  for (int j = last; j != 0;) {
    order.push_back(j);
    int p = prev[mask * n + j];
    mask &= ~(size_t{1} << j);
    j = p;
  }
  order.push_back(0);
  std::reverse(order.begin(), order.end());
  return order;
}

std::vector<int> heuristicRing(const Topology& t, std::span<const DeviceRef> devs, const Edges& e) {
  // Group by (host, socket), greedy nearest neighbour inside each group, groups in order.
  std::map<std::pair<int, int>, std::vector<int>> groups;
  for (int i = 0; i < e.n; ++i) groups[{devs[i].host, socketOf(t, devs[i])}].push_back(i);
  std::vector<int> order;
  for (auto& [key, members] : groups) {
    std::vector<bool> used(members.size(), false);
    int cur = members[0];
    used[0] = true;
    order.push_back(cur);
    for (size_t step = 1; step < members.size(); ++step) {
      int bestK = -1;
      for (size_t k = 0; k < members.size(); ++k) {
        if (used[k]) continue;
        if (bestK < 0 || e.bw[cur * e.n + members[k]] > e.bw[cur * e.n + members[bestK]]) {
          bestK = static_cast<int>(k);
        }
      }
      used[bestK] = true;
      cur = members[bestK];
      order.push_back(cur);
    }
  }
  // 2-opt on the full measure.
  RingScore best = score(e, order);
  bool improved = true;
  for (int round = 0; improved && round < 20; ++round) {
    improved = false;
    for (int i = 1; i + 1 < e.n; ++i) {
      for (int j = i + 1; j < e.n; ++j) {
        std::reverse(order.begin() + i, order.begin() + j + 1);
        RingScore s = score(e, order);
        if (s.betterThan(best)) {
          best = s;
          improved = true;
        } else {
          std::reverse(order.begin() + i, order.begin() + j + 1);
        }
      }
    }
  }
  // Rotate so that device 0 comes first.
  auto it = std::find(order.begin(), order.end(), 0);
  std::rotate(order.begin(), it, order.end());
  return order;
}

int buildTree(std::span<const int> ring, int lo, int hi, int parent, Tree& tree, int depth) {
  if (lo >= hi) return -1;
  int mid = lo + (hi - lo - 1) / 2;
  if (lo == 0 && parent < 0) mid = 0;  // the ring's first device is the root
  int node = ring[mid];
  tree.parent[node] = parent;
  tree.depth = std::max(tree.depth, depth);
  int l = buildTree(ring, lo, mid, node, tree, depth + 1);
  int r = buildTree(ring, mid + 1, hi, node, tree, depth + 1);
  if (l >= 0) tree.children[node].push_back(l);
  if (r >= 0) tree.children[node].push_back(r);
  return node;
}

template <typename Id>
std::vector<int> hostRingImpl(std::span<const Id> hostOfRank) {
  std::vector<Id> hosts;
  std::vector<int> hostIndex(hostOfRank.size());
  for (size_t r = 0; r < hostOfRank.size(); ++r) {
    auto it = std::find(hosts.begin(), hosts.end(), hostOfRank[r]);
    hostIndex[r] = static_cast<int>(it - hosts.begin());
    if (it == hosts.end()) hosts.push_back(hostOfRank[r]);
  }
  std::vector<int> order(hostOfRank.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](int a, int b) { return hostIndex[a] < hostIndex[b]; });
  return order;
}

}  // namespace

bool RingScore::betterThan(const RingScore& o) const {
  if (bottleneckMBps != o.bottleneckMBps) return bottleneckMBps > o.bottleneckMBps;
  if (slowEdges != o.slowEdges) return slowEdges < o.slowEdges;
  if (socketChanges != o.socketChanges) return socketChanges < o.socketChanges;
  return totalMBps > o.totalMBps;
}

RingScore scoreRing(const Topology& t, std::span<const DeviceRef> devs,
                    std::span<const int> order) {
  TUTTI_CHECK_ARG(order.size() == devs.size(), "scoreRing: order has ", order.size(),
                  " entries for ", devs.size(), " devices");
  return score(buildEdges(t, devs), order);
}

std::vector<int> bestRing(const Topology& t, std::span<const DeviceRef> devs) {
  int n = static_cast<int>(devs.size());
  if (n <= 2) {
    std::vector<int> o(n);
    std::iota(o.begin(), o.end(), 0);
    return o;
  }
  Edges e = buildEdges(t, devs);
  if (n > kExactMax) return heuristicRing(t, devs, e);
  // Highest threshold with a Hamiltonian cycle (feasibility is monotone: binary search).
  std::vector<int64_t> values;
  for (int i = 0; i < n; ++i) {
    for (int j = 0; j < n; ++j) {
      if (i != j) values.push_back(std::min(e.bw[i * n + j], e.bw[j * n + i]));
    }
  }
  std::sort(values.begin(), values.end());
  values.erase(std::unique(values.begin(), values.end()), values.end());
  int lo = 0, hi = static_cast<int>(values.size()) - 1;  // values[lo] always feasible
  std::vector<int> best = exactRing(e, values[lo]);
  TUTTI_ASSERT(!best.empty());
  while (lo < hi) {
    int mid = (lo + hi + 1) / 2;
    std::vector<int> r = exactRing(e, values[mid]);
    if (!r.empty()) {
      lo = mid;
      best = std::move(r);
    } else {
      hi = mid - 1;
    }
  }
  return best;
}

Tree binaryTree(std::span<const int> ringOrder) {
  Tree tree;
  int n = static_cast<int>(ringOrder.size());
  tree.parent.assign(n, -1);
  tree.children.assign(n, {});
  if (n == 0) return tree;
  tree.root = buildTree(ringOrder, 0, n, -1, tree, 0);
  return tree;
}

std::vector<int> hostRing(std::span<const std::string> hostOfRank) {
  return hostRingImpl(hostOfRank);
}

std::vector<int> hostRing(std::span<const uint64_t> hostOfRank) { return hostRingImpl(hostOfRank); }

std::vector<int> devicePositions(const Topology& t, DevKind kind) {
  int count = static_cast<int>(kind == DevKind::kGpu ? t.gpus.size() : t.numaNodes.size());
  std::vector<DeviceRef> devs;
  for (int i = 0; i < count; ++i) devs.push_back({0, kind, i});
  std::vector<int> order = bestRing(t, devs);
  std::vector<int> pos(count, -1);
  for (int p = 0; p < static_cast<int>(order.size()); ++p) pos[order[p]] = p;
  return pos;
}

std::vector<DeviceRef> devicesForRanks(const Topology& t, int nranks) {
  std::vector<DeviceRef> d;
  int g = static_cast<int>(t.gpus.size());
  for (int r = 0; r < nranks; ++r) {
    if (g > 0) {
      d.push_back({r / g, DevKind::kGpu, r % g});
    } else {
      int numa = std::max<int>(1, static_cast<int>(t.numaNodes.size()));
      d.push_back({0, DevKind::kCpu, t.numaNodes.empty() ? -1 : r % numa});
    }
  }
  return d;
}

}  // namespace tutti::topo
