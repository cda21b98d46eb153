// tuttiRecvAny (a receive from any source) over real processes, shm and tcp: messages from
// every peer in the order they come, first contacts, a collective's message left for its
// collective, a message of another size left in place, host streams, and the refusals.
#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "comm_test_util.h"
#include "harness/fork_harness.h"
#include "tutti/tutti.h"

namespace tutti::test {
namespace {

constexpr uint8_t kGuard = 0xa5;
constexpr size_t kGuardBytes = 64;

// Byte i of message m from rank `from` (distinct per sender, message and element).
uint8_t pattern(int from, int m, size_t i) {
  return static_cast<uint8_t>((from * 167 + m * 59 + i * 13 + (i >> 10) * 7 + 1) & 0xff);
}

std::vector<uint8_t> message(int from, int m, size_t bytes) {
  std::vector<uint8_t> v(bytes);
  for (size_t i = 0; i < bytes; ++i) v[i] = pattern(from, m, i);
  return v;
}

// A receive buffer with guard bytes after `bytes`.
struct Guarded {
  explicit Guarded(size_t bytes) : bytes(bytes), mem(bytes + kGuardBytes, kGuard) {}
  uint8_t* data() { return mem.data(); }
  bool guardsIntact() const {
    for (size_t i = bytes; i < mem.size(); ++i)
      if (mem[i] != kGuard) return false;
    return true;
  }
  size_t bytes;
  std::vector<uint8_t> mem;
};

void allReduceCheck(tuttiComm_t comm, int rank, int n, int round) {
  std::vector<int64_t> v(1000);
  for (size_t i = 0; i < v.size(); ++i) v[i] = rank * 1000003 + static_cast<int64_t>(i) + round;
  TUTTI_ASSERT_OK(tuttiAllReduce(v.data(), v.data(), v.size(), tuttiInt64, tuttiSum, comm, nullptr),
                  comm);
  for (size_t i = 0; i < v.size(); ++i) {
    int64_t want = 0;
    for (int r = 0; r < n; ++r) want += r * 1000003 + static_cast<int64_t>(i) + round;
    ASSERT_EQ(v[i], want) << "all-reduce after the receives, element " << i;
  }
}

class RecvAny : public ::testing::TestWithParam<const char*> {};

// Rank 0 receives every message of ranks 1..3 from any source; each sender sends its messages
// in order after random pauses. Round 0 makes the first contacts (no connection to rank 0
// exists yet); round 1 runs over the connections made, with 1 MiB messages.
TEST_P(RecvAny, EveryPeerInTheOrderMessagesCome) {
  const int n = 4;
  const int perSender = 3;
  const size_t sizes[2] = {4099, size_t{1} << 20};
  tuttiUniqueId id = makeId();
  const unsigned seed = static_cast<unsigned>(std::random_device{}());
  auto result = runRanks(
      n,
      [&](int rank) {
        tuttiComm_t comm = initComm(n, id, rank, GetParam());
        ASSERT_NE(comm, nullptr);
        for (int round = 0; round < 2; ++round) {
          const size_t bytes = sizes[round];
          if (rank != 0) {
            std::mt19937 rng(seed + rank * 7919 + round);
            for (int m = 0; m < perSender; ++m) {
              usleep(rng() % 30000);
              std::vector<uint8_t> out = message(rank, round * perSender + m, bytes);
              TUTTI_ASSERT_OK(tuttiSend(out.data(), bytes, tuttiUint8, 0, comm, nullptr), comm);
            }
          } else {
            std::vector<int> next(n, 0);  // the next message index expected from each sender
            for (int k = 0; k < perSender * (n - 1); ++k) {
              Guarded in(bytes);
              int from = -1;
              TUTTI_ASSERT_OK(tuttiRecvAny(in.data(), bytes, tuttiUint8, &from, comm, nullptr),
                              comm);
              ASSERT_GE(from, 1);
              ASSERT_LT(from, n);
              ASSERT_LT(next[from], perSender) << "too many messages from rank " << from;
              const int m = round * perSender + next[from]++;
              for (size_t i = 0; i < bytes; ++i)
                ASSERT_EQ(in.mem[i], pattern(from, m, i))
                    << "message " << m << " of rank " << from << " byte " << i;
              ASSERT_TRUE(in.guardsIntact()) << "bytes written past the receive buffer";
            }
          }
          allReduceCheck(comm, rank, n, round);
        }
        TUTTI_ASSERT_OK(tuttiCommDestroy(comm), nullptr);
      },
      120);
  EXPECT_TRUE(result.allOk()) << result.describe() << " (seed " << seed << ")";
}

// Rank 1 is already in an all-reduce (its message to rank 0 waits at the connection's head)
// when rank 0 receives from any source; rank 2 sends 200 ms later. The receive takes rank 2's
// message, and the all-reduce then completes with exact sums.
TEST_P(RecvAny, LeavesACollectivesMessageForTheCollective) {
  const int n = 3;
  tuttiUniqueId id = makeId();
  auto result = runRanks(
      n,
      [&](int rank) {
        tuttiComm_t comm = initComm(n, id, rank, GetParam());
        ASSERT_NE(comm, nullptr);
        // Every rank sends to every other: rank 1's first message goes to rank 0.
        TUTTI_ASSERT_OK(tuttiCommSetAlgorithm(comm, "allreduce:naive"), comm);
        allReduceCheck(comm, rank, n, 0);  // every pair connected
        const size_t bytes = 777;
        if (rank == 0) {
          Guarded in(bytes);
          int from = -1;
          TUTTI_ASSERT_OK(tuttiRecvAny(in.data(), bytes, tuttiUint8, &from, comm, nullptr), comm);
          EXPECT_EQ(from, 2);
          for (size_t i = 0; i < bytes; ++i) ASSERT_EQ(in.mem[i], pattern(2, 0, i)) << i;
          EXPECT_TRUE(in.guardsIntact());
        } else if (rank == 2) {
          usleep(200000);
          std::vector<uint8_t> out = message(2, 0, bytes);
          TUTTI_ASSERT_OK(tuttiSend(out.data(), bytes, tuttiUint8, 0, comm, nullptr), comm);
        }
        allReduceCheck(comm, rank, n, 1);
        TUTTI_ASSERT_OK(tuttiCommDestroy(comm), nullptr);
      },
      120);
  EXPECT_TRUE(result.allOk()) << result.describe();
}

// A message of another size is refused and stays: a tuttiRecv of its size then takes it, and
// the communicator goes on. On a host stream, *peer is set when the stream reaches the call.
TEST_P(RecvAny, OtherSizeStaysAndHostStreamsSetThePeer) {
  const int n = 2;
  tuttiUniqueId id = makeId();
  auto result = runRanks(
      n,
      [&](int rank) {
        tuttiComm_t comm = initComm(n, id, rank, GetParam());
        ASSERT_NE(comm, nullptr);
        const size_t bytes = 100;
        if (rank == 1) {
          for (int m = 0; m < 2; ++m) {
            std::vector<uint8_t> out = message(1, m, bytes);
            TUTTI_ASSERT_OK(tuttiSend(out.data(), bytes, tuttiUint8, 0, comm, nullptr), comm);
          }
        } else {
          Guarded small(bytes / 2);
          int from = -1;
          EXPECT_EQ(tuttiRecvAny(small.data(), bytes / 2, tuttiUint8, &from, comm, nullptr),
                    tuttiInvalidUsage);
          EXPECT_NE(std::string(tuttiGetLastError(comm)).find("has 100 bytes"), std::string::npos)
              << tuttiGetLastError(comm);
          EXPECT_EQ(from, -1);
          Guarded in(bytes);
          TUTTI_ASSERT_OK(tuttiRecv(in.data(), bytes, tuttiUint8, 1, comm, nullptr), comm);
          for (size_t i = 0; i < bytes; ++i) ASSERT_EQ(in.mem[i], pattern(1, 0, i)) << i;
          tuttiStream_t stream = nullptr;
          TUTTI_ASSERT_OK(tuttiStreamCreate(&stream), comm);
          Guarded second(bytes);
          TUTTI_ASSERT_OK(tuttiRecvAny(second.data(), bytes, tuttiUint8, &from, comm, stream),
                          comm);
          TUTTI_ASSERT_OK(tuttiStreamSynchronize(stream), comm);
          EXPECT_EQ(from, 1);
          for (size_t i = 0; i < bytes; ++i) ASSERT_EQ(second.mem[i], pattern(1, 1, i)) << i;
          EXPECT_TRUE(second.guardsIntact() && in.guardsIntact());
          TUTTI_ASSERT_OK(tuttiStreamDestroy(stream), comm);
        }
        allReduceCheck(comm, rank, n, 0);
        TUTTI_ASSERT_OK(tuttiCommDestroy(comm), nullptr);
      },
      120);
  EXPECT_TRUE(result.allOk()) << result.describe();
}

// Refused: in a group, without a peer slot; and no message within the timeout is tuttiTimeout.
TEST_P(RecvAny, RefusalsAndTimeout) {
  const int n = 2;
  tuttiUniqueId id = makeId();
  auto result = runRanks(
      n,
      [&](int rank) {
        tuttiComm_t comm = initComm(n, id, rank, GetParam(), 500);
        ASSERT_NE(comm, nullptr);
        uint8_t b[8] = {};
        int from = -1;
        EXPECT_EQ(tuttiRecvAny(b, 8, tuttiUint8, nullptr, comm, nullptr), tuttiInvalidArgument);
        ASSERT_EQ(tuttiGroupStart(), tuttiSuccess);
        EXPECT_EQ(tuttiRecvAny(b, 8, tuttiUint8, &from, comm, nullptr), tuttiInvalidUsage);
        EXPECT_NE(std::string(tuttiGetLastError(comm)).find("group"), std::string::npos);
        ASSERT_EQ(tuttiGroupEnd(), tuttiSuccess);
        allReduceCheck(comm, rank, n, 0);  // nothing was left behind by the refusals
        if (rank == 0) {
          const auto t0 = std::chrono::steady_clock::now();
          EXPECT_EQ(tuttiRecvAny(b, 8, tuttiUint8, &from, comm, nullptr), tuttiTimeout);
          const double s =
              std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
          EXPECT_LT(s, 5.0) << "the 0.5 s timeout took " << s << " s";
          EXPECT_NE(std::string(tuttiGetLastError(comm)).find("from any rank"), std::string::npos)
              << tuttiGetLastError(comm);
        } else {
          usleep(1500000);  // alive and connected while rank 0 waits (a closed peer fails it)
        }
        tuttiCommDestroy(comm);
      },
      60);
  EXPECT_TRUE(result.allOk()) << result.describe();
}

INSTANTIATE_TEST_SUITE_P(Transports, RecvAny, ::testing::Values("shm", "tcp"),
                         [](const auto& info) { return std::string(info.param); });

}  // namespace
}  // namespace tutti::test
