// tuttiAllReduceCompressed over forked ranks: exact "none", top-k and QSGD results identical
// on every rank, wire sizes, error-feedback mass conservation, argument errors.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <numeric>
#include <string>
#include <vector>

#include "comm_test_util.h"
#include "harness/fork_harness.h"
#include "tutti/tutti.h"

namespace tutti::test {
namespace {

// Rank r's vector: distinct magnitudes of mixed scale and sign (no ties for top-k).
std::vector<float> gradient(int rank, size_t d, int step = 0) {
  std::vector<float> g(d);
  for (size_t i = 0; i < d; ++i) {
    uint64_t h = (i + 1) * 0x9e3779b97f4a7c15ull ^ (rank + 1) * 0xbf58476d1ce4e5b9ull ^
                 (step + 7) * 0x94d049bb133111ebull;
    h ^= h >> 29;
    double u = static_cast<double>(h % 1000003) / 1000003.0;  // [0, 1)
    g[i] = static_cast<float>((u - 0.5) * std::pow(10.0, static_cast<double>(i % 5) - 2.0)) +
           static_cast<float>(i) * 1e-7f;
  }
  return g;
}

// Every rank holds bitwise the same vector.
void expectIdenticalOnAllRanks(const std::vector<float>& v, int n, tuttiComm_t comm) {
  std::vector<float> all(v.size() * n);
  TUTTI_ASSERT_OK(tuttiAllGather(v.data(), all.data(), v.size(), tuttiFloat32, comm, nullptr),
                  comm);
  for (int r = 0; r < n; ++r)
    ASSERT_EQ(std::memcmp(all.data() + r * v.size(), v.data(), v.size() * 4), 0)
        << "rank " << r << " differs";
}

tuttiCompressionStats_t stats(tuttiComm_t comm) {
  tuttiCompressionStats_t s{};
  EXPECT_EQ(tuttiCompressionStats(comm, &s), tuttiSuccess);
  return s;
}

class Compressed : public ::testing::TestWithParam<int> {};

// "none" is the float32 left fold in rank order, bitwise, and costs 4d bytes.
TEST_P(Compressed, NoneIsExactRankOrderSum) {
  const int n = GetParam();
  const size_t d = 10007;
  tuttiUniqueId id = makeId();
  auto result = runRanks(
      n,
      [&](int rank) {
        tuttiComm_t comm = nullptr;
        TUTTI_ASSERT_OK(tuttiCommInitRank(&comm, n, id, rank), nullptr);
        std::vector<float> g = gradient(rank, d), out(d, -1.0f), expect(d, 0.0f);
        for (int r = 0; r < n; ++r) {
          std::vector<float> gr = gradient(r, d);
          for (size_t i = 0; i < d; ++i) expect[i] += gr[i];
        }
        TUTTI_ASSERT_OK(tuttiAllReduceCompressed(g.data(), out.data(), d, tuttiFloat32, "none", 1,
                                                 0, comm, nullptr),
                        comm);
        ASSERT_EQ(std::memcmp(out.data(), expect.data(), d * 4), 0);
        EXPECT_EQ(stats(comm).wireBytesLastCall, 4 * d);
        if (n == 2) {  // two terms: every summation order gives the same bits
          std::vector<float> plain(d);
          TUTTI_ASSERT_OK(
              tuttiAllReduce(g.data(), plain.data(), d, tuttiFloat32, tuttiSum, comm, nullptr),
              comm);
          ASSERT_EQ(std::memcmp(out.data(), plain.data(), d * 4), 0);
        }
        // At any n: bitwise the plain all-reduce in deterministic mode (the same rank-order
        // fold), on every algorithm the deterministic mode may pick.
        {
          tuttiConfig_t cfg = TUTTI_CONFIG_INITIALIZER;
          cfg.deterministic = 1;
          tuttiComm_t det = nullptr;
          TUTTI_ASSERT_OK(tuttiCommSplit(comm, 0, rank, &det, &cfg), comm);
          std::vector<float> plain(d, -2.0f);
          TUTTI_ASSERT_OK(
              tuttiAllReduce(g.data(), plain.data(), d, tuttiFloat32, tuttiSum, det, nullptr), det);
          ASSERT_EQ(std::memcmp(out.data(), plain.data(), d * 4), 0)
              << "none differs from the deterministic plain all-reduce ("
              << tuttiCommLastAlgorithm(det) << ")";
          TUTTI_ASSERT_OK(tuttiCommDestroy(det), nullptr);
        }
        // On a host stream, in order with the calls around it: the all-reduce after it reads
        // its result, the one before it writes its input.
        {
          tuttiStream_t s = nullptr;
          TUTTI_ASSERT_OK(tuttiStreamCreate(&s), nullptr);
          std::vector<float> in(d, -5.0f), viaStream(d, -3.0f), twice(d, -4.0f);
          TUTTI_ASSERT_OK(tuttiAllGather(g.data() + static_cast<size_t>(rank) * (d / n), in.data(),
                                         d / n, tuttiFloat32, comm, s),
                          comm);
          // After the all-gather `in` is the same on every rank: part r of rank r's gradient
          // at part r, -5 past the parts.
          std::vector<float> want(d, static_cast<float>(n) * -5.0f);
          for (int r = 0; r < n; ++r) {
            const std::vector<float> gr = gradient(r, d);
            for (size_t i = r * (d / n); i < (r + 1) * (d / n); ++i)
              want[i] = static_cast<float>(n) * gr[i];
          }
          TUTTI_ASSERT_OK(tuttiAllReduceCompressed(in.data(), viaStream.data(), d, tuttiFloat32,
                                                   "none", 2, 0, comm, s),
                          comm);
          TUTTI_ASSERT_OK(
              tuttiAllReduce(viaStream.data(), twice.data(), d, tuttiFloat32, tuttiSum, comm, s),
              comm);
          TUTTI_ASSERT_OK(tuttiStreamSynchronize(s), nullptr);
          for (size_t i = 0; i < d; ++i) {
            ASSERT_FLOAT_EQ(viaStream[i], want[i]) << "element " << i;
            ASSERT_FLOAT_EQ(twice[i], static_cast<float>(n) * want[i]) << "element " << i;
          }
          EXPECT_EQ(stats(comm).wireBytesLastCall, 4 * d);
          TUTTI_ASSERT_OK(tuttiStreamDestroy(s), nullptr);
        }
        // In place.
        TUTTI_ASSERT_OK(tuttiAllReduceCompressed(g.data(), g.data(), d, tuttiFloat32, "none", 1, 0,
                                                 comm, nullptr),
                        comm);
        ASSERT_EQ(std::memcmp(g.data(), expect.data(), d * 4), 0);
        TUTTI_ASSERT_OK(tuttiCommDestroy(comm), nullptr);
      },
      120);
  EXPECT_TRUE(result.allOk()) << result.describe();
}

// Top-k 1%: the sum of every rank's k largest-magnitude entries (exact values), k*8 bytes.
TEST_P(Compressed, TopKSumsSelectedEntries) {
  const int n = GetParam();
  const size_t d = 5000, k = 50;
  tuttiUniqueId id = makeId();
  auto result = runRanks(
      n,
      [&](int rank) {
        tuttiComm_t comm = nullptr;
        TUTTI_ASSERT_OK(tuttiCommInitRank(&comm, n, id, rank), nullptr);
        std::vector<float> g = gradient(rank, d), out(d), expect(d, 0.0f);
        for (int r = 0; r < n; ++r) {
          std::vector<float> gr = gradient(r, d);
          std::vector<size_t> idx(d);
          std::iota(idx.begin(), idx.end(), 0);
          std::partial_sort(idx.begin(), idx.begin() + k, idx.end(), [&](size_t a, size_t b) {
            return std::fabs(gr[a]) > std::fabs(gr[b]);
          });
          for (size_t j = 0; j < k; ++j) expect[idx[j]] += gr[idx[j]];
        }
        TUTTI_ASSERT_OK(tuttiAllReduceCompressed(g.data(), out.data(), d, tuttiFloat32,
                                                 "topk:ratio=0.01", 7, 0, comm, nullptr),
                        comm);
        ASSERT_EQ(std::memcmp(out.data(), expect.data(), d * 4), 0);
        EXPECT_EQ(stats(comm).wireBytesLastCall, k * 8);
        EXPECT_EQ(stats(comm).denseBytesLastCall, d * 4);
        expectIdenticalOnAllRanks(out, n, comm);
        TUTTI_ASSERT_OK(tuttiCommDestroy(comm), nullptr);
      },
      120);
  EXPECT_TRUE(result.allOk()) << result.describe();
}

double relErr(const std::vector<double>& a, const std::vector<double>& ref) {
  double num = 0, den = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    num += (a[i] - ref[i]) * (a[i] - ref[i]);
    den += ref[i] * ref[i];
  }
  return std::sqrt(num / den);
}

// QSGD s=4, B=512: identical on every rank, 4-bit codes, error within the variance bound,
// and the mean over calls (fresh randomness per step) approaches the dense sum.
TEST_P(Compressed, QsgdIsIdenticalAndUnbiased) {
  const int n = GetParam();
  const size_t d = 4096;
  const int calls = 32;
  tuttiUniqueId id = makeId();
  auto result = runRanks(
      n,
      [&](int rank) {
        tuttiComm_t comm = nullptr;
        TUTTI_ASSERT_OK(tuttiCommInitRank(&comm, n, id, rank), nullptr);
        std::vector<float> g = gradient(rank, d), out(d);
        std::vector<double> dense(d, 0.0), mean(d, 0.0), first(d);
        double sumSq = 0;
        for (int r = 0; r < n; ++r) {
          std::vector<float> gr = gradient(r, d);
          for (size_t i = 0; i < d; ++i) {
            dense[i] += gr[i];
            sumSq += static_cast<double>(gr[i]) * gr[i];
          }
        }
        for (int c = 0; c < calls; ++c) {
          TUTTI_ASSERT_OK(tuttiAllReduceCompressed(g.data(), out.data(), d, tuttiFloat32,
                                                   "qsgd:s=4,b=512", 3, 0, comm, nullptr),
                          comm);
          if (c == 0) {
            expectIdenticalOnAllRanks(out, n, comm);
            std::copy(out.begin(), out.end(), first.begin());
          }
          for (size_t i = 0; i < d; ++i) mean[i] += out[i] / static_cast<double>(calls);
        }
        EXPECT_EQ(stats(comm).wireBytesLastCall, 8 * 4 + d * 4 / 8);
        // E||Q(v) - v||^2 <= min(B/s^2, sqrt(B)/s) ||v||^2 per rank; independent across ranks.
        double bound = std::sqrt(std::min(512.0 / 16, std::sqrt(512.0) / 4) * sumSq);
        double denseNorm =
            std::sqrt(std::inner_product(dense.begin(), dense.end(), dense.begin(), 0.0));
        double e1 = relErr(first, dense), em = relErr(mean, dense);
        EXPECT_LT(e1 * denseNorm, 3 * bound) << "single-call error above 3x the rms bound";
        EXPECT_LT(em, e1 / 3) << "the mean of " << calls << " calls does not approach the sum";
        TUTTI_ASSERT_OK(tuttiCommDestroy(comm), nullptr);
      },
      120);
  EXPECT_TRUE(result.allOk()) << result.describe();
}

// Threads of this process now (/proc/self/task). ThreadSanitizer starts a thread of its own
// in the forked rank when the rank makes its first one.
#if defined(__SANITIZE_THREAD__)
constexpr long kSanitizerThreads = 1;
#else
constexpr long kSanitizerThreads = 0;
#endif
long threadCount() {
  return std::distance(std::filesystem::directory_iterator("/proc/self/task"),
                       std::filesystem::directory_iterator());
}

// Large QSGD / none calls without error feedback are pipelined (chunks of whole buckets,
// all-gathers on a helper thread); the same call with error feedback on a fresh residual
// (p = g + 0) takes the one-shot path with the same random stream: both results must be
// bitwise equal, identical on every rank, and cost the same payload bytes.
TEST_P(Compressed, PipelinedEqualsOneShot) {
  const int n = GetParam();
  const size_t d = (size_t{1} << 20) + 300;  // 4 MiB + 1200 B: pipelined, last chunk partial
  tuttiUniqueId id = makeId();
  auto result = runRanks(
      n,
      [&](int rank) {
        const long threadsBefore = threadCount();
        tuttiComm_t comm = nullptr;
        TUTTI_ASSERT_OK(tuttiCommInitRank(&comm, n, id, rank), nullptr);
        std::vector<float> g = gradient(rank, d), piped(d), oneShot(d);
        for (const char* spec : {"qsgd:s=4,b=512", "none"}) {
          TUTTI_ASSERT_OK(tuttiAllReduceCompressed(g.data(), piped.data(), d, tuttiFloat32, spec, 9,
                                                   0, comm, nullptr),
                          comm);
          const uint64_t pipedBytes = stats(comm).wireBytesLastCall;
          TUTTI_ASSERT_OK(tuttiCompressionResetKey(comm, 9), comm);  // step 0 again
          TUTTI_ASSERT_OK(tuttiAllReduceCompressed(g.data(), oneShot.data(), d, tuttiFloat32, spec,
                                                   9, 1, comm, nullptr),
                          comm);
          TUTTI_ASSERT_OK(tuttiCompressionResetKey(comm, 9), comm);
          EXPECT_EQ(pipedBytes, stats(comm).wireBytesLastCall) << spec;
          EXPECT_EQ(std::memcmp(piped.data(), oneShot.data(), d * 4), 0) << spec;
          expectIdenticalOnAllRanks(piped, n, comm);
        }
        EXPECT_EQ(stats(comm).wireBytesLastCall, 4 * d);  // none
        // The pipelined calls' helper thread: the count does not grow from call to call, and
        // nothing is left once the communicator is destroyed.
        const long afterFirst = threadCount();
        for (int i = 0; i < 3; ++i)
          TUTTI_ASSERT_OK(tuttiAllReduceCompressed(g.data(), piped.data(), d, tuttiFloat32,
                                                   "qsgd:s=4,b=512", 10, 0, comm, nullptr),
                          comm);
        EXPECT_EQ(threadCount(), afterFirst);
        TUTTI_ASSERT_OK(tuttiCommDestroy(comm), nullptr);
        EXPECT_EQ(threadCount(), threadsBefore + kSanitizerThreads);
      },
      120);
  EXPECT_TRUE(result.allOk()) << result.describe();
}

// Error feedback conserves mass: after T top-k steps and one flush (compressor "none",
// zero gradient, same key), the sum of all results equals the sum of all dense gradients up
// to float32 rounding. Without error feedback most of the mass is lost.
TEST_P(Compressed, ErrorFeedbackConservesMass) {
  const int n = GetParam();
  const size_t d = 1000;
  const int steps = 40;
  tuttiUniqueId id = makeId();
  auto result = runRanks(
      n,
      [&](int rank) {
        tuttiComm_t comm = nullptr;
        TUTTI_ASSERT_OK(tuttiCommInitRank(&comm, n, id, rank), nullptr);
        std::vector<double> dense(d, 0.0), withEf(d, 0.0), noEf(d, 0.0);
        std::vector<float> out(d), zero(d, 0.0f);
        for (int t = 0; t < steps; ++t) {
          for (int r = 0; r < n; ++r) {
            std::vector<float> gr = gradient(r, d, t);
            for (size_t i = 0; i < d; ++i) dense[i] += gr[i];
          }
          std::vector<float> g = gradient(rank, d, t);
          TUTTI_ASSERT_OK(tuttiAllReduceCompressed(g.data(), out.data(), d, tuttiFloat32,
                                                   "topk:ratio=0.01", 42, 1, comm, nullptr),
                          comm);
          for (size_t i = 0; i < d; ++i) withEf[i] += out[i];
          TUTTI_ASSERT_OK(tuttiAllReduceCompressed(g.data(), out.data(), d, tuttiFloat32,
                                                   "topk:ratio=0.01", 43, 0, comm, nullptr),
                          comm);
          for (size_t i = 0; i < d; ++i) noEf[i] += out[i];
        }
        EXPECT_EQ(stats(comm).errorFeedbackKeys, 1u);
        double before = relErr(withEf, dense);
        TUTTI_ASSERT_OK(tuttiAllReduceCompressed(zero.data(), out.data(), d, tuttiFloat32, "none",
                                                 42, 1, comm, nullptr),
                        comm);
        for (size_t i = 0; i < d; ++i) withEf[i] += out[i];
        EXPECT_LT(relErr(withEf, dense), 1e-4) << "before the flush: " << before;
        EXPECT_GT(relErr(noEf, dense), 0.3);
        // The flushed residual is zero: a further flush returns exact zeros.
        TUTTI_ASSERT_OK(tuttiAllReduceCompressed(zero.data(), out.data(), d, tuttiFloat32, "none",
                                                 42, 1, comm, nullptr),
                        comm);
        for (size_t i = 0; i < d; ++i) ASSERT_EQ(out[i], 0.0f) << i;
        TUTTI_ASSERT_OK(tuttiCompressionResetKey(comm, 42), comm);
        EXPECT_EQ(stats(comm).errorFeedbackKeys, 0u);
        TUTTI_ASSERT_OK(tuttiCommDestroy(comm), nullptr);
      },
      120);
  EXPECT_TRUE(result.allOk()) << result.describe();
}

INSTANTIATE_TEST_SUITE_P(Ranks, Compressed, ::testing::Values(2, 3, 8),
                         [](const auto& info) { return std::to_string(info.param) + "ranks"; });

// Bad compressor strings and datatypes fail cleanly on every rank; the comm stays usable;
// float16 input goes through the float path.
TEST(CompressedArgs, ErrorsAndHalfInput) {
  const int n = 2;
  tuttiUniqueId id = makeId();
  auto result = runRanks(
      n,
      [&](int rank) {
        tuttiComm_t comm = nullptr;
        TUTTI_ASSERT_OK(tuttiCommInitRank(&comm, n, id, rank), nullptr);
        std::vector<float> g(100, 1.0f), out(100);
        for (const char* bad : {"zip", "topk:ratio=2", "qsgd:s=0", "topk:"}) {
          EXPECT_EQ(tuttiAllReduceCompressed(g.data(), out.data(), 100, tuttiFloat32, bad, 1, 0,
                                             comm, nullptr),
                    tuttiInvalidArgument)
              << bad;
          std::string msg = tuttiGetLastError(comm);
          EXPECT_NE(msg.find(std::string("\"") + bad + "\""), std::string::npos) << msg;
        }
        std::vector<double> d64(100, 1.0);
        EXPECT_EQ(tuttiAllReduceCompressed(d64.data(), d64.data(), 100, tuttiFloat64, "none", 1, 0,
                                           comm, nullptr),
                  tuttiUnsupported);
        EXPECT_NE(std::string(tuttiGetLastError(comm)).find("double"), std::string::npos)
            << tuttiGetLastError(comm);
        // float16: 1.5 + 1.5 = 3 exactly.
        std::vector<uint16_t> h(64, 0x3E00), hout(64);
        TUTTI_ASSERT_OK(tuttiAllReduceCompressed(h.data(), hout.data(), 64, tuttiFloat16, "none", 2,
                                                 0, comm, nullptr),
                        comm);
        for (uint16_t v : hout) ASSERT_EQ(v, 0x4200);
        // Refused inside a group, with the function named once (issue 19 D12).
        EXPECT_EQ(tuttiGroupStart(), tuttiSuccess);
        EXPECT_EQ(tuttiAllReduceCompressed(g.data(), out.data(), 100, tuttiFloat32, NULL, 1, 0,
                                           comm, nullptr),
                  tuttiInvalidUsage);
        std::string msg = tuttiGetLastError(comm);
        EXPECT_EQ(msg.find("tuttiAllReduceCompressed: not allowed inside"), 0u) << msg;
        EXPECT_EQ(msg.find("tuttiAllReduceCompressed", 1), std::string::npos) << msg;
        EXPECT_EQ(tuttiGroupEnd(), tuttiInvalidUsage);  // the group held a refused call
        // Still usable after the errors.
        TUTTI_ASSERT_OK(tuttiAllReduceCompressed(g.data(), out.data(), 100, tuttiFloat32, NULL, 1,
                                                 0, comm, nullptr),
                        comm);
        for (float v : out) ASSERT_EQ(v, 2.0f);
        TUTTI_ASSERT_OK(tuttiCommDestroy(comm), nullptr);
      },
      60);
  EXPECT_TRUE(result.allOk()) << result.describe();
}

}  // namespace
}  // namespace tutti::test
