// Issue 30, E5: the shared memory of all the ranks of a host is counted together. Three ranks
// in a 160 MiB memory cgroup made by the test, 64 MiB FIFO segments over shm (a ring: every
// rank makes two, 384 MiB in all): each segment alone fits, so the per-segment check passed
// and the ranks, allocating at the same moment, were OOM-killed. Now the host's total is
// refused before it is allocated: every rank's call fails with an error naming the setting,
// and no rank is killed.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <string>
#include <vector>

#include "comm_test_util.h"
#include "harness/fork_harness.h"
#include "harness/memory_cgroup.h"
#include "tutti/tutti.h"

namespace tutti::test {
namespace {

constexpr uint64_t kMiB = 1 << 20;

TEST(ShmBudget, TheHostsSegmentsTogetherAreRefusedBeforeTheyAreAllocated) {
  std::string whyNot;
  auto cgroup = MemoryCgroup::make(160 * kMiB, &whyNot);
  if (!cgroup) GTEST_SKIP() << whyNot;
  setenv("TUTTI_TRANSPORT", "shm", 1);
  setenv("TUTTI_ALGO", "allreduce:ring", 1);
  setenv("TUTTI_SHM_FIFO_BYTES", std::to_string(64 * kMiB).c_str(), 1);
  setenv("TUTTI_SHM_CMA", "0", 1);
  setenv("TUTTI_TIMEOUT", "20", 1);
  constexpr int n = 3;
  tuttiUniqueId id = makeId();
  auto r = runRanks(n, [&](int rank) {
    ASSERT_TRUE(cgroup->join());
    tuttiComm_t comm = nullptr;
    TUTTI_ASSERT_OK(tuttiCommInitRank(&comm, n, id, rank), nullptr);
    std::vector<float> buf(1 << 16, 1.0f);
    tuttiResult_t res =
        tuttiAllReduce(buf.data(), buf.data(), buf.size(), tuttiFloat32, tuttiSum, comm, nullptr);
    std::string msg = tuttiGetLastError(comm);
    EXPECT_NE(res, tuttiSuccess) << "rank " << rank << ": 384 MiB of segments in 160 MiB";
    if (msg.find("shared memory segments for this communicator") != std::string::npos) {
      EXPECT_EQ(res, tuttiSystemError) << msg;
      EXPECT_NE(msg.find("TUTTI_SHM_FIFO_BYTES"), std::string::npos) << msg;
    }
    tuttiCommAbort(comm);
    tuttiCommDestroy(comm);
  });
  for (int q = 0; q < n; ++q)
    EXPECT_EQ(r.ranks[q].signal, 0) << "rank " << q << " was killed: " << r.describe();
  EXPECT_TRUE(r.allOk()) << r.describe();
  for (const char* v :
       {"TUTTI_TRANSPORT", "TUTTI_ALGO", "TUTTI_SHM_FIFO_BYTES", "TUTTI_SHM_CMA", "TUTTI_TIMEOUT"})
    unsetenv(v);
}

}  // namespace
}  // namespace tutti::test
