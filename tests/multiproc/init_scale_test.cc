// Init of a 64-rank job with one rank missing, over real processes (issue 35): every rank
// that came must name the missing one, within the timeout (a rank never started) or well
// before it (a rank whose process died during init), never "rank(s) ?".
#include <gtest/gtest.h>
#include <stdlib.h>

#include <chrono>
#include <csignal>
#include <string>

#include "comm_test_util.h"
#include "harness/fork_harness.h"
#include "tutti/tutti.h"

namespace tutti::test {
namespace {

constexpr int kRanks = 64;
constexpr int kMissing = 37;

struct InitOutcome {
  tuttiResult_t result;
  double seconds;
  std::string message;
};

// tuttiCommInitRank for a job of kRanks, which must fail here; the communicator (none
// expected) is destroyed.
InitOutcome initFailing(const tuttiUniqueId& id, int rank) {
  tuttiComm_t comm = nullptr;
  auto t0 = std::chrono::steady_clock::now();
  tuttiResult_t res = tuttiCommInitRank(&comm, kRanks, id, rank);
  double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  InitOutcome out{res, secs, tuttiGetLastError(nullptr)};
  if (comm) tuttiCommDestroy(comm);
  return out;
}

class InitAtScale : public ::testing::Test {
 protected:
  void TearDown() override {
    unsetenv("TUTTI_TIMEOUT");
    unsetenv("TUTTI_TEST_DIE_AT");
  }
};

// The launcher never started rank 37: the other 63 fail at the roll call when TUTTI_TIMEOUT
// (8 s) passes, each naming rank 37 as not started.
TEST_F(InitAtScale, RankNeverStartedIsNamedByEveryRank) {
  setenv("TUTTI_TIMEOUT", "8", 1);
  tuttiUniqueId id = makeId();
  auto r = runRanks(
      kRanks,
      [&](int rank) {
        if (rank == kMissing) return;
        auto [res, secs, msg] = initFailing(id, rank);
        EXPECT_EQ(res, tuttiTimeout) << msg;
        EXPECT_NE(msg.find("rank(s) 37 of 64 did not arrive at init 'join' within 8.0 s: no "
                           "process claimed them"),
                  std::string::npos)
            << msg;
        EXPECT_GE(secs, 7.9) << msg;
        EXPECT_LT(secs, 14.0) << msg;
      },
      120);
  EXPECT_RANKS_OK(r);
}

// Rank 37 joins, then its process dies before the setup barrier: the other 63 fail init with
// tuttiRemoteError naming rank 37, its host and pid, long before TUTTI_TIMEOUT (60 s): the
// ranks of a host check a slice of each other's processes per 100 ms, and the rank that finds
// it records it for the others.
TEST_F(InitAtScale, RankDyingBeforeSetupIsNamedByEveryRank) {
  setenv("TUTTI_TIMEOUT", "60", 1);
  setenv("TUTTI_TEST_DIE_AT", "setup:37", 1);
  tuttiUniqueId id = makeId();
  auto r = runRanks(
      kRanks,
      [&](int rank) {
        auto [res, secs, msg] = initFailing(id, rank);
        EXPECT_EQ(res, tuttiRemoteError) << msg;
        EXPECT_NE(msg.find("rank 37 (host"), std::string::npos) << msg;
        EXPECT_NE(msg.find("its process is gone"), std::string::npos) << msg;
        EXPECT_LT(secs, 20.0) << msg;
      },
      120);
  EXPECT_EQ(r.ranks[kMissing].signal, SIGKILL) << r.describe();
  for (int i = 0; i < kRanks; ++i)
    if (i != kMissing) {
      EXPECT_TRUE(r.ranks[i].ok()) << "rank " << i << ": " << r.describe();
    }
}

}  // namespace
}  // namespace tutti::test
