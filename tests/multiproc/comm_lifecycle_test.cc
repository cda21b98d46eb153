// Communicator lifecycle over real processes: init/destroy at many sizes, split, init twice,
// a missing rank, malformed environments, abort of a blocked init.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "comm_test_util.h"
#include "harness/fork_harness.h"
#include "topology/binding.h"
#include "tutti/tutti.h"

namespace tutti::test {
namespace {

class InitDestroy : public ::testing::TestWithParam<int> {};

TEST_P(InitDestroy, EveryRankSeesItsRankAndSize) {
  int n = GetParam();
  tuttiUniqueId id = makeId();
  auto result = runRanks(
      n,
      [&](int rank) {
        tuttiComm_t comm = nullptr;
        TUTTI_ASSERT_OK(tuttiCommInitRank(&comm, n, id, rank), nullptr);
        int r = -1, size = -1;
        TUTTI_ASSERT_OK(tuttiCommUserRank(comm, &r), comm);
        TUTTI_ASSERT_OK(tuttiCommCount(comm, &size), comm);
        EXPECT_EQ(r, rank);
        EXPECT_EQ(size, n);
        // The communicator works: an all-reduce of ranks.
        int mine = rank + 1, sum = 0;
        TUTTI_ASSERT_OK(tuttiAllReduce(&mine, &sum, 1, tuttiInt32, tuttiSum, comm, nullptr), comm);
        EXPECT_EQ(sum, n * (n + 1) / 2);
        TUTTI_ASSERT_OK(tuttiCommDestroy(comm), nullptr);
      },
      300);
  EXPECT_TRUE(result.allOk()) << result.describe();
}

INSTANTIATE_TEST_SUITE_P(Sizes, InitDestroy, ::testing::Values(1, 2, 3, 4, 7, 8, 16));

TEST(CommSplit, ColorsAndKeyOrdering) {
  const int n = 6;
  tuttiUniqueId id = makeId();
  auto result = runRanks(n, [&](int rank) {
    tuttiComm_t comm = nullptr;
    TUTTI_ASSERT_OK(tuttiCommInitRank(&comm, n, id, rank), nullptr);
    // Colors: even / odd ranks; rank 5 opts out. Keys reverse the order.
    int color = rank == 5 ? TUTTI_SPLIT_NOCOLOR : rank % 2;
    int key = n - rank;
    tuttiComm_t sub = nullptr;
    TUTTI_ASSERT_OK(tuttiCommSplit(comm, color, key, &sub, nullptr), comm);
    if (rank == 5) {
      EXPECT_EQ(sub, nullptr);
    } else {
      ASSERT_NE(sub, nullptr);
      int subRank = -1, subSize = -1;
      TUTTI_ASSERT_OK(tuttiCommUserRank(sub, &subRank), sub);
      TUTTI_ASSERT_OK(tuttiCommCount(sub, &subSize), sub);
      // even: ranks 0,2,4 with keys 6,4,2 -> order 4,2,0; odd: 1,3 with keys 5,3 -> 3,1.
      std::vector<int> members = color == 0 ? std::vector<int>{4, 2, 0} : std::vector<int>{3, 1};
      EXPECT_EQ(subSize, static_cast<int>(members.size()));
      int expected = -1;
      for (size_t i = 0; i < members.size(); ++i)
        if (members[i] == rank) expected = static_cast<int>(i);
      EXPECT_EQ(subRank, expected);
      // The sub-communicator works and only spans its color.
      int mine = rank, sum = 0;
      TUTTI_ASSERT_OK(tuttiAllReduce(&mine, &sum, 1, tuttiInt32, tuttiSum, sub, nullptr), sub);
      EXPECT_EQ(sum, color == 0 ? 6 : 4);
      TUTTI_ASSERT_OK(tuttiCommDestroy(sub), nullptr);
    }
    // The parent still works after the split.
    int one = 1, total = 0;
    TUTTI_ASSERT_OK(tuttiAllReduce(&one, &total, 1, tuttiInt32, tuttiSum, comm, nullptr), comm);
    EXPECT_EQ(total, n);
    TUTTI_ASSERT_OK(tuttiCommDestroy(comm), nullptr);
  });
  EXPECT_TRUE(result.allOk()) << result.describe();
}

TEST(CommInit, TwiceInOneProcess) {
  const int n = 3;
  tuttiUniqueId id1 = makeId();
  tuttiUniqueId id2 = makeId();
  auto result = runRanks(n, [&](int rank) {
    tuttiComm_t a = nullptr, b = nullptr;
    TUTTI_ASSERT_OK(tuttiCommInitRank(&a, n, id1, rank), nullptr);
    TUTTI_ASSERT_OK(tuttiCommInitRank(&b, n, id2, (rank + 1) % n), nullptr);
    int x = rank, ya = 0, yb = 0;
    TUTTI_ASSERT_OK(tuttiAllReduce(&x, &ya, 1, tuttiInt32, tuttiMax, a, nullptr), a);
    TUTTI_ASSERT_OK(tuttiAllReduce(&x, &yb, 1, tuttiInt32, tuttiSum, b, nullptr), b);
    EXPECT_EQ(ya, n - 1);
    EXPECT_EQ(yb, n * (n - 1) / 2);
    TUTTI_ASSERT_OK(tuttiCommDestroy(a), nullptr);
    TUTTI_ASSERT_OK(tuttiCommDestroy(b), nullptr);
  });
  EXPECT_TRUE(result.allOk()) << result.describe();
}

// A communicator destroyed while a group holds calls on it (issue 19, D8: tuttiGroupEnd read
// the freed handle): its calls are dropped with a clear error, the group's other
// communicator still runs, and a new handle made at the same address is not confused with it.
TEST(CommGroup, DestroyInsideAGroupDropsItsCallsSafely) {
  const int n = 2;
  tuttiUniqueId id1 = makeId();
  tuttiUniqueId id2 = makeId();
  auto result = runRanks(n, [&](int rank) {
    tuttiComm_t a = nullptr, b = nullptr;
    TUTTI_ASSERT_OK(tuttiCommInitRank(&a, n, id1, rank), nullptr);
    TUTTI_ASSERT_OK(tuttiCommInitRank(&b, n, id2, rank), nullptr);
    int x = rank + 1, ya = -7, yb = 0, peerValue = -1;
    ASSERT_EQ(tuttiGroupStart(), tuttiSuccess);
    TUTTI_ASSERT_OK(tuttiAllReduce(&x, &ya, 1, tuttiInt32, tuttiSum, a, nullptr), a);
    TUTTI_ASSERT_OK(tuttiSend(&x, 1, tuttiInt32, 1 - rank, a, nullptr), a);
    TUTTI_ASSERT_OK(tuttiRecv(&peerValue, 1, tuttiInt32, 1 - rank, a, nullptr), a);
    TUTTI_ASSERT_OK(tuttiAllReduce(&x, &yb, 1, tuttiInt32, tuttiSum, b, nullptr), b);
    // Destroyed without its calls having run: every rank does the same, nobody waits.
    TUTTI_ASSERT_OK(tuttiCommAbort(a), nullptr);
    tuttiCommDestroy(a);
    EXPECT_EQ(tuttiGroupEnd(), tuttiInvalidUsage);
    std::string msg = tuttiGetLastError(nullptr);
    EXPECT_NE(msg.find("destroyed before tuttiGroupEnd"), std::string::npos) << msg;
    EXPECT_NE(msg.find("3 call(s)"), std::string::npos) << msg;
    EXPECT_EQ(ya, -7);
    EXPECT_EQ(peerValue, -1);
    EXPECT_EQ(yb, 3);  // the group's other communicator ran
    TUTTI_ASSERT_OK(tuttiCommDestroy(b), nullptr);
  });
  EXPECT_TRUE(result.allOk()) << result.describe();
}

TEST(CommInit, MissingRankTimesOutNamingIt) {
  const int n = 4;
  tuttiUniqueId id = makeId();
  // Rank 2 never starts; the others must fail with tuttiTimeout naming it.
  setenv("TUTTI_TIMEOUT", "3", 1);
  auto result = runRanks(n, [&](int rank) {
    if (rank == 2) return;
    auto start = std::chrono::steady_clock::now();
    tuttiComm_t comm = nullptr;
    tuttiResult_t r = tuttiCommInitRank(&comm, n, id, rank);
    double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    EXPECT_EQ(r, tuttiTimeout) << tuttiGetLastError(nullptr);
    std::string msg = tuttiGetLastError(nullptr);
    EXPECT_NE(msg.find("2"), std::string::npos) << msg;
    EXPECT_NE(msg.find("rank"), std::string::npos) << msg;
    EXPECT_LT(secs, 3 + 2.0);
  });
  unsetenv("TUTTI_TIMEOUT");
  EXPECT_TRUE(result.allOk()) << result.describe();
}

TEST(CommInit, BindGivesEachLocalRankItsPlannedCpus) {
  // TUTTI_BIND=core and numa: after init each rank runs on exactly the CPUs the plan gives its
  // local index (on a machine with at least as many cores as ranks, disjoint core shares),
  // and the communicator works; a bad value fails init naming the variable.
  for (const char* mode : {"core", "numa"}) {
    const int n = 3;
    tuttiUniqueId id = makeId();
    auto result = runRanks(
        n,
        [&](int rank) {
          auto plan = topo::planBinding(topo::liveCpuLayout(), n, topo::parseBindMode(mode));
          setenv("TUTTI_BIND", mode, 1);
          tuttiComm_t comm = nullptr;
          TUTTI_ASSERT_OK(tuttiCommInitRank(&comm, n, id, rank), nullptr);
          ASSERT_EQ(plan.size(), size_t(n));
          EXPECT_EQ(topo::currentAffinity(), plan[rank].cpus) << mode << " rank " << rank;
          int mine = rank + 1, sum = 0;
          TUTTI_ASSERT_OK(tuttiAllReduce(&mine, &sum, 1, tuttiInt32, tuttiSum, comm, nullptr),
                          comm);
          EXPECT_EQ(sum, n * (n + 1) / 2);
          TUTTI_ASSERT_OK(tuttiCommDestroy(comm), nullptr);
        },
        120);
    EXPECT_TRUE(result.allOk()) << mode << ": " << result.describe();
  }
  tuttiUniqueId id = makeId();
  auto result = runRanks(1, [&](int rank) {
    setenv("TUTTI_BIND", "socket", 1);
    tuttiComm_t comm = nullptr;
    EXPECT_EQ(tuttiCommInitRank(&comm, 1, id, rank), tuttiInvalidArgument);
    std::string msg = tuttiGetLastError(nullptr);
    EXPECT_NE(msg.find("TUTTI_BIND=socket"), std::string::npos) << msg;
  });
  EXPECT_TRUE(result.allOk()) << result.describe();
}

TEST(CommInit, MalformedEnvironmentIsAClearError) {
  struct Case {
    const char* rank;
    const char* size;
    const char* addr;
    const char* expect;
  };
  const Case cases[] = {
      {"abc", "4", "127.0.0.1:29500", "TUTTI_RANK"},
      {"4", "4", "127.0.0.1:29500", "TUTTI_RANK"},
      {"-1", "4", "127.0.0.1:29500", "TUTTI_RANK"},
      {"0", "x", "127.0.0.1:29500", "TUTTI_WORLD_SIZE"},
      {"1", "2", "not-an-address", "TUTTI_ADDR"},
  };
  for (const Case& c : cases) {
    auto result = runRanks(1, [&](int) {
      setenv("TUTTI_RANK", c.rank, 1);
      setenv("TUTTI_WORLD_SIZE", c.size, 1);
      setenv("TUTTI_ADDR", c.addr, 1);
      setenv("TUTTI_SECRET", "0123456789abcdef0123456789abcdef", 1);
      setenv("TUTTI_TIMEOUT", "2", 1);
      tuttiComm_t comm = nullptr;
      tuttiResult_t r = tuttiCommInitFromEnv(&comm, nullptr);
      EXPECT_NE(r, tuttiSuccess);
      EXPECT_EQ(comm, nullptr);
      std::string msg = tuttiGetLastError(nullptr);
      EXPECT_NE(msg.find(c.expect), std::string::npos) << msg;
    });
    EXPECT_TRUE(result.allOk()) << c.rank << "/" << c.size << "/" << c.addr << ": "
                                << result.describe();
  }
}

// Settings that used to be ignored silently (TUTTI_ALGO, config.algo, TUTTI_TOPO_FILE), made
// every wait fail at once (TUTTI_TIMEOUT <= 0 or nan) or had no upper bound (shm sizes) are
// tuttiInvalidArgument at init, naming the setting; a very long TUTTI_TIMEOUT (past int
// milliseconds) works.
TEST(CommInit, InvalidSettingsAreClearErrorsAtInit) {
  struct Case {
    const char* var;  // environment variable set, or nullptr for config.algo
    const char* value;
    const char* expect;  // in the error; nullptr: init must succeed
  };
  const Case cases[] = {
      {"TUTTI_ALGO", "nonsense", "TUTTI_ALGO='nonsense'"},
      {"TUTTI_ALGO", "allreduce:ring;broadcast:bogus", "broadcast:bogus"},
      {nullptr, "bogus", "config.algo='bogus'"},
      {"TUTTI_TOPO_FILE", "/etc/passwd", "TUTTI_TOPO_FILE=/etc/passwd"},
      {"TUTTI_TOPO_FILE", "/nonexistent/topo.xml", "TUTTI_TOPO_FILE=/nonexistent/topo.xml"},
      {"TUTTI_TIMEOUT", "-5", "TUTTI_TIMEOUT"},
      {"TUTTI_TIMEOUT", "0", "TUTTI_TIMEOUT"},
      {"TUTTI_TIMEOUT", "nan", "TUTTI_TIMEOUT"},
      {"TUTTI_TIMEOUT", "3e6", nullptr},
      {"TUTTI_TIMEOUT", "1e300", nullptr},
      {"TUTTI_TIMEOUT", "inf", nullptr},
      {"TUTTI_ALGO", "allreduce:ring", nullptr},
      // Shared-memory sizes have an upper bound (an 8 GiB FIFO filled the host's memory).
      {"TUTTI_SHM_FIFO_BYTES", "8589934592",
       "TUTTI_SHM_FIFO_BYTES=8589934592 is more than the limit 1073741824"},
      {"TUTTI_SHM_WINDOW_BYTES", "8589934592",
       "TUTTI_SHM_WINDOW_BYTES=8589934592 is more than the limit 1073741824"},
      {"TUTTI_SHM_FIFO_BYTES", "1073741824", nullptr},
  };
  for (const Case& c : cases) {
    tuttiUniqueId id = makeId();
    auto result = runRanks(1, [&](int) {
      if (c.var) setenv(c.var, c.value, 1);
      tuttiConfig_t config = TUTTI_CONFIG_INITIALIZER;
      if (!c.var) config.algo = c.value;
      tuttiComm_t comm = nullptr;
      auto t0 = std::chrono::steady_clock::now();
      tuttiResult_t r = tuttiCommInitRankConfig(&comm, 1, id, 0, &config);
      double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      std::string msg = tuttiGetLastError(nullptr);
      EXPECT_LT(secs, 5.0);
      if (c.expect == nullptr) {
        ASSERT_EQ(r, tuttiSuccess) << msg;
        float x = 2, y = 0;
        TUTTI_ASSERT_OK(tuttiAllReduce(&x, &y, 1, tuttiFloat32, tuttiSum, comm, nullptr), comm);
        EXPECT_EQ(y, 2.0f);
        TUTTI_ASSERT_OK(tuttiCommDestroy(comm), nullptr);
        return;
      }
      EXPECT_EQ(r, tuttiInvalidArgument) << msg;
      EXPECT_EQ(comm, nullptr);
      EXPECT_NE(msg.find(c.expect), std::string::npos) << msg;
    });
    EXPECT_TRUE(result.allOk()) << (c.var ? c.var : "config.algo") << "=" << c.value << ": "
                                << result.describe();
  }
}

TEST(CommInit, UnreachableAddressFailsWithinTimeout) {
  auto result = runRanks(1, [&](int) {
    // Rank 1 of 2: connects to a port where nobody listens.
    setenv("TUTTI_RANK", "1", 1);
    setenv("TUTTI_WORLD_SIZE", "2", 1);
    setenv("TUTTI_ADDR", "127.0.0.1:9", 1);
    setenv("TUTTI_SECRET", "0123456789abcdef0123456789abcdef", 1);
    setenv("TUTTI_TIMEOUT", "2", 1);
    auto start = std::chrono::steady_clock::now();
    tuttiComm_t comm = nullptr;
    tuttiResult_t r = tuttiCommInitFromEnv(&comm, nullptr);
    double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    EXPECT_TRUE(r == tuttiTimeout || r == tuttiRemoteError) << tuttiGetErrorString(r);
    std::string msg = tuttiGetLastError(nullptr);
    EXPECT_NE(msg.find("127.0.0.1:9"), std::string::npos) << msg;
    EXPECT_LT(secs, 4.5);
  });
  EXPECT_TRUE(result.allOk()) << result.describe();
}

TEST(CommInit, AbortFromAnotherThreadUnblocksInit) {
  // Rank 0 of 2 inits non-blocking; rank 1 never comes; abort must end the init promptly.
  tuttiUniqueId id = makeId();
  auto result = runRanks(1, [&](int) {
    tuttiConfig_t config = TUTTI_CONFIG_INITIALIZER;
    config.blocking = 0;
    config.timeoutMs = 60000;
    tuttiComm_t comm = nullptr;
    tuttiResult_t r = tuttiCommInitRankConfig(&comm, 2, id, 0, &config);
    ASSERT_EQ(r, tuttiInProgress) << tuttiGetLastError(nullptr);
    ASSERT_NE(comm, nullptr);
    tuttiResult_t state = tuttiSuccess;
    ASSERT_EQ(tuttiCommGetAsyncError(comm, &state), tuttiSuccess);
    EXPECT_EQ(state, tuttiInProgress);
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    auto start = std::chrono::steady_clock::now();
    std::thread aborter([comm] { tuttiCommAbort(comm); });
    aborter.join();
    for (int i = 0; i < 500; ++i) {
      tuttiCommGetAsyncError(comm, &state);
      if (state != tuttiInProgress) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    EXPECT_NE(state, tuttiInProgress);
    EXPECT_NE(state, tuttiSuccess);
    EXPECT_LT(secs, 3.0);
    EXPECT_EQ(tuttiCommDestroy(comm), tuttiSuccess);
  });
  EXPECT_TRUE(result.allOk()) << result.describe();
}

// After fork(), the child holds a copy of the parent's communicator (issue 30, E4): every
// call there, abort and destroy included, is tuttiInvalidUsage naming both processes, and the
// parent's communicator goes on (a verified all-reduce on both ranks after the child ended).
TEST(CommFork, ChildCannotUseTheParentsCommunicator) {
  tuttiUniqueId id = makeId();
  auto result = runRanks(2, [&](int rank) {
    tuttiComm_t comm = nullptr;
    TUTTI_ASSERT_OK(tuttiCommInitRank(&comm, 2, id, rank), nullptr);
    std::vector<double> x(1000);
    auto fill = [&](int call) {
      for (size_t i = 0; i < x.size(); ++i) x[i] = rank * 1e6 + call * 1e3 + static_cast<double>(i);
    };
    fill(0);
    TUTTI_ASSERT_OK(
        tuttiAllReduce(x.data(), x.data(), x.size(), tuttiFloat64, tuttiSum, comm, nullptr), comm);
    if (rank == 0) {
      pid_t child = ::fork();
      if (child == 0) {
        int bad = 0;
        std::vector<double> y(1000, 1.0);
        tuttiResult_t r =
            tuttiAllReduce(y.data(), y.data(), y.size(), tuttiFloat64, tuttiSum, comm, nullptr);
        std::string msg = tuttiGetLastError(comm);
        bad += r != tuttiInvalidUsage;
        bad += msg.find("is a child made by fork()") == std::string::npos;
        bad += msg.find("process " + std::to_string(::getppid())) == std::string::npos;
        bad += tuttiCommAbort(comm) != tuttiInvalidUsage;
        bad += tuttiCommDestroy(comm) != tuttiInvalidUsage;
        if (bad) std::fprintf(stderr, "child: %d wrong answers; last: %s\n", bad, msg.c_str());
        ::_exit(bad == 0 ? 0 : 1);
      }
      int status = 0;
      ASSERT_EQ(::waitpid(child, &status, 0), child);
      EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "child status " << status;
    }
    for (int call = 1; call <= 2; ++call) {
      fill(call);
      TUTTI_ASSERT_OK(
          tuttiAllReduce(x.data(), x.data(), x.size(), tuttiFloat64, tuttiSum, comm, nullptr),
          comm);
      for (size_t i = 0; i < x.size(); ++i)
        ASSERT_EQ(x[i], 1e6 + 2 * (call * 1e3 + static_cast<double>(i))) << i;
    }
    TUTTI_ASSERT_OK(tuttiCommDestroy(comm), nullptr);
  });
  EXPECT_RANKS_OK(result);
}

TEST(CommApi, BadArgumentsAreRejectedWithMessages) {
  tuttiUniqueId id = makeId();
  auto result = runRanks(1, [&](int) {
    tuttiComm_t comm = nullptr;
    EXPECT_EQ(tuttiCommInitRank(&comm, 1, id, 1), tuttiInvalidArgument);
    EXPECT_NE(std::string(tuttiGetLastError(nullptr)).find("rank 1"), std::string::npos);
    EXPECT_EQ(tuttiCommInitRank(nullptr, 1, id, 0), tuttiInvalidArgument);
    EXPECT_EQ(tuttiCommAbort(nullptr), tuttiInvalidArgument);
    EXPECT_EQ(std::string(tuttiGetLastError(nullptr)), "tuttiCommAbort: comm is NULL");
    tuttiUniqueId garbage;
    memset(&garbage, 0x5a, sizeof(garbage));
    EXPECT_EQ(tuttiCommInitRank(&comm, 1, garbage, 0), tuttiInvalidArgument);
    TUTTI_ASSERT_OK(tuttiCommInitRank(&comm, 1, id, 0), nullptr);
    float x = 1, y = 0;
    EXPECT_EQ(tuttiAllReduce(&x, &y, 1, static_cast<tuttiDataType_t>(42), tuttiSum, comm, nullptr),
              tuttiInvalidArgument);
    EXPECT_NE(std::string(tuttiGetLastError(comm)).find("datatype"), std::string::npos);
    EXPECT_EQ(tuttiAllReduce(&x, &y, 1, tuttiFloat32, static_cast<tuttiRedOp_t>(9), comm, nullptr),
              tuttiInvalidArgument);
    EXPECT_EQ(tuttiAllReduce(nullptr, &y, 1, tuttiFloat32, tuttiSum, comm, nullptr),
              tuttiInvalidArgument);
    EXPECT_EQ(tuttiBroadcast(&x, &y, 1, tuttiFloat32, 3, comm, nullptr), tuttiInvalidArgument);
    EXPECT_EQ(tuttiSend(&x, 1, tuttiFloat32, 1, comm, nullptr), tuttiInvalidArgument);
    EXPECT_EQ(tuttiAllReduce(&x, &y, 1, tuttiFloat32, tuttiSum, nullptr, nullptr),
              tuttiInvalidArgument);
    EXPECT_EQ(tuttiGroupEnd(), tuttiInvalidUsage);
    // Zero-count calls are valid no-ops.
    TUTTI_ASSERT_OK(tuttiAllReduce(nullptr, nullptr, 0, tuttiFloat32, tuttiSum, comm, nullptr),
                    comm);
    int v = 0;
    TUTTI_ASSERT_OK(tuttiGetVersion(&v), nullptr);
    EXPECT_EQ(v, TUTTI_VERSION_CODE);
    TUTTI_ASSERT_OK(tuttiCommDestroy(comm), nullptr);
  });
  EXPECT_TRUE(result.allOk()) << result.describe();
}

// Counts whose buffers (count x dtype size, x ranks where the call's buffer holds a block per
// rank) overflow size_t or exceed any address space are tuttiInvalidArgument at once, on
// every collective, before anything is sized from them (an all-to-all count near
// SIZE_MAX / size crashed; others built huge schedules).
TEST(CommApi, HugeCountsAreRefusedAtOnce) {
  const int n = 3;
  tuttiUniqueId id = makeId();
  auto result = runRanks(n, [&](int rank) {
    tuttiComm_t comm = nullptr;
    TUTTI_ASSERT_OK(tuttiCommInitRank(&comm, n, id, rank), nullptr);
    std::vector<uint64_t> s(64, 1), r(64, 0);
    const tuttiDataType_t types[] = {tuttiInt8, tuttiFloat16, tuttiFloat32, tuttiFloat64};
    auto t0 = std::chrono::steady_clock::now();
    int checked = 0;
    for (tuttiDataType_t t : types) {
      const size_t es = t == tuttiInt8 ? 1 : t == tuttiFloat16 ? 2 : t == tuttiFloat32 ? 4 : 8;
      const size_t counts[] = {SIZE_MAX,
                               SIZE_MAX / es,
                               SIZE_MAX / es / n + 1,
                               SIZE_MAX / 16,
                               SIZE_MAX / 16 / n + 1,
                               (size_t{1} << 48) / es + 1,
                               (size_t{1} << 48) / es / n + 1};
      for (size_t count : counts) {
        auto expectRefused = [&](tuttiResult_t res, const char* fn) {
          ++checked;
          std::string msg = tuttiGetLastError(comm);
          EXPECT_EQ(res, tuttiInvalidArgument) << fn << " count " << count << ": " << msg;
          EXPECT_NE(msg.find(fn), std::string::npos) << msg;
          EXPECT_NE(msg.find("count " + std::to_string(count)), std::string::npos) << msg;
        };
        // Per-rank buffers of count elements: only counts above the bound itself.
        if (count > (size_t{1} << 48) / es) {
          expectRefused(tuttiAllReduce(s.data(), r.data(), count, t, tuttiSum, comm, nullptr),
                        "tuttiAllReduce");
          expectRefused(tuttiBroadcast(s.data(), r.data(), count, t, 0, comm, nullptr),
                        "tuttiBroadcast");
          expectRefused(tuttiReduce(s.data(), r.data(), count, t, tuttiSum, 0, comm, nullptr),
                        "tuttiReduce");
          expectRefused(tuttiSend(s.data(), count, t, (rank + 1) % n, comm, nullptr), "tuttiSend");
          expectRefused(tuttiRecv(r.data(), count, t, (rank + 1) % n, comm, nullptr), "tuttiRecv");
          if (t == tuttiFloat32 || t == tuttiFloat16)
            expectRefused(tuttiAllReduceCompressed(s.data(), r.data(), count, t, "topk:0.1", 1, 0,
                                                   comm, nullptr),
                          "tuttiAllReduceCompressed");
        }
        // Buffers of a block per rank: count x n elements.
        expectRefused(tuttiAllGather(s.data(), r.data(), count, t, comm, nullptr),
                      "tuttiAllGather");
        expectRefused(tuttiReduceScatter(s.data(), r.data(), count, t, tuttiSum, comm, nullptr),
                      "tuttiReduceScatter");
        expectRefused(tuttiAllToAll(s.data(), r.data(), count, t, comm, nullptr), "tuttiAllToAll");
        expectRefused(tuttiGather(s.data(), r.data(), count, t, 0, comm, nullptr), "tuttiGather");
        expectRefused(tuttiScatter(s.data(), r.data(), count, t, 0, comm, nullptr), "tuttiScatter");
        // Uneven ones: a block ending beyond the bound.
        if (count > (size_t{1} << 48) / es) {
          std::vector<size_t> cs(n, 1), ds(n, 0);
          cs[rank] = 1;
          cs[(rank + 1) % n] = count;
          std::vector<size_t> mine(n, 1);
          for (int p = 0; p < n; ++p) ds[p] = p;
          tuttiResult_t res =
              tuttiAllGatherV(s.data(), 1, r.data(), cs.data(), ds.data(), t, comm, nullptr);
          EXPECT_EQ(res, tuttiInvalidArgument) << tuttiGetLastError(comm);
          res = tuttiAllToAllV(s.data(), mine.data(), ds.data(), r.data(), cs.data(), ds.data(), t,
                               comm, nullptr);
          EXPECT_EQ(res, tuttiInvalidArgument) << tuttiGetLastError(comm);
        }
      }
    }
    double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    EXPECT_GT(checked, 100);
    EXPECT_LT(secs, 2.0);
    // The communicator still works.
    uint64_t one = 1, sum = 0;
    TUTTI_ASSERT_OK(tuttiAllReduce(&one, &sum, 1, tuttiUint64, tuttiSum, comm, nullptr), comm);
    EXPECT_EQ(sum, uint64_t{n});
    TUTTI_ASSERT_OK(tuttiCommDestroy(comm), nullptr);
  });
  EXPECT_TRUE(result.allOk()) << result.describe();
}

// tuttiCommSetAlgorithm: forces per call, checks names, restores the init-time choice, and
// TUTTI_ALGO is read once at init (changing it later does not change the communicator).
TEST(CommApi, SetAlgorithmForcesChecksAndRestores) {
  const int n = 3;
  tuttiUniqueId id = makeId();
  auto result = runRanks(n, [&](int rank) {
    setenv("TUTTI_ALGO", "allreduce:tree", 1);
    tuttiComm_t comm = nullptr;
    TUTTI_ASSERT_OK(tuttiCommInitRank(&comm, n, id, rank), nullptr);
    setenv("TUTTI_ALGO", "allreduce:naive", 1);  // after init: ignored
    std::vector<float> x(1000, 1.0f), y(1000, 0.0f);
    auto allReduce = [&] {
      TUTTI_ASSERT_OK(
          tuttiAllReduce(x.data(), y.data(), x.size(), tuttiFloat32, tuttiSum, comm, nullptr),
          comm);
      EXPECT_EQ(y[999], static_cast<float>(n));
    };
    allReduce();
    EXPECT_STREQ(tuttiCommLastAlgorithm(comm), "tree");
    TUTTI_ASSERT_OK(tuttiCommSetAlgorithm(comm, "allreduce:ring;broadcast:binomial"), comm);
    allReduce();
    EXPECT_STREQ(tuttiCommLastAlgorithm(comm), "ring");
    TUTTI_ASSERT_OK(tuttiCommSetAlgorithm(comm, "butterfly"), comm);
    allReduce();
    EXPECT_STREQ(tuttiCommLastAlgorithm(comm), "butterfly");
    // A bare name next to per-collective items: collectives without a "ring" (reduce) stay
    // automatic, as with "ring" alone (they failed with "no reduce algorithm 'ring'").
    TUTTI_ASSERT_OK(tuttiCommSetAlgorithm(comm, "ring;broadcast:binomial"), comm);
    allReduce();
    EXPECT_STREQ(tuttiCommLastAlgorithm(comm), "ring");
    float r = static_cast<float>(rank + 1), rsum = 0;
    TUTTI_ASSERT_OK(tuttiReduce(&r, &rsum, 1, tuttiFloat32, tuttiSum, 0, comm, nullptr), comm);
    if (rank == 0) {
      EXPECT_EQ(rsum, static_cast<float>(n * (n + 1) / 2));
    }
    float b = rank == 1 ? 42.0f : 0.0f;
    TUTTI_ASSERT_OK(tuttiBroadcast(&b, &b, 1, tuttiFloat32, 1, comm, nullptr), comm);
    EXPECT_EQ(b, 42.0f);
    EXPECT_STREQ(tuttiCommLastAlgorithm(comm), "binomial");
    TUTTI_ASSERT_OK(tuttiCommSetAlgorithm(comm, nullptr), comm);  // back to TUTTI_ALGO at init
    allReduce();
    EXPECT_STREQ(tuttiCommLastAlgorithm(comm), "tree");
    EXPECT_EQ(tuttiCommSetAlgorithm(comm, "allreduce:bogus"), tuttiInvalidArgument);
    EXPECT_NE(std::string(tuttiGetLastError(comm)).find("'allreduce:bogus'"), std::string::npos)
        << tuttiGetLastError(comm);
    EXPECT_EQ(tuttiCommSetAlgorithm(comm, "nosuchcoll:ring"), tuttiInvalidArgument);
    EXPECT_EQ(tuttiCommSetAlgorithm(nullptr, "ring"), tuttiInvalidArgument);
    TUTTI_ASSERT_OK(tuttiGroupStart(), nullptr);
    EXPECT_EQ(tuttiCommSetAlgorithm(comm, "ring"), tuttiInvalidUsage);
    TUTTI_ASSERT_OK(tuttiGroupEnd(), nullptr);
    allReduce();  // a rejected spec changed nothing
    EXPECT_STREQ(tuttiCommLastAlgorithm(comm), "tree");
    // tuttiAlgorithms: every all-reduce it lists can be forced by name; one that applies at 3
    // ranks on one host (all but hier) then runs.
    const char* list = tuttiAlgorithms("allreduce");
    ASSERT_NE(list, nullptr);
    std::string names = list;
    int forced = 0;
    for (size_t at = 0; at <= names.size();) {
      size_t comma = std::min(names.find(',', at), names.size());
      std::string name = names.substr(at, comma - at);
      at = comma + 1;
      TUTTI_ASSERT_OK(tuttiCommSetAlgorithm(comm, ("allreduce:" + name).c_str()), comm);
      if (name == "hier") continue;  // needs more than one host
      if (name == "line") {
        // Up to 200 bytes only: 1000 floats are refused as not applying.
        EXPECT_EQ(
            tuttiAllReduce(x.data(), y.data(), x.size(), tuttiFloat32, tuttiSum, comm, nullptr),
            tuttiInvalidArgument);
        TUTTI_ASSERT_OK(
            tuttiAllReduce(x.data(), y.data(), 50, tuttiFloat32, tuttiSum, comm, nullptr), comm);
        EXPECT_EQ(y[49], static_cast<float>(n));
      } else {
        allReduce();
      }
      EXPECT_EQ(tuttiCommLastAlgorithm(comm), name);
      ++forced;
    }
    EXPECT_GE(forced, 8) << list;
    EXPECT_EQ(tuttiAlgorithms("bogus"), nullptr);
    EXPECT_EQ(tuttiAlgorithms(nullptr), nullptr);
    EXPECT_NE(std::string(tuttiAlgorithms("broadcast")).find("binomial"), std::string::npos);
    TUTTI_ASSERT_OK(tuttiCommDestroy(comm), nullptr);
    unsetenv("TUTTI_ALGO");
  });
  EXPECT_TRUE(result.allOk()) << result.describe();
}

}  // namespace
}  // namespace tutti::test

namespace tutti::test {
namespace {

// A listening socket on 127.0.0.1 (port 0: any free port); returns {fd, port}.
std::pair<int, int> listenOnFreePort() {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof(a);
  if (fd < 0 || bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) != 0 || listen(fd, 4) != 0 ||
      getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) != 0)
    return {-1, 0};
  return {fd, ntohs(a.sin_port)};
}

// A listening socket on a port P below the ephemeral range (20000-29999) whose P + 1 is free
// too: tutti's rendezvous takes MASTER_PORT + 1, and an ephemeral P would share its
// neighbourhood with every connection the machine opens meanwhile.
std::pair<int, int> listenOnPortWithFreeNext() {
  auto bound = [](int port, bool listening) {
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    a.sin_port = htons(static_cast<uint16_t>(port));
    if (fd < 0 || bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) != 0 ||
        (listening && listen(fd, 4) != 0)) {
      if (fd >= 0) close(fd);
      return -1;
    }
    return fd;
  };
  for (int attempt = 0; attempt < 200; ++attempt) {
    int port = 20000 + static_cast<int>((getpid() * 7919u + attempt * 104729u) % 9999);
    int next = bound(port + 1, false);
    if (next < 0) continue;
    close(next);
    int fd = bound(port, true);
    if (fd >= 0) return {fd, port};
  }
  return {-1, 0};
}

