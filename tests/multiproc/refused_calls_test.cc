// Calls refused for their arguments never let a collective run on bad input (issue 68):
// - F7: V-collectives whose receive blocks overlap (every displacement 0) are
//   tuttiInvalidArgument on every rank, the receive buffer untouched; blocks that touch, and
//   empty blocks at one displacement, are accepted with exact results.
// - F8: a call refused inside a group makes tuttiGroupEnd return its code and run none of the
//   group's calls (the outputs untouched); the communicator then works on. Where one rank
//   alone refused a call, it fails at once and the other rank's group fails within the
//   timeout naming it.
// - F3: a V-collective whose counts disagree, caught by one receiver (tuttiInvalidUsage), fails
//   its communicator: a rank waiting on it fails at once naming it instead of waiting for the
//   timeout, and so does every later call.
// - A bitwise op (band, bor, bxor) on a floating type is tuttiInvalidArgument at every entry
//   point that takes an op, naming the op and the type; the output stays untouched and the
//   communicator works on (bxor on int32, exact).
// Real processes over shm and tcp (rotated by case).
#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "comm_test_util.h"
#include "harness/fork_harness.h"
#include "tutti/tutti.h"

namespace tutti::test {
namespace {

constexpr int kRanks = 2;
constexpr int32_t kSentinel = -12345;

// Element i of call k on rank r: distinct per rank, call and element.
int32_t input(int r, int k, size_t i) {
  return static_cast<int32_t>(100000 * k + 1000 * r + static_cast<int32_t>(i * i % 997 + i));
}

bool untouched(const std::vector<int32_t>& v) {
  for (int32_t x : v)
    if (x != kSentinel) return false;
  return true;
}

void expectRefused(tuttiResult_t r, tuttiComm_t comm, const char* named) {
  EXPECT_EQ(r, tuttiInvalidArgument) << tuttiGetLastError(comm);
  EXPECT_NE(std::string(tuttiGetLastError(comm)).find(named), std::string::npos)
      << tuttiGetLastError(comm);
}

void runOverlapping(const char* transport) {
  tuttiUniqueId id = makeId();
  auto result = runRanks(kRanks, [&](int rank) {
    tuttiComm_t comm = initComm(kRanks, id, rank, transport, 10000);
    ASSERT_NE(comm, nullptr);
    std::vector<int32_t> send(8), recv(16, kSentinel);
    for (size_t i = 0; i < send.size(); ++i) send[i] = input(rank, 1, i);
    const size_t counts[kRanks] = {8, 8}, overlapping[kRanks] = {0, 0}, half[kRanks] = {0, 4};
    expectRefused(tuttiAllGatherV(send.data(), 8, recv.data(), counts, overlapping, tuttiInt32,
                                  comm, nullptr),
                  comm, "receive blocks overlap");
    expectRefused(
        tuttiAllGatherV(send.data(), 8, recv.data(), counts, half, tuttiInt32, comm, nullptr), comm,
        "displs[1] = 4 lies inside block 0");
    expectRefused(tuttiAllToAllV(send.data(), counts, half, recv.data(), counts, overlapping,
                                 tuttiInt32, comm, nullptr),
                  comm, "rdispls");
    expectRefused(tuttiGatherV(send.data(), 8, recv.data(), counts, overlapping, tuttiInt32, rank,
                               comm, nullptr),
                  comm, "receive blocks overlap");  // every rank is its own root here: refused
    EXPECT_TRUE(untouched(recv));
    // Touching blocks in reverse order, and an empty block at a used displacement, are fine.
    const size_t reversed[kRanks] = {8, 0}, withEmpty[kRanks] = {8, 0}, emptyAt[kRanks] = {0, 0};
    TUTTI_ASSERT_OK(
        tuttiAllGatherV(send.data(), 8, recv.data(), counts, reversed, tuttiInt32, comm, nullptr),
        comm);
    for (int q = 0; q < kRanks; ++q)
      for (size_t i = 0; i < 8; ++i)
        ASSERT_EQ(recv[reversed[q] + i], input(q, 1, i)) << "block " << q << " element " << i;
    std::vector<int32_t> one(8, kSentinel);
    const size_t mine = rank == 0 ? 8 : 0;
    TUTTI_ASSERT_OK(tuttiAllGatherV(send.data(), mine, one.data(), withEmpty, emptyAt, tuttiInt32,
                                    comm, nullptr),
                    comm);
    for (size_t i = 0; i < 8; ++i) ASSERT_EQ(one[i], input(0, 1, i));
    TUTTI_ASSERT_OK(tuttiCommDestroy(comm), nullptr);
  });
  EXPECT_RANKS_OK(result);
}

TEST(RefusedCalls, OverlappingReceiveBlocksShm) { runOverlapping("shm"); }
TEST(RefusedCalls, OverlappingReceiveBlocksTcp) { runOverlapping("tcp"); }

// Every rank's group holds a valid all-reduce, a refused one (an invalid datatype) and a send.
void runRefusedGroupOnEveryRank(const char* transport) {
  tuttiUniqueId id = makeId();
  auto result = runRanks(kRanks, [&](int rank) {
    tuttiComm_t comm = initComm(kRanks, id, rank, transport, 10000);
    ASSERT_NE(comm, nullptr);
    std::vector<int32_t> in(100), out(100, kSentinel), sent(4, 7), got(4, kSentinel);
    for (size_t i = 0; i < in.size(); ++i) in[i] = input(rank, 2, i);
    TUTTI_ASSERT_OK(tuttiGroupStart(), nullptr);
    TUTTI_ASSERT_OK(tuttiAllReduce(in.data(), out.data(), 100, tuttiInt32, tuttiSum, comm, nullptr),
                    comm);
    EXPECT_EQ(tuttiAllReduce(in.data(), out.data(), 100, static_cast<tuttiDataType_t>(99), tuttiSum,
                             comm, nullptr),
              tuttiInvalidArgument);
    TUTTI_ASSERT_OK(tuttiSend(sent.data(), 4, tuttiInt32, 1 - rank, comm, nullptr), comm);
    TUTTI_ASSERT_OK(tuttiRecv(got.data(), 4, tuttiInt32, 1 - rank, comm, nullptr), comm);
    EXPECT_EQ(tuttiGroupEnd(), tuttiInvalidArgument);
    const std::string text = tuttiGetLastError(nullptr);
    EXPECT_NE(text.find("refused"), std::string::npos) << text;
    EXPECT_NE(text.find("invalid datatype"), std::string::npos) << text;
    EXPECT_NE(text.find("3 recorded call(s) were not run"), std::string::npos) << text;
    EXPECT_TRUE(untouched(out));
    EXPECT_TRUE(untouched(got));
    // The communicator works on, with exact results.
    TUTTI_ASSERT_OK(tuttiAllReduce(in.data(), out.data(), 100, tuttiInt32, tuttiSum, comm, nullptr),
                    comm);
    for (size_t i = 0; i < out.size(); ++i) ASSERT_EQ(out[i], input(0, 2, i) + input(1, 2, i));
    TUTTI_ASSERT_OK(tuttiCommDestroy(comm), nullptr);
  });
  EXPECT_RANKS_OK(result);
}

TEST(RefusedCalls, GroupWithARefusedCallRunsNothingShm) { runRefusedGroupOnEveryRank("shm"); }
TEST(RefusedCalls, GroupWithARefusedCallRunsNothingTcp) { runRefusedGroupOnEveryRank("tcp"); }

// Rank 1 alone records a send to a rank that does not exist: its group fails at once; it then
// aborts, and rank 0's group fails within the timeout naming rank 1.
TEST(RefusedCalls, OneRankRefusedFailsThePeerNamingIt) {
  tuttiUniqueId id = makeId();
  auto result = runRanks(kRanks, [&](int rank) {
    tuttiComm_t comm = initComm(kRanks, id, rank, "shm", 3000);
    ASSERT_NE(comm, nullptr);
    std::vector<int32_t> in(64, rank + 1), out(64, kSentinel);
    const auto t0 = std::chrono::steady_clock::now();
    TUTTI_ASSERT_OK(tuttiGroupStart(), nullptr);
    TUTTI_ASSERT_OK(tuttiAllReduce(in.data(), out.data(), 64, tuttiInt32, tuttiSum, comm, nullptr),
                    comm);
    if (rank == 1) {
      EXPECT_EQ(tuttiSend(in.data(), 4, tuttiInt32, 5, comm, nullptr), tuttiInvalidArgument);
    }
    const tuttiResult_t r = tuttiGroupEnd();
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    const std::string text = tuttiGetLastError(nullptr);
    EXPECT_NE(r, tuttiSuccess);
    if (rank == 1) {
      EXPECT_EQ(r, tuttiInvalidArgument) << text;
      EXPECT_LT(seconds, 1.0);
      EXPECT_TRUE(untouched(out));
      tuttiCommAbort(comm);
    } else {
      EXPECT_NE(text.find("rank 1"), std::string::npos) << text;
      EXPECT_LT(seconds, 2 * 3.0) << text;
    }
    tuttiCommDestroy(comm);
  });
  EXPECT_RANKS_OK(result);
}

// F3: rank 0 sends rank 1 three elements where rank 1 expects five. Rank 1 fails with the size
// mismatch; ranks 0 and 2 succeed (their blocks arrived) or fail within 2 s (TUTTI_TIMEOUT 20 s)
// naming rank 1, and the next call fails within 2 s on every rank, naming rank 1.
void runVMismatch(const char* transport) {
  const int n = 3;
  tuttiUniqueId id = makeId();
  auto result = runRanks(n, [&](int rank) {
    tuttiComm_t comm = initComm(n, id, rank, transport, 20000);
    ASSERT_NE(comm, nullptr);
    std::vector<int32_t> s(32, rank + 1), r(32, kSentinel);
    std::vector<size_t> sc = {2, 2, 2}, sd = {0, 8, 16}, rc = {2, 2, 2}, rd = {0, 8, 16};
    if (rank == 0) sc[1] = 3;  // sends 3 to rank 1 ...
    if (rank == 1) rc[0] = 5;  // ... which expects 5
    const auto t0 = std::chrono::steady_clock::now();
    const tuttiResult_t res = tuttiAllToAllV(s.data(), sc.data(), sd.data(), r.data(), rc.data(),
                                             rd.data(), tuttiInt32, comm, nullptr);
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    const std::string text = tuttiGetLastError(comm);
    if (rank == 1) {
      EXPECT_EQ(res, tuttiInvalidUsage) << text;
    } else if (res != tuttiSuccess) {  // a rank whose own blocks all arrived may succeed
      EXPECT_NE(text.find("rank 1"), std::string::npos) << text;
    }
    EXPECT_LT(seconds, 2.0) << "rank " << rank << ": " << text;
    // Rank 1's communicator failed: the next call fails on every rank at once, naming rank 1
    // (before, rank 1 went on with a message's bytes left unread in its connection).
    const auto t1 = std::chrono::steady_clock::now();
    EXPECT_NE(tuttiAllReduce(s.data(), r.data(), 4, tuttiInt32, tuttiSum, comm, nullptr),
              tuttiSuccess);
    const std::string next = tuttiGetLastError(comm);
    EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - t1).count(), 2.0)
        << next;
    EXPECT_NE(next.find("rank 1"), std::string::npos) << next;
    tuttiCommDestroy(comm);
  });
  EXPECT_RANKS_OK(result);
}

