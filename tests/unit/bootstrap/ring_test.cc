// BootstrapRing over thread ranks: the chords at powers of two, Bruck's all-gather and the
// dissemination barrier at rank counts around powers of two, mismatched calls and a peer that
// leaves.
#include "bootstrap/ring.h"

#include <gtest/gtest.h>

#include <atomic>
#include <string>
#include <vector>

#include "bootstrap/memory_store.h"
#include "common/error.h"
#include "harness/threads_harness.h"

namespace tutti::bootstrap {
namespace {

// Entries of different lengths (0 included), distinct per rank, byte and call.
std::vector<std::byte> entry(int rank, int call) {
  std::vector<std::byte> v(static_cast<size_t>((rank * 7 + call * 3) % 23));
  for (size_t i = 0; i < v.size(); ++i) v[i] = std::byte((rank * 131 + call * 17 + i * 7) % 251);
  return v;
}

void connectRing(BootstrapRing& ring, MemoryStore& store, int rank, int n) {
  ring.connect(store, "ring/" + std::to_string(rank), "ring/" + std::to_string((rank + 1) % n),
               "127.0.0.1", Deadline(30));
}

int ceilLog2(int n) {
  int k = 0;
  while ((1 << k) < n) ++k;
  return k;
}

class RingSizes : public ::testing::TestWithParam<int> {};

TEST_P(RingSizes, AllGatherAndBarrierInLogRounds) {
  const int n = GetParam();
  MemoryStore store;
  tutti::test::runThreads(n, [&](int rank) {
    BootstrapRing ring("ring test", rank, n);
    connectRing(ring, store, rank, n);
    EXPECT_EQ(ring.levels(), ceilLog2(n));
    for (int call = 0; call < 3; ++call) {
      auto all = ring.allGather(entry(rank, call), Deadline(30), "allGather");
      ASSERT_EQ(all.size(), static_cast<size_t>(n));
      for (int r = 0; r < n; ++r) ASSERT_EQ(all[r], entry(r, call)) << "rank " << r;
      ring.barrier(Deadline(30), "barrier");
    }
  });
}

// Around powers of two (a last round that carries fewer entries than the one before) and
// one count past 64, where seven levels of chords are set up at once by 65 threads.
INSTANTIATE_TEST_SUITE_P(Ranks, RingSizes, ::testing::Values(1, 2, 3, 4, 5, 7, 8, 9, 31, 65));

// A barrier is complete only once every rank has arrived: no rank leaves the barrier before
// the last one (held back 200 ms) has entered it.
TEST(Ring, BarrierWaitsForTheLastRank) {
  constexpr int n = 11;
  MemoryStore store;
  std::atomic<int> entered{0};
  tutti::test::runThreads(n, [&](int rank) {
    BootstrapRing ring("ring test", rank, n);
    connectRing(ring, store, rank, n);
    if (rank == 6) std::this_thread::sleep_for(std::chrono::milliseconds(200));
    entered.fetch_add(1);
    ring.barrier(Deadline(30), "barrier");
    EXPECT_EQ(entered.load(), n) << "rank " << rank << " left the barrier early";
  });
}

// Ranks that make different calls (one barrier, the others all-gathers) fail at once instead of
// hanging, the first to see the other call's frame with an error that says so.
TEST(Ring, MismatchedCallsFailWithAClearError) {
  constexpr int n = 4;
  MemoryStore store;
  std::vector<std::string> messages(n);
  std::vector<tuttiResult_t> codes(n, tuttiSuccess);
  tutti::test::runThreads(n, [&](int rank) {
    BootstrapRing ring("ring test", rank, n);
    connectRing(ring, store, rank, n);
    try {
      if (rank == 0) {
        ring.barrier(Deadline(10), "barrier");
      } else {
        ring.allGather(entry(rank, 0), Deadline(10), "allGather");
      }
    } catch (const Error& e) {
      codes[rank] = e.code();
      messages[rank] = e.what();
    }
  });
  for (int r = 0; r < n; ++r) EXPECT_NE(codes[r], tuttiSuccess) << "rank " << r;
  // Rank 0 waits for rank 1's arrival and receives its all-gather frame; the others then find
  // rank 0's connections closed (it sends them nothing either call would accept).
  EXPECT_EQ(codes[0], tuttiInternalError) << messages[0];
  EXPECT_NE(messages[0].find("rank 1 sent an all-gather's frame where this rank expected the "
                             "barrier's (the ranks made different bootstrap calls)"),
            std::string::npos)
      << messages[0];
  for (int r = 1; r < n; ++r)
    EXPECT_NE(messages[r].find("closed its connection"), std::string::npos) << messages[r];
}

// A rank that leaves after setup: the rank that needs its frame first names it, and no rank
// waits for the deadline.
TEST(Ring, APeerThatLeavesIsNamed) {
  constexpr int n = 8;
  constexpr int leaver = 5;
  MemoryStore store;
  std::vector<std::string> messages(n);
  std::vector<tuttiResult_t> codes(n, tuttiSuccess);
  std::vector<double> seconds(n);
  tutti::test::runThreads(n, [&](int rank) {
    BootstrapRing ring("ring test", rank, n);
    connectRing(ring, store, rank, n);
    ring.barrier(Deadline(10), "barrier");
    if (rank == leaver) return;  // its connections close
    auto t0 = std::chrono::steady_clock::now();
    try {
      ring.allGather(entry(rank, 1), Deadline(20), "allGather");
    } catch (const Error& e) {
      codes[rank] = e.code();
      messages[rank] = e.what();
    }
    seconds[rank] = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  });
  for (int r = 0; r < n; ++r) {
    if (r == leaver) continue;
    EXPECT_EQ(codes[r], tuttiRemoteError) << "rank " << r << ": " << messages[r];
    EXPECT_NE(messages[r].find("closed its connection"), std::string::npos) << messages[r];
    EXPECT_LT(seconds[r], 10.0) << "rank " << r;
  }
  // Rank 4 receives its first frame from rank 5.
  EXPECT_NE(messages[4].find("rank 5 (next on the bootstrap ring)"), std::string::npos)
      << messages[4];
}

TEST(Ring, RejectsRankCountsPastTheHelloField) {
  EXPECT_THROW(BootstrapRing("r", 0, 1 << 24), Error);
  EXPECT_THROW(BootstrapRing("r", 3, 3), Error);
}

}  // namespace
}  // namespace tutti::bootstrap
