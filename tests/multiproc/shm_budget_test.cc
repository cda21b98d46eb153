// Issue 30, E5: the shared memory of all the ranks of a host is counted together. Three ranks
// in a 160 MiB memory cgroup made by the test, 64 MiB FIFO segments over shm (a ring: every
// rank makes two, 384 MiB in all): each segment alone fits, so the per-segment check passed
// and the ranks, allocating at the same moment, were OOM-killed. Now the host's total is
// refused before it is allocated: every rank's call fails with an error naming the setting,
// and no rank is killed.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <chrono>
#include <string>
#include <thread>
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

// Issue 68, F5: only rank 2 is in a small memory cgroup, so only its shm memory check fails
// (the others see the machine's memory). It fails locally while setting up its connections;
// ranks 0 and 1 must not wait for their TUTTI_TIMEOUT (30 s) for its FIFOs while it lives on:
// every rank fails within 5 s, and the others name rank 2.
TEST(ShmBudget, ARankWhoseMemoryCheckFailsReleasesItsPeersNamingItself) {
  std::string whyNot;
  auto cgroup = MemoryCgroup::make(96 * kMiB, &whyNot);
  if (!cgroup) GTEST_SKIP() << whyNot;
  setenv("TUTTI_TRANSPORT", "shm", 1);
  setenv("TUTTI_ALGO", "allreduce:ring", 1);
  setenv("TUTTI_SHM_FIFO_BYTES", std::to_string(32 * kMiB).c_str(), 1);
  setenv("TUTTI_SHM_CMA", "0", 1);
  setenv("TUTTI_TIMEOUT", "30", 1);
  constexpr int n = 3;
  tuttiUniqueId id = makeId();
  auto r = runRanks(n, [&](int rank) {
    if (rank == 2) ASSERT_TRUE(cgroup->join());
    tuttiComm_t comm = nullptr;
    TUTTI_ASSERT_OK(tuttiCommInitRank(&comm, n, id, rank), nullptr);
    std::vector<float> buf(1 << 16, 1.0f);
    const auto t0 = std::chrono::steady_clock::now();
    tuttiResult_t res =
        tuttiAllReduce(buf.data(), buf.data(), buf.size(), tuttiFloat32, tuttiSum, comm, nullptr);
    const double secs =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    const std::string msg = tuttiGetLastError(comm);
    EXPECT_NE(res, tuttiSuccess) << "rank " << rank;
    EXPECT_LT(secs, 5.0) << "rank " << rank << ": " << msg;
    if (rank == 2) {
      EXPECT_NE(msg.find("TUTTI_SHM_FIFO_BYTES"), std::string::npos) << msg;
      // Stays alive with its communicator (as an application handling the error would):
      // the peers must learn of the failure from rank 2 itself, not from its exit.
      std::this_thread::sleep_for(std::chrono::seconds(6));
    } else {
      EXPECT_NE(msg.find("rank 2"), std::string::npos) << "rank " << rank << ": " << msg;
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
