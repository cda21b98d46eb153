// Tree algorithms follow CollArgs::ringOrder: their trees are built over ring positions and
// mapped to ranks through the order (so a subtree stays inside a host like a ring segment).
// (1) The parent of every rank, read from the emitted schedules, is the rank whose position
//     is the parent position in the tree over positions, derived here independently of
//     algorithms/patterns. (2) Every collective x algorithm stays correct in the simulator
//     with permuted orders and roots != 0. (3) An empty order is the identity order.
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <map>
#include <numeric>
#include <random>
#include <set>
#include <string>

#include "algorithms/algorithm.h"
#include "exec/schedule.h"
#include "sim_harness.h"

namespace tutti::algo::testing {
namespace {

using exec::Buf;
using exec::OpType;
using exec::Schedule;

// ---- expected trees over positions (parent[p], -1 for the root) ---------------------------

// Heap: position p's children are 2p+1 and 2p+2.
std::vector<int> heapParents(int n) {
  std::vector<int> par(n, -1);
  for (int p = 0; p < n; ++p)
    for (int c : {2 * p + 1, 2 * p + 2})
      if (c < n) par[c] = p;
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

// Binomial tree rooted at position rootPos: with v = (p - rootPos) mod n, the parent of v is
// v without its highest set bit.
std::vector<int> binomialParents(int n, int rootPos) {
  std::vector<int> par(n, -1);
  for (int v = 1; v < n; ++v) {
    int pv = v - static_cast<int>(std::bit_floor(static_cast<unsigned>(v)));
    par[(v + rootPos) % n] = (pv + rootPos) % n;
  }
  return par;
}

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
      std::vector<int> want = toRanks(heapParents(n), order);
      EXPECT_EQ(allReduceParents(b, 1, 0)[0], want) << what;
      expectPeersAreTreeNeighbours(b, {want}, what);
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
      }
}

// Two hosts of four ranks interleaved (host = rank % 2) with the order 0,2,4,6,1,3,5,7: the
// in-order trees of dbtree have subtrees over consecutive positions, so they cross between
// the hosts on half as many edges as the same trees over rank numbers. (The heap tree of
// "tree" and the binomial tree are relabelled the same way, but their subtrees are strided
// positions, p -> 2p+1, 2p+2 and v -> v + 2^k, so relabelling alone does not keep them on a
// host.)
TEST(TreeOrder, TwoHostsInterleavedKeepsSubtreesOnAHost) {
  const int n = 8;
  auto cross = [](const std::vector<int>& par) {
    int k = 0;
    for (size_t r = 0; r < par.size(); ++r)
      if (par[r] >= 0 && par[r] % 2 != static_cast<int>(r) % 2) ++k;
    return k;
  };
  const std::vector<int> interleaved = {0, 2, 4, 6, 1, 3, 5, 7};
  const AlgorithmInfo* db = find(Coll::kAllReduce, "dbtree");
  auto dbCross = [&](const std::vector<int>& order) {
    auto par = allReduceParents(buildAll(*db, n, 64, 0, order), 2, 32 * sizeof(float));
    return cross(par[0]) + cross(par[1]);
  };
  // Over positions each in-order tree crosses at the root's edge and at the edge joining the
  // two halves below it; over ranks every odd rank hangs off an even one.
  EXPECT_EQ(dbCross(interleaved), 4);
  EXPECT_EQ(dbCross({}), 8);
}

// ---- correctness with permuted orders -------------------------------------------------------

TEST(TreeOrder, EveryAlgorithmCorrectWithPermutedOrders) {
  const size_t counts[] = {1, 7, 1023};
  for (const AlgorithmInfo& algo : registry())
    for (int n = 2; n <= kMaxN; ++n) {
      std::vector<std::vector<int>> orders = ordersFor(n);
      bool rooted = algo.coll == Coll::kBroadcast || algo.coll == Coll::kReduce;
      for (size_t oi = 0; oi < orders.size(); ++oi)
        for (int root = 0; root < (rooted ? n : 1); ++root)
          for (size_t ci = 0; ci < std::size(counts); ++ci) {
            Case c;
            c.algo = &algo;
            c.n = n;
            c.count = counts[ci];
            c.root = root;
            c.inPlace = algo.coll != Coll::kAllToAll && (root + ci + oi) % 2;
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
