// Every collective and algorithm over the ibverbs transport (TUTTI_TRANSPORT=ibverbs) with
// 2 and 4 forked ranks, data verified against a float64 reference: a slice of the collective
// matrix (tests/multiproc/collectives_test.cc) sized for Soft-RoCE in an emulated VM.
// Skips without an RDMA device.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <cmath>
#include <string>
#include <vector>

#include "collective_cases.h"
#include "comm_test_util.h"
#include "common/dtype.h"
#include "harness/fork_harness.h"
#include "transports/ibverbs/ib_transport.h"
#include "tutti/tutti.h"

namespace tutti::test {
namespace {

std::vector<Case> slice(int n) {
  std::vector<Case> cases;
  const size_t big = (1u << 18) + 3;  // 1 MiB of float32: chunked, pipelined, zero-copy
  for (const CollDesc& cd : colls()) {
    for (const char* algo : cd.algos) {
      for (size_t count : {size_t{0}, size_t{1}, size_t{1023}, big}) {
        for (bool inPlace : {false, true}) {
          if (cd.coll == C::kAllToAll && inPlace) continue;
          if (inPlace && count != 1023) continue;
          int root =
              (cd.coll == C::kBroadcast || cd.coll == C::kReduce) && count == 1023 ? n - 1 : 0;
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
  std::string why = transport::ibProbe();
  if (!why.empty())
    GTEST_SKIP() << "no RDMA device here (" << why
                 << "); run the verbs tests in the Soft-RoCE VM: ctest -L verbs";
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

}  // namespace
}  // namespace tutti::test
