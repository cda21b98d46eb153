// Bytes on the wire per rank equal the textbook formulas (n = 2..64, M divisible by n), and
// the alpha-beta prediction follows the round structure.
#include <gtest/gtest.h>

#include "algorithms/patterns/patterns.h"
#include "sim_harness.h"

namespace tutti::algo::testing {
namespace {

exec::SimResult stats(Coll coll, const char* algo, int n, size_t count, bool det = false,
                      std::vector<int> hostOf = {}, exec::LinkCostFn cost = {}) {
  Case c;
  c.algo = find(coll, algo);
  EXPECT_NE(c.algo, nullptr) << algo;
  c.n = n;
  c.count = count;
  c.moveData = false;
  c.deterministic = det;
  c.hostOf = std::move(hostOf);
  c.cost = std::move(cost);
  Outcome o = run(c);
  EXPECT_EQ(o.error, "");
  return o.stats;
}

TEST(Bytes, AllReduceFormulas) {
  for (int n = 2; n <= 64; ++n) {
    size_t count = 64 * n, M = count * 4;
    bool p2 = patterns::isPow2(n);
    auto ring = stats(Coll::kAllReduce, "ring", n, count);
    auto naive = stats(Coll::kAllReduce, "naive", n, count);
    auto ps = stats(Coll::kAllReduce, "ps", n, count);
    auto tree = stats(Coll::kAllReduce, "tree", n, count);
    auto dbt = stats(Coll::kAllReduce, "dbtree", n, count);
    auto det = stats(Coll::kAllReduce, "tree", n, count, true);
    for (int r = 0; r < n; ++r) {
      EXPECT_EQ(ring.ranks[r].bytesSent, 2 * (n - 1) * M / n) << n;
      EXPECT_EQ(ring.ranks[r].bytesRecv, 2 * (n - 1) * M / n) << n;
      EXPECT_EQ(naive.ranks[r].bytesSent, (n - 1) * M) << n;
      EXPECT_EQ(ps.ranks[r].bytesSent, r == 0 ? (n - 1) * M : M) << n;
      EXPECT_EQ(det.ranks[r].bytesSent, 2 * (n - 1) * M / n) << n;
      EXPECT_LE(dbt.ranks[r].bytesSent, 2 * M) << n;
    }
    EXPECT_EQ(ring.ranks[0].rounds, 2u * (n - 1));
    EXPECT_EQ(tree.totalBytes, 2 * (n - 1) * M) << n;
    EXPECT_EQ(dbt.totalBytes, 2 * (n - 1) * M) << n;
    auto bf = stats(Coll::kAllReduce, "butterfly", n, count);
    auto rab = stats(Coll::kAllReduce, "rabenseifner", n, count);
    if (p2) {
      for (int r = 0; r < n; ++r) {
        EXPECT_EQ(bf.ranks[r].bytesSent, patterns::log2Floor(n) * M) << n;
        EXPECT_EQ(rab.ranks[r].bytesSent, 2 * (n - 1) * M / n) << n;
      }
      EXPECT_EQ(bf.ranks[0].rounds, static_cast<size_t>(patterns::log2Floor(n)) + 1);
      EXPECT_EQ(rab.ranks[0].rounds, 2u * patterns::log2Floor(n));
    } else {
      // Folded: extra ranks send M once; their partners send M more than the others.
      int p = patterns::largestPow2AtMost(n);
      EXPECT_EQ(bf.ranks[n - 1].bytesSent, M);
      EXPECT_EQ(bf.ranks[0].bytesSent, (patterns::log2Floor(p) + 1) * M);
      EXPECT_EQ(bf.ranks[n - 1].rounds, static_cast<size_t>(patterns::log2Floor(p)) + 2);
    }
  }
}

// direct moves no bytes over connections; its memory traffic (docs/algorithms.md): one-shot
// copies M into the window and reduces (n-1) times M; two-shot copies 2M - M/n (the (n-1)M/n
// the peers reduce in, the own reduced M/n out, (n-1)M/n gathered) and reduces (n-1) blocks
// of M/n.
TEST(Bytes, DirectFormulas) {
  for (int n = 2; n <= 64; ++n) {
    for (size_t count : {size_t{64} * n, size_t{16384} * n}) {
      const size_t M = count * 4;
      const bool oneShot = M <= (32u << 10);
      Case c;
      c.algo = find(Coll::kAllReduce, "direct");
      c.n = n;
      c.count = count;
      c.moveData = false;
      c.windowBytes = 1u << 30;  // one chunk
      Outcome o = run(c);
      ASSERT_EQ(o.error, "");
      for (int r = 0; r < n; ++r) {
        const auto& st = o.stats.ranks[r];
        EXPECT_EQ(st.bytesSent + st.bytesRecv, 0u) << n;
        EXPECT_EQ(st.copiedBytes, oneShot ? M : 2 * M - M / n) << n << " " << M;
        EXPECT_EQ(st.reducedBytes, oneShot ? (n - 1) * M : (n - 1) * (M / n)) << n << " " << M;
        EXPECT_EQ(st.rounds, oneShot ? 2u : 3u) << n;
      }
    }
  }
}

TEST(Bytes, HierarchicalFormula) {
  for (int H : {2, 3, 4})
    for (int L : {1, 2, 4}) {
      int n = H * L;
      size_t count = 64 * n, M = count * 4;
      std::vector<int> hosts(n);
      for (int r = 0; r < n; ++r) hosts[r] = r / L;
      auto h = stats(Coll::kAllReduce, "hier", n, count, false, hosts);
      size_t expect = 2 * (L - 1) * M / L + 2 * (H - 1) * (M / L) / H;
      for (int r = 0; r < n; ++r) EXPECT_EQ(h.ranks[r].bytesSent, expect) << H << "x" << L;
    }
}

TEST(Bytes, OtherCollectives) {
  for (int n = 2; n <= 64; ++n) {
    size_t c = 64, cb = c * 4, M = 64 * n * 4;
    for (const char* a : {"ring", "bruck"}) {
      auto s = stats(Coll::kAllGather, a, n, c);
      for (int r = 0; r < n; ++r) EXPECT_EQ(s.ranks[r].bytesRecv, (n - 1) * cb) << a << n;
    }
    if (patterns::isPow2(n)) {
      auto s = stats(Coll::kAllGather, "rd", n, c);
      for (int r = 0; r < n; ++r) EXPECT_EQ(s.ranks[r].bytesSent, (n - 1) * cb);
      auto h = stats(Coll::kReduceScatter, "rhalving", n, c);
      for (int r = 0; r < n; ++r) EXPECT_EQ(h.ranks[r].bytesSent, (n - 1) * cb);
    }
    auto rs = stats(Coll::kReduceScatter, "ring", n, c);
    for (int r = 0; r < n; ++r) EXPECT_EQ(rs.ranks[r].bytesSent, (n - 1) * cb);
    for (const char* a : {"chain", "binomial"}) {
      EXPECT_EQ(stats(Coll::kBroadcast, a, n, 64 * n).totalBytes, (n - 1) * M) << a;
      EXPECT_EQ(stats(Coll::kReduce, a, n, 64 * n).totalBytes, (n - 1) * M) << a;
    }
    EXPECT_EQ(stats(Coll::kBroadcast, "binomial", n, 64).ranks[0].rounds,
              static_cast<size_t>(patterns::log2Floor(n - 1) + 1));
    auto a2a = stats(Coll::kAllToAll, "pairwise", n, c);
    for (int r = 0; r < n; ++r) EXPECT_EQ(a2a.ranks[r].bytesSent, (n - 1) * cb);
  }
}

TEST(Bytes, AlphaBetaPrediction) {
  int n = 8;
  size_t count = 1024 * n, M = count * 4;
  auto lat = stats(Coll::kAllReduce, "ring", n, count, false, {}, [](int, int) {
    return exec::LinkCost{1.0, 0.0};
  });
  EXPECT_DOUBLE_EQ(lat.predictedSeconds, 2.0 * (n - 1));
  auto bw = stats(Coll::kAllReduce, "ring", n, count, false, {}, [](int, int) {
    return exec::LinkCost{0.0, 1.0};
  });
  EXPECT_DOUBLE_EQ(bw.predictedSeconds, 2.0 * (n - 1) * (M / n));
  // Naive: one round of 7 concurrent sends of M to different peers: per-peer bandwidth.
  auto nv = stats(Coll::kAllReduce, "naive", n, count, false, {}, [](int, int) {
    return exec::LinkCost{0.5, 1.0};
  });
  EXPECT_DOUBLE_EQ(nv.roundSeconds[0], 0.5 + M);
  // A slow link slows the rounds that use it.
  auto slow = stats(Coll::kAllReduce, "ring", n, count, false, {}, [](int s, int d) {
    return exec::LinkCost{0.0, (s == 3 && d == 4) ? 10.0 : 1.0};
  });
  EXPECT_DOUBLE_EQ(slow.predictedSeconds, 10.0 * 2.0 * (n - 1) * (M / n));
  // Butterfly beats ring on latency-bound links for small messages, ring wins on bandwidth.
  auto bfl = stats(Coll::kAllReduce, "butterfly", n, count, false, {}, [](int, int) {
    return exec::LinkCost{1.0, 0.0};
  });
  EXPECT_LT(bfl.predictedSeconds, lat.predictedSeconds);
  auto bfb = stats(Coll::kAllReduce, "butterfly", n, count, false, {}, [](int, int) {
    return exec::LinkCost{0.0, 1.0};
  });
  EXPECT_GT(bfb.predictedSeconds, bw.predictedSeconds);
}

}  // namespace
}  // namespace tutti::algo::testing
