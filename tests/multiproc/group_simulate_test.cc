// tuttiGroupSimulateEnd (issue 69, time estimation): a simulated group runs nothing (buffers
// untouched, the next real calls of every rank still match and give exact results, also when
// one rank alone simulated), its estimate adds up per communicator, grows with the bytes,
// ranks the automatic choice no slower than a forced algorithm, prices sends and receives, and
// bad use is refused with the group left as the caller expects.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

#include "comm_test_util.h"
#include "harness/fork_harness.h"
#include "tutti/tutti.h"

namespace tutti::test {
namespace {

constexpr int kRanks = 3;
constexpr unsigned char kGuard = 0xAB;

// One grouped call, simulated: its estimate in microseconds (negative: the call failed).
template <typename Record>
float simulate(Record record) {
  tuttiSimInfo_t info = TUTTI_SIM_INFO_INITIALIZER;
  if (tuttiGroupStart() != tuttiSuccess) return -1;
  record();
  if (tuttiGroupSimulateEnd(&info) != tuttiSuccess) return -2;
  return info.estimatedTime;
}

// Input element i of `rank` at call `call`: distinct per rank, element and call, exact in int64.
int64_t input(int rank, size_t i, int call) {
  return static_cast<int64_t>(rank + 1) * 1000003 + static_cast<int64_t>(i) * 7919 + call * 131;
}

// A real all-reduce of `count` int64 on comm whose result is checked element by element.
void checkedAllReduce(tuttiComm_t comm, int rank, size_t count, int call) {
  std::vector<int64_t> x(count), y(count, -1);
  for (size_t i = 0; i < count; ++i) x[i] = input(rank, i, call);
  TUTTI_ASSERT_OK(tuttiAllReduce(x.data(), y.data(), count, tuttiInt64, tuttiSum, comm, nullptr),
                  comm);
  for (size_t i = 0; i < count; ++i) {
    int64_t want = 0;
    for (int r = 0; r < kRanks; ++r) want += input(r, i, call);
    ASSERT_EQ(y[i], want) << "rank " << rank << ", call " << call << ", element " << i;
  }
}

TEST(GroupSimulate, EstimatesWithoutRunningAndAddsUp) {
  tuttiUniqueId id = makeId();
  auto r = runRanks(kRanks, [&](int rank) {
    tuttiComm_t comm = initComm(kRanks, id, rank, nullptr);
    ASSERT_NE(comm, nullptr);
    const size_t small = 2, large = size_t{1} << 20;  // int64 elements: 16 B and 8 MiB
    std::vector<int64_t> send(large);
    for (size_t i = 0; i < large; ++i) send[i] = input(rank, i, 0);
    const std::vector<int64_t> sendCopy = send;
    std::vector<unsigned char> recv(large * sizeof(int64_t), kGuard);
    auto allReduce = [&](size_t count) {
      tuttiAllReduce(send.data(), recv.data(), count, tuttiInt64, tuttiSum, comm, nullptr);
    };
    // Before any real call (no shared window yet) and after one.
    const float before = simulate([&] { allReduce(large); });
    checkedAllReduce(comm, rank, 1000, 1);
    const float eSmall = simulate([&] { allReduce(small); });
    const float eLarge = simulate([&] { allReduce(large); });
    const float eBoth = simulate([&] {
      allReduce(small);
      allReduce(large);
    });
    EXPECT_GT(eSmall, 0) << "rank " << rank;
    EXPECT_GT(eLarge, eSmall) << "rank " << rank;
    EXPECT_NEAR(eBoth, eSmall + eLarge, 1e-3 * eBoth) << "rank " << rank;
    EXPECT_NEAR(before, eLarge, 1e-3 * eLarge) << "the estimate before the window was made";
    // Nothing ran: the receive buffer still holds its guard bytes, the input is unchanged.
    for (size_t b = 0; b < recv.size(); ++b)
      ASSERT_EQ(recv[b], kGuard) << "rank " << rank << ": byte " << b << " written";
    EXPECT_EQ(send, sendCopy);
    // Rank 0 alone simulates more calls: the others' next real calls still match its own.
    if (rank == 0) EXPECT_GT(simulate([&] { allReduce(large); }), 0);
    checkedAllReduce(comm, rank, 4096, 2);
    // The automatic choice is the model's cheapest: never slower than a forced algorithm.
    for (const char* forced : {"allreduce:ring", "allreduce:direct", "allreduce:butterfly"}) {
      TUTTI_ASSERT_OK(tuttiCommSetAlgorithm(comm, forced), comm);
      const float e = simulate([&] { allReduce(large); });
      EXPECT_GT(e, 0) << forced;
      EXPECT_LE(eLarge, e * (1 + 1e-6)) << forced;
    }
    TUTTI_ASSERT_OK(tuttiCommSetAlgorithm(comm, ""), comm);
    // Sends and receives: one batch, its estimate growing with the bytes.
    auto ringExchange = [&](size_t count) {
      tuttiSend(send.data(), count, tuttiInt64, (rank + 1) % kRanks, comm, nullptr);
      tuttiRecv(recv.data(), count, tuttiInt64, (rank + kRanks - 1) % kRanks, comm, nullptr);
    };
    const float p2pSmall = simulate([&] { ringExchange(small); });
    const float p2pLarge = simulate([&] { ringExchange(large); });
    EXPECT_GT(p2pSmall, 0);
    EXPECT_GT(p2pLarge, p2pSmall);
    for (size_t b = 0; b < recv.size(); ++b)
      ASSERT_EQ(recv[b], kGuard) << "rank " << rank << ": byte " << b << " written by a send";
    checkedAllReduce(comm, rank, 3, 3);
    TUTTI_ASSERT_OK(tuttiCommDestroy(comm), nullptr);
  });
  EXPECT_RANKS_OK(r);
}

TEST(GroupSimulate, BadUseIsRefusedAndTheGroupStaysAsStated) {
  tuttiUniqueId id = makeId();
  auto r = runRanks(kRanks, [&](int rank) {
    tuttiComm_t comm = initComm(kRanks, id, rank, nullptr);
    ASSERT_NE(comm, nullptr);
    tuttiSimInfo_t info = TUTTI_SIM_INFO_INITIALIZER;
    // No group.
    EXPECT_EQ(tuttiGroupSimulateEnd(&info), tuttiInvalidUsage);
    EXPECT_NE(std::strstr(tuttiGetLastError(nullptr), "no matching tuttiGroupStart"), nullptr)
        << tuttiGetLastError(nullptr);
    // A NULL or foreign simInfo: refused, the group stays open and a real End runs its call.
    int64_t x = input(rank, 0, 5), y = 0;
    TUTTI_ASSERT_OK(tuttiGroupStart(), comm);
    TUTTI_ASSERT_OK(tuttiAllReduce(&x, &y, 1, tuttiInt64, tuttiSum, comm, nullptr), comm);
    EXPECT_EQ(tuttiGroupSimulateEnd(nullptr), tuttiInvalidArgument);
    tuttiSimInfo_t foreign = info;
    foreign.magic = 0;
    EXPECT_EQ(tuttiGroupSimulateEnd(&foreign), tuttiInvalidArgument);
    foreign = info;
    foreign.size = sizeof(tuttiSimInfo_t) + 8;
    EXPECT_EQ(tuttiGroupSimulateEnd(&foreign), tuttiInvalidArgument);
    TUTTI_ASSERT_OK(tuttiGroupEnd(), comm);
    int64_t want = 0;
    for (int q = 0; q < kRanks; ++q) want += input(q, 0, 5);
    EXPECT_EQ(y, want);
    // Nested: only the outermost End may simulate; the group stays open.
    TUTTI_ASSERT_OK(tuttiGroupStart(), comm);
    TUTTI_ASSERT_OK(tuttiGroupStart(), comm);
    EXPECT_EQ(tuttiGroupSimulateEnd(&info), tuttiInvalidUsage);
    TUTTI_ASSERT_OK(tuttiGroupEnd(), comm);
    EXPECT_EQ(tuttiGroupSimulateEnd(&info), tuttiSuccess);
    EXPECT_EQ(info.estimatedTime, 0.0f) << "an empty group costs nothing";
    // A call the model cannot price: tuttiUnsupported, nothing runs.
    tuttiGraph_t graph = nullptr;
    TUTTI_ASSERT_OK(tuttiGraphCreate(comm, tuttiGraphRing, 0, 0, &graph), comm);
    float v = 1.0f + rank, w = -1.0f;
    TUTTI_ASSERT_OK(tuttiGroupStart(), comm);
    TUTTI_ASSERT_OK(tuttiNeighborAllReduce(&v, &w, 1, tuttiFloat32, graph, comm, nullptr), comm);
    EXPECT_EQ(tuttiGroupSimulateEnd(&info), tuttiUnsupported);
    EXPECT_NE(std::strstr(tuttiGetLastError(nullptr), "cannot price"), nullptr)
        << tuttiGetLastError(nullptr);
    EXPECT_EQ(w, -1.0f);
    TUTTI_ASSERT_OK(tuttiGraphDestroy(graph), comm);
    checkedAllReduce(comm, rank, 17, 6);
    TUTTI_ASSERT_OK(tuttiCommDestroy(comm), nullptr);
  });
  EXPECT_RANKS_OK(r);
}

}  // namespace
}  // namespace tutti::test
