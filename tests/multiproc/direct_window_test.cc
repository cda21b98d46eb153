// The direct algorithms' shared window under a stream of back-to-back calls: small calls run
// in alternate halves of the window without waiting for the peers to finish the previous
// call, larger ones use the whole window in chunks. A rank overwriting a half a peer still
// reads, or checking a tag a peer already replaced, shows up here as a wrong element or a
// false "mismatched collective calls" error.
#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <cstdint>
#include <string>
#include <vector>

#include "comm_test_util.h"
#include "harness/fork_harness.h"
#include "tutti/tutti.h"

namespace tutti::test {
namespace {

constexpr size_t kWindowBytes = 64 << 10;

int32_t valueOf(int rank, int iter, size_t i) {
  return static_cast<int32_t>((rank + 1) * 1000003u + iter * 7919u + i * 31u);
}

// Element counts (int32) cycling through: halves (<= 32 KiB), whole window in one chunk,
// several chunks, and a zero count.
size_t countOf(int iter) {
  static const size_t counts[] = {1, 300, 8000, 5, 12000, 2, 40000, 0, 1023, 8192};
  return counts[iter % (sizeof(counts) / sizeof(counts[0]))];
}

void runStream(int n, int rank, const tuttiUniqueId& id, int iters) {
  setenv("TUTTI_ALGO", "allreduce:direct;allgather:direct;reducescatter:direct", 1);
  setenv("TUTTI_SHM_WINDOW_BYTES", std::to_string(kWindowBytes).c_str(), 1);
  tuttiComm_t comm = nullptr;
  TUTTI_ASSERT_OK(tuttiCommInitRank(&comm, n, id, rank), nullptr);
  std::vector<int32_t> in, out;
  for (int it = 0; it < iters; ++it) {
    const size_t count = countOf(it);
    // Some ranks lag now and then, so that the others run ahead into the next call.
    if ((it * 13 + rank * 5) % 29 == 0) usleep(200);
    switch (it % 3) {
      case 0: {  // all-reduce
        in.resize(count);
        for (size_t i = 0; i < count; ++i) in[i] = valueOf(rank, it, i);
        out.assign(count, -1);
        TUTTI_ASSERT_OK(
            tuttiAllReduce(in.data(), out.data(), count, tuttiInt32, tuttiSum, comm, nullptr),
            comm);
        if (count > 0) {
          ASSERT_STREQ(tuttiCommLastAlgorithm(comm), "direct");
        }
        for (size_t i = 0; i < count; ++i) {
          int32_t want = 0;
          for (int r = 0; r < n; ++r) want += valueOf(r, it, i);
          ASSERT_EQ(out[i], want) << "all-reduce, call " << it << ", count " << count
                                  << ", element " << i;
        }
        break;
      }
      case 1: {  // all-gather
        const size_t per = count / n;
        in.resize(per);
        for (size_t i = 0; i < per; ++i) in[i] = valueOf(rank, it, i);
        out.assign(per * n, -1);
        TUTTI_ASSERT_OK(tuttiAllGather(in.data(), out.data(), per, tuttiInt32, comm, nullptr),
                        comm);
        for (int r = 0; r < n; ++r)
          for (size_t i = 0; i < per; ++i)
            ASSERT_EQ(out[r * per + i], valueOf(r, it, i))
                << "all-gather, call " << it << ", block " << r << ", element " << i;
        break;
      }
      case 2: {  // reduce-scatter
        const size_t per = count / n;
        in.resize(per * n);
        for (size_t i = 0; i < per * n; ++i) in[i] = valueOf(rank, it, i);
        out.assign(per, -1);
        TUTTI_ASSERT_OK(
            tuttiReduceScatter(in.data(), out.data(), per, tuttiInt32, tuttiSum, comm, nullptr),
            comm);
        for (size_t i = 0; i < per; ++i) {
          int32_t want = 0;
          for (int r = 0; r < n; ++r) want += valueOf(r, it, rank * per + i);
          ASSERT_EQ(out[i], want) << "reduce-scatter, call " << it << ", element " << i;
        }
        break;
      }
    }
  }
  TUTTI_ASSERT_OK(tuttiCommDestroy(comm), nullptr);
}

class DirectWindow : public ::testing::TestWithParam<int> {};

TEST_P(DirectWindow, BackToBackCallsInAlternateHalvesStayCorrect) {
  const int n = GetParam();
  tuttiUniqueId id = makeId();
  auto result = runRanks(
      n, [&](int rank) { runStream(n, rank, id, 1500); }, 300);
  EXPECT_TRUE(result.allOk()) << result.describe();
}

INSTANTIATE_TEST_SUITE_P(Ranks, DirectWindow, ::testing::Values(2, 3, 5));

}  // namespace
}  // namespace tutti::test
