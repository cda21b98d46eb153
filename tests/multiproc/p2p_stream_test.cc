// Point-to-point calls on host streams with independent progress (issue 32; src/api/
// p2p_posts.h): receives posted before the sends their peers wait for, on one stream or
// several, in any order, complete instead of deadlocking; messages between two ranks match in
// the order they were posted (non-overtaking); blocking calls after stream calls join them;
// a killed peer fails the posted calls at the synchronise, naming it; a ring of first contacts
// whose second posts come late completes. Ranks are processes over shm and tcp; every element
// is checked against values computed from its origin.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <string>
#include <thread>
#include <vector>

#include "comm_test_util.h"
#include "harness/fork_harness.h"
#include "tutti/tutti.h"

namespace tutti::test {
namespace {

using Clock = std::chrono::steady_clock;

// Element i of message k from rank `from` to rank `to`: distinct per pair, message and element.
int32_t elementOf(int from, int to, int k, size_t i) {
  return static_cast<int32_t>(1000000 * from + 10000 * to + 97 * k + static_cast<int64_t>(i) * 3 +
                              static_cast<int64_t>(i * i % 101));
}

// Message k's size: some large enough to fill a FIFO or a socket buffer.
size_t countOf(int k) { return k % 3 == 2 ? (1 << 20) + 7 * k : 100 + 31 * k; }

enum class Layout {
  kOneStream,     // every receive, then every send, on one stream
  kTwoStreams,    // receives on one stream, sends on another
  kManyStreams,   // round robin over four streams, receives first
  kBlockingSends  // receives on a stream, then blocking sends
};

const char* nameOf(Layout l) {
  switch (l) {
    case Layout::kOneStream:
      return "one stream";
    case Layout::kTwoStreams:
      return "two streams";
    case Layout::kManyStreams:
      return "four streams";
    case Layout::kBlockingSends:
      return "blocking sends";
  }
  return "?";
}

// Every rank posts `messages` receives from each other rank before any send, then the sends:
// each pair's first receive can only complete after the peer's sends were posted behind its
// own receives.
void exchange(int n, const char* transport, Layout layout, int messages) {
  tuttiUniqueId id = makeId();
  auto result = runRanks(
      n,
      [&](int rank) {
        tuttiComm_t comm = initComm(n, id, rank, transport, 10000);
        ASSERT_NE(comm, nullptr);
        // Connections first (an all-to-all meets every peer): a rank's first operation with a
        // peer connects to it, and connecting waits for the peer to connect back (p2p_posts.h).
        std::vector<int32_t> a2aIn(n, rank), a2aOut(n, -1);
        TUTTI_ASSERT_OK(tuttiAllToAll(a2aIn.data(), a2aOut.data(), 1, tuttiInt32, comm, nullptr),
                        comm);
        std::vector<tuttiStream_t> streams(4, nullptr);
        for (auto& s : streams) TUTTI_ASSERT_OK(tuttiStreamCreate(&s), nullptr);
        std::vector<std::vector<int32_t>> in, out;
        std::vector<std::pair<int, int>> recvOf;  // (peer, k) of each receive buffer
        int op = 0;
        auto streamFor = [&](bool isSend) -> tuttiStream_t {
          switch (layout) {
            case Layout::kOneStream:
              return streams[0];
            case Layout::kTwoStreams:
              return streams[isSend ? 1 : 0];
            case Layout::kManyStreams:
              return streams[op % 4];
            case Layout::kBlockingSends:
              return isSend ? nullptr : streams[0];
          }
          return nullptr;
        };
        const auto t0 = Clock::now();
        for (int k = 0; k < messages; ++k)
          for (int d = 1; d < n; ++d) {
            const int from = (rank - d + n) % n;
            in.emplace_back(countOf(k), -1);
            recvOf.emplace_back(from, k);
            TUTTI_ASSERT_OK(tuttiRecv(in.back().data(), in.back().size(), tuttiInt32, from, comm,
                                      streamFor(false)),
                            comm);
            ++op;
          }
        for (int k = 0; k < messages; ++k)
          for (int d = 1; d < n; ++d) {
            const int to = (rank + d) % n;
            std::vector<int32_t> msg(countOf(k));
            for (size_t i = 0; i < msg.size(); ++i) msg[i] = elementOf(rank, to, k, i);
            out.push_back(std::move(msg));
            TUTTI_ASSERT_OK(tuttiSend(out.back().data(), out.back().size(), tuttiInt32, to, comm,
                                      streamFor(true)),
                            comm);
            ++op;
          }
        for (auto& s : streams) TUTTI_ASSERT_OK(tuttiStreamSynchronize(s), comm);
        EXPECT_LT(std::chrono::duration<double>(Clock::now() - t0).count(), 9.0);
        for (size_t b = 0; b < in.size(); ++b) {
          const auto [from, k] = recvOf[b];
          for (size_t i = 0; i < in[b].size(); ++i)
            ASSERT_EQ(in[b][i], elementOf(from, rank, k, i))
                << nameOf(layout) << " over " << transport << ": rank " << rank << " message " << k
                << " from " << from << " element " << i;
        }
        // The communicator still runs collectives in step afterwards.
        int32_t mine = rank + 1, sum = 0;
        TUTTI_ASSERT_OK(tuttiAllReduce(&mine, &sum, 1, tuttiInt32, tuttiSum, comm, streams[1]),
                        comm);
        TUTTI_ASSERT_OK(tuttiStreamSynchronize(streams[1]), comm);
        EXPECT_EQ(sum, n * (n + 1) / 2);
        for (auto& s : streams) TUTTI_ASSERT_OK(tuttiStreamDestroy(s), nullptr);
        TUTTI_ASSERT_OK(tuttiCommDestroy(comm), nullptr);
      },
      60);
  EXPECT_RANKS_OK(result);
}

// Rotated: each layout at another rank count and transport.
TEST(P2pStreams, ReceivesBeforeSendsOneStream) { exchange(2, "shm", Layout::kOneStream, 4); }
TEST(P2pStreams, ReceivesBeforeSendsTwoStreams) { exchange(3, "tcp", Layout::kTwoStreams, 3); }
TEST(P2pStreams, ReceivesBeforeSendsFourStreams) { exchange(4, "shm", Layout::kManyStreams, 3); }
// A blocking send waits for the communicator's earlier calls (its turn) like every blocking
// call, so it joins the stream's receives posted before it, and returns when they are done:
// two ranks, one message each way (a second blocking send could only be issued after the first
// returns, which needs the peer's second send: that program deadlocks by the contract).
TEST(P2pStreams, BlockingSendsAfterStreamReceives) {
  exchange(2, "tcp", Layout::kBlockingSends, 1);
  exchange(2, "shm", Layout::kBlockingSends, 1);
}

// First contacts in a cycle, each rank's second one posted late: every rank receives from the
// previous rank on one stream, then 200 ms later sends to the next on another, with no call
// before them. Each receive's connect waits for a peer whose own receive's connect waits
// further round the ring; the sends posted meanwhile join those connects, so every exchange
// completes (before they did, the ring over shm stalled until the timeout).
void latePostedRing(int n, const char* transport) {
  tuttiUniqueId id = makeId();
  auto result = runRanks(
      n,
      [&](int rank) {
        tuttiComm_t comm = initComm(n, id, rank, transport, 10000);
        ASSERT_NE(comm, nullptr);
        tuttiStream_t a = nullptr, b = nullptr;
        TUTTI_ASSERT_OK(tuttiStreamCreate(&a), nullptr);
        TUTTI_ASSERT_OK(tuttiStreamCreate(&b), nullptr);
        const int prev = (rank + n - 1) % n, next = (rank + 1) % n;
        std::vector<int32_t> in(countOf(2), -1), out(countOf(2));
        for (size_t i = 0; i < out.size(); ++i) out[i] = elementOf(rank, next, 2, i);
        const auto t0 = Clock::now();
        TUTTI_ASSERT_OK(tuttiRecv(in.data(), in.size(), tuttiInt32, prev, comm, a), comm);
        std::this_thread::sleep_for(std::chrono::milliseconds(200));
        TUTTI_ASSERT_OK(tuttiSend(out.data(), out.size(), tuttiInt32, next, comm, b), comm);
        TUTTI_ASSERT_OK(tuttiStreamSynchronize(a), comm);
        TUTTI_ASSERT_OK(tuttiStreamSynchronize(b), comm);
        EXPECT_LT(std::chrono::duration<double>(Clock::now() - t0).count(), 5.0);
        for (size_t i = 0; i < in.size(); ++i)
          ASSERT_EQ(in[i], elementOf(prev, rank, 2, i))
              << transport << ": rank " << rank << " element " << i;
        TUTTI_ASSERT_OK(tuttiStreamDestroy(a), nullptr);
        TUTTI_ASSERT_OK(tuttiStreamDestroy(b), nullptr);
        TUTTI_ASSERT_OK(tuttiCommDestroy(comm), nullptr);
      },
      60);
  EXPECT_RANKS_OK(result);
}

TEST(P2pStreams, FirstContactsInARingPostedLate) {
  latePostedRing(3, "shm");
  latePostedRing(4, "tcp");
  latePostedRing(4, "shm");
}

// Rank 1 dies while ranks 0 and 2 have receives from it (and a send to it) posted on two
// streams: both synchronises fail, the error names rank 1, well within the timeout.
TEST(P2pStreams, KilledPeerFailsThePostedCalls) {
  const int n = 3, dead = 1;
  tuttiUniqueId id = makeId();
  auto result = runRanks(
      n,
      [&](int rank) {
        tuttiComm_t comm = initComm(n, id, rank, nullptr, 10000);
        ASSERT_NE(comm, nullptr);
        int32_t warm = rank, sum = 0;
        TUTTI_ASSERT_OK(tuttiAllReduce(&warm, &sum, 1, tuttiInt32, tuttiSum, comm, nullptr), comm);
        if (rank == dead) _exit(0);
        tuttiStream_t a = nullptr, b = nullptr;
        TUTTI_ASSERT_OK(tuttiStreamCreate(&a), nullptr);
        TUTTI_ASSERT_OK(tuttiStreamCreate(&b), nullptr);
        std::vector<int32_t> in(1000), in2(1000), out(1 << 20, rank);
        const auto t0 = Clock::now();
        TUTTI_ASSERT_OK(tuttiRecv(in.data(), in.size(), tuttiInt32, dead, comm, a), comm);
        TUTTI_ASSERT_OK(tuttiRecv(in2.data(), in2.size(), tuttiInt32, dead, comm, b), comm);
        TUTTI_ASSERT_OK(tuttiSend(out.data(), out.size(), tuttiInt32, dead, comm, b), comm);
        const tuttiResult_t ra = tuttiStreamSynchronize(a);
        const std::string text = tuttiGetLastError(nullptr);
        const tuttiResult_t rb = tuttiStreamSynchronize(b);
        EXPECT_TRUE(ra == tuttiRemoteError || ra == tuttiTimeout) << tuttiGetErrorString(ra);
        EXPECT_TRUE(rb == tuttiRemoteError || rb == tuttiTimeout) << tuttiGetErrorString(rb);
        EXPECT_NE(text.find("rank 1"), std::string::npos) << text;
        EXPECT_LT(std::chrono::duration<double>(Clock::now() - t0).count(), 9.0);
        TUTTI_ASSERT_OK(tuttiStreamDestroy(a), nullptr);
        TUTTI_ASSERT_OK(tuttiStreamDestroy(b), nullptr);
        tuttiCommAbort(comm);
        tuttiCommDestroy(comm);
      },
      60);
  for (const auto& st : result.ranks)
    EXPECT_TRUE(st.ok()) << "rank " << st.rank << ": " << result.describe();
}

}  // namespace
}  // namespace tutti::test
