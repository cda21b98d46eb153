// The C++ wrapper (include/tutti/tutti.hpp) over the whole C API, on 3 forked ranks: every
// collective through spans and pointers, send/recv in a Group, split, a neighbour graph, the
// compressed all-reduce, introspection, version and algorithm lists, agreement and shrink,
// host streams and events, and
// errors thrown as tutti::Error with the C code and
// text. Inputs differ per rank, element and call; expected values are computed here.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <numeric>
#include <string>
#include <type_traits>
#include <vector>

#include "comm_test_util.h"
#include "common/error.h"  // the library's errors: the same tutti::Error type
#include "harness/fork_harness.h"
#include "tutti/tutti.hpp"

namespace {

using tutti::test::makeId;
using tutti::test::runRanks;

static_assert(tutti::dataTypeOf<float>() == tuttiFloat32);
static_assert(tutti::dataTypeOf<const int64_t>() == tuttiInt64);
static_assert(tutti::dataTypeOf<uint8_t>() == tuttiUint8);
static_assert(tutti::dataTypeOf<int16_t>() == tuttiInt16);
static_assert(tutti::dataTypeOf<const uint16_t>() == tuttiUint16);
static_assert(tutti::dataTypeSize(tuttiInt16) == 2 && tutti::dataTypeSize(tuttiUint16) == 2);
static_assert(tutti::redOpAppliesTo(tuttiInt16, tuttiBxor));
static_assert(!tutti::redOpAppliesTo(tuttiFloat32, tuttiBand));
static_assert(tutti::redOpAppliesTo(tuttiFloat32, tuttiAvg));

constexpr int kRanks = 3;

// Distinct per (call, rank, element), exact in int64 and double.
int64_t value(int call, int rank, size_t i) {
  return 1000003LL * call + 1009LL * rank + 7LL * static_cast<int64_t>(i) + (i * i) % 11;
}

std::vector<int64_t> inputs(int call, int rank, size_t n) {
  std::vector<int64_t> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = value(call, rank, i);
  return v;
}

void collectives(int rank, const tuttiUniqueId& id) {
  tutti::Comm comm = tutti::Comm::fromUniqueId(kRanks, id, rank);
  ASSERT_EQ(comm.rank(), rank);
  ASSERT_EQ(comm.size(), kRanks);
  const size_t n = 37;
  int call = 0;

  {  // all-reduce, out of place and in place
    ++call;
    std::vector<int64_t> in = inputs(call, rank, n), out(n, -1);
    comm.allReduce(std::span<const int64_t>(in), std::span<int64_t>(out), tuttiSum);
    for (size_t i = 0; i < n; ++i)
      ASSERT_EQ(out[i], value(call, 0, i) + value(call, 1, i) + value(call, 2, i)) << i;
    EXPECT_FALSE(comm.lastAlgorithm().empty());
    comm.setTimeout(45000 + rank);  // local: ranks may differ
    EXPECT_EQ(comm.timeoutMs(), 45000 + rank);
    EXPECT_THROW(comm.setTimeout(0), tutti::Error);
    ++call;
    std::vector<double> x(n);
    for (size_t i = 0; i < n; ++i) x[i] = static_cast<double>(value(call, rank, i));
    comm.allReduce(std::span<double>(x), tuttiMax);
    for (size_t i = 0; i < n; ++i) ASSERT_EQ(x[i], static_cast<double>(value(call, 2, i))) << i;
  }
  {  // broadcast from 1, reduce to 2
    ++call;
    std::vector<int64_t> b = rank == 1 ? inputs(call, 1, n) : std::vector<int64_t>(n, -1);
    comm.broadcast(std::span<int64_t>(b), 1);
    ASSERT_EQ(b, inputs(call, 1, n));
    ++call;
    std::vector<int64_t> in = inputs(call, rank, n), out(rank == 2 ? n : 0);
    comm.reduce(std::span<const int64_t>(in), std::span<int64_t>(out), tuttiMin, 2);
    if (rank == 2) {
      for (size_t i = 0; i < n; ++i) ASSERT_EQ(out[i], value(call, 0, i)) << i;
    }
  }
  {  // all-gather, reduce-scatter, all-to-all
    ++call;
    std::vector<int64_t> in = inputs(call, rank, n), out(n * kRanks);
    comm.allGather(std::span<const int64_t>(in), std::span<int64_t>(out));
    for (int r = 0; r < kRanks; ++r)
      for (size_t i = 0; i < n; ++i) ASSERT_EQ(out[r * n + i], value(call, r, i));
    ++call;
    std::vector<int64_t> send = inputs(call, rank, n * kRanks), recv(n);
    comm.reduceScatter(std::span<const int64_t>(send), std::span<int64_t>(recv), tuttiSum);
    for (size_t i = 0; i < n; ++i) {
      size_t at = rank * n + i;
      ASSERT_EQ(recv[i], value(call, 0, at) + value(call, 1, at) + value(call, 2, at)) << i;
    }
    ++call;
    std::vector<int64_t> a = inputs(call, rank, n * kRanks), b(n * kRanks);
    comm.allToAll(std::span<const int64_t>(a), std::span<int64_t>(b));
    for (int r = 0; r < kRanks; ++r)
      for (size_t i = 0; i < n; ++i) ASSERT_EQ(b[r * n + i], value(call, r, rank * n + i));
  }
  {  // V collectives: rank r contributes r + 2 elements
    ++call;
    std::vector<size_t> counts{2, 3, 4}, displs{0, 2, 5};
    std::vector<int64_t> in = inputs(call, rank, counts[rank]), out(9, -1);
    comm.allGatherV(in.data(), in.size(), out.data(), counts.data(), displs.data(), tuttiInt64);
    for (int r = 0; r < kRanks; ++r)
      for (size_t i = 0; i < counts[r]; ++i) ASSERT_EQ(out[displs[r] + i], value(call, r, i));
    ++call;
    // rank r sends r + p + 1 elements to rank p
    std::vector<size_t> sc(kRanks), sd(kRanks), rc(kRanks), rd(kRanks);
    size_t st = 0, rt = 0;
    for (int p = 0; p < kRanks; ++p) {
      sc[p] = rank + p + 1, sd[p] = st, st += sc[p];
      rc[p] = p + rank + 1, rd[p] = rt, rt += rc[p];
    }
    std::vector<int64_t> s = inputs(call, rank, st), r(rt, -1);
    comm.allToAllV(s.data(), sc.data(), sd.data(), r.data(), rc.data(), rd.data(), tuttiInt64);
    for (int p = 0; p < kRanks; ++p) {
      size_t from = 0;  // where rank p's block for me starts in p's send buffer
      for (int q = 0; q < rank; ++q) from += p + q + 1;
      for (size_t i = 0; i < rc[p]; ++i) ASSERT_EQ(r[rd[p] + i], value(call, p, from + i));
    }
    ++call;  // reduce-scatter-v: block r (counts[r] at displs[r]) summed to rank r
    std::vector<int64_t> whole = inputs(call, rank, 9), part(counts[rank], -1);
    comm.reduceScatterV(whole.data(), part.data(), counts.data(), displs.data(), tuttiInt64,
                        tuttiSum);
    for (size_t i = 0; i < counts[rank]; ++i) {
      const size_t at = displs[rank] + i;
      ASSERT_EQ(part[i], value(call, 0, at) + value(call, 1, at) + value(call, 2, at)) << i;
    }
    ++call;  // gather-v to 2, scatter-v from 0
    std::vector<int64_t> mine = inputs(call, rank, counts[rank]), at2(rank == 2 ? 9 : 0, -1);
    comm.gatherV(mine.data(), mine.size(), at2.data(), counts.data(), displs.data(), tuttiInt64, 2);
    if (rank == 2) {
      for (int r = 0; r < kRanks; ++r)
        for (size_t i = 0; i < counts[r]; ++i) ASSERT_EQ(at2[displs[r] + i], value(call, r, i));
    }
    ++call;
    std::vector<int64_t> from0 = rank == 0 ? inputs(call, 0, 9) : std::vector<int64_t>();
    std::vector<int64_t> got(counts[rank], -1);
    comm.scatterV(from0.data(), counts.data(), displs.data(), got.data(), got.size(), tuttiInt64,
                  0);
    for (size_t i = 0; i < counts[rank]; ++i)
      ASSERT_EQ(got[i], value(call, 0, displs[rank] + i)) << i;
  }
  {  // gather to 0, scatter from 1
    ++call;
    std::vector<int64_t> in = inputs(call, rank, n), out(rank == 0 ? n * kRanks : 0);
    comm.gather(in.data(), out.data(), n, tuttiInt64, 0);
    if (rank == 0) {
      for (int r = 0; r < kRanks; ++r)
        for (size_t i = 0; i < n; ++i) ASSERT_EQ(out[r * n + i], value(call, r, i));
    }
    ++call;
    std::vector<int64_t> all = rank == 1 ? inputs(call, 1, n * kRanks) : std::vector<int64_t>();
    std::vector<int64_t> mine(n, -1);
    comm.scatter(all.data(), mine.data(), n, tuttiInt64, 1);
    for (size_t i = 0; i < n; ++i) ASSERT_EQ(mine[i], value(call, 1, rank * n + i));
  }
  {  // send/recv around the ring in one group
    ++call;
    std::vector<int64_t> out = inputs(call, rank, n), in(n, -1);
    tutti::Group g;
    comm.send(std::span<const int64_t>(out), (rank + 1) % kRanks);
    comm.recv(std::span<int64_t>(in), (rank + kRanks - 1) % kRanks);
    g.end();
    ASSERT_EQ(in, inputs(call, (rank + kRanks - 1) % kRanks, n));
  }
  {  // rank 0 receives from any source: ranks 1 and 2, each message its sender's
    ++call;
    if (rank == 0) {
      std::vector<int> senders;
      for (int k = 0; k < kRanks - 1; ++k) {
        std::vector<int64_t> in(n, -1);
        const int from = comm.recvAny(std::span<int64_t>(in));
        ASSERT_EQ(in, inputs(call, from, n)) << "from rank " << from;
        senders.push_back(from);
      }
      std::sort(senders.begin(), senders.end());
      ASSERT_EQ(senders, (std::vector<int>{1, 2}));
    } else {
      comm.send(std::span<const int64_t>(inputs(call, rank, n)), 0);
    }
  }
  comm.barrier();
  {  // split: even and odd ranks
    tutti::Comm sub = comm.split(rank % 2, rank);
    ASSERT_EQ(sub.size(), rank % 2 ? 1 : 2);
    ++call;
    std::vector<int64_t> x = inputs(call, rank, n);
    sub.allReduce(std::span<int64_t>(x), tuttiSum);
    for (size_t i = 0; i < n; ++i)
      ASSERT_EQ(x[i], rank % 2 ? value(call, 1, i) : value(call, 0, i) + value(call, 2, i));
    sub.destroy();
    EXPECT_FALSE(sub);
  }
  {  // neighbour all-reduce on a ring of 3: every rank averages all three (weights 1/3)
    tutti::Graph ring(comm, tuttiGraphRing);
    ++call;
    std::vector<double> x(n), y(n);
    for (size_t i = 0; i < n; ++i) x[i] = 3.0 * static_cast<double>(value(call, rank, i));
    comm.neighborAllReduce(x.data(), y.data(), n, tuttiFloat64, ring);
    for (size_t i = 0; i < n; ++i)
      ASSERT_NEAR(y[i],
                  static_cast<double>(value(call, 0, i) + value(call, 1, i) + value(call, 2, i)),
                  1e-6 * std::abs(y[i]))
          << i;
  }
  {  // compressed all-reduce without compression ("none") is the exact sum
    ++call;
    std::vector<float> g(n), s(n);
    for (size_t i = 0; i < n; ++i) g[i] = static_cast<float>(rank * 64 + static_cast<int>(i));
    comm.allReduceCompressed(g.data(), s.data(), n, tuttiFloat32, "none", 7, false);
    for (size_t i = 0; i < n; ++i) ASSERT_EQ(s[i], static_cast<float>(192 + 3 * i)) << i;
    EXPECT_EQ(comm.compressionStats().calls, 1u);
  }
  EXPECT_EQ(comm.asyncError(), tuttiSuccess);
  EXPECT_FALSE(comm.transports().empty());
  comm.destroy();
}

TEST(TuttiHpp, EveryCallOfTheCApiThroughTheWrapper) {
  tuttiUniqueId id = makeId();
  auto r = runRanks(kRanks, [&](int rank) { collectives(rank, id); });
  EXPECT_RANKS_OK(r);
}

// The library-level calls and recovery through the wrapper: version, the algorithm lists,
// agreement on (no) failed ranks, and a shrink that excludes nobody, then a call on it.
TEST(TuttiHpp, VersionAlgorithmsAgreeAndShrink) {
  EXPECT_EQ(tutti::version(), TUTTI_VERSION_CODE);
  const std::vector<std::string> ring = tutti::algorithms("allreduce");
  EXPECT_NE(std::find(ring.begin(), ring.end(), "ring"), ring.end());
  EXPECT_EQ(std::string(tuttiAlgorithms("allreduce")).find(",,"), std::string::npos);
  try {
    tutti::algorithms("allsorts");
    ADD_FAILURE() << "an unknown collective did not throw";
  } catch (const tutti::Error& e) {
    EXPECT_EQ(e.code(), tuttiInvalidArgument);
  }
  tuttiUniqueId id = makeId();
  auto r = runRanks(kRanks, [&](int rank) {
    tutti::Comm comm = tutti::Comm::fromUniqueId(kRanks, id, rank);
    EXPECT_TRUE(comm.agreeFailedRanks().empty());
    tutti::Comm same = comm.shrink({});
    ASSERT_EQ(same.size(), kRanks);
    std::vector<int64_t> x = inputs(77, rank, 5);
    same.allReduce(std::span<int64_t>(x), tuttiSum);
    for (size_t i = 0; i < x.size(); ++i)
      ASSERT_EQ(x[i], value(77, 0, i) + value(77, 1, i) + value(77, 2, i)) << i;
  });
  EXPECT_RANKS_OK(r);
}

// Stream and Event: calls enqueued on two streams (one waiting for the other's event), the
// results right after synchronize; done() while a peer is late; a failure on a stream is
// thrown by synchronize() with its code.
TEST(TuttiHpp, StreamsAndEvents) {
  tuttiUniqueId id = makeId();
  auto r = runRanks(kRanks, [&](int rank) {
    tutti::Comm comm = tutti::Comm::fromUniqueId(kRanks, id, rank);
    tutti::Comm other = comm.split(0, rank);
    tutti::Stream a, b;
    tutti::Event written;
    std::vector<int64_t> x = inputs(90, rank, 1001), y(1001, -1);
    if (rank == 1) usleep(200000);
    comm.allReduce(x.data(), x.data(), x.size(), tuttiInt64, tuttiSum, a);
    if (rank == 0) {
      EXPECT_FALSE(a.done()) << "rank 1 has not called yet";
    }
    written.record(a);
    b.wait(written);
    other.allReduce(x.data(), y.data(), y.size(), tuttiInt64, tuttiSum, b);
    b.synchronize();
    EXPECT_TRUE(written.done());
    for (size_t i = 0; i < y.size(); ++i)
      ASSERT_EQ(y[i], kRanks * (value(90, 0, i) + value(90, 1, i) + value(90, 2, i))) << i;
    // A call that fails on the stream (an algorithm that does not apply is found when the call
    // runs): thrown by synchronize(), not by the call.
    comm.setAlgorithm("alltoall:hier");  // needs ranks on two hosts or more
    std::vector<int64_t> z = inputs(91, rank, 3 * kRanks), w(3 * kRanks);
    comm.allToAll(z.data(), w.data(), 3, tuttiInt64, a);
    try {
      a.synchronize();
      ADD_FAILURE() << "hier all-to-all on one host did not fail";
    } catch (const tutti::Error& e) {
      EXPECT_EQ(e.code(), tuttiInvalidArgument);
      EXPECT_NE(std::string(e.what()).find("does not apply"), std::string::npos) << e.what();
    }
    comm.setAlgorithm("");
    a.synchronize();  // reported once
  });
  EXPECT_RANKS_OK(r);
}

TEST(TuttiHpp, FailuresThrowTheOneErrorTypeWithCodeAndText) {
  static_assert(std::is_base_of_v<std::runtime_error, tutti::Error>);
  tuttiUniqueId id = makeId();
  auto r = runRanks(2, [&](int rank) {
    tutti::Comm comm = tutti::Comm::fromUniqueId(2, id, rank);
    std::vector<float> x(4, 1.0f);
    // A C-level refusal: root out of range.
    try {
      comm.broadcast(std::span<float>(x), 5);
      ADD_FAILURE() << "broadcast to root 5 of 2 ranks did not throw";
    } catch (const tutti::Error& e) {
      EXPECT_EQ(e.code(), tuttiInvalidArgument);
      EXPECT_NE(std::string(e.what()).find("root"), std::string::npos) << e.what();
    }
    // A wrapper-level refusal: the output span is too small (nothing is sent).
    std::vector<float> small(3);
    try {
      comm.allGather(std::span<const float>(x), std::span<float>(small));
      ADD_FAILURE() << "allGather into 3 elements did not throw";
    } catch (const tutti::Error& e) {
      EXPECT_EQ(e.code(), tuttiInvalidArgument);
      EXPECT_NE(std::string(e.what()).find("8 are needed"), std::string::npos) << e.what();
    }
    // The communicator still works after both.
    comm.allReduce(std::span<float>(x), tuttiSum);
    EXPECT_EQ(x[0], 2.0f);
  });
  EXPECT_RANKS_OK(r);
  // An unusable unique id fails init with an Error, and nothing is left to destroy.
  tuttiUniqueId zero{};
  EXPECT_THROW(tutti::Comm::fromUniqueId(0, zero, 0), tutti::Error);
}

}  // namespace
