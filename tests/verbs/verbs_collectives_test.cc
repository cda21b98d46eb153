// Every collective and algorithm over the ibverbs transport (TUTTI_TRANSPORT=ibverbs) with
// 2 and 4 forked ranks, data verified against a float64 reference: a slice of the collective
// matrix (tests/multiproc/collectives_test.cc) sized for Soft-RoCE in an emulated VM. And the
// neighbour all-reduce at 2, 3 and 4 ranks: every built-in graph, user graphs and the
// hierarchical variant against W applied to every rank's input (harness/mixing_data.h, the
// data and reference of tests/multiproc/neighbor_allreduce_test.cc).
// Skips without an RDMA device.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <cmath>
#include <cstring>
#include <iterator>
#include <string>
#include <vector>

#include "collective_cases.h"
#include "comm_test_util.h"
#include "common/dtype.h"
#include "harness/fork_harness.h"
#include "harness/mixing_data.h"
#include "support/verifiable.h"
#include "transports/ibverbs/ib_transport.h"
#include "tutti/tutti.h"

namespace tutti::test {
namespace {

// Why every test here skips on this machine, or "" when it has an active RDMA port.
std::string noRdma() {
  std::string why = transport::ibProbe();
  if (why.empty()) return "";
  return "no RDMA device here (" + why +
         "); run the verbs tests in the Soft-RoCE VM: ctest -L verbs";
}

std::vector<Case> slice(int n) {
  std::vector<Case> cases;
  const size_t big = (1u << 18) + 3;  // 1 MiB of float32: chunked, pipelined, zero-copy
  for (const CollDesc& cd : colls()) {
    for (const char* algo : cd.algos) {
      for (size_t count : {size_t{0}, size_t{1}, size_t{1023}, big}) {
        for (bool inPlace : {false, true}) {
          if (cd.coll == C::kAllToAll && inPlace) continue;
          if (inPlace && count != 1023) continue;
          const bool rooted = cd.coll == C::kBroadcast || cd.coll == C::kReduce ||
                              cd.coll == C::kGather || cd.coll == C::kScatter;
          int root = rooted && count == 1023 ? n - 1 : 0;
          cases.push_back({&cd, algo, tuttiFloat32, tuttiSum, count, inPlace, root});
        }
      }
    }
  }
  // Every dtype and op through the default allreduce and reduce-scatter.
  for (tuttiDataType_t t :
       {tuttiInt8, tuttiInt32, tuttiInt64, tuttiFloat16, tuttiBfloat16, tuttiFloat32, tuttiFloat64})
    for (tuttiRedOp_t op : {tuttiSum, tuttiProd, tuttiMin, tuttiMax, tuttiAvg}) {
      cases.push_back({&colls()[0], "auto", t, op, 257, false, 0});
      cases.push_back({&colls()[4], "auto", t, op, 33, false, 0});
    }
  return cases;
}

class VerbsCollectives : public ::testing::TestWithParam<int> {};
TEST_P(VerbsCollectives, EveryCollectiveAndAlgorithmOverIbverbs) {
  if (std::string why = noRdma(); !why.empty()) GTEST_SKIP() << why;
  int n = GetParam();
  setenv("TUTTI_TRANSPORT", "ibverbs", 1);
  tuttiUniqueId id = makeId();
  auto cases = slice(n);
  auto result = runRanks(
      n,
      [&](int rank) {
        tuttiComm_t comm = nullptr;
        TUTTI_ASSERT_OK(tuttiCommInitRank(&comm, n, id, rank), nullptr);
        int failures = 0;
        for (const Case& c : cases) {
          std::string err = runCase(comm, c, rank, n);
          if (err.empty()) continue;
          ADD_FAILURE() << "rank " << rank << " " << describe(c, n) << ": " << err;
          if (++failures > 5 || err.rfind("call failed", 0) == 0) break;
        }
        TUTTI_ASSERT_OK(tuttiCommDestroy(comm), nullptr);
      },
      600);
  unsetenv("TUTTI_TRANSPORT");
  std::printf("%zu cases on %d ranks over ibverbs in %.1f s\n", cases.size(), n, result.seconds);
  EXPECT_TRUE(result.allOk()) << result.describe();
}
INSTANTIATE_TEST_SUITE_P(Ranks, VerbsCollectives, ::testing::Values(2, 4));

// The calls each graph gets, consecutive: float32, bfloat16 and float16, in place and not,
// 1023 and 65537 elements. Five calls run the one-peer exponential graph through its period
// (1 step at 2 ranks, 2 at 3 and 4) and around again.
struct MixCall {
  tuttiDataType_t dtype;
  size_t count;
  bool inPlace;
};
constexpr MixCall kMixCalls[] = {{tuttiFloat32, 65537, false},
                                 {tuttiBfloat16, 1023, true},
                                 {tuttiFloat32, 1023, true},
                                 {tuttiBfloat16, 65537, false},
                                 {tuttiFloat16, 1023, false}};
constexpr int kHierCalls = 2;

// Runs call `call` (its data: harness/mixing_data.h) on graph g with guarded buffers and
// checks the result bit for bit against W applied to every rank's input, the guards and, out
// of place, the untouched input. "" or what went wrong ("call failed: ..." when the call did).
std::string mixOnce(tuttiComm_t comm, tuttiGraph_t g, const std::vector<double>& w, int n, int rank,
                    uint64_t call, const MixCall& mc) {
  const std::vector<std::byte> input = mixInput(rank, call, mc.count, mc.dtype);
  verifiable::GuardedBuffer in(input.size()), out(input.size());
  std::memcpy(in.data(), input.data(), input.size());
  std::memset(out.data(), 0x5a, out.size());
  std::byte* recv = mc.inPlace ? in.data() : out.data();
  tuttiResult_t r = tuttiNeighborAllReduce(in.data(), recv, mc.count, mc.dtype, g, comm, nullptr);
  if (r != tuttiSuccess)
    return std::string("call failed: ") + tuttiGetErrorString(r) + ": " + tuttiGetLastError(comm);
  if (std::strcmp(tuttiCommLastAlgorithm(comm), "neighbor") != 0)
    return std::string("ran ") + tuttiCommLastAlgorithm(comm) + ", not neighbor";
  std::string err = mixFirstDiff(recv, mixExpected(w, n, rank, call, mc.count, mc.dtype), mc.dtype);
  if (err.empty() && !mc.inPlace && std::memcmp(in.data(), input.data(), input.size()) != 0)
    err = "the input buffer changed";
  if (err.empty()) err = in.checkGuards();
  if (err.empty() && !mc.inPlace) err = out.checkGuards();
  return err;
}

// W of the user graphs below, n x n.
std::vector<double> directedMatrix(int n) {  // i <- i-1 (1/4), i-2 (1/8; 2 ranks: none)
  std::vector<double> w(static_cast<size_t>(n) * n, 0.0);
  for (int i = 0; i < n; ++i) {
    w[i * n + refMod(i - 1, n)] = 0.25;
    if (n > 2) w[i * n + refMod(i - 2, n)] = 0.125;
    w[i * n + i] = n > 2 ? 0.625 : 0.75;
  }
  return w;
}

int builtinGraphs(int n) {
  int k = 0;
  for (const MixGraph& g : kMixGraphs) k += mixGraphApplies(g, n);
  return k;
}

// tuttiNeighborAllReduce over ibverbs: every built-in graph the API allows at n ranks (the
// one-peer exponential graph over five consecutive calls), a weighted directed user graph, an
// undirected one with Metropolis-Hastings weights, each with kMixCalls; then the hierarchical
// graph, which on one host is the exact average (float64, in place and not).
class VerbsNeighbor : public ::testing::TestWithParam<int> {};
TEST_P(VerbsNeighbor, EveryGraphMatchesTheMixingReferenceOverIbverbs) {
  if (std::string why = noRdma(); !why.empty()) GTEST_SKIP() << why;
  const int n = GetParam();
  setenv("TUTTI_TRANSPORT", "ibverbs", 1);
  tuttiUniqueId id = makeId();
  auto result = runRanks(
      n,
      [&](int rank) {
        tuttiComm_t comm = nullptr;
        TUTTI_ASSERT_OK(tuttiCommInitRank(&comm, n, id, rank), nullptr);
        uint64_t call = 0;  // every call of the run gets its own data
        int failures = 0;
        // Runs kMixCalls on g (made by the caller, destroyed here); false: stop.
        auto runGraph = [&](tuttiGraph_t g, const char* name, auto matrixAtStep) {
          bool go = true;
          for (size_t k = 0; k < std::size(kMixCalls) && go; ++k, ++call) {
            const MixCall& mc = kMixCalls[k];
            std::string err = mixOnce(comm, g, matrixAtStep(k), n, rank, call, mc);
            if (err.empty()) continue;
            ADD_FAILURE() << "rank " << rank << " of " << n << ", " << name << " graph, call " << k
                          << ", " << dtypeName(mc.dtype) << " x " << mc.count
                          << (mc.inPlace ? " in place" : "") << ": " << err;
            go = ++failures <= 5 && err.rfind("call failed", 0) != 0;
          }
          EXPECT_EQ(tuttiGraphDestroy(g), tuttiSuccess);
          return go;
        };
        bool go = true;
        for (const MixGraph& mg : kMixGraphs) {
          if (!go || !mixGraphApplies(mg, n)) continue;
          tuttiGraph_t g = nullptr;
          TUTTI_ASSERT_OK(tuttiGraphCreate(comm, mg.kind, 0, 0, &g), comm);
          go = runGraph(g, mg.name, [&](size_t step) { return refMatrix(mg.ref, n, step); });
        }
        if (go) {
          std::vector<int> src = {refMod(rank - 1, n)}, dst = {refMod(rank + 1, n)};
          std::vector<double> sw = {0.25};
          if (n > 2) {
            src.push_back(refMod(rank - 2, n));
            dst.push_back(refMod(rank + 2, n));
            sw.push_back(0.125);
          }
          tuttiGraph_t g = nullptr;
          TUTTI_ASSERT_OK(tuttiGraphCreateAdjacent(comm, static_cast<int>(src.size()), src.data(),
                                                   sw.data(), n > 2 ? 0.625 : 0.75,
                                                   static_cast<int>(dst.size()), dst.data(), &g),
                          comm);
          const std::vector<double> w = directedMatrix(n);
          go = runGraph(g, "weighted directed user", [&](size_t) { return w; });
        }
        if (go) {
          tuttiGraph_t g = nullptr;
          TUTTI_ASSERT_OK(createPathGraph(comm, rank, n, &g), comm);
          const std::vector<double> w = pathMatrix(n);
          go = runGraph(g, "Metropolis-Hastings path user", [&](size_t) { return w; });
        }
        if (go) {  // one host: x_i <- the mean of all ranks, exactly in float64
          tuttiGraph_t g = nullptr;
          TUTTI_ASSERT_OK(tuttiGraphCreate(comm, tuttiGraphOnePeerExponential, 0, 1, &g), comm);
          for (int k = 0; k < kHierCalls; ++k, ++call) {
            const size_t count = k == 0 ? 1023 : 65537;
            const bool inPlace = k == 0;
            std::vector<double> x(count), y(count);
            for (size_t e = 0; e < count; ++e) x[e] = mixValue(rank, e, call, tuttiBfloat16);
            TUTTI_ASSERT_OK(tuttiNeighborAllReduce(x.data(), inPlace ? x.data() : y.data(), count,
                                                   tuttiFloat64, g, comm, nullptr),
                            comm);
            EXPECT_STREQ(tuttiCommLastAlgorithm(comm), "neighbor_hier");
            const std::vector<double>& got = inPlace ? x : y;
            for (size_t e = 0; e < count; ++e) {
              double sum = 0;
              for (int j = 0; j < n; ++j) sum += mixValue(j, e, call, tuttiBfloat16);
              ASSERT_NEAR(got[e], sum / n, 1e-12)
                  << "hierarchical, rank " << rank << " of " << n << ", element " << e << " of "
                  << count << (inPlace ? " in place" : "");
            }
          }
          TUTTI_ASSERT_OK(tuttiGraphDestroy(g), nullptr);
        }
        // Connections are made at first use: now every peer's.
        EXPECT_STREQ(tuttiCommTransports(comm), "ibverbs");
        TUTTI_ASSERT_OK(tuttiCommDestroy(comm), nullptr);
      },
      600);
  unsetenv("TUTTI_TRANSPORT");
  const int calls = (builtinGraphs(n) + 2) * static_cast<int>(std::size(kMixCalls)) + kHierCalls;
  std::printf("neighbour all-reduce: %d graphs, %d calls on %d ranks over ibverbs in %.1f s\n",
              builtinGraphs(n) + 3, calls, n, result.seconds);
  EXPECT_TRUE(result.allOk()) << result.describe();
}
INSTANTIATE_TEST_SUITE_P(Ranks, VerbsNeighbor, ::testing::Values(2, 3, 4));

}  // namespace
}  // namespace tutti::test
