// Bootstrap allGather / barrier over thread ranks, and missing ranks named on timeout.
#include "bootstrap/bootstrap.h"

#include <gtest/gtest.h>

#include <chrono>

#include "bootstrap/memory_store.h"
#include "bootstrap/prefix_store.h"
#include "bootstrap/tcp_store.h"
#include "common/error.h"
#include "harness/threads_harness.h"

namespace tutti::bootstrap {
namespace {

std::vector<std::byte> payload(int rank, int call) {
  std::vector<std::byte> v(static_cast<size_t>(rank % 5) * 7 + 1);
  for (size_t i = 0; i < v.size(); ++i) v[i] = std::byte(rank * 31 + call * 7 + i);
  return v;
}

class BootstrapSizes : public ::testing::TestWithParam<int> {};

TEST_P(BootstrapSizes, AllGatherAndBarrierRepeatedTags) {
  const int n = GetParam();
  auto store = std::make_shared<MemoryStore>();
  tutti::test::runThreads(n, [&](int rank) {
    Bootstrap b(std::make_shared<PrefixStore>(store, "c"), rank, n, "comm");
    for (int call = 0; call < 3; ++call) {
      auto all = b.allGather("same-tag", payload(rank, call), Deadline(10));
      ASSERT_EQ(all.size(), static_cast<size_t>(n));
      for (int r = 0; r < n; ++r) EXPECT_EQ(all[r], payload(r, call)) << "from " << r;
      b.barrier("same-tag", Deadline(10));
    }
  });
}

INSTANTIATE_TEST_SUITE_P(Ranks, BootstrapSizes, ::testing::Values(1, 2, 3, 5, 8, 16));

TEST(Bootstrap, OverTcpStore) {
  constexpr int n = 8;
  Secret secret = randomSecret();
  TcpStoreServer server("127.0.0.1:0", secret);
  tutti::test::runThreads(n, [&](int rank) {
    Bootstrap b(std::make_shared<TcpStore>(server.sockAddr(), secret, Deadline(5)), rank, n, "tcp");
    auto all = b.allGather("x", payload(rank, 0), Deadline(10));
    for (int r = 0; r < n; ++r) EXPECT_EQ(all[r], payload(r, 0));
    b.barrier("end", Deadline(10));
  });
}

void expectMissing(const std::string& what, double deadlineSec, std::vector<int> absent, int n) {
  auto store = std::make_shared<MemoryStore>();
  std::vector<std::string> messages(n);
  std::vector<double> seconds(n);
  tutti::test::runThreads(n, [&](int rank) {
    if (std::find(absent.begin(), absent.end(), rank) != absent.end()) return;
    Bootstrap b(store, rank, n, "comm0");
    auto t0 = std::chrono::steady_clock::now();
    try {
      if (what == "allGather") {
        b.allGather("peers", payload(rank, 0), Deadline(deadlineSec));
      } else {
        b.barrier("peers", Deadline(deadlineSec));
      }
      ADD_FAILURE() << "rank " << rank << " did not time out";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), tuttiTimeout);
      messages[rank] = e.what();
    }
    seconds[rank] = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  });
  std::string list;
  for (int r : absent) list += (list.empty() ? "" : ", ") + std::to_string(r);
  std::string expected = "rank(s) " + list + " of " + std::to_string(n) + " did not arrive at " +
                         what + " 'peers' within";
  for (int r = 0; r < n; ++r) {
    if (std::find(absent.begin(), absent.end(), r) != absent.end()) continue;
    EXPECT_NE(messages[r].find(expected), std::string::npos) << messages[r];
    EXPECT_GE(seconds[r], deadlineSec - 0.01);
    EXPECT_LT(seconds[r], deadlineSec + 2.0);
  }
}

TEST(Bootstrap, MissingRankIsNamedInAllGather) { expectMissing("allGather", 0.5, {3}, 4); }
TEST(Bootstrap, MissingRanksAreNamedInBarrier) { expectMissing("barrier", 0.5, {3, 5}, 8); }

TEST(Bootstrap, AbortUnblocksAllGather) {
  auto store = std::make_shared<MemoryStore>();
  Bootstrap b(store, 0, 2, "c");
  tuttiResult_t code = tuttiSuccess;
  std::thread t([&] {
    try {
      b.allGather("t", payload(0, 0), Deadline(30));
    } catch (const Error& e) {
      code = e.code();
    }
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  b.abort();
  t.join();
  EXPECT_EQ(code, tuttiRemoteError);
}

TEST(Bootstrap, BadArguments) {
  auto store = std::make_shared<MemoryStore>();
  EXPECT_THROW(Bootstrap(store, 2, 2, "c"), Error);
  EXPECT_THROW(Bootstrap(store, -1, 2, "c"), Error);
  EXPECT_THROW(Bootstrap(nullptr, 0, 1, "c"), Error);
}

}  // namespace
}  // namespace tutti::bootstrap
