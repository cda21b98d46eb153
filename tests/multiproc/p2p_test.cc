// Point-to-point send/recv and group calls over real processes, with each transport forced.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "comm_test_util.h"
#include "harness/fork_harness.h"
#include "tutti/tutti.h"

namespace tutti::test {
namespace {

uint8_t pattern(int from, int to, size_t i) {
  return static_cast<uint8_t>((from * 131 + to * 31 + i * 7 + (i >> 12)) & 0xff);
}

class P2p : public ::testing::TestWithParam<const char*> {
 protected:
  void SetUp() override { setenv("TUTTI_TRANSPORT", GetParam(), 1); }
  void TearDown() override { unsetenv("TUTTI_TRANSPORT"); }
};

// Every ordered pair exchanges 0 B, 1 B, odd sizes and a large message, data verified.
TEST_P(P2p, SizesBetweenEveryPair) {
  const int n = 3;
  const std::vector<size_t> sizes = {0, 1, 3, 4097, 1000003, size_t{64} << 20};
  tuttiUniqueId id = makeId();
  std::string transport = GetParam();
  auto result = runRanks(
      n,
      [&](int rank) {
        tuttiComm_t comm = nullptr;
        TUTTI_ASSERT_OK(tuttiCommInitRank(&comm, n, id, rank), nullptr);
        for (size_t bytes : sizes) {
          for (int a = 0; a < n; ++a) {
            for (int b = 0; b < n; ++b) {
              if (a == b || (rank != a && rank != b)) continue;
              std::vector<uint8_t> buf(bytes);
              if (rank == a) {
                for (size_t i = 0; i < bytes; ++i) buf[i] = pattern(a, b, i);
                TUTTI_ASSERT_OK(tuttiSend(buf.data(), bytes, tuttiUint8, b, comm, nullptr), comm);
              } else {
                TUTTI_ASSERT_OK(tuttiRecv(buf.data(), bytes, tuttiUint8, a, comm, nullptr), comm);
                for (size_t i = 0; i < bytes; ++i)
                  ASSERT_EQ(buf[i], pattern(a, b, i)) << bytes << " B from " << a << " at " << i;
              }
            }
          }
        }
        EXPECT_EQ(std::string(tuttiCommTransports(comm)), transport);
        TUTTI_ASSERT_OK(tuttiCommDestroy(comm), nullptr);
      },
      600);
  EXPECT_TRUE(result.allOk()) << result.describe();
}

// All pairs exchange at once inside a group (would deadlock without the group for large
// messages), for 2..8 ranks.
TEST_P(P2p, GroupedAllPairsExchange) {
  for (int n = 2; n <= 8; ++n) {
    tuttiUniqueId id = makeId();
    const size_t bytes = 3 * 1024 * 1024 + 5;
    auto result = runRanks(
        n,
        [&](int rank) {
          tuttiComm_t comm = nullptr;
          TUTTI_ASSERT_OK(tuttiCommInitRank(&comm, n, id, rank), nullptr);
          std::vector<std::vector<uint8_t>> out(n), in(n);
          TUTTI_ASSERT_OK(tuttiGroupStart(), nullptr);
          for (int p = 0; p < n; ++p) {
            out[p].resize(bytes);
            in[p].assign(bytes, 0);
            for (size_t i = 0; i < bytes; ++i) out[p][i] = pattern(rank, p, i);
            TUTTI_ASSERT_OK(tuttiSend(out[p].data(), bytes, tuttiUint8, p, comm, nullptr), comm);
            TUTTI_ASSERT_OK(tuttiRecv(in[p].data(), bytes, tuttiUint8, p, comm, nullptr), comm);
          }
          TUTTI_ASSERT_OK(tuttiGroupEnd(), comm);
          for (int p = 0; p < n; ++p)
            for (size_t i = 0; i < bytes; i += 997) ASSERT_EQ(in[p][i], pattern(p, rank, i));
          TUTTI_ASSERT_OK(tuttiCommDestroy(comm), nullptr);
        },
        600);
    EXPECT_TRUE(result.allOk()) << n << " ranks: " << result.describe();
  }
}

// Ring shift: everyone sends right and receives from the left, grouped.
TEST_P(P2p, RingShift) {
  const int n = 5;
  tuttiUniqueId id = makeId();
  auto result = runRanks(n, [&](int rank) {
    tuttiComm_t comm = nullptr;
    TUTTI_ASSERT_OK(tuttiCommInitRank(&comm, n, id, rank), nullptr);
    std::vector<int32_t> mine(100000, rank), got(100000, -1);
    for (int step = 0; step < 3; ++step) {
      TUTTI_ASSERT_OK(tuttiGroupStart(), nullptr);
      TUTTI_ASSERT_OK(
          tuttiSend(mine.data(), mine.size(), tuttiInt32, (rank + 1) % n, comm, nullptr), comm);
      TUTTI_ASSERT_OK(
          tuttiRecv(got.data(), got.size(), tuttiInt32, (rank + n - 1) % n, comm, nullptr), comm);
      TUTTI_ASSERT_OK(tuttiGroupEnd(), comm);
      ASSERT_EQ(got[0], (rank + n - 1 - step + 3 * n) % n) << "step " << step;
      ASSERT_EQ(got.back(), got[0]);
      mine = got;
    }
    TUTTI_ASSERT_OK(tuttiCommDestroy(comm), nullptr);
  });
  EXPECT_TRUE(result.allOk()) << result.describe();
}

// Mismatched sizes are an error naming both sizes, not a hang or corruption.
TEST_P(P2p, SizeMismatchIsInvalidUsage) {
  const int n = 2;
  tuttiUniqueId id = makeId();
  setenv("TUTTI_TIMEOUT", "2", 1);  // the sender's wait: the receiver refuses at the header
  auto result = runRanks(n, [&](int rank) {
    tuttiComm_t comm = nullptr;
    TUTTI_ASSERT_OK(tuttiCommInitRank(&comm, n, id, rank), nullptr);
    std::vector<uint8_t> buf(1000);
    if (rank == 0) {
      tuttiSend(buf.data(), 100, tuttiUint8, 1, comm, nullptr);
    } else {
      tuttiResult_t r = tuttiRecv(buf.data(), 1000, tuttiUint8, 0, comm, nullptr);
      EXPECT_EQ(r, tuttiInvalidUsage) << tuttiGetLastError(comm);
      std::string msg = tuttiGetLastError(comm);
      EXPECT_NE(msg.find("100"), std::string::npos) << msg;
      EXPECT_NE(msg.find("1000"), std::string::npos) << msg;
    }
    tuttiCommDestroy(comm);
  });
  unsetenv("TUTTI_TIMEOUT");
  EXPECT_TRUE(result.allOk()) << result.describe();
}

// Sends to self pair in call order with receives from self (no message); unpaired ones or
// pairs of different sizes are an error naming the counts or sizes, before any copy.
TEST(P2pSelf, PairsInOrderAndMismatchesAreInvalidUsage) {
  const int n = 2;
  tuttiUniqueId id = makeId();
  auto result = runRanks(n, [&](int rank) {
    tuttiComm_t comm = nullptr;
    TUTTI_ASSERT_OK(tuttiCommInitRank(&comm, n, id, rank), nullptr);
    std::vector<uint8_t> a(300), b(301), gotA(300, 0), gotB(301, 0);
    for (size_t i = 0; i < a.size(); ++i) a[i] = pattern(rank, rank, i);
    for (size_t i = 0; i < b.size(); ++i) b[i] = pattern(rank, rank + 7, i);
    TUTTI_ASSERT_OK(tuttiGroupStart(), nullptr);
    TUTTI_ASSERT_OK(tuttiSend(a.data(), a.size(), tuttiUint8, rank, comm, nullptr), comm);
    TUTTI_ASSERT_OK(tuttiSend(b.data(), b.size(), tuttiUint8, rank, comm, nullptr), comm);
    TUTTI_ASSERT_OK(tuttiRecv(gotA.data(), gotA.size(), tuttiUint8, rank, comm, nullptr), comm);
    TUTTI_ASSERT_OK(tuttiRecv(gotB.data(), gotB.size(), tuttiUint8, rank, comm, nullptr), comm);
    TUTTI_ASSERT_OK(tuttiGroupEnd(), comm);
    EXPECT_EQ(gotA, a);
    EXPECT_EQ(gotB, b);

    // One send to self, no receive.
    TUTTI_ASSERT_OK(tuttiGroupStart(), nullptr);
    TUTTI_ASSERT_OK(tuttiSend(a.data(), a.size(), tuttiUint8, rank, comm, nullptr), comm);
    EXPECT_EQ(tuttiGroupEnd(), tuttiInvalidUsage);
    std::string msg = tuttiGetLastError(comm);
    EXPECT_NE(msg.find("1 send(s) to self but 0 receive(s) from self"), std::string::npos) << msg;

    // Second pair of different sizes: nothing copied, not even the first pair.
    std::fill(gotA.begin(), gotA.end(), 0);
    TUTTI_ASSERT_OK(tuttiGroupStart(), nullptr);
    TUTTI_ASSERT_OK(tuttiSend(a.data(), a.size(), tuttiUint8, rank, comm, nullptr), comm);
    TUTTI_ASSERT_OK(tuttiRecv(gotA.data(), gotA.size(), tuttiUint8, rank, comm, nullptr), comm);
    TUTTI_ASSERT_OK(tuttiSend(a.data(), a.size(), tuttiUint8, rank, comm, nullptr), comm);
    TUTTI_ASSERT_OK(tuttiRecv(gotB.data(), gotB.size(), tuttiUint8, rank, comm, nullptr), comm);
    EXPECT_EQ(tuttiGroupEnd(), tuttiInvalidUsage);
    msg = tuttiGetLastError(comm);
    EXPECT_NE(msg.find("send to self of 300 B does not match the receive from self of 301 B"),
              std::string::npos)
        << msg;
    EXPECT_EQ(gotA, std::vector<uint8_t>(300, 0));
    tuttiCommDestroy(comm);
  });
  EXPECT_TRUE(result.allOk()) << result.describe();
}

INSTANTIATE_TEST_SUITE_P(Transports, P2p, ::testing::Values("shm", "tcp"),
                         [](const auto& info) { return std::string(info.param); });

}  // namespace
}  // namespace tutti::test
