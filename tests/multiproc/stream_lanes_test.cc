// Collectives of one communicator on several host streams at the same time (issue 32), through
// the communicator's lanes (TUTTI_STREAM_LANES, src/api/comm_lanes.h), over real processes on shm
// and tcp: a collective on one stream completes on every rank while the collective issued
// before it on another stream is held back by one rank (no timing: the hold is released only
// once the later call has completed); with one lane the same calls run in issue order; many
// calls in flight on three streams with sends, receives and blocking calls between them, each
// result checked against independently computed values; lane counts that differ between
// ranks, or out of range, refused. (A rank killed during a call on a duplicate lane:
// stream_lanes2_test runs stream_test's KilledRankSurfacesAtSynchronize, whose stream call is
// the second collective, with two lanes.)
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <new>
#include <string>
#include <thread>
#include <vector>

#include "comm_test_util.h"
#include "harness/fork_harness.h"
#include "tutti/tutti.h"

namespace tutti::test {
namespace {

using Clock = std::chrono::steady_clock;

// Element i of call k on rank r: distinct per rank, element and call, exact in float64.
double valueOf(int r, int k, size_t i) { return 1000.0 * (r + 1) + 7.0 * k + 0.5 * i; }
double sumOf(int n, int k, size_t i) { return 1000.0 * n * (n + 1) / 2 + n * (7.0 * k + 0.5 * i); }

std::string firstWrong(const std::vector<double>& got, int n, int k) {
  for (size_t i = 0; i < got.size(); ++i)
    if (got[i] != sumOf(n, k, i))
      return "call " + std::to_string(k) + " element " + std::to_string(i) + ": " +
             std::to_string(got[i]) + " != " + std::to_string(sumOf(n, k, i));
  return "";
}

std::vector<double> inputOf(int rank, int k, size_t count) {
  std::vector<double> v(count);
  for (size_t i = 0; i < count; ++i) v[i] = valueOf(rank, k, i);
  return v;
}

// A host function that holds its stream until *release is set, or for at most `limit`.
struct Hold {
  std::atomic<bool> release{false};
  double limitSeconds = 20;
  static tuttiResult_t run(void* self) {
    auto* h = static_cast<Hold*>(self);
    const auto end = Clock::now() + std::chrono::duration<double>(h->limitSeconds);
    while (!h->release.load() && Clock::now() < end)
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    return tuttiSuccess;
  }
};

// Streams A and B; on the last rank a Hold first holds stream A. Then the communicator's
// collective 0, all-reduce x, on A, and collective 1, all-reduce y, on B.
struct HeldThenFree {
  tuttiStream_t a = nullptr, b = nullptr;
  Hold hold;
  std::vector<double> x, y;
  void issue(tuttiComm_t comm, int rank, int n, size_t count) {
    TUTTI_ASSERT_OK(tuttiStreamCreate(&a), nullptr);
    TUTTI_ASSERT_OK(tuttiStreamCreate(&b), nullptr);
    if (rank == n - 1) TUTTI_ASSERT_OK(tuttiStreamLaunchHostFunc(a, Hold::run, &hold), nullptr);
    x = inputOf(rank, 0, count);
    y = inputOf(rank, 1, count);
    TUTTI_ASSERT_OK(tuttiAllReduce(x.data(), x.data(), count, tuttiFloat64, tuttiSum, comm, a),
                    comm);
    TUTTI_ASSERT_OK(tuttiAllReduce(y.data(), y.data(), count, tuttiFloat64, tuttiSum, comm, b),
                    comm);
  }
  ~HeldThenFree() {
    hold.release = true;
    for (tuttiStream_t s : {a, b}) {
      if (s != nullptr) {
        EXPECT_EQ(tuttiStreamDestroy(s), tuttiSuccess);
      }
    }
  }
};

// An init with TUTTI_STREAM_LANES=lanes on this rank; its result code.
tuttiResult_t initWithLanes(int n, const tuttiUniqueId& id, int rank, const char* lanes,
                            int timeoutMs, tuttiComm_t* comm) {
  setenv("TUTTI_STREAM_LANES", lanes, 1);
  tuttiConfig_t config = TUTTI_CONFIG_INITIALIZER;
  config.timeoutMs = timeoutMs;
  *comm = nullptr;
  return tuttiCommInitRankConfig(comm, n, id, rank, &config);
}

class TwoLanes : public ::testing::TestWithParam<const char*> {};

// Collective 0 (lane 0) on stream A is held on the last rank; collective 1 (lane 1) on stream B
// completes on every rank meanwhile, and only then is the hold released.
TEST_P(TwoLanes, LaterCollectiveOnAnotherStreamCompletesFirst) {
  const int n = 3;
  const char* transport = GetParam();
  const size_t count = 70001;
  tuttiUniqueId id = makeId();
  // Ranks that have seen stream A in progress (shared by the forked ranks): the hold ends only
  // once every rank has looked.
  void* mem = mmap(nullptr, sizeof(std::atomic<int>), PROT_READ | PROT_WRITE,
                   MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  ASSERT_NE(mem, MAP_FAILED);
  auto* looked = new (mem) std::atomic<int>{0};
  auto result = runRanks(
      n,
      [&](int rank) {
        setenv("TUTTI_STREAM_LANES", "2", 1);
        tuttiComm_t comm = initComm(n, id, rank, transport);
        ASSERT_NE(comm, nullptr);
        {
          HeldThenFree calls;
          calls.issue(comm, rank, n, count);
          TUTTI_ASSERT_OK(tuttiStreamSynchronize(calls.b), comm);
          EXPECT_EQ(firstWrong(calls.y, n, 1), "") << "rank " << rank;
          // The earlier call cannot have completed anywhere: the last rank has not issued it.
          EXPECT_EQ(tuttiStreamQuery(calls.a), tuttiInProgress) << "rank " << rank;
          looked->fetch_add(1);
          while (looked->load() < n) std::this_thread::sleep_for(std::chrono::milliseconds(1));
          calls.hold.release = true;
          TUTTI_ASSERT_OK(tuttiStreamSynchronize(calls.a), comm);
          EXPECT_EQ(firstWrong(calls.x, n, 0), "") << "rank " << rank;
        }
        TUTTI_ASSERT_OK(tuttiCommDestroy(comm), nullptr);
      },
      120);
  munmap(mem, sizeof(std::atomic<int>));
  EXPECT_RANKS_OK(result);
}

// Many calls in flight on three streams, alternating lanes, with a blocking all-reduce, a
// group of a send and a receive (every lane's turn) and a second communicator between them;
// per stream, completion in issue order.
TEST_P(TwoLanes, ManyCallsInFlightWithBlockingCallsAndSendsBetween) {
  const int n = 4;
  const char* transport = GetParam();
  const int calls = 24;
  const size_t count = 2999;
  tuttiUniqueId id = makeId();
  auto result = runRanks(
      n,
      [&](int rank) {
        setenv("TUTTI_STREAM_LANES", "3", 1);
        tuttiComm_t comm = initComm(n, id, rank, transport);
        ASSERT_NE(comm, nullptr);
        tuttiStream_t streams[3];
        for (auto& s : streams) TUTTI_ASSERT_OK(tuttiStreamCreate(&s), nullptr);
        std::vector<std::vector<double>> bufs(calls);
        std::vector<tuttiEvent_t> events(calls);
        std::vector<int64_t> out(513), in(513, -1);
        for (size_t i = 0; i < out.size(); ++i) out[i] = rank * 1000003 + static_cast<int64_t>(i);
        const int to = (rank + 1) % n, from = (rank + n - 1) % n;
        for (int k = 0; k < calls; ++k) {
          bufs[k] = inputOf(rank, k, count + static_cast<size_t>(k));
          tuttiStream_t s = k % 5 == 4 ? nullptr : streams[k % 3];
          TUTTI_ASSERT_OK(tuttiAllReduce(bufs[k].data(), bufs[k].data(), bufs[k].size(),
                                         tuttiFloat64, tuttiSum, comm, s),
                          comm);
          if (s == nullptr) {
            EXPECT_EQ(firstWrong(bufs[k], n, k), "") << "blocking, rank " << rank;
          }
          events[k] = nullptr;
          if (s != nullptr) {
            TUTTI_ASSERT_OK(tuttiEventCreate(&events[k]), nullptr);
            TUTTI_ASSERT_OK(tuttiEventRecord(events[k], s), nullptr);
          }
          if (k == 10) {
            TUTTI_ASSERT_OK(tuttiGroupStart(), nullptr);
            TUTTI_ASSERT_OK(tuttiSend(out.data(), out.size(), tuttiInt64, to, comm, streams[1]),
                            comm);
            TUTTI_ASSERT_OK(tuttiRecv(in.data(), in.size(), tuttiInt64, from, comm, streams[1]),
                            comm);
            TUTTI_ASSERT_OK(tuttiGroupEnd(), nullptr);
          }
        }
        for (int k = calls - 1; k >= 0; --k) {
          if (events[k] == nullptr) continue;
          TUTTI_ASSERT_OK(tuttiEventSynchronize(events[k]), comm);
          for (int j = k % 3; j < k; j += 3)
            if (events[j] != nullptr) {
              EXPECT_EQ(tuttiEventQuery(events[j]), tuttiSuccess)
                  << "event " << j << " after " << k;
            }
        }
        for (auto s : streams) TUTTI_ASSERT_OK(tuttiStreamSynchronize(s), comm);
        for (int k = 0; k < calls; ++k) {
          EXPECT_EQ(firstWrong(bufs[k], n, k), "") << "rank " << rank;
          if (events[k] != nullptr) tuttiEventDestroy(events[k]);
        }
        for (size_t i = 0; i < in.size(); ++i)
          ASSERT_EQ(in[i], from * 1000003 + static_cast<int64_t>(i)) << "element " << i;
        EXPECT_STRNE(tuttiCommLastAlgorithm(comm), "none");
        // A blocking exchange after them runs on lane 0, and is the last call named.
        TUTTI_ASSERT_OK(tuttiGroupStart(), nullptr);
        TUTTI_ASSERT_OK(tuttiSend(out.data(), out.size(), tuttiInt64, to, comm, nullptr), comm);
        TUTTI_ASSERT_OK(tuttiRecv(in.data(), in.size(), tuttiInt64, from, comm, nullptr), comm);
        TUTTI_ASSERT_OK(tuttiGroupEnd(), nullptr);
        EXPECT_STREQ(tuttiCommLastAlgorithm(comm), "p2p");
        for (auto s : streams) TUTTI_ASSERT_OK(tuttiStreamDestroy(s), nullptr);
        TUTTI_ASSERT_OK(tuttiCommDestroy(comm), nullptr);
      },
      120);
  EXPECT_RANKS_OK(result);
}

INSTANTIATE_TEST_SUITE_P(Transports, TwoLanes, ::testing::Values("shm", "tcp"),
                         [](const auto& info) { return std::string(info.param); });

// One lane (the default): the same calls run in issue order, so once stream B's call has
// completed, stream A's has run (the hold ends by its time limit).
TEST(OneLane, CollectivesOnTwoStreamsRunInIssueOrder) {
  const int n = 2;
  const size_t count = 1001;
  tuttiUniqueId id = makeId();
  auto result = runRanks(
      n,
      [&](int rank) {
        unsetenv("TUTTI_STREAM_LANES");
        tuttiComm_t comm = initComm(n, id, rank, nullptr);
        ASSERT_NE(comm, nullptr);
        {
          HeldThenFree calls;
          calls.hold.limitSeconds = 0.3;
          calls.issue(comm, rank, n, count);
          TUTTI_ASSERT_OK(tuttiStreamSynchronize(calls.b), comm);
          // Stream A's call has run (its result is there), though stream A may not have marked
          // it finished yet.
          EXPECT_EQ(firstWrong(calls.x, n, 0), "") << "rank " << rank;
          EXPECT_EQ(firstWrong(calls.y, n, 1), "") << "rank " << rank;
          TUTTI_ASSERT_OK(tuttiStreamSynchronize(calls.a), comm);
        }
        TUTTI_ASSERT_OK(tuttiCommDestroy(comm), nullptr);
      },
      60);
  EXPECT_RANKS_OK(result);
}

// Rank 0 sets 2 lanes, rank 1 sets 3: both inits fail at once, naming the setting; 0 lanes is
// refused before any rendezvous.
TEST(LaneSetting, CountsThatDifferOrAreOutOfRangeAreRefused) {
  const int n = 2;
  tuttiUniqueId id = makeId();
  auto result = runRanks(
      n,
      [&](int rank) {
        tuttiComm_t comm = nullptr;
        EXPECT_EQ(initWithLanes(n, id, rank, rank == 0 ? "2" : "3", 20000, &comm),
                  tuttiInvalidUsage);
        std::string text = tuttiGetLastError(nullptr);
        EXPECT_NE(text.find("TUTTI_STREAM_LANES"), std::string::npos) << text;
        EXPECT_EQ(comm, nullptr);
        tuttiUniqueId other{};
        TUTTI_ASSERT_OK(tuttiGetUniqueId(&other), nullptr);
        EXPECT_EQ(initWithLanes(1, other, 0, "0", 20000, &comm), tuttiInvalidArgument);
        text = tuttiGetLastError(nullptr);
        EXPECT_NE(text.find("TUTTI_STREAM_LANES=0"), std::string::npos) << text;
      },
      60);
  EXPECT_RANKS_OK(result);
}

// Rank 0 sets 1 lane (it makes no duplicate), rank 1 sets 2: rank 1's init fails at its
// timeout, naming rank 0.
TEST(LaneSetting, ARankWithOneLaneIsNamedAtTheTimeout) {
  const int n = 2;
  tuttiUniqueId id = makeId();
  auto result = runRanks(
      n,
      [&](int rank) {
        tuttiComm_t comm = nullptr;
        tuttiResult_t r = initWithLanes(n, id, rank, rank == 0 ? "1" : "2", 1500, &comm);
        if (rank == 0) {
          EXPECT_EQ(r, tuttiSuccess) << tuttiGetLastError(nullptr);
          std::this_thread::sleep_for(std::chrono::milliseconds(2500));
          if (comm != nullptr) {
            tuttiCommAbort(comm);
            tuttiCommDestroy(comm);
          }
          return;
        }
        const std::string text = tuttiGetLastError(nullptr);
        EXPECT_EQ(r, tuttiTimeout) << text;
        EXPECT_NE(text.find("rank(s) 0"), std::string::npos) << text;
        EXPECT_EQ(comm, nullptr);
      },
      60);
  EXPECT_RANKS_OK(result);
}

}  // namespace
}  // namespace tutti::test
