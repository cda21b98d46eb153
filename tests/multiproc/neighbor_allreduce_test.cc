// tuttiNeighborAllReduce over real processes at 1-9 ranks, shm and tcp forced: every built-in
// graph, every step of its period and one more, float32/float64/float16/bfloat16, in place and
// not, against the reference of harness/mixing_data.h (W built in the test, applied to all
// ranks' inputs, verifiable data distinct per rank, element and call), compared bit for bit.
// Also: grouped calls (the dynamic graph advances per call in issue order), the one-peer
// exponential graph's exact average after log2(n) calls, a weighted directed user graph, the
// hierarchical variant on one host (exact average), and argument errors.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <string>
#include <tuple>
#include <vector>

#include "comm_test_util.h"
#include "harness/fork_harness.h"
#include "harness/mixing_data.h"
#include "tutti/tutti.h"

namespace tutti::test {
namespace {

constexpr tuttiDataType_t kTypes[] = {tuttiFloat32, tuttiFloat64, tuttiFloat16, tuttiBfloat16};

class Neighbor : public ::testing::TestWithParam<std::tuple<const char*, int>> {
 protected:
  void SetUp() override { setenv("TUTTI_TRANSPORT", std::get<0>(GetParam()), 1); }
  void TearDown() override { unsetenv("TUTTI_TRANSPORT"); }
  int ranks() const { return std::get<1>(GetParam()); }
};

TEST_P(Neighbor, EveryBuiltinGraphMatchesReference) {
  const int n = ranks();
  const std::string transport = std::get<0>(GetParam());
  tuttiUniqueId id = makeId();
  auto result = runRanks(
      n,
      [&](int rank) {
        tuttiComm_t comm = nullptr;
        TUTTI_ASSERT_OK(tuttiCommInitRank(&comm, n, id, rank), nullptr);
        uint64_t call = 0;  // distinct inputs across the whole run
        for (const MixGraph& gc : kMixGraphs) {
          if (!mixGraphApplies(gc, n)) continue;
          tuttiGraph_t g = nullptr;
          TUTTI_ASSERT_OK(tuttiGraphCreate(comm, gc.kind, 0, 0, &g), comm);
          const int period = gc.kind == tuttiGraphOnePeerExponential ? refPeriod(n) : 1;
          for (int step = 0; step <= period; ++step, ++call) {
            const tuttiDataType_t t = kTypes[call % 4];
            const size_t count = call % 5 == 3 ? 70001 : 1 + (call * 37 + n) % 300;
            const bool inPlace = call % 2 == 1;
            std::vector<std::byte> in = mixInput(rank, call, count, t);
            std::vector<std::byte> out(in.size(), std::byte{0x5a});
            void* recv = inPlace ? in.data() : out.data();
            TUTTI_ASSERT_OK(tuttiNeighborAllReduce(in.data(), recv, count, t, g, comm, nullptr),
                            comm);
            const std::vector<double> w = refMatrix(gc.ref, n, step);
            std::string diff =
                mixFirstDiff(inPlace ? in : out, mixExpected(w, n, rank, call, count, t), t);
            ASSERT_EQ(diff, "") << "graph kind " << gc.kind << " step " << step << " rank " << rank
                                << " of " << n << " type " << t << (inPlace ? " in place" : "");
            EXPECT_STREQ(tuttiCommLastAlgorithm(comm), "neighbor");
          }
          TUTTI_ASSERT_OK(tuttiGraphDestroy(g), nullptr);
        }
        if (n > 1) {
          EXPECT_EQ(std::string(tuttiCommTransports(comm)), transport);
        }
        TUTTI_ASSERT_OK(tuttiCommDestroy(comm), nullptr);
      },
      120);
  EXPECT_TRUE(result.allOk()) << n << " ranks: " << result.describe();
}

// Grouped calls on the dynamic graph: each call takes the next step in issue order.
TEST_P(Neighbor, GroupedCallsAdvanceTheDynamicGraph) {
  const int n = ranks();
  tuttiUniqueId id = makeId();
  auto result = runRanks(n, [&](int rank) {
    tuttiComm_t comm = nullptr;
    TUTTI_ASSERT_OK(tuttiCommInitRank(&comm, n, id, rank), nullptr);
    tuttiGraph_t g = nullptr;
    TUTTI_ASSERT_OK(tuttiGraphCreate(comm, tuttiGraphOnePeerExponential, 0, 0, &g), comm);
    const size_t count = 513;
    std::vector<std::vector<std::byte>> in, out;
    for (int k = 0; k < 3; ++k) {
      in.push_back(mixInput(rank, 100 + k, count, tuttiFloat32));
      out.emplace_back(in.back().size());
    }
    TUTTI_ASSERT_OK(tuttiGroupStart(), comm);
    for (int k = 0; k < 3; ++k)
      TUTTI_ASSERT_OK(tuttiNeighborAllReduce(in[k].data(), out[k].data(), count, tuttiFloat32, g,
                                             comm, nullptr),
                      comm);
    TUTTI_ASSERT_OK(tuttiGraphDestroy(g), nullptr);  // the recorded calls keep the graph
    TUTTI_ASSERT_OK(tuttiGroupEnd(), comm);
    for (int k = 0; k < 3; ++k) {
      std::vector<double> w = refMatrix(RefGraph::kOnePeer, n, k);
      ASSERT_EQ(
          mixFirstDiff(out[k], mixExpected(w, n, rank, 100 + k, count, tuttiFloat32), tuttiFloat32),
          "")
          << "grouped call " << k << " rank " << rank;
    }
    TUTTI_ASSERT_OK(tuttiCommDestroy(comm), nullptr);
  });
  EXPECT_TRUE(result.allOk()) << n << " ranks: " << result.describe();
}

INSTANTIATE_TEST_SUITE_P(Transports, Neighbor,
                         ::testing::Combine(::testing::Values("shm", "tcp"),
                                            ::testing::Values(1, 2, 3, 4, 5, 6, 7, 8, 9)),
                         [](const auto& info) {
                           return std::string(std::get<0>(info.param)) + "_np" +
                                  std::to_string(std::get<1>(info.param));
                         });

// log2(n) consecutive in-place calls of the one-peer exponential graph leave the exact average
// on every rank (inputs of bfloat16 precision held in float64: every step is exact).
TEST(NeighborExact, OnePeerExponentialReachesTheAverage) {
  for (int n : {2, 4, 8}) {
    tuttiUniqueId id = makeId();
    auto result = runRanks(n, [&](int rank) {
      tuttiComm_t comm = nullptr;
      TUTTI_ASSERT_OK(tuttiCommInitRank(&comm, n, id, rank), nullptr);
      tuttiGraph_t g = nullptr;
      TUTTI_ASSERT_OK(tuttiGraphCreate(comm, tuttiGraphOnePeerExponential, 0, 0, &g), comm);
      const size_t count = 1000;
      std::vector<double> x(count);
      for (size_t e = 0; e < count; ++e) x[e] = mixValue(rank, e, 7, tuttiBfloat16);
      int steps = 0;
      for (int m = 1; m < n; m *= 2) ++steps;
      for (int s = 0; s < steps; ++s) {
        if (s + 1 == steps && n >= 4) {  // one call short: not yet the average everywhere
          double mean0 = 0;
          for (int j = 0; j < n; ++j) mean0 += mixValue(j, 0, 7, tuttiBfloat16);
          mean0 /= n;
          bool all = true;
          for (size_t e = 0; e < count; ++e) {
            double mean = 0;
            for (int j = 0; j < n; ++j) mean += mixValue(j, e, 7, tuttiBfloat16);
            all = all && x[e] == mean / n;
          }
          EXPECT_FALSE(all) << "already averaged after " << s << " calls";
        }
        TUTTI_ASSERT_OK(
            tuttiNeighborAllReduce(x.data(), x.data(), count, tuttiFloat64, g, comm, nullptr),
            comm);
      }
      for (size_t e = 0; e < count; ++e) {
        double sum = 0;
        for (int j = 0; j < n; ++j) sum += mixValue(j, e, 7, tuttiBfloat16);
        ASSERT_EQ(x[e], sum / n) << "element " << e << " rank " << rank << " of " << n;
      }
      TUTTI_ASSERT_OK(tuttiGraphDestroy(g), nullptr);
      TUTTI_ASSERT_OK(tuttiCommDestroy(comm), nullptr);
    });
    EXPECT_TRUE(result.allOk()) << n << " ranks: " << result.describe();
  }
}

// A weighted directed user graph (i receives from i-1 and i-2 with weights 0.25 and 0.125) and
// an undirected one with Metropolis-Hastings weights (a path 0-1-2-3-4), against W built here;
// the hierarchical variant on one host is the exact average.
TEST(NeighborUser, WeightedDirectedAndMetropolisHastings) {
  const int n = 5;
  tuttiUniqueId id = makeId();
  auto result = runRanks(n, [&](int rank) {
    tuttiComm_t comm = nullptr;
    TUTTI_ASSERT_OK(tuttiCommInitRank(&comm, n, id, rank), nullptr);
    const size_t count = 777;
    {
      int src[2] = {(rank + n - 2) % n, (rank + n - 1) % n};
      double w[2] = {0.125, 0.25};
      int dst[2] = {(rank + 1) % n, (rank + 2) % n};
      tuttiGraph_t g = nullptr;
      TUTTI_ASSERT_OK(tuttiGraphCreateAdjacent(comm, 2, src, w, 0.625, 2, dst, &g), comm);
      std::vector<double> W(n * n, 0.0);
      for (int i = 0; i < n; ++i) {
        W[i * n + i] = 0.625;
        W[i * n + (i + n - 1) % n] = 0.25;
        W[i * n + (i + n - 2) % n] = 0.125;
      }
      std::vector<std::byte> in = mixInput(rank, 200, count, tuttiFloat32), out(in.size());
      TUTTI_ASSERT_OK(
          tuttiNeighborAllReduce(in.data(), out.data(), count, tuttiFloat32, g, comm, nullptr),
          comm);
      EXPECT_EQ(mixFirstDiff(out, mixExpected(W, n, rank, 200, count, tuttiFloat32), tuttiFloat32),
                "");
      TUTTI_ASSERT_OK(tuttiGraphDestroy(g), nullptr);
    }
    {
      tuttiGraph_t g = nullptr;
      TUTTI_ASSERT_OK(createPathGraph(comm, rank, n, &g), comm);
      const std::vector<double> W = pathMatrix(n);
      std::vector<std::byte> in = mixInput(rank, 201, count, tuttiFloat64);
      TUTTI_ASSERT_OK(
          tuttiNeighborAllReduce(in.data(), in.data(), count, tuttiFloat64, g, comm, nullptr),
          comm);
      EXPECT_EQ(mixFirstDiff(in, mixExpected(W, n, rank, 201, count, tuttiFloat64), tuttiFloat64),
                "");
      TUTTI_ASSERT_OK(tuttiGraphDestroy(g), nullptr);
    }
    {
      tuttiGraph_t g = nullptr;
      TUTTI_ASSERT_OK(tuttiGraphCreate(comm, tuttiGraphOnePeerExponential, 0, 1, &g), comm);
      std::vector<double> x(count);
      for (size_t e = 0; e < count; ++e) x[e] = mixValue(rank, e, 202, tuttiBfloat16);
      TUTTI_ASSERT_OK(
          tuttiNeighborAllReduce(x.data(), x.data(), count, tuttiFloat64, g, comm, nullptr), comm);
      EXPECT_STREQ(tuttiCommLastAlgorithm(comm), "neighbor_hier");
      for (size_t e = 0; e < count; ++e) {
        double sum = 0;
        for (int j = 0; j < n; ++j) sum += mixValue(j, e, 202, tuttiBfloat16);
        ASSERT_NEAR(x[e], sum / n, 1e-12) << "element " << e;
      }
      TUTTI_ASSERT_OK(tuttiGraphDestroy(g), nullptr);
    }
    TUTTI_ASSERT_OK(tuttiCommDestroy(comm), nullptr);
  });
  EXPECT_TRUE(result.allOk()) << result.describe();
}

// Bad arguments: tuttiInvalidArgument (or tuttiInvalidUsage) with a message naming the problem,
// on every rank where the problem is collective; the communicator stays usable.
TEST(NeighborArgs, ErrorsAreClear) {
  const int n = 3;
  tuttiUniqueId id = makeId();
  auto result = runRanks(n, [&](int rank) {
    tuttiComm_t comm = nullptr;
    TUTTI_ASSERT_OK(tuttiCommInitRank(&comm, n, id, rank), nullptr);
    auto lastError = [&] { return std::string(tuttiGetLastError(comm)); };
#define EXPECT_FAILS(call, code, text)                                   \
  do {                                                                   \
    EXPECT_EQ((call), code) << #call;                                    \
    EXPECT_NE(lastError().find(text), std::string::npos) << lastError(); \
  } while (0)
    tuttiGraph_t g = nullptr;
    EXPECT_FAILS(tuttiGraphCreate(comm, tuttiGraphHypercube, 0, 0, &g), tuttiInvalidArgument,
                 "hypercube needs a power-of-two rank count (got 3)");
    EXPECT_EQ(g, nullptr);
    EXPECT_FAILS(tuttiGraphCreate(comm, tuttiGraphTorus2D, 2, 0, &g), tuttiInvalidArgument,
                 "rows = 2 does not divide 3 ranks");
    EXPECT_FAILS(tuttiGraphCreate(comm, static_cast<tuttiGraphKind_t>(42), 0, 0, &g),
                 tuttiInvalidArgument, "invalid graph kind 42");
    EXPECT_FAILS(
        tuttiGraphCreate(comm, rank == 1 ? tuttiGraphRing : tuttiGraphExponential, 0, 0, &g),
        tuttiInvalidArgument, "rank 1 passed (kind 0");
    EXPECT_FAILS(tuttiGraphCreate(comm, tuttiGraphRing, 0, 0, nullptr), tuttiInvalidArgument,
                 "graph is NULL");
    {
      // Rank 2 forgets to list rank 0 as a source although rank 0 sends to it.
      int next = (rank + 1) % n;
      int prev = (rank + n - 1) % n;
      EXPECT_FAILS(
          tuttiGraphCreateAdjacent(comm, rank == 1 ? 0 : 1, &prev, nullptr, 0.0, 1, &next, &g),
          tuttiInvalidArgument,
          "rank 0 lists rank 1 as a destination but rank 1 does not list 0 as a source");
      int bad = 7;
      EXPECT_FAILS(
          tuttiGraphCreateAdjacent(comm, 1, rank == 2 ? &bad : &prev, nullptr, 0.0, 1, &next, &g),
          tuttiInvalidArgument, "rank 2: sources[0] = 7 is out of range [0, 3)");
      EXPECT_FAILS(
          tuttiGraphCreateAdjacent(comm, rank == 0 ? -1 : 1, &prev, nullptr, 0.0, 1, &next, &g),
          tuttiInvalidArgument, "rank 0 passed bad arguments");
      double w = 0.5;
      EXPECT_FAILS(tuttiGraphCreateAdjacent(comm, 1, &prev, &w, 0.25, 1, &next, &g),
                   tuttiInvalidArgument, "selfWeight + source weights = 0.75");
    }
    TUTTI_ASSERT_OK(tuttiGraphCreate(comm, tuttiGraphRing, 0, 0, &g), comm);
    std::vector<float> x(8, 1.0f);
    std::vector<int32_t> xi(8, 1);
    EXPECT_FAILS(tuttiNeighborAllReduce(xi.data(), xi.data(), 8, tuttiInt32, g, comm, nullptr),
                 tuttiInvalidArgument, "datatype int32 is not a floating type");
    EXPECT_FAILS(
        tuttiNeighborAllReduce(x.data(), x.data(), 8, tuttiFloat32, nullptr, comm, nullptr),
        tuttiInvalidArgument, "graph is NULL");
    EXPECT_FAILS(tuttiNeighborAllReduce(nullptr, x.data(), 8, tuttiFloat32, g, comm, nullptr),
                 tuttiInvalidArgument, "sendbuff is NULL");
    tuttiComm_t other = nullptr;
    TUTTI_ASSERT_OK(tuttiCommSplit(comm, 0, rank, &other, nullptr), comm);
    EXPECT_EQ(tuttiNeighborAllReduce(x.data(), x.data(), 8, tuttiFloat32, g, other, nullptr),
              tuttiInvalidArgument);
    EXPECT_NE(std::string(tuttiGetLastError(other)).find("graph was made for another communicator"),
              std::string::npos)
        << tuttiGetLastError(other);
    TUTTI_ASSERT_OK(tuttiGroupStart(), nullptr);
    tuttiGraph_t g2 = nullptr;
    EXPECT_EQ(tuttiGraphCreate(comm, tuttiGraphRing, 0, 0, &g2), tuttiInvalidUsage);
    TUTTI_ASSERT_OK(tuttiGroupEnd(), nullptr);
    // Still usable: one good call.
    for (int i = 0; i < 8; ++i) x[i] = static_cast<float>(rank * 8 + i);
    TUTTI_ASSERT_OK(tuttiNeighborAllReduce(x.data(), x.data(), 8, tuttiFloat32, g, comm, nullptr),
                    comm);
    for (int i = 0; i < 8; ++i) {
      // Ring of 3: everyone is a neighbour, weights 1/3.
      float third = static_cast<float>(1.0 / 3);
      float want = third * static_cast<float>(rank * 8 + i);
      for (int j = 0; j < n; ++j)
        if (j != rank) want = want + third * static_cast<float>(j * 8 + i);
      EXPECT_EQ(x[i], want) << "element " << i;
    }
#undef EXPECT_FAILS
    TUTTI_ASSERT_OK(tuttiGraphDestroy(g), nullptr);
    TUTTI_ASSERT_OK(tuttiCommDestroy(other), nullptr);
    TUTTI_ASSERT_OK(tuttiCommDestroy(comm), nullptr);
  });
  EXPECT_TRUE(result.allOk()) << result.describe();
}

}  // namespace
}  // namespace tutti::test