// The entry points that take an op refuse a floating type with a bitwise op before anything
// moves (on every rank alike: no peer waits), then bxor on int32 runs.
TEST(RefusedCalls, BitwiseOpOnAFloatingTypeShm) {
  tuttiUniqueId id = makeId();
  auto result = runRanks(kRanks, [&](int rank) {
    tuttiComm_t comm = initComm(kRanks, id, rank, "shm", 10000);
    ASSERT_NE(comm, nullptr);
    std::vector<int32_t> in(2 * 16), out(2 * 16, kSentinel);
    for (size_t i = 0; i < in.size(); ++i) in[i] = input(rank, 3, i);
    expectRefused(tuttiAllReduce(in.data(), out.data(), 16, tuttiFloat32, tuttiBxor, comm, nullptr),
                  comm, "bxor is not defined on float");
    expectRefused(tuttiAllReduce(in.data(), out.data(), 16, tuttiFloat16, tuttiBand, comm, nullptr),
                  comm, "band is not defined on half");
    expectRefused(tuttiReduce(in.data(), out.data(), 16, tuttiFloat64, tuttiBor, 0, comm, nullptr),
                  comm, "bor is not defined on double");
    expectRefused(
        tuttiReduceScatter(in.data(), out.data(), 8, tuttiBfloat16, tuttiBxor, comm, nullptr), comm,
        "bxor is not defined on bfloat16");
    const size_t counts[kRanks] = {8, 8}, displs[kRanks] = {0, 8};
    expectRefused(tuttiReduceScatterV(in.data(), out.data(), counts, displs, tuttiFloat32,
                                      tuttiBand, comm, nullptr),
                  comm, "band is not defined on float");
    EXPECT_TRUE(untouched(out));
    TUTTI_ASSERT_OK(tuttiAllReduce(in.data(), out.data(), 16, tuttiInt32, tuttiBxor, comm, nullptr),
                    comm);
    for (size_t i = 0; i < 16; ++i) ASSERT_EQ(out[i], input(0, 3, i) ^ input(1, 3, i));
    TUTTI_ASSERT_OK(tuttiCommDestroy(comm), nullptr);
  });
  EXPECT_RANKS_OK(result);
}

TEST(RefusedCalls, VCountMismatchFailsEveryRankPromptlyShm) { runVMismatch("shm"); }
TEST(RefusedCalls, VCountMismatchFailsEveryRankPromptlyTcp) { runVMismatch("tcp"); }

}  // namespace
}  // namespace tutti::test
