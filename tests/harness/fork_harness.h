// Runs a test body on N forked processes (ranks), one per rank, and reports how each ended.
//   auto r = tutti::test::runRanks(4, [&](int rank) { ... ASSERT_EQ(...); ... });
//   EXPECT_TRUE(r.allOk()) << r.describe();          // or EXPECT_RANKS_OK(r);
// A child exits 0 when body returns without a gtest failure, 1 when a gtest assertion
// failed inside it, 2 when body threw (the message goes to stderr). Children that run past
// timeoutSec are killed with SIGKILL. Children die with the parent (PR_SET_PDEATHSIG).
#pragma once

#include <sys/types.h>

#include <functional>
#include <string>
#include <vector>

namespace tutti::test {

constexpr int kExitGtestFailure = 1;
constexpr int kExitException = 2;

struct RankStatus {
  int rank = -1;
  pid_t pid = -1;
  bool exited = false;  // exited normally; exitCode is valid
  int exitCode = -1;
  int signal = 0;         // killed by this signal (0: none)
  bool timedOut = false;  // killed by the harness after timeoutSec
  bool ok() const { return exited && exitCode == 0; }
};

struct RanksResult {
  std::vector<RankStatus> ranks;
  double seconds = 0;  // wall time of the whole run
  bool allOk() const;
  // "rank 2: exit code 1 (gtest assertion failed); rank 3: killed by signal 9 (timed out)"
  // or "all N ranks ok".
  std::string describe() const;
};

RanksResult runRanks(int nranks, std::function<void(int rank)> body, double timeoutSec = 60);

// One forked child for a test that plays a rank itself and waits for, kills or outlives the
// other: the child runs body and exits as runRanks' children do (0, kExitGtestFailure,
// kExitException), dies with the parent (PR_SET_PDEATHSIG) and by SIGALRM after timeoutSec.
pid_t forkChild(const std::function<void()>& body, unsigned timeoutSec = 120);
// Waits for a child: its exit code, or 128 + the signal that killed it.
int waitChild(pid_t pid);

}  // namespace tutti::test

#define EXPECT_RANKS_OK(result)                             \
  do {                                                      \
    const auto& tutti_rr_ = (result);                       \
    EXPECT_TRUE(tutti_rr_.allOk()) << tutti_rr_.describe(); \
  } while (0)
