// Ranks that make different collective calls, with no debug setting (TUTTI_CHECK_CALLS off):
// every message carries its call's tag (collective, count, dtype, op, root, call number), so
// a mismatch is an error, never a success with wrong data; the ranks that see the other's
// message name both calls; and afterwards the communicator fails every call at once on every
// rank (issue 19, D3 and D4). Runs over shm and tcp connections (ring, tree).
#include <gtest/gtest.h>
#include <sys/mman.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <functional>
#include <new>
#include <string>
#include <vector>

#include "comm_test_util.h"
#include "harness/fork_harness.h"
#include "tutti/tutti.h"

namespace tutti::test {
namespace {

constexpr int kRanks = 3;

// A counter shared by the forked ranks (anonymous shared memory).
class SharedCount {
 public:
  SharedCount()
      : v_(static_cast<std::atomic<int>*>(mmap(nullptr, sizeof(std::atomic<int>),
                                               PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS,
                                               -1, 0))) {
    if (v_ == MAP_FAILED) std::abort();
    new (v_) std::atomic<int>(0);
  }
  ~SharedCount() { munmap(v_, sizeof(std::atomic<int>)); }
  SharedCount(const SharedCount&) = delete;
  SharedCount& operator=(const SharedCount&) = delete;
  void add() { v_->fetch_add(1); }
  int load() const { return v_->load(); }

 private:
  std::atomic<int>* v_;
};
constexpr size_t kCount = 4096;

struct Path {
  const char* name;
  const char* algo;       // TUTTI_ALGO
  const char* transport;  // TUTTI_TRANSPORT
};

class Mismatch : public ::testing::TestWithParam<Path> {
 protected:
  void SetUp() override {
    setenv("TUTTI_ALGO", GetParam().algo, 1);
    setenv("TUTTI_TRANSPORT", GetParam().transport, 1);
    setenv("TUTTI_TIMEOUT", "20", 1);
    unsetenv("TUTTI_CHECK_CALLS");
  }
  void TearDown() override {
    unsetenv("TUTTI_ALGO");
    unsetenv("TUTTI_TRANSPORT");
    unsetenv("TUTTI_TIMEOUT");
  }

