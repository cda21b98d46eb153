// Correctness of every collective x algorithm x dtype x op x count x in-place over real
// processes (shm within the host), against a float64 / exact-integer reference.
// The "Slice" suites (label multiproc) cover every dtype and op at small counts plus large
// counts for a few; the "Full" suites (label matrix) run the whole matrix.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "collective_cases.h"
#include "comm_test_util.h"
#include "common/dtype.h"
#include "harness/fork_harness.h"
#include "tutti/tutti.h"

namespace tutti::test {
namespace {

void runMatrix(int n, bool full) {
  tuttiUniqueId id = makeId();
  auto cases = buildCases(n, full);
  auto result = runRanks(
      n,
      [&](int rank) {
        tuttiComm_t comm = nullptr;
        TUTTI_ASSERT_OK(tuttiCommInitRank(&comm, n, id, rank), nullptr);
        int failures = 0;
        for (const Case& c : cases) {
          std::string err = runCase(comm, c, rank, n);
          if (!err.empty()) {
            ADD_FAILURE() << "rank " << rank << " " << describe(c, n) << ": " << err;
            if (++failures > 10 || err.rfind("call failed", 0) == 0) break;
          }
        }
        TUTTI_ASSERT_OK(tuttiCommDestroy(comm), nullptr);
      },
      full ? 3000 : 600);
  EXPECT_TRUE(result.allOk()) << result.describe();
}

class Slice : public ::testing::TestWithParam<int> {};
TEST_P(Slice, EveryCollectiveAlgorithmDtypeOp) { runMatrix(GetParam(), false); }
INSTANTIATE_TEST_SUITE_P(Ranks, Slice, ::testing::Values(1, 2, 3, 4, 5, 7, 8));

class Full : public ::testing::TestWithParam<int> {};
TEST_P(Full, EveryCollectiveAlgorithmDtypeOpCount) {
  if (getenv("TUTTI_TEST_FULL_MATRIX") == nullptr)
    GTEST_SKIP() << "set TUTTI_TEST_FULL_MATRIX=1 (ctest -L matrix does) for the full matrix";
  runMatrix(GetParam(), true);
}
INSTANTIATE_TEST_SUITE_P(Ranks, Full, ::testing::Values(1, 2, 3, 4, 5, 7, 8));

}  // namespace
}  // namespace tutti::test
