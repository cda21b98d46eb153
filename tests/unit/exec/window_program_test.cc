// Window programs (exec/window_program.h) must do exactly what the generic executor does with
// the same window-only schedule: every `direct` schedule (all-reduce one-shot and two-shot,
// all-gather, reduce-scatter; whole window and half-window calls, several chunks) runs on a
// real shm window with ranks as threads, alternately through the program and through
// exec::execute, and every output must equal the integer reference. Alternating also checks
// that both keep the window's epoch / half / skipped-final-post bookkeeping the same way.
#include "exec/window_program.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "bootstrap/memory_store.h"
#include "exec/executor.h"
#include "harness/threads_harness.h"
#include "interfaces/algorithm.h"
#include "shm_window_rank.h"

namespace tutti::exec {
namespace {

using test::kWindowBytes;
using Rank = test::WindowRank;
Rank makeRank(int rank, int nranks, bootstrap::Store& store) {
  return test::makeWindowRank(rank, nranks, store);
}

int32_t input(int rank, size_t i) { return static_cast<int32_t>(rank * 1000003 + i * 7 + 1); }

// count: all-reduce elements, all-gather per-rank send count, reduce-scatter per-rank count.
void runColl(algo::Coll coll, int nranks, size_t count) {
  bootstrap::MemoryStore store;
  test::runThreads(nranks, [&](int rank) {
    Rank r = makeRank(rank, nranks, store);
    ASSERT_NE(r.window, nullptr);
    algo::CollArgs a;
    a.coll = coll;
    a.count = count;
    a.dtype = tuttiInt32;
    a.op = tuttiSum;
    a.rank = rank;
    a.nranks = nranks;
    a.windowBytes = r.window->bytes();
    const algo::AlgorithmInfo* info = algo::find(coll, "direct");
    ASSERT_NE(info, nullptr);
    ASSERT_TRUE(info->applicable(a));
    Schedule s = info->build(a);
    ASSERT_TRUE(WindowProgram::applies(s));
    WindowProgram program(s, *r.window);

    const size_t inElems = coll == algo::Coll::kReduceScatter ? count * nranks : count;
    const size_t outElems = coll == algo::Coll::kAllGather ? count * nranks : count;
    std::vector<int32_t> in(inElems), out(outElems), expect(outElems);
    for (size_t i = 0; i < inElems; ++i) in[i] = input(rank, i);
    for (size_t i = 0; i < outElems; ++i) {
      if (coll == algo::Coll::kAllGather) {
        expect[i] = input(static_cast<int>(i / count), i % count);
      } else {
        size_t at = coll == algo::Coll::kReduceScatter ? rank * count + i : i;
        int64_t sum = 0;
        for (int p = 0; p < nranks; ++p) sum += input(p, at);
        expect[i] = static_cast<int32_t>(sum);
      }
    }
    std::vector<std::byte> scratch(s.scratchBytes);
    ExecOptions o = test::windowCallOptions(r, rank, {count, static_cast<uint64_t>(coll) + 1});
    std::vector<transport::Connection*> none(nranks, nullptr);
    for (int iter = 0; iter < 12; ++iter) {
      std::fill(out.begin(), out.end(), -1);
      std::byte* buffers[3] = {reinterpret_cast<std::byte*>(in.data()),
                               reinterpret_cast<std::byte*>(out.data()), scratch.data()};
      if (iter % 3 == 2)
        execute(s, buffers, none, o);  // the generic executor between program runs
      else
        program.run(buffers, o);
      ASSERT_EQ(out, expect) << algo::collName(coll) << " n=" << nranks << " count=" << count
                             << " iter " << iter << " rank " << rank;
    }
  });
}

class WindowPrograms : public ::testing::TestWithParam<int> {};

TEST_P(WindowPrograms, AllReduceMatchesTheReference) {
  // 1, 7: one-shot in a half window; 100000: two-shot in a half, reduce chains of more
  // than one cache block; 400000: whole window, several chunks.
  for (size_t count : {1, 7, 100000, 400000}) runColl(algo::Coll::kAllReduce, GetParam(), count);
}

TEST_P(WindowPrograms, AllGatherMatchesTheReference) {
  for (size_t count : {1, 1000, 90000}) runColl(algo::Coll::kAllGather, GetParam(), count);
}

TEST_P(WindowPrograms, ReduceScatterMatchesTheReference) {
  for (size_t count : {1, 1000, 90000}) runColl(algo::Coll::kReduceScatter, GetParam(), count);
}

INSTANTIATE_TEST_SUITE_P(Ranks, WindowPrograms, ::testing::Values(2, 3, 4));

// Schedules with transfers stay with the generic executor.
TEST(WindowProgramApplies, OnlyWindowSchedules) {
  for (const algo::AlgorithmInfo& info : algo::registry()) {
    algo::CollArgs a;
    a.coll = info.coll;
    a.count = 1000;
    a.nranks = 4;
    a.rank = 1;
    a.windowBytes = kWindowBytes;
    if (!info.applicable(a)) continue;
    Schedule s = info.build(a);
    EXPECT_EQ(WindowProgram::applies(s), std::string(info.name) == "direct")
        << algo::collName(info.coll) << ":" << info.name;
  }
}

}  // namespace
}  // namespace tutti::exec