  // Every rank makes `call` (which differs on some rank), then a correct all-reduce. Every
  // rank must fail the call or, where `mayPass` allows, not pass both calls; a rank that
  // received a message of the other call names both calls (each of `names`); at least one
  // rank does.
  void run(const std::function<tuttiResult_t(int rank, tuttiComm_t comm)>& call,
           std::vector<std::string> names, bool mayPass = false) {
    SharedCount detectors;  // ranks whose error named the two calls
    tuttiUniqueId id = makeId();
    auto r = runRanks(kRanks, [&](int rank) {
      tuttiComm_t comm = nullptr;
      TUTTI_ASSERT_OK(tuttiCommInitRank(&comm, kRanks, id, rank), nullptr);
      // A first matching call connects the peers.
      std::vector<float> warm(kCount, 1.0f);
      TUTTI_ASSERT_OK(
          tuttiAllReduce(warm.data(), warm.data(), kCount, tuttiFloat32, tuttiSum, comm, nullptr),
          comm);
      tuttiResult_t first = call(rank, comm);
      std::string firstText = tuttiGetLastError(comm);
      std::vector<float> buf(kCount);
      for (size_t i = 0; i < kCount; ++i) buf[i] = static_cast<float>(rank * 7 + i % 13);
      auto t0 = std::chrono::steady_clock::now();
      tuttiResult_t second =
          tuttiAllReduce(buf.data(), buf.data(), kCount, tuttiFloat32, tuttiSum, comm, nullptr);
      double secondSecs =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      std::string secondText = tuttiGetLastError(comm);
      if (mayPass) {
        EXPECT_FALSE(first == tuttiSuccess && second == tuttiSuccess)
            << "rank " << rank << ": the mismatched call and the next both succeeded";
      } else {
        EXPECT_NE(first, tuttiSuccess) << "rank " << rank << ": a mismatched call succeeded";
        EXPECT_NE(second, tuttiSuccess)
            << "rank " << rank << ": the call after a mismatch succeeded";
      }
      if (first != tuttiSuccess) {
        // Failed once, the communicator fails the next call at once with the earlier cause.
        EXPECT_NE(second, tuttiSuccess);
        EXPECT_LT(secondSecs, 1.0) << secondText;
        EXPECT_NE(secondText.find("failed earlier"), std::string::npos) << secondText;
      }
      for (const std::string* text : {&firstText, &secondText}) {
        if (text->find("mismatched collective calls") == std::string::npos) continue;
        detectors.add();
        for (const auto& n : names) EXPECT_NE(text->find(n), std::string::npos) << *text;
        break;
      }
      tuttiCommAbort(comm);
    });
    EXPECT_TRUE(r.allOk()) << r.describe();
    EXPECT_GE(detectors.load(), 1) << "no rank named the mismatched calls";
  }
};

// Same bytes, different dtype: rank 1 all-reduces int32, the others float32.
TEST_P(Mismatch, DtypeIsNamed) {
  run(
      [](int rank, tuttiComm_t comm) {
        std::vector<uint32_t> buf(kCount, 1);
        return tuttiAllReduce(buf.data(), buf.data(), kCount, rank == 1 ? tuttiInt32 : tuttiFloat32,
                              tuttiSum, comm, nullptr);
      },
      {"allreduce(count 4096, float, sum)", "allreduce(count 4096, int32, sum)",
       "collective call #2"});
}

// Same dtype and count, different op: rank 0 takes max, the others sum.
TEST_P(Mismatch, OpIsNamed) {
  run(
      [](int rank, tuttiComm_t comm) {
        std::vector<float> buf(kCount, 1.0f);
        return tuttiAllReduce(buf.data(), buf.data(), kCount, tuttiFloat32,
                              rank == 0 ? tuttiMax : tuttiSum, comm, nullptr);
      },
      {"float, max)", "float, sum)"});
}

// avg is lowered to sum inside; the tag keeps the caller's op.
TEST_P(Mismatch, AvgAgainstSumIsNamed) {
  run(
      [](int rank, tuttiComm_t comm) {
        std::vector<float> buf(kCount, 1.0f);
        return tuttiAllReduce(buf.data(), buf.data(), kCount, tuttiFloat32,
                              rank == 0 ? tuttiAvg : tuttiSum, comm, nullptr);
      },
      {"float, avg)", "float, sum)"});
}

// A barrier on rank 2 against an all-reduce of one byte elsewhere is named a barrier.
TEST_P(Mismatch, BarrierIsNamedABarrier) {
  run(
      [](int rank, tuttiComm_t comm) {
        if (rank == 2) return tuttiBarrier(comm, nullptr);
        uint8_t b = 0;
        return tuttiAllReduce(&b, &b, 1, tuttiUint8, tuttiMax, comm, nullptr);
      },
      {"barrier as its collective call #2", "allreduce(count 1, uint8, max)"});
}

// Broadcast roots differ (rank 0 says 0, ranks 1 and 2 say 1): a root may finish its sends
// without receiving anything, so the first call can pass on some rank (with its own data),
// but no rank passes both it and the next call, and some rank names the two calls.
TEST_P(Mismatch, BroadcastRootNeverPassesTwice) {
  run(
      [](int rank, tuttiComm_t comm) {
        std::vector<float> buf(kCount, static_cast<float>(rank + 1));
        tuttiResult_t r = tuttiBroadcast(buf.data(), buf.data(), kCount, tuttiFloat32,
                                         rank == 0 ? 0 : 1, comm, nullptr);
        if (r == tuttiSuccess) {  // a success delivered one root's data to every element
          for (float v : buf) EXPECT_EQ(v, buf[0]) << "rank " << rank << " mixed data";
        }
        return r;
      },
      {"broadcast(count 4096, float, root"}, /*mayPass=*/true);
}

INSTANTIATE_TEST_SUITE_P(Paths, Mismatch,
                         ::testing::Values(Path{"shm_ring", "allreduce:ring", "shm"},
                                           Path{"tcp_ring", "allreduce:ring", "tcp"},
                                           Path{"tcp_tree", "allreduce:tree;broadcast:binomial",
                                                "tcp"}),
                         [](const auto& info) { return std::string(info.param.name); });

// Mismatches with the automatic algorithm choice (issue 30, E9 and E10): different
// collectives, roots and counts. Each is caught at the call, well before TUTTI_TIMEOUT (20 s):
// every rank's mismatched call, or at the latest its next call, fails within kPromptSecs, and
// some rank names the two calls.
constexpr double kPromptSecs = 5.0;

class MismatchAuto : public ::testing::TestWithParam<const char*> {
 protected:
  void SetUp() override {
    unsetenv("TUTTI_ALGO");
    setenv("TUTTI_TRANSPORT", GetParam(), 1);
    setenv("TUTTI_TIMEOUT", getenv("MM_TIMEOUT") ? getenv("MM_TIMEOUT") : "20", 1);
    unsetenv("TUTTI_CHECK_CALLS");
  }
  void TearDown() override {
    unsetenv("TUTTI_TRANSPORT");
    unsetenv("TUTTI_TIMEOUT");
  }

