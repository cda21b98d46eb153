// Tree algorithms follow CollArgs::ringOrder: their trees are built over ring positions and
// mapped to ranks through the order, and every subtree is a segment of positions, so that a
// host listed as one segment of the order is entered once.
// (1) The parent of every rank, read from the emitted schedules, is the rank whose position
//     is the parent position in the tree over positions, derived here independently of
//     algorithms/patterns; binomial sends go largest subtree first within ceil(log2 n) steps.
// (2) Hosts contiguous in the order: tree and binomial (every root) cross hosts on hosts - 1
//     edges, the fewest possible; hier's leaders are the first ranks of the hosts' segments.
// (3) Every collective x algorithm stays correct in the simulator with permuted orders and
//     roots != 0. (4) An empty order is the identity order. (5) patterns::treesForOrder (what
//     tutti-topo and the communicator print) is what the schedules run.
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <map>
#include <numeric>
#include <random>
#include <set>
#include <string>
#include <utility>

#include "interfaces/algorithm.h"
#include "algorithms/patterns/patterns.h"
#include "exec/schedule.h"
#include "sim_harness.h"

namespace tutti::algo::testing {
namespace {

using exec::Buf;
using exec::OpType;
using exec::Schedule;

// ---- expected trees over positions (parent[p], -1 for the root) ---------------------------

// "tree": position x owning the segment [x, e) gives [x+1, e) to x+1 when x+1 is the most
// aligned position of it (most trailing zeros), else splits it at the most aligned position s
// into [x+1, s) and [s, e), owned by its children x+1 and s.
void segmentParents(int x, int e, std::vector<int>& par) {
  if (x + 1 >= e) return;
  int s = x + 1;
  for (int q = x + 2; q < e; ++q)
    if (std::countr_zero(static_cast<unsigned>(q)) > std::countr_zero(static_cast<unsigned>(s)))
      s = q;
  par[x + 1] = x;
  if (s == x + 1) return segmentParents(x + 1, e, par);
  par[s] = x;
  segmentParents(x + 1, s, par);
  segmentParents(s, e, par);
}
std::vector<int> segmentParents(int n) {
  std::vector<int> par(n, -1);
  segmentParents(0, n, par);
  return par;
}

// NCCL's in-order binary tree, top-down (ncclGetBtree's children rule): the root 0 has one
// child, the highest power of two below n; position p > 0 with lowest set bit b has children
// p - b/2 and p + l for the largest l in {b/2, b/4, ..., 1} with p + l < n.
std::vector<int> inorderParents(int n) {
  std::vector<int> par(n, -1);
  if (n > 1) par[std::bit_floor(static_cast<unsigned>(n - 1))] = 0;
  for (int p = 1; p < n; ++p) {
    int half = (p & -p) >> 1;
    if (half == 0) continue;
    par[p - half] = p;
    for (int l = half; l > 0; l >>= 1)
      if (p + l < n) {
        par[p + l] = p;
        break;
      }
  }
  return par;
}

// The second tree of the double binary tree: the mirror p -> n-1-p of the in-order tree for
// even n; for odd n the in-order tree over positions 1..n-1 with position 0 under its root.
std::vector<int> dbtreeSecondParents(int n) {
  std::vector<int> par(n, -1);
  if (n % 2 == 0) {
    std::vector<int> t = inorderParents(n);
    for (int p = 0; p < n; ++p) par[n - 1 - p] = t[p] < 0 ? -1 : n - 1 - t[p];
  } else if (n > 1) {
    std::vector<int> t = inorderParents(n - 1);
    for (int q = 0; q < n - 1; ++q) par[q + 1] = t[q] < 0 ? -1 : t[q] + 1;
    par[0] = 1;
  }
  return par;
}

// Binomial tree rooted at position r over dyadic blocks: with j the highest bit in which p and
// r differ, p lies in the block of 2^j positions beside r's; its first position hangs off r,
// the others off p minus p's lowest set bit (a binomial tree over the block).
std::vector<int> binomialParents(int n, int r) {
  std::vector<int> par(n, -1);
  for (int p = 0; p < n; ++p) {
    if (p == r) continue;
    int j = std::bit_width(static_cast<unsigned>(p ^ r)) - 1;
    par[p] = p % (1 << j) == 0 ? r : p - (p & -p);
  }
  return par;
}

// Subtree sizes of a parent list.
std::vector<int> subtreeSizes(const std::vector<int>& par) {
  int n = static_cast<int>(par.size());
  std::vector<int> size(n, 1);
  for (int v = 0; v < n; ++v)
    for (int u = par[v]; u >= 0; u = par[u]) ++size[u];
  return size;
}

int ceilLog2(int n) { return n <= 1 ? 0 : std::bit_width(static_cast<unsigned>(n - 1)); }

// Position-tree parents mapped to ranks: rank order[p] has parent order[par[p]].
std::vector<int> toRanks(const std::vector<int>& par, const std::vector<int>& order) {
  std::vector<int> out(par.size(), -1);
  for (size_t p = 0; p < par.size(); ++p) out[order[p]] = par[p] < 0 ? -1 : order[par[p]];
  return out;
}

// ---- orders --------------------------------------------------------------------------------

// "Two hosts interleaved": ranks of host 0 are the even ones, of host 1 the odd ones, so the
// order lists 0, 2, 4, ..., 1, 3, 5, ... (for n = 2, where that is the identity: 1, 0).
std::vector<int> twoHostsInterleaved(int n) {
  std::vector<int> o = evensThenOdds(n);
  if (n == 2) o = {1, 0};
  return o;
}

std::vector<int> randomOrder(int n, unsigned seed) {
  std::vector<int> o(n);
  std::iota(o.begin(), o.end(), 0);
  std::mt19937 rng(seed);
  do std::shuffle(o.begin(), o.end(), rng);
  while (n > 1 && std::is_sorted(o.begin(), o.end()));
  return o;
}

std::vector<std::vector<int>> ordersFor(int n) {
  return {twoHostsInterleaved(n), randomOrder(n, 1000u + n), randomOrder(n, 2000u + n)};
}

std::string str(const std::vector<int>& v) {
  std::string s;
  for (int x : v) s += (s.empty() ? "" : ",") + std::to_string(x);
  return s;
}

// ---- reading the trees back from the schedules --------------------------------------------

struct Built {
  std::vector<Schedule> s;  // per rank
};

Built buildAll(const AlgorithmInfo& algo, int n, size_t count, int root,
               const std::vector<int>& order) {
  Built b;
  for (int r = 0; r < n; ++r) {
    CollArgs a;
    a.coll = algo.coll;
    a.count = count;
    a.nranks = n;
    a.rank = r;
    a.root = root;
    a.ringOrder = order;
    b.s.push_back(algo.build(a));
  }
  return b;
}

template <typename F>
void forEachTransfer(const Schedule& s, F f) {
  for (const auto& rd : s.rounds)
    for (const auto& op : rd.ops)
      if (op.type == OpType::kSend || op.type == OpType::kRecv || op.type == OpType::kRecvReduce)
        f(op);
}

// Checks that rank r talks only to its expected parent and children (over all trees).
void expectPeersAreTreeNeighbours(const Built& b, const std::vector<std::vector<int>>& parents,
                                  const std::string& what) {
  int n = static_cast<int>(b.s.size());
  for (int r = 0; r < n; ++r) {
    std::set<int> allowed;
    for (const auto& par : parents) {
      if (par[r] >= 0) allowed.insert(par[r]);
      for (int c = 0; c < n; ++c)
        if (par[c] == r) allowed.insert(c);
    }
    std::set<int> seen;
    forEachTransfer(b.s[r], [&](const exec::Op& op) { seen.insert(op.peer); });
    EXPECT_EQ(seen, allowed) << what << " rank " << r;
  }
}

// Broadcast: a rank's parent is the peer it receives from; every send goes to a child.
std::vector<int> broadcastParents(const Built& b) {
  int n = static_cast<int>(b.s.size());
  std::vector<int> par(n, -1);
  for (int r = 0; r < n; ++r)
    forEachTransfer(b.s[r], [&](const exec::Op& op) {
      if (op.type != OpType::kSend) par[r] = op.peer;
    });
  return par;
}

// Reduce: a rank's parent is the peer it sends to.
std::vector<int> reduceParents(const Built& b) {
  int n = static_cast<int>(b.s.size());
  std::vector<int> par(n, -1);
  for (int r = 0; r < n; ++r)
    forEachTransfer(b.s[r], [&](const exec::Op& op) {
      if (op.type == OpType::kSend) par[r] = op.peer;
    });
  return par;
}

// All-reduce trees: a rank's parent in tree t is the peer whose broadcast it receives into
// its output (plain recv into kOutput); the tree is told by the buffer half (dbtree: tree 0
// carries the bytes below halfBytes).
std::vector<std::vector<int>> allReduceParents(const Built& b, int ntrees, size_t halfBytes) {
  int n = static_cast<int>(b.s.size());
  std::vector<std::vector<int>> par(ntrees, std::vector<int>(n, -1));
  for (int r = 0; r < n; ++r)
    forEachTransfer(b.s[r], [&](const exec::Op& op) {
      if (op.type != OpType::kRecv || op.dst.buf != Buf::kOutput) return;
      int t = ntrees == 2 && op.dst.offset >= halfBytes ? 1 : 0;
      int& p = par[t][r];
      EXPECT_TRUE(p < 0 || p == op.peer) << "rank " << r << " has two parents in tree " << t;
      p = op.peer;
    });
  return par;
}

constexpr int kMaxN = 9;

TEST(TreeOrder, AllReduceTreeFollowsRingOrder) {
  const AlgorithmInfo* algo = find(Coll::kAllReduce, "tree");
  ASSERT_NE(algo, nullptr);
  for (int n = 2; n <= kMaxN; ++n)
    for (const auto& order : ordersFor(n)) {
      std::string what = "allreduce:tree n=" + std::to_string(n) + " order=" + str(order);
      Built b = buildAll(*algo, n, 64, 0, order);
      std::vector<int> want = toRanks(segmentParents(n), order);
      EXPECT_EQ(allReduceParents(b, 1, 0)[0], want) << what;
      expectPeersAreTreeNeighbours(b, {want}, what);
    }
}

// The shapes over positions, written out: every subtree is the segment [node, end), at most
// two children, depth between floor(log2 n) and ceil(log2 n).
TEST(TreeOrder, TreeShapes) {
  EXPECT_EQ(segmentParents(8), (std::vector<int>{-1, 0, 1, 2, 0, 4, 4, 6}));
  EXPECT_EQ(segmentParents(6), (std::vector<int>{-1, 0, 1, 2, 0, 4}));
  EXPECT_EQ(segmentParents(16),
            (std::vector<int>{-1, 0, 1, 2, 1, 4, 4, 6, 0, 8, 9, 10, 8, 12, 12, 14}));
  // Root 0: MPICH's binomial tree (v's parent is v minus its lowest set bit).
  EXPECT_EQ(binomialParents(8, 0), (std::vector<int>{-1, 0, 0, 2, 0, 4, 4, 6}));
  EXPECT_EQ(binomialParents(8, 5), (std::vector<int>{5, 0, 0, 2, 5, -1, 5, 6}));
  EXPECT_EQ(binomialParents(6, 4), (std::vector<int>{4, 0, 0, 2, -1, 4}));
  for (int n = 1; n <= 40; ++n) {
    std::vector<int> par = segmentParents(n);
    std::vector<int> size = subtreeSizes(par);
    int depth = 0;
    for (int p = 0; p < n; ++p) {
      int kids = 0, d = 0;
      for (int c = 0; c < n; ++c) kids += par[c] == p;
      for (int u = p; par[u] >= 0; u = par[u]) ++d;
      depth = std::max(depth, d);
      EXPECT_LE(kids, 2) << "n=" << n << " p=" << p;
      // Pre-order segments: the subtree of p is [p, p + size).
      for (int q = p + 1; q < p + size[p]; ++q) {
        int u = q;
        while (u > p) u = par[u];
        EXPECT_EQ(u, p) << "n=" << n << " " << q << " not under " << p;
      }
    }
    EXPECT_LE(depth, ceilLog2(n)) << "n=" << n;
    EXPECT_GE(depth, std::bit_width(static_cast<unsigned>(n)) - 1) << "n=" << n;
  }
}

TEST(TreeOrder, AllReduceDbtreeFollowsRingOrder) {
  const AlgorithmInfo* algo = find(Coll::kAllReduce, "dbtree");
  ASSERT_NE(algo, nullptr);
  const size_t count = 64;  // float32: halves of 32 elements = 128 bytes
  for (int n = 2; n <= kMaxN; ++n)
    for (const auto& order : ordersFor(n)) {
      std::string what = "allreduce:dbtree n=" + std::to_string(n) + " order=" + str(order);
      Built b = buildAll(*algo, n, count, 0, order);
      std::vector<int> want0 = toRanks(inorderParents(n), order);
      std::vector<int> want1 = toRanks(dbtreeSecondParents(n), order);
      auto got = allReduceParents(b, 2, count / 2 * sizeof(float));
      EXPECT_EQ(got[0], want0) << what << " tree 0";
      EXPECT_EQ(got[1], want1) << what << " tree 1";
      expectPeersAreTreeNeighbours(b, {want0, want1}, what);
    }
}

TEST(TreeOrder, BinomialBroadcastAndReduceFollowRingOrder) {
  const AlgorithmInfo* bc = find(Coll::kBroadcast, "binomial");
  const AlgorithmInfo* rd = find(Coll::kReduce, "binomial");
  ASSERT_NE(bc, nullptr);
  ASSERT_NE(rd, nullptr);
  for (int n = 2; n <= kMaxN; ++n)
    for (const auto& order : ordersFor(n))
      for (int root = 0; root < n; ++root) {
        std::string what =
            "n=" + std::to_string(n) + " root=" + std::to_string(root) + " order=" + str(order);
        // The root keeps the user's root: the tree over positions is rooted at its position.
        int rootPos = static_cast<int>(std::find(order.begin(), order.end(), root) - order.begin());
        std::vector<int> want = toRanks(binomialParents(n, rootPos), order);
        ASSERT_EQ(want[root], -1);
        Built b = buildAll(*bc, n, 64, root, order);
        EXPECT_EQ(broadcastParents(b), want) << "broadcast:binomial " << what;
        expectPeersAreTreeNeighbours(b, {want}, "broadcast:binomial " + what);
        Built r = buildAll(*rd, n, 64, root, order);
        EXPECT_EQ(reduceParents(r), want) << "reduce:binomial " << what;
        expectPeersAreTreeNeighbours(r, {want}, "reduce:binomial " + what);
        // Sends go largest subtree first, one per round after the receive, and the broadcast
        // and the reduce take ceil(log2 n) rounds.
        std::vector<int> size = subtreeSizes(want);
        for (int k = 0; k < n; ++k) {
          std::vector<std::pair<size_t, int>> sends;  // (round, child)
          size_t recvRound = 0;
          bool received = false;
          for (size_t t = 0; t < b.s[k].rounds.size(); ++t)
            for (const auto& op : b.s[k].rounds[t].ops) {
              if (op.type == OpType::kSend) sends.push_back({t, op.peer});
              if (op.type == OpType::kRecv) recvRound = t, received = true;
            }
          for (size_t i = 0; i < sends.size(); ++i) {
            EXPECT_EQ(sends[i].first, (received ? recvRound + 1 : 0) + i)
                << "broadcast:binomial " << what << " rank " << k << " send " << i;
            if (i > 0) {
              EXPECT_GE(size[sends[i - 1].second], size[sends[i].second])
                  << "broadcast:binomial " << what << " rank " << k;
            }
          }
          EXPECT_LE(b.s[k].rounds.size(), static_cast<size_t>(ceilLog2(n))) << what;
          EXPECT_LE(r.s[k].rounds.size(), static_cast<size_t>(ceilLog2(n))) << what;
        }
      }
}

// ---- hosts contiguous in the order: fewest crossings, leaders at the segment starts ----------

// Edges of a parent list between ranks of different hosts.
int crossings(const std::vector<int>& par, const std::vector<int>& hostOf) {
  int k = 0;
  for (size_t r = 0; r < par.size(); ++r)
    if (par[r] >= 0 && hostOf[par[r]] != hostOf[r]) ++k;
  return k;
}

struct HostLayout {
  std::vector<int> hostOf;  // per rank
  std::vector<int> order;   // hosts contiguous
  int hosts = 0;
};

// n ranks on n / perHost hosts, host of rank r = r % hosts (interleaved); the order lists host
// 0's ranks, then host 1's, ... (8 ranks, 2 hosts: 0,2,4,6,1,3,5,7). shuffleSeed != 0 also
// shuffles the ranks within each host and the hosts' order.
HostLayout interleavedHosts(int n, int perHost, unsigned shuffleSeed = 0) {
  HostLayout h;
  h.hosts = n / perHost;
  for (int r = 0; r < n; ++r) h.hostOf.push_back(r % h.hosts);
  std::vector<std::vector<int>> segs(h.hosts);
  for (int r = 0; r < n; ++r) segs[r % h.hosts].push_back(r);
  if (shuffleSeed) {
    std::mt19937 rng(shuffleSeed);
    for (auto& sg : segs) std::shuffle(sg.begin(), sg.end(), rng);
    std::shuffle(segs.begin(), segs.end(), rng);
  }
  for (const auto& sg : segs) h.order.insert(h.order.end(), sg.begin(), sg.end());
  return h;
}

TEST(TreeOrder, HostsContiguousInTheOrderAreEnteredOnce) {
  const AlgorithmInfo* tree = find(Coll::kAllReduce, "tree");
  const AlgorithmInfo* bc = find(Coll::kBroadcast, "binomial");
  const AlgorithmInfo* rd = find(Coll::kReduce, "binomial");
  ASSERT_EQ(interleavedHosts(8, 4).order, (std::vector<int>{0, 2, 4, 6, 1, 3, 5, 7}));
  const std::pair<int, int> layouts[] = {{8, 4},  {8, 2},  {8, 1},  {4, 2},  {12, 4},
                                         {16, 4}, {16, 8}, {24, 8}, {32, 4}, {32, 16}};
  for (auto [n, perHost] : layouts)
    for (unsigned seed : {0u, 7u}) {
      HostLayout h = interleavedHosts(n, perHost, seed);
      std::string what =
          "n=" + std::to_string(n) + " hosts=" + std::to_string(h.hosts) + " order=" + str(h.order);
      EXPECT_EQ(crossings(allReduceParents(buildAll(*tree, n, 64, 0, h.order), 1, 0)[0], h.hostOf),
                h.hosts - 1)
          << "allreduce:tree " << what;
      for (int root = 0; root < n; ++root) {
        EXPECT_EQ(crossings(broadcastParents(buildAll(*bc, n, 64, root, h.order)), h.hostOf),
                  h.hosts - 1)
            << "broadcast:binomial root " << root << " " << what;
        EXPECT_EQ(crossings(reduceParents(buildAll(*rd, n, 64, root, h.order)), h.hostOf),
                  h.hosts - 1)
            << "reduce:binomial root " << root << " " << what;
      }
    }
  // Without the order the same trees over rank numbers cross on most edges.
  HostLayout h = interleavedHosts(8, 4);
  EXPECT_EQ(crossings(allReduceParents(buildAll(*tree, 8, 64, 0, {}), 1, 0)[0], h.hostOf), 5);
  EXPECT_EQ(crossings(broadcastParents(buildAll(*bc, 8, 64, 0, {})), h.hostOf), 4);
  // dbtree's in-order trees: each crosses at the root's edge and at the edge joining the two
  // halves below it; over rank numbers every odd rank hangs off an even one.
  const AlgorithmInfo* db = find(Coll::kAllReduce, "dbtree");
  auto dbCross = [&](const std::vector<int>& order) {
    auto par = allReduceParents(buildAll(*db, 8, 64, 0, order), 2, 32 * sizeof(float));
    return crossings(par[0], h.hostOf) + crossings(par[1], h.hostOf);
  };
  EXPECT_EQ(dbCross(h.order), 4);
  EXPECT_EQ(dbCross({}), 8);
}

// Ranks of rank r's schedule peers on another host.
std::set<int> crossHostPeers(const Schedule& s, int r, const std::vector<int>& hostOf) {
  std::set<int> out;
  forEachTransfer(s, [&](const exec::Op& op) {
    if (hostOf[op.peer] != hostOf[r]) out.insert(op.peer);
  });
  return out;
}

Built buildHier(int n, const std::vector<int>& hostOf, const std::vector<int>& order) {
  const AlgorithmInfo* hier = find(Coll::kAllReduce, "hier");
  Built b;
  for (int r = 0; r < n; ++r) {
    CollArgs a;
    a.count = 1000;
    a.nranks = n;
    a.rank = r;
    a.ringOrder = order;
    a.hostOf = hostOf;
    b.s.push_back(hier->build(a));
  }
  return b;
}

// Uneven hosts: only the leaders talk across hosts, and the leader of a host is the first rank
// of its segment of the order (walking the ring from a host boundary, so a segment may wrap
// around the end of the order); with an empty order the lowest rank.
TEST(TreeOrder, HierLeadersAreTheFirstRanksOfTheHostSegments) {
  const std::vector<int> hostOf = {0, 1, 0, 1, 0, 1, 0};  // host 0: 0,2,4,6; host 1: 1,3,5
  struct Case {
    std::vector<int> order;
    std::set<int> leaders;
  };
  const Case cases[] = {{{}, {0, 1}},
                        {{4, 0, 6, 2, 3, 5, 1}, {4, 3}},
                        {{5, 1, 4, 0, 6, 2, 3}, {4, 3}},  // host 1's segment wraps: 3,5,1
                        {{1, 3, 5, 6, 2, 0, 4}, {1, 6}}};
  for (const Case& k : cases) {
    Built b = buildHier(7, hostOf, k.order);
    std::set<int> talkers;
    for (int r = 0; r < 7; ++r) {
      std::set<int> peers = crossHostPeers(b.s[r], r, hostOf);
      if (peers.empty()) continue;
      talkers.insert(r);
      for (int p : peers)
        EXPECT_TRUE(k.leaders.count(p)) << "order=" << str(k.order) << " rank " << r;
    }
    EXPECT_EQ(talkers, k.leaders) << "order=" << str(k.order);
  }
}

// Same size hosts: the rank at place p of one host's segment exchanges across hosts with the
// ranks at place p of the other hosts' segments.
TEST(TreeOrder, HierUniformPairsPlacesInTheHostSegments) {
  const int n = 8;
  HostLayout h = interleavedHosts(n, 4, 3u);
  std::map<int, int> place;  // rank -> place in its host's segment
  for (int k = 0; k < n; ++k) place[h.order[k]] = k % 4;
  Built b = buildHier(n, h.hostOf, h.order);
  for (int r = 0; r < n; ++r) {
    std::set<int> peers = crossHostPeers(b.s[r], r, h.hostOf);
    ASSERT_EQ(peers.size(), 1u) << "rank " << r;
    EXPECT_EQ(place[*peers.begin()], place[r]) << "rank " << r << " order=" << str(h.order);
  }
}

// ---- what tutti-topo and the communicator print ----------------------------------------------

TEST(TreeOrder, TreesForOrderAreWhatTheSchedulesRun) {
  const AlgorithmInfo* tree = find(Coll::kAllReduce, "tree");
  const AlgorithmInfo* db = find(Coll::kAllReduce, "dbtree");
  const AlgorithmInfo* bc = find(Coll::kBroadcast, "binomial");
  auto parentsOf = [](const patterns::Tree& t) {
    std::vector<int> p;
    for (const auto& nd : t.nodes) p.push_back(nd.parent);
    return p;
  };
  for (int n = 2; n <= kMaxN; ++n) {
    std::vector<std::vector<int>> orders = ordersFor(n);
    orders.push_back({});
    for (const auto& order : orders) {
      std::string what = "n=" + std::to_string(n) + " order=" + str(order);
      std::vector<patterns::NamedTree> trees = patterns::treesForOrder(order, n);
      ASSERT_EQ(trees.size(), 4u);
      EXPECT_EQ(trees[0].name, "tree");
      EXPECT_EQ(parentsOf(trees[0].tree),
                allReduceParents(buildAll(*tree, n, 64, 0, order), 1, 0)[0])
          << what;
      auto dbPar = allReduceParents(buildAll(*db, n, 64, 0, order), 2, 32 * sizeof(float));
      EXPECT_EQ(trees[1].name, "dbtree[0]");
      EXPECT_EQ(parentsOf(trees[1].tree), dbPar[0]) << what;
      EXPECT_EQ(trees[2].name, "dbtree[1]");
      EXPECT_EQ(parentsOf(trees[2].tree), dbPar[1]) << what;
      EXPECT_EQ(trees[3].name, "binomial(root 0)");
      EXPECT_EQ(parentsOf(trees[3].tree), broadcastParents(buildAll(*bc, n, 64, 0, order))) << what;
    }
  }
  std::vector<int> order = {0, 2, 4, 6, 1, 3, 5, 7};
  EXPECT_EQ(patterns::treeLine(patterns::treesForOrder(order, 8)[0]),
            "tree: root 0, depth 3, rank->parent 0->-1 1->0 2->0 3->1 4->2 5->1 6->4 7->5");
}

// ---- correctness with permuted orders -------------------------------------------------------

TEST(TreeOrder, EveryAlgorithmCorrectWithPermutedOrders) {
  const size_t counts[] = {1, 7, 1023};
  for (const AlgorithmInfo& algo : registry())
    for (int n = 2; n <= kMaxN; ++n) {
      std::vector<std::vector<int>> orders = ordersFor(n);
      bool rooted = algo.coll == Coll::kBroadcast || algo.coll == Coll::kReduce ||
                    algo.coll == Coll::kGather || algo.coll == Coll::kScatter ||
                    algo.coll == Coll::kGatherV || algo.coll == Coll::kScatterV;
      for (size_t oi = 0; oi < orders.size(); ++oi)
        for (int root = 0; root < (rooted ? n : 1); ++root)
          for (size_t ci = 0; ci < std::size(counts); ++ci) {
            Case c;
            c.algo = &algo;
            c.n = n;
            c.count = counts[ci];
            c.root = root;
            c.inPlace = algo.coll != Coll::kAllToAll && algo.coll != Coll::kAllToAllV &&
                        (root + ci + oi) % 2;
            c.ringOrder = orders[oi];
            c.hostOf.resize(n);
            for (int r = 0; r < n; ++r) c.hostOf[r] = r % 2;  // hosts interleaved
            const tuttiDataType_t types[] = {tuttiFloat32, tuttiInt32, tuttiFloat16};
            c.dtype = types[(n + oi + ci) % 3];
            if (algo.coll != Coll::kAllGather && algo.coll != Coll::kBroadcast &&
                algo.coll != Coll::kAllToAll)
              c.op = (n + root + ci) % 2 ? tuttiMax : tuttiSum;
            if (!algo.applicable(argsFor(c, 0))) continue;
            Outcome o = run(c);
            ASSERT_EQ(o.error, "") << describe(c) << " order=" << str(c.ringOrder);
          }
    }
}

// Multi-chunk pipelined trees (3 chunks of 512 KiB) with permuted orders and roots != 0.
TEST(TreeOrder, PipelinedTreesCorrectWithPermutedOrders) {
  const std::pair<Coll, const char*> trees[] = {{Coll::kAllReduce, "tree"},
                                                {Coll::kAllReduce, "dbtree"},
                                                {Coll::kBroadcast, "binomial"},
                                                {Coll::kReduce, "binomial"}};
  for (auto [coll, name] : trees)
    for (int n : {3, 6, 9}) {
      Case c;
      c.algo = find(coll, name);
      c.n = n;
      c.count = (3u << 17) + 5;  // floats: 1.5 MiB + 20 bytes
      c.root = n - 2;
      c.ringOrder = randomOrder(n, 77u + n);
      Outcome o = run(c);
      ASSERT_EQ(o.error, "") << describe(c) << " order=" << str(c.ringOrder);
    }
}

// ---- empty order = identity order ----------------------------------------------------------

TEST(TreeOrder, EmptyOrderIsTheIdentityOrder) {
  for (const AlgorithmInfo& algo : registry())
    for (int n = 1; n <= kMaxN; ++n) {
      std::vector<int> id(n);
      std::iota(id.begin(), id.end(), 0);
      for (int root : {0, n - 1})
        for (int r = 0; r < n; ++r) {
          CollArgs a;
          a.coll = algo.coll;
          a.count = 1023;
          a.nranks = n;
          a.rank = r;
          a.root = root;
          a.windowBytes = 1024;
          if (!algo.applicable(a)) continue;
          std::string empty = exec::toString(algo.build(a));
          a.ringOrder = id;
          EXPECT_EQ(exec::toString(algo.build(a)), empty)
              << collName(algo.coll) << ":" << algo.name << " n=" << n << " rank " << r;
        }
    }
}

}  // namespace
}  // namespace tutti::algo::testing
