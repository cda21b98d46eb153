// Issue 68, F2: rank 0 -- whose process serves the store -- dies during a collective, inside
// tuttiCommSplit, inside the agreement or inside the shrink. The survivors recover as an
// application does (agree on the failed ranks, shrink without them; again while either
// fails) and run verified collectives, each within 2 x TUTTI_TIMEOUT of rank 0's death.
// Two trials per case in the default run; TUTTI_TEST_KILL_TRIALS=1 (ctest -L long) runs 20.
#include <gtest/gtest.h>
#include <signal.h>
#include <stdlib.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#include "comm_test_util.h"
#include "harness/fork_harness.h"
#include "recovery_checks.h"
#include "tutti/tutti.h"

namespace tutti::test {
namespace {

constexpr double kTimeoutSec = 10;  // TUTTI_TIMEOUT in these trials

enum class Phase { kCollective, kSplit, kAgree, kShrink };

struct Case {
  std::string name;
  const char* transport;
  int n;
  Phase phase;
};

// What a survivor did, for the messages.
struct Recovery {
  tuttiComm_t comm = nullptr;
  std::vector<int> members;  // the parent ranks of the new communicator's ranks
  int rounds = 0;            // agree + shrink rounds
  std::string log;
};

// The application's recovery on `parent`: agree on its failed ranks and shrink without them;
// again while either fails, until `budgetSec` has passed.
Recovery recover(tuttiComm_t parent, int n, double budgetSec) {
  Recovery out;
  const auto t0 = std::chrono::steady_clock::now();
  while (secondsSince(t0) < budgetSec) {
    ++out.rounds;
    std::vector<int> failed(n, -1);
    int nfailed = -1;
    if (tuttiCommAgreeFailedRanks(parent, failed.data(), &nfailed) != tuttiSuccess) {
      out.log += "agree: " + std::string(tuttiGetLastError(parent)) + "\n";
      continue;
    }
    tuttiComm_t small = nullptr;
    if (tuttiCommShrink(parent, failed.data(), nfailed, &small, nullptr, TUTTI_SHRINK_ABORT) !=
        tuttiSuccess) {
      out.log += "shrink: " + std::string(tuttiGetLastError(parent)) + "\n";
      continue;
    }
    failed.resize(nfailed);
    for (int q = 0; q < n; ++q)
      if (std::find(failed.begin(), failed.end(), q) == failed.end()) out.members.push_back(q);
    out.comm = small;
    return out;
  }
  return out;
}

void allReduces(tuttiComm_t comm, int rank, int calls, int dieBefore) {
  std::vector<double> buf(4099);
  for (int call = 0; call < calls; ++call) {
    if (call == dieBefore) ::raise(SIGKILL);
    for (size_t i = 0; i < buf.size(); ++i) buf[i] = input(rank, i, call);
    if (tuttiAllReduce(buf.data(), buf.data(), buf.size(), tuttiFloat64, tuttiSum, comm, nullptr) !=
        tuttiSuccess)
      return;
  }
}

// One trial: rank 0 dies in c.phase; for the agreement and the shrink, rank n-1 has died
// before (in a collective), so that there is something to agree on.
void storeHostDeath(const Case& c, int trial) {
  if (*c.transport) setenv("TUTTI_TRANSPORT", c.transport, 1);
  setenv("TUTTI_TIMEOUT", std::to_string(static_cast<int>(kTimeoutSec)).c_str(), 1);
  const int n = c.n;
  const bool secondVictim = c.phase == Phase::kAgree || c.phase == Phase::kShrink;
  Rank0Id ids;
  auto r = runRanks(n, [&](int rank) {
    tuttiUniqueId id;
    ASSERT_TRUE(ids.get(rank, &id));
    tuttiComm_t comm = nullptr;
    TUTTI_ASSERT_OK(tuttiCommInitRank(&comm, n, id, rank), nullptr);
    const auto start = std::chrono::steady_clock::now();
    if (c.phase == Phase::kCollective) {
      allReduces(comm, rank, 100, rank == 0 ? 2 + trial % 3 : -1);
    } else if (c.phase == Phase::kSplit) {
      allReduces(comm, rank, 2, -1);
      // Every rank in one child, in the parent's order (even trials) or reversed: the child's
      // store is the parent's (rank 0's) either way. Parent rank 0 dies making the child.
      const int key = trial % 2 == 0 ? rank : n - rank;
      if (rank == 0)
        setenv("TUTTI_TEST_DIE_AT",
               trial % 2 == 0 ? "split:0" : ("split:" + std::to_string(n - 1)).c_str(), 1);
      tuttiComm_t child = nullptr;
      const auto t0 = std::chrono::steady_clock::now();
      const tuttiResult_t res = tuttiCommSplit(comm, 0, key, &child, nullptr);
      std::printf("trial %d rank %d: split %s after %.2f s: %s\n", trial, rank,
                  res == tuttiSuccess ? "succeeded" : "failed", secondsSince(t0),
                  res == tuttiSuccess ? "" : tuttiGetLastError(comm));
      if (res == tuttiSuccess && child != nullptr) tuttiCommDestroy(child);
    } else {
      allReduces(comm, rank, 100, rank == n - 1 ? 2 : -1);
      if (rank == 0)
        setenv("TUTTI_TEST_DIE_AT", c.phase == Phase::kAgree ? "agree:0" : "shrink:0", 1);
    }
    Recovery rec = recover(comm, n, 2 * kTimeoutSec - secondsSince(start));
    const double took = secondsSince(start);
    ASSERT_NE(rec.comm, nullptr) << "rank " << rank << " did not recover in " << took << " s ("
                                 << rec.rounds << " rounds):\n"
                                 << rec.log;
    std::vector<int> want;
    for (int q = 1; q < (secondVictim ? n - 1 : n); ++q) want.push_back(q);
    EXPECT_EQ(rec.members, want) << "rank " << rank << ":\n" << rec.log;
    checkCollectives(rec.comm, rec.members);
    EXPECT_LT(secondsSince(start), 2 * kTimeoutSec) << "rank " << rank << ":\n" << rec.log;
    std::printf("trial %d rank %d: recovered in %.2f s, %d round(s)\n", trial, rank, took,
                rec.rounds);
    EXPECT_EQ(tuttiCommDestroy(rec.comm), tuttiSuccess);
    tuttiCommDestroy(comm);
  });
  unsetenv("TUTTI_TRANSPORT");
  unsetenv("TUTTI_TIMEOUT");
  EXPECT_NE(r.ranks[0].signal, 0) << c.name << " trial " << trial << ": " << r.describe();
  for (int q = 1; q < n; ++q) {
    if (secondVictim && q == n - 1) continue;
    EXPECT_TRUE(r.ranks[q].ok()) << c.name << " trial " << trial << "\n" << r.describe();
  }
}

std::vector<Case> cases() {
  std::vector<Case> v;
  const std::pair<Phase, const char*> phases[] = {{Phase::kCollective, "collective"},
                                                  {Phase::kSplit, "split"},
                                                  {Phase::kAgree, "agree"},
                                                  {Phase::kShrink, "shrink"}};
  for (auto [phase, name] : phases)
    for (const char* transport : {"shm", "tcp"})
      for (int n : {4, 6})
        v.push_back(
            {std::string(name) + "_" + transport + "_n" + std::to_string(n), transport, n, phase});
  return v;
}

class StoreHostDeath : public ::testing::TestWithParam<Case> {};
TEST_P(StoreHostDeath, SurvivorsRecover) {
  const int trials = getenv("TUTTI_TEST_KILL_TRIALS") != nullptr ? 20 : 2;
  for (int t = 0; t < trials && !HasFailure(); ++t) storeHostDeath(GetParam(), t);
}
INSTANTIATE_TEST_SUITE_P(Phases, StoreHostDeath, ::testing::ValuesIn(cases()),
                         [](const auto& info) { return info.param.name; });

}  // namespace
}  // namespace tutti::test