  // `call(rank, comm, count)` differs on some rank; then a correct all-reduce. `names`: words
  // the naming rank's text holds.
  void run(const std::function<tuttiResult_t(int, tuttiComm_t, size_t)>& call, size_t count,
           std::vector<std::string> names) {
    SharedCount detectors;  // ranks whose error named the two calls
    tuttiUniqueId id = makeId();
    auto r = runRanks(kRanks, [&](int rank) {
      tuttiComm_t comm = nullptr;
      TUTTI_ASSERT_OK(tuttiCommInitRank(&comm, kRanks, id, rank), nullptr);
      std::vector<float> warm(count, 1.0f);
      TUTTI_ASSERT_OK(
          tuttiAllReduce(warm.data(), warm.data(), count, tuttiFloat32, tuttiSum, comm, nullptr),
          comm);
      auto t0 = std::chrono::steady_clock::now();
      tuttiResult_t first = call(rank, comm, count);
      std::string firstText = tuttiGetLastError(comm);
      tuttiResult_t second = first;
      std::string secondText;
      if (first == tuttiSuccess) {
        std::vector<float> buf(count, 1.0f);
        second =
            tuttiAllReduce(buf.data(), buf.data(), count, tuttiFloat32, tuttiSum, comm, nullptr);
        secondText = tuttiGetLastError(comm);
      }
      double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      EXPECT_NE(second, tuttiSuccess) << "rank " << rank << ": the mismatch went unnoticed";
      EXPECT_LT(secs, kPromptSecs) << "rank " << rank << ": " << firstText << " / " << secondText;
      for (const std::string* text : {&firstText, &secondText}) {
        if (text->find("mismatched collective calls") == std::string::npos) continue;
        bool all = true;
        for (const auto& n : names) all &= text->find(n) != std::string::npos;
        if (all) detectors.add();
      }
      tuttiCommAbort(comm);
    });
    EXPECT_TRUE(r.allOk()) << r.describe();
    EXPECT_GE(detectors.load(), 1) << "no rank named the mismatched calls (count " << count << ")";
  }
};

std::vector<float> block(size_t n, int rank) {
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = static_cast<float>(rank * 1000 + i % 977);
  return v;
}

// E9: broadcast on rank 0, reduce on the others (same count and root).
TEST_P(MismatchAuto, BroadcastAgainstReduce) {
  for (size_t count : {size_t{1}, size_t{4096}, size_t{1} << 20})
    run(
        [](int rank, tuttiComm_t comm, size_t n) {
          std::vector<float> in = block(n, rank), out(n);
          return rank == 0
                     ? tuttiBroadcast(in.data(), out.data(), n, tuttiFloat32, 0, comm, nullptr)
                     : tuttiReduce(in.data(), out.data(), n, tuttiFloat32, tuttiSum, 0, comm,
                                   nullptr);
        },
        count, {"broadcast(count", "reduce(count"});
}

// E10: all-reduce on rank 1, broadcast on the others.
TEST_P(MismatchAuto, AllReduceAgainstBroadcast) {
  for (size_t count : {size_t{1}, size_t{4096}, size_t{1} << 20})
    run(
        [](int rank, tuttiComm_t comm, size_t n) {
          std::vector<float> in = block(n, rank), out(n);
          return rank == 1
                     ? tuttiAllReduce(in.data(), out.data(), n, tuttiFloat32, tuttiSum, comm,
                                      nullptr)
                     : tuttiBroadcast(in.data(), out.data(), n, tuttiFloat32, 0, comm, nullptr);
        },
        count, {"allreduce(count", "broadcast(count"});
}

// E10: all-to-all on rank 1, all-gather on the others (the same bytes move).
TEST_P(MismatchAuto, AllToAllAgainstAllGather) {
  for (size_t count : {size_t{1}, size_t{4096}, size_t{1} << 18})
    run(
        [](int rank, tuttiComm_t comm, size_t n) {
          std::vector<float> in = block(n * kRanks, rank), out(n * kRanks);
          return rank == 1 ? tuttiAllToAll(in.data(), out.data(), n, tuttiFloat32, comm, nullptr)
                           : tuttiAllGather(in.data(), out.data(), n, tuttiFloat32, comm, nullptr);
        },
        count, {"alltoall(count", "allgather(count"});
}

// E10: an all-gather count doubled on rank 2.
TEST_P(MismatchAuto, AllGatherCountDoubled) {
  for (size_t count : {size_t{1}, size_t{4096}, size_t{1} << 18})
    run(
        [](int rank, tuttiComm_t comm, size_t n) {
          const size_t mine = rank == 2 ? 2 * n : n;
          std::vector<float> in = block(mine, rank), out(mine * kRanks);
          return tuttiAllGather(in.data(), out.data(), mine, tuttiFloat32, comm, nullptr);
        },
        count, {"allgather(count"});
}

// E10: gather and scatter roots differ (rank 0 says 0, the others 1).
TEST_P(MismatchAuto, GatherRootsDiffer) {
  for (size_t count : {size_t{1}, size_t{4096}, size_t{1} << 18})
    run(
        [](int rank, tuttiComm_t comm, size_t n) {
          std::vector<float> in = block(n, rank), out(n * kRanks);
          return tuttiGather(in.data(), out.data(), n, tuttiFloat32, rank == 0 ? 0 : 1, comm,
                             nullptr);
        },
        count, {"gather(count"});
}

TEST_P(MismatchAuto, ScatterRootsDiffer) {
  for (size_t count : {size_t{1}, size_t{4096}, size_t{1} << 18})
    run(
        [](int rank, tuttiComm_t comm, size_t n) {
          std::vector<float> in = block(n * kRanks, rank), out(n);
          return tuttiScatter(in.data(), out.data(), n, tuttiFloat32, rank == 0 ? 0 : 1, comm,
                              nullptr);
        },
        count, {"scatter(count"});
}

INSTANTIATE_TEST_SUITE_P(Transports, MismatchAuto, ::testing::Values("shm", "tcp"),
                         [](const auto& info) { return std::string(info.param); });

}  // namespace
}  // namespace tutti::test
