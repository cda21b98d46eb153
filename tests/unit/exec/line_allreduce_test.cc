// The line all-reduce (exec/line_allreduce.h) on a real shm window, ranks as threads: results
// equal to a reference computed here in rank order (bit for bit for floats, so every rank
// agrees), in place and out of place, with direct window programs between line calls (both use
// the window; neither may disturb the other), guard bytes after the output untouched; a peer
// in another call is a mismatch on every rank; a peer that gave up is named.
#include "exec/line_allreduce.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <vector>

#include "bootstrap/memory_store.h"
#include "exec/window_program.h"
#include "harness/threads_harness.h"
#include "interfaces/algorithm.h"
#include "shm_window_rank.h"

namespace tutti::exec {
namespace {

constexpr std::byte kGuard{0xa5};
constexpr size_t kGuardBytes = 64;

ExecOptions optionsFor(test::WindowRank& r, int rank, const transport::Window::Tag& tag) {
  return test::windowCallOptions(r, rank, tag);
}

// Distinct per rank, element and call; small enough that int32 sums are exact.
int32_t intInput(int rank, size_t i, int call) {
  return static_cast<int32_t>((rank + 1) * 1000003 + i * 7919 + call * 104729) % 1000000 - 500000;
}
float floatInput(int rank, size_t i, int call) {
  return static_cast<float>(intInput(rank, i, call)) * 1.37e-3f;
}

// One direct all-reduce program run (7 int32) between line calls.
void directCall(test::WindowRank& r, int rank, int nranks, int call) {
  algo::CollArgs a;
  a.count = 7;
  a.dtype = tuttiInt32;
  a.rank = rank;
  a.nranks = nranks;
  a.windowBytes = r.window->bytes();
  Schedule s = algo::find(algo::Coll::kAllReduce, "direct")->build(a);
  WindowProgram program(s, *r.window);
  std::vector<int32_t> in(7), out(7);
  for (size_t i = 0; i < 7; ++i) in[i] = intInput(rank, i, call);
  std::byte* buffers[3] = {reinterpret_cast<std::byte*>(in.data()),
                           reinterpret_cast<std::byte*>(out.data()), nullptr};
  program.run(buffers, optionsFor(r, rank, {7, 1000 + static_cast<uint64_t>(call)}));
  for (size_t i = 0; i < 7; ++i) {
    int64_t sum = 0;
    for (int p = 0; p < nranks; ++p) sum += intInput(p, i, call);
    ASSERT_EQ(out[i], sum) << "direct call " << call;
  }
}

class LineAllReduces : public ::testing::TestWithParam<int> {};

TEST_P(LineAllReduces, MatchTheReferenceAroundWindowPrograms) {
  const int nranks = GetParam();
  bootstrap::MemoryStore store;
  test::runThreads(nranks, [&](int rank) {
    test::WindowRank r = test::makeWindowRank(rank, nranks, store);
    ASSERT_NE(r.window, nullptr);
    ASSERT_TRUE(lineAllReduceFits(r.window.get(), kLineMaxBytes));
    ASSERT_FALSE(lineAllReduceFits(r.window.get(), kLineMaxBytes + 1));
    // Counts rotate over one element, one line (40 B), several lines and the whole slot.
    const size_t intCounts[] = {1, 10, 11, 33, kLineMaxBytes / 4};
    for (int call = 0; call < 60; ++call) {
      if (call % 7 == 3) directCall(r, rank, nranks, call);
      const bool isFloat = call % 2 == 1;
      const bool inPlace = call % 3 == 0;
      const size_t count = isFloat ? intCounts[call % 5] : intCounts[(call / 2) % 5];
      const size_t bytes = count * 4;
      std::vector<std::byte> in(bytes), out(bytes + kGuardBytes, kGuard), expect(bytes);
      for (size_t i = 0; i < count; ++i) {
        if (isFloat) {
          float v = floatInput(rank, i, call), sum = floatInput(0, i, call);
          for (int p = 1; p < nranks; ++p) sum = sum + floatInput(p, i, call);  // rank order
          std::memcpy(&in[i * 4], &v, 4);
          std::memcpy(&expect[i * 4], &sum, 4);
        } else {
          int32_t v = intInput(rank, i, call), mx = intInput(0, i, call);
          for (int p = 1; p < nranks; ++p) mx = std::max(mx, intInput(p, i, call));
          std::memcpy(&in[i * 4], &v, 4);
          std::memcpy(&expect[i * 4], &mx, 4);
        }
      }
      if (inPlace) std::memcpy(out.data(), in.data(), bytes);
      LineAllReduce c{
          inPlace ? out.data() : in.data(), out.data(), count, isFloat ? tuttiFloat32 : tuttiInt32,
          isFloat ? tuttiSum : tuttiMax,    nranks};
      runLineAllReduce(c, optionsFor(r, rank, {count, static_cast<uint64_t>(call)}));
      ASSERT_EQ(0, std::memcmp(out.data(), expect.data(), bytes))
          << "call " << call << " count " << count << " rank " << rank;
      for (size_t g = 0; g < kGuardBytes; ++g) ASSERT_EQ(out[bytes + g], kGuard) << "guard " << g;
    }
  });
}

TEST_P(LineAllReduces, AnotherCallIsAMismatchOnEveryRank) {
  const int nranks = GetParam();
  bootstrap::MemoryStore store;
  test::runThreads(nranks, [&](int rank) {
    test::WindowRank r = test::makeWindowRank(rank, nranks, store);
    int32_t v = rank, out = 0;
    // Rank 1's call has another shape (its tag differs): every rank reads a tag unlike its own.
    const transport::Window::Tag tag{rank == 1 ? 2u : 1u, 9};
    LineAllReduce c{&v, &out, 1, tuttiInt32, tuttiSum, nranks};
    EXPECT_THROW(runLineAllReduce(c, optionsFor(r, rank, tag)), CallMismatch) << "rank " << rank;
  });
}

// The window tag slots travel in the line: an earlier call that passed unnoticed (rank 1's
// call #6 was another shape) is a mismatch at this one, as at a window program's wait.
TEST_P(LineAllReduces, AnEarlierMismatchInTheTagSlotsIsCaught) {
  const int nranks = GetParam();
  bootstrap::MemoryStore store;
  test::runThreads(nranks, [&](int rank) {
    test::WindowRank r = test::makeWindowRank(rank, nranks, store);
    // tag = {shape, call number}; slots by call number modulo 3: #7 (this call) in slot 1.
    const transport::Window::Tag slots[3] = {{rank == 1 ? 55u : 44u, 6}, {33, 7}, {22, 5}};
    ExecOptions o = optionsFor(r, rank, slots[1]);
    o.windowTags = slots;
    o.sameCallNumber = [](const transport::Window::Tag& a, const transport::Window::Tag& b) {
      return a[1] == b[1];
    };
    int32_t v = rank, out = 0;
    LineAllReduce c{&v, &out, 1, tuttiInt32, tuttiSum, nranks};
    try {
      runLineAllReduce(c, o);
      ADD_FAILURE() << "rank " << rank << ": no error";
    } catch (const CallMismatch& e) {
      EXPECT_NE(std::string(e.what()).find("call 55"), std::string::npos) << e.what();
    }
  });
}

TEST(LineAllReduce, APeerThatGaveUpIsNamed) {
  bootstrap::MemoryStore store;
  test::runThreads(2, [&](int rank) {
    test::WindowRank r = test::makeWindowRank(rank, 2, store);
    store.setString("ready/" + std::to_string(rank), "1");
    if (rank == 1) {
      r.window->markFailed();                 // its communicator failed before this call
      store.getString("done", Deadline(30));  // the window stays mapped until rank 0 is done
      return;
    }
    int32_t v = 1, out = 0;
    LineAllReduce c{&v, &out, 1, tuttiInt32, tuttiSum, 2};
    try {
      runLineAllReduce(c, optionsFor(r, 0, {1, 1}));
      ADD_FAILURE() << "no error";
    } catch (const PeerFailure& e) {
      EXPECT_EQ(e.peer(), 1);
      EXPECT_TRUE(e.closedOnPurpose()) << e.what();
      EXPECT_NE(std::string(e.what()).find("gave up"), std::string::npos) << e.what();
    }
    store.setString("done", "1");
  });
}

INSTANTIATE_TEST_SUITE_P(Ranks, LineAllReduces, ::testing::Values(2, 3, 4));

}  // namespace
}  // namespace tutti::exec
