// Correctness of every collective x algorithm x dtype x op x count x in-place over real
// processes (shm within the host), against a float64 / exact-integer reference.
// The "Core" suites (label multiproc, the default run) run every dtype and op at the small
// counts and a rotated few at the large count (collective_cases.h); the "Full" suites (label
// matrix) run the whole product.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "collective_cases.h"
#include "comm_test_util.h"
#include "common/dtype.h"
#include "common/env.h"
#include "harness/fork_harness.h"
#include "interfaces/algorithm.h"
#include "tutti/tutti.h"

namespace tutti::test {
namespace {

// What the registry says about a case on one host: n >= 2 ranks have a shared window (shm),
// of TUTTI_SHM_WINDOW_BYTES (> 0 unless the test disables it).
bool registryApplies(const Case& c, int n) {
  if (std::string(c.algo) == "auto") return true;
  const algo::AlgorithmInfo* info = algo::find(c.coll->algoColl, c.algo);
  if (info == nullptr) return false;
  algo::CollArgs a;
  a.coll = c.coll->algoColl;
  a.count = c.count;
  a.dtype = c.dtype;
  a.op = c.coll->hasOp && c.op != tuttiAvg ? c.op : tuttiSum;
  a.root = c.root;
  a.nranks = n;
  const int64_t window = env::getInt("TUTTI_SHM_WINDOW_BYTES");
  a.windowBytes = n >= 2 && window > 0 ? static_cast<size_t>(window) : 0;
  return info->applicable(a);
}

void runMatrix(int n, Matrix matrix) {
  const bool full = matrix == Matrix::kFull;
  tuttiUniqueId id = makeId();
  auto cases = buildCases(n, matrix);
  auto result = runRanks(
      n,
      [&](int rank) {
        tuttiComm_t comm = nullptr;
        TUTTI_ASSERT_OK(tuttiCommInitRank(&comm, n, id, rank), nullptr);
        int failures = 0;
        // Per algorithm: cases the library refused as "does not apply", and the registry's
        // count of cases that do not apply.
        std::map<std::string, std::pair<int, int>> refused;
        for (const Case& c : cases) {
          bool notApplicable = false;
          std::string err = runCase(comm, c, rank, n, &notApplicable);
          auto& [got, want] = refused[std::string(c.coll->name) + ":" + c.algo];
          got += notApplicable;
          want += !registryApplies(c, n);
          if (!err.empty()) {
            ADD_FAILURE() << "rank " << rank << " " << describe(c, n) << ": " << err;
            if (++failures > 10 || err.rfind("call failed", 0) == 0) break;
          }
        }
        for (const auto& [algo, counts] : refused) {
          EXPECT_EQ(counts.first, counts.second)
              << "rank " << rank << " " << algo << " at " << n << " ranks: the library refused "
              << counts.first << " cases as not applicable, the registry says " << counts.second;
          if (rank == 0 && counts.first > 0)
            std::printf("does not apply at %d ranks: %s, %d cases (as the registry says)\n", n,
                        algo.c_str(), counts.first);
        }
        TUTTI_ASSERT_OK(tuttiCommDestroy(comm), nullptr);
      },
      full ? 3000 : 600);
  EXPECT_TRUE(result.allOk()) << result.describe();
}

class Core : public ::testing::TestWithParam<int> {};
TEST_P(Core, EveryCollectiveAlgorithmDtypeOp) { runMatrix(GetParam(), Matrix::kCore); }
INSTANTIATE_TEST_SUITE_P(Ranks, Core, ::testing::Values(1, 2, 3, 4, 5, 7, 8));

class Full : public ::testing::TestWithParam<int> {};
TEST_P(Full, EveryCollectiveAlgorithmDtypeOpCount) {
  if (getenv("TUTTI_TEST_FULL_MATRIX") == nullptr)
    GTEST_SKIP() << "set TUTTI_TEST_FULL_MATRIX=1 (ctest -L matrix does) for the full matrix";
  runMatrix(GetParam(), Matrix::kFull);
}
INSTANTIATE_TEST_SUITE_P(Ranks, Full, ::testing::Values(1, 2, 3, 4, 5, 7, 8));

// The algorithms that do not apply at a rank count on one host (the registry's applicability
// with a shared window from 2 ranks on): one skipped test each, so that ctest shows them as
// skipped with the reason (collectives_not_applicable_npN_test). Core and Full check that the
// library refuses exactly those cases.
struct Inapplicable {
  int n;
  const algo::AlgorithmInfo* info;
};

std::vector<Inapplicable> inapplicable() {
  std::vector<Inapplicable> v;
  for (int n : {1, 2, 3, 4, 5, 7, 8})
    for (const algo::AlgorithmInfo& info : algo::registry()) {
      algo::CollArgs a;
      a.coll = info.coll;
      a.count = 7;
      a.nranks = n;
      a.windowBytes = n >= 2 ? size_t{1} << 20 : 0;
      if (!info.applicable(a)) v.push_back({n, &info});
    }
  return v;
}

class NotApplicable : public ::testing::TestWithParam<Inapplicable> {};
TEST_P(NotApplicable, RefusedAsTheRegistrySays) {
  const Inapplicable& p = GetParam();
  GTEST_SKIP() << algo::collName(p.info->coll) << ":" << p.info->name << " does not apply at "
               << p.n << " rank(s) on one host (" << p.info->description
               << "); the Core and Full runs check that the library refuses every such case";
}
INSTANTIATE_TEST_SUITE_P(Registry, NotApplicable, ::testing::ValuesIn(inapplicable()),
                         [](const ::testing::TestParamInfo<Inapplicable>& i) {
                           return "np" + std::to_string(i.param.n) + "_" +
                                  algo::collName(i.param.info->coll) + "_" + i.param.info->name;
                         });

}  // namespace
}  // namespace tutti::test
