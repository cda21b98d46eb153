// Several communicators in one process, over real processes (issue 19): aborting a split
// child leaves its parent usable (D16); a group holding calls on two communicators recorded
// in different orders on different ranks completes (D14); one thread driving several ranks
// of one communicator inside a group (D15).
#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <vector>

#include "comm_test_util.h"
#include "harness/fork_harness.h"
#include "tutti/tutti.h"

namespace tutti::test {
namespace {

tuttiConfig_t shortTimeout() {
  tuttiConfig_t c = TUTTI_CONFIG_INITIALIZER;
  c.timeoutMs = 5000;
  return c;
}

// D16: tuttiCommAbort + destroy of a split child aborted the store it shares with its parent,
// and the parent's next split failed with "TcpStore ...: store aborted".
TEST(CommSplit, AbortingAChildLeavesTheParentUsable) {
  const int n = 3;
  tuttiUniqueId id = makeId();
  auto result = runRanks(
      n,
      [&](int rank) {
        tuttiConfig_t config = shortTimeout();
        tuttiComm_t world = nullptr;
        TUTTI_ASSERT_OK(tuttiCommInitRankConfig(&world, n, id, rank, &config), nullptr);
        tuttiComm_t child = nullptr;
        TUTTI_ASSERT_OK(tuttiCommSplit(world, 0, rank, &child, nullptr), world);
        int x = rank + 1, sum = 0;
        TUTTI_ASSERT_OK(tuttiAllReduce(&x, &sum, 1, tuttiInt32, tuttiSum, child, nullptr), child);
        EXPECT_EQ(sum, n * (n + 1) / 2);
        TUTTI_ASSERT_OK(tuttiCommAbort(child), nullptr);
        tuttiCommDestroy(child);
        // A call on the parent that needs the store (a split) and the new child's calls.
        tuttiComm_t again = nullptr;
        TUTTI_ASSERT_OK(tuttiCommSplit(world, rank % 2, rank, &again, nullptr), world);
        int y = 10 * (rank + 1), ysum = 0;
        TUTTI_ASSERT_OK(tuttiAllReduce(&y, &ysum, 1, tuttiInt32, tuttiSum, again, nullptr), again);
        EXPECT_EQ(ysum, rank % 2 == 0 ? 10 + 30 : 20);
        // Point to point on the parent between ranks it never connected before.
        int got = -1, mine = 100 + rank;
        const int peer = (rank + n - 1) % n, to = (rank + 1) % n;
        TUTTI_ASSERT_OK(tuttiGroupStart(), nullptr);
        TUTTI_ASSERT_OK(tuttiSend(&mine, 1, tuttiInt32, to, world, nullptr), world);
        TUTTI_ASSERT_OK(tuttiRecv(&got, 1, tuttiInt32, peer, world, nullptr), world);
        TUTTI_ASSERT_OK(tuttiGroupEnd(), world);
        EXPECT_EQ(got, 100 + peer);
        TUTTI_ASSERT_OK(tuttiCommDestroy(again), nullptr);
        TUTTI_ASSERT_OK(tuttiCommDestroy(world), nullptr);
      },
      60);
  EXPECT_TRUE(result.allOk()) << result.describe();
}

// D14: a group holding calls on two communicators, which even ranks record in one order and
// odd ranks in the other (each communicator sees the same calls in the same order on every
// rank). It deadlocked until the timeout when the group ran the communicators one after
// another; it completes with the right results, and both communicators stay usable.
TEST(CommGroup, TwoCommunicatorsRecordedInDifferentOrdersComplete) {
  const int n = 4;
  const size_t count = 50000;
  tuttiUniqueId id = makeId();
  auto result = runRanks(
      n,
      [&](int rank) {
        tuttiConfig_t config = shortTimeout();
        tuttiComm_t world = nullptr, other = nullptr;
        TUTTI_ASSERT_OK(tuttiCommInitRankConfig(&world, n, id, rank, &config), nullptr);
        // Reversed ranks, so the communicators differ in more than their name.
        TUTTI_ASSERT_OK(tuttiCommSplit(world, 0, n - rank, &other, nullptr), world);
        std::vector<float> a(count), b(count), ra(count, -1), rb(count, -1);
        for (size_t i = 0; i < count; ++i) {
          a[i] = static_cast<float>((rank + 1) * (i % 97));
          b[i] = static_cast<float>((rank + 3) * (i % 89));
        }
        int sendWorld = 1000 + rank, recvWorld = -1, sendOther = 2000 + rank, recvOther = -1;
        const int to = (rank + 1) % n, from = (rank + n - 1) % n;
        auto recordWorld = [&] {
          TUTTI_ASSERT_OK(
              tuttiAllReduce(a.data(), ra.data(), count, tuttiFloat, tuttiSum, world, nullptr),
              world);
          TUTTI_ASSERT_OK(tuttiSend(&sendWorld, 1, tuttiInt32, to, world, nullptr), world);
          TUTTI_ASSERT_OK(tuttiRecv(&recvWorld, 1, tuttiInt32, from, world, nullptr), world);
        };
        auto recordOther = [&] {
          TUTTI_ASSERT_OK(
              tuttiAllReduce(b.data(), rb.data(), count, tuttiFloat, tuttiMax, other, nullptr),
              other);
          // In other's ranks (n - 1 - world rank): the same ring, the other way round.
          TUTTI_ASSERT_OK(
              tuttiSend(&sendOther, 1, tuttiInt32, (n - 1 - rank + 1) % n, other, nullptr), other);
          TUTTI_ASSERT_OK(
              tuttiRecv(&recvOther, 1, tuttiInt32, (n - 1 - rank + n - 1) % n, other, nullptr),
              other);
        };
        auto t0 = std::chrono::steady_clock::now();
        TUTTI_ASSERT_OK(tuttiGroupStart(), nullptr);
        if (rank % 2 == 0) {
          recordWorld();
          recordOther();
        } else {
          recordOther();
          recordWorld();
        }
        TUTTI_ASSERT_OK(tuttiGroupEnd(), nullptr);
        double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        EXPECT_LT(secs, 4.0) << "the group waited for a timeout";
        for (size_t i = 0; i < count; ++i) {
          ASSERT_EQ(ra[i], static_cast<float>(n * (n + 1) / 2 * (i % 97))) << i;
          ASSERT_EQ(rb[i], static_cast<float>((n + 2) * (i % 89))) << i;
        }
        EXPECT_EQ(recvWorld, 1000 + from);
        // other's rank k is world rank n - 1 - k: its ring sends from world rank rank + 1.
        EXPECT_EQ(recvOther, 2000 + (rank + 1) % n);
        // Both stay usable.
        int one = 1, sum = 0;
        TUTTI_ASSERT_OK(tuttiAllReduce(&one, &sum, 1, tuttiInt32, tuttiSum, world, nullptr), world);
        EXPECT_EQ(sum, n);
        TUTTI_ASSERT_OK(tuttiAllReduce(&one, &sum, 1, tuttiInt32, tuttiSum, other, nullptr), other);
        EXPECT_EQ(sum, n);
        TUTTI_ASSERT_OK(tuttiCommDestroy(other), nullptr);
        TUTTI_ASSERT_OK(tuttiCommDestroy(world), nullptr);
      },
      60);
  EXPECT_TRUE(result.allOk()) << result.describe();
}

// D15: NCCL's single-thread pattern: one thread inits two ranks of one communicator inside a
// group, then drives both ranks' collectives and sends/receives in groups. It timed out (the
// first init waited for the second); inits in a group now finish at tuttiGroupEnd.
TEST(CommGroup, OneThreadDrivesTwoRanks) {
  tuttiUniqueId id = makeId();
  auto result = runRanks(
      1,
      [&](int) {
        const int n = 2;
        tuttiConfig_t config = shortTimeout();
        tuttiComm_t comms[n] = {nullptr, nullptr};
        TUTTI_ASSERT_OK(tuttiGroupStart(), nullptr);
        for (int r = 0; r < n; ++r)
          TUTTI_ASSERT_OK(tuttiCommInitRankConfig(&comms[r], n, id, r, &config), nullptr);
        TUTTI_ASSERT_OK(tuttiGroupEnd(), nullptr);
        for (int r = 0; r < n; ++r) {
          int rank = -1;
          TUTTI_ASSERT_OK(tuttiCommUserRank(comms[r], &rank), comms[r]);
          EXPECT_EQ(rank, r);
        }
        const size_t count = 10000;
        std::vector<double> in[n], out[n];
        int token[n] = {10, 11}, got[n] = {-1, -1};
        for (int r = 0; r < n; ++r) {
          in[r].resize(count);
          out[r].assign(count, -1);
          for (size_t i = 0; i < count; ++i) in[r][i] = static_cast<double>((r + 1) * i);
        }
        TUTTI_ASSERT_OK(tuttiGroupStart(), nullptr);
        for (int r = 0; r < n; ++r) {
          TUTTI_ASSERT_OK(tuttiAllReduce(in[r].data(), out[r].data(), count, tuttiDouble, tuttiSum,
                                         comms[r], nullptr),
                          comms[r]);
          TUTTI_ASSERT_OK(tuttiSend(&token[r], 1, tuttiInt32, 1 - r, comms[r], nullptr), comms[r]);
          TUTTI_ASSERT_OK(tuttiRecv(&got[r], 1, tuttiInt32, 1 - r, comms[r], nullptr), comms[r]);
        }
        TUTTI_ASSERT_OK(tuttiGroupEnd(), nullptr);
        for (int r = 0; r < n; ++r) {
          for (size_t i = 0; i < count; ++i) ASSERT_EQ(out[r][i], static_cast<double>(3 * i)) << i;
          EXPECT_EQ(got[r], token[1 - r]);
        }
        for (int r = n - 1; r >= 0; --r) TUTTI_ASSERT_OK(tuttiCommDestroy(comms[r]), nullptr);
      },
      60);
  EXPECT_TRUE(result.allOk()) << result.describe();
}

// An init in a group that fails (a rank out of range) fails at once, and a failure during the
// deferred init is tuttiGroupEnd's result with its text.
TEST(CommGroup, DeferredInitFailureIsGroupEndsError) {
  tuttiUniqueId id = makeId();
  auto result = runRanks(1, [&](int) {
    tuttiConfig_t config = shortTimeout();
    config.timeoutMs = 1000;
    tuttiComm_t comm = nullptr;
    TUTTI_ASSERT_OK(tuttiGroupStart(), nullptr);
    EXPECT_EQ(tuttiCommInitRankConfig(&comm, 2, id, 5, &config), tuttiInvalidArgument);
    // Rank 1 of 2 never comes: the init times out at the group's end.
    TUTTI_ASSERT_OK(tuttiCommInitRankConfig(&comm, 2, id, 0, &config), nullptr);
    EXPECT_EQ(tuttiGroupEnd(), tuttiTimeout);
    std::string msg = tuttiGetLastError(nullptr);
    EXPECT_NE(msg.find("tuttiCommInitRank"), std::string::npos) << msg;
    tuttiCommDestroy(comm);
  });
  EXPECT_TRUE(result.allOk()) << result.describe();
}

}  // namespace
}  // namespace tutti::test