void setTorchrunEnv(int rank, int n, int masterPort) {
  setenv("RANK", std::to_string(rank).c_str(), 1);
  setenv("WORLD_SIZE", std::to_string(n).c_str(), 1);
  setenv("LOCAL_RANK", std::to_string(rank).c_str(), 1);
  setenv("MASTER_ADDR", "127.0.0.1", 1);
  setenv("MASTER_PORT", std::to_string(masterPort).c_str(), 1);
  setenv("TUTTI_TIMEOUT", "20", 1);
}

// torch's store holds MASTER_PORT while tutti initialises from the same variables: tutti
// meets on MASTER_PORT + 1 (or TUTTI_PORT) and never binds MASTER_PORT.
TEST(CommInit, TorchrunVariablesLeaveMasterPortToTorch) {
  for (bool withTuttiPort : {false, true}) {
    auto [held, port] = listenOnPortWithFreeNext();  // stands in for torch's TCPStore
    ASSERT_GE(held, 0);
    auto [spare, sparePort] = listenOnFreePort();
    close(spare);  // a port that was free a moment ago, for TUTTI_PORT
    const int n = 3;
    auto result = runRanks(
        n,
        [&](int rank) {
          setTorchrunEnv(rank, n, port);
          if (withTuttiPort) setenv("TUTTI_PORT", std::to_string(sparePort).c_str(), 1);
          tuttiComm_t comm = nullptr;
          TUTTI_ASSERT_OK(tuttiCommInitFromEnv(&comm, nullptr), nullptr);
          int64_t x = rank + 10, sum = 0;
          TUTTI_ASSERT_OK(tuttiAllReduce(&x, &sum, 1, tuttiInt64, tuttiSum, comm, nullptr), comm);
          EXPECT_EQ(sum, 10 + 11 + 12);
          TUTTI_ASSERT_OK(tuttiCommDestroy(comm), nullptr);
        },
        60);
    close(held);
    EXPECT_TRUE(result.allOk()) << (withTuttiPort ? "TUTTI_PORT: " : "") << result.describe();
  }
}

// MASTER_PORT + 1 taken by someone else: rank 0 fails at once naming the port.
TEST(CommInit, TorchrunTakenTuttiPortIsAClearError) {
  auto [held, port] = listenOnFreePort();
  ASSERT_GE(held, 0);
  auto result = runRanks(
      1,
      [&](int) {
        setTorchrunEnv(0, 2, port - 1);  // tutti's port = MASTER_PORT + 1 = the held one
        tuttiComm_t comm = nullptr;
        tuttiResult_t r = tuttiCommInitFromEnv(&comm, nullptr);
        EXPECT_EQ(r, tuttiSystemError) << tuttiGetLastError(nullptr);
        std::string msg = tuttiGetLastError(nullptr);
        EXPECT_NE(msg.find(std::to_string(port)), std::string::npos) << msg;
      },
      60);
  close(held);
  EXPECT_TRUE(result.allOk()) << result.describe();
}

}  // namespace
}  // namespace tutti::test
