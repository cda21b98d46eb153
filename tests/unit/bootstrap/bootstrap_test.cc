// Bootstrap allGather / barrier over thread ranks, and missing ranks named on timeout.
#include "bootstrap/bootstrap.h"

#include <gtest/gtest.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <thread>

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

// (ranks, ring 1 / store 0)
class BootstrapSizes : public ::testing::TestWithParam<std::tuple<int, int>> {};

TEST_P(BootstrapSizes, AllGatherAndBarrierRepeatedTags) {
  const auto [n, ring] = GetParam();
  auto store = std::make_shared<MemoryStore>();
  tutti::test::runThreads(n, [&, ring = ring](int rank) {
    Bootstrap b(std::make_shared<PrefixStore>(store, "c"), rank, n, "comm", ring);
    EXPECT_EQ(b.usesRing(), ring == 1);
    for (int call = 0; call < 3; ++call) {
      auto all = b.allGather("same-tag", payload(rank, call), Deadline(10));
      ASSERT_EQ(all.size(), static_cast<size_t>(n));
      for (int r = 0; r < n; ++r) EXPECT_EQ(all[r], payload(r, call)) << "from " << r;
      b.barrier("same-tag", Deadline(10));
    }
  });
}

INSTANTIATE_TEST_SUITE_P(Ranks, BootstrapSizes,
                         ::testing::Combine(::testing::Values(1, 2, 3, 5, 8, 16),
                                            ::testing::Values(1, 0)));

// Requests at the store server and the keys it still holds, ring vs store all-gather: three
// all-gathers, a barrier and leave at 16 ranks.
TcpStoreStats serveOneJob(int n, int ring) {
  Secret secret = randomSecret();
  TcpStoreServer server("127.0.0.1:0", secret);
  tutti::test::runThreads(n, [&](int rank) {
    Bootstrap b(std::make_shared<TcpStore>(server.sockAddr(), secret, Deadline(5)), rank, n, "job",
                ring);
    for (int call = 0; call < 3; ++call) {
      auto all = b.allGather("x", payload(rank, call), Deadline(20));
      for (int r = 0; r < n; ++r) EXPECT_EQ(all[r], payload(r, call));
    }
    b.barrier("end", Deadline(20));
    b.leave(Deadline(20));
  });
  return server.stats();
}

TEST(Bootstrap, RingAskTheStoreOncePerRankPerAllGather) {
  constexpr int n = 16;
  TcpStoreStats ring = serveOneJob(n, 1);
  TcpStoreStats store = serveOneJob(n, 0);
  // Ring: ring setup (set + get), 3 arrival sets (2 all-gathers and the barrier, which goes
  // around the ring too), leave (one set each, n - 1 gets by rank 0, one erase), the erases
  // of earlier calls by rank 0.
  EXPECT_LE(ring.requests, static_cast<uint64_t>(10 * n)) << "ring";
  // Store: every rank gets the n - 1 others' entries three times.
  EXPECT_GE(store.requests, static_cast<uint64_t>(3 * n * (n - 1))) << "store";
  EXPECT_EQ(ring.byOp[2] /* GET */, static_cast<uint64_t>(n + (n - 1)));
  // Everything of the job is erased once everyone has left.
  EXPECT_EQ(ring.keys, 0u);
  EXPECT_EQ(store.keys, 0u);
  EXPECT_EQ(ring.bytes, 0u);
  EXPECT_GE(ring.peakKeys, static_cast<uint64_t>(n));
  EXPECT_GT(ring.peakBytes, 0u);
}

TEST(Bootstrap, RingCarriesLargeEntriesBothWaysAtOnce) {
  // Entries far larger than socket buffers: every rank sends and receives concurrently.
  constexpr int n = 4;
  auto store = std::make_shared<MemoryStore>();
  tutti::test::runThreads(n, [&](int rank) {
    Bootstrap b(store, rank, n, "big", 1);
    std::vector<std::byte> mine((3 << 20) + rank * 1000);
    for (size_t i = 0; i < mine.size(); ++i) mine[i] = std::byte((i * 7 + rank * 13) % 251);
    auto all = b.allGather("big", mine, Deadline(60));
    for (int r = 0; r < n; ++r) {
      ASSERT_EQ(all[r].size(), (3u << 20) + r * 1000u);
      for (size_t i = 0; i < all[r].size(); i += 4099)
        ASSERT_EQ(all[r][i], std::byte((i * 7 + r * 13) % 251)) << r << " " << i;
    }
    auto empty = b.allGather("empty", {}, Deadline(10));  // zero-byte entries
    for (int r = 0; r < n; ++r) EXPECT_TRUE(empty[r].empty());
  });
}

// A connection to a rank's ring port that does not carry its token is refused, and the real
// previous rank still gets in. Rank 0 starts only after the stranger has connected, so rank
// 1 finds the stranger first in its accept queue.
TEST(Bootstrap, RingRefusesAStrangersConnection) {
  auto store = std::make_shared<MemoryStore>();
  std::vector<std::vector<std::byte>> got0, got1;
  std::thread r1([&] {
    Bootstrap b(store, 1, 2, "s", 1);
    got1 = b.allGather("x", payload(1, 0), Deadline(20));
  });
  std::string published = store->getString("s/0/x/1", Deadline(10));  // "<addr>|<token>"
  SockAddr addr = SockAddr::parse(published.substr(0, published.find('|')), "rank 1's ring");
  int fd = ::socket(addr.family(), SOCK_STREAM | SOCK_CLOEXEC, 0);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(::connect(fd, addr.sa(), addr.len), 0) << std::strerror(errno);
  std::string token = published.substr(published.find('|') + 1);
  std::string wrong(32, token[0] == 'a' ? 'b' : 'a');
  std::string hello = std::string("TUTTIRNG") + std::string(4, '\0') + wrong;  // "rank 0"
  ASSERT_EQ(::send(fd, hello.data(), hello.size(), MSG_NOSIGNAL), ssize_t(hello.size()));
  std::thread r0([&] {
    Bootstrap b(store, 0, 2, "s", 1);
    got0 = b.allGather("x", payload(0, 0), Deadline(20));
  });
  r0.join();
  r1.join();
  char c;
  EXPECT_EQ(::recv(fd, &c, 1, 0), 0);  // rank 1 closed the stranger's connection
  ::close(fd);
  ASSERT_EQ(got0.size(), 2u);
  ASSERT_EQ(got1.size(), 2u);
  EXPECT_EQ(got0[1], payload(1, 0));
  EXPECT_EQ(got1[0], payload(0, 0));
}

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

void expectMissing(const std::string& what, double deadlineSec, std::vector<int> absent, int n,
                   int ring = 1) {
  auto store = std::make_shared<MemoryStore>();
  std::vector<std::string> messages(n);
  std::vector<double> seconds(n);
  tutti::test::runThreads(n, [&](int rank) {
    if (std::find(absent.begin(), absent.end(), rank) != absent.end()) return;
    Bootstrap b(store, rank, n, "comm0", ring);
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

TEST(Bootstrap, MissingRankIsNamedInAllGather) {
  expectMissing("allGather", 0.5, {3}, 4);
  expectMissing("allGather", 0.5, {1, 4}, 6);
  expectMissing("allGather", 0.5, {3}, 4, 0);
}
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
