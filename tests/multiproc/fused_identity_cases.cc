#include "fused_identity_cases.h"

#include <sys/mman.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <new>

#include "comm_test_util.h"
#include "harness/fork_harness.h"

namespace tutti::test {

const std::vector<IdentityCase>& identityCases() {
  static const std::vector<IdentityCase> cases{
      {"PackedSwappedShm4", 4, "shm", false, tuttiFloat32, tuttiSum, {16, 32}, {32, 16}, 3},
      {"PackedOffByOneTcp3", 3, "tcp", false, tuttiInt32, tuttiSum, {2048, 2047}, {2047, 2048}, 0},
      {"PackedSplitShm2", 2, "shm", false, tuttiFloat64, tuttiMax, {10, 30, 8}, {24, 16, 8}, 1},
      {"FusedSwappedTcp4", 4, "tcp", true, tuttiInt32, tuttiSum, {16, 32}, {32, 16}, 2},
      {"FusedSwappedShm3", 3, "shm", true, tuttiFloat32, tuttiSum, {100, 3}, {3, 100}, 1},
  };
  return cases;
}

namespace {

constexpr double kSentinel = -7;  // every output element before the group runs
constexpr size_t kGatherCount = 5;

// Input element i of all-reduce k on rank r: distinct per rank, call and element, not
// periodic, exact in float32 when summed over 4 ranks (< 2^24).
int64_t input(int r, size_t k, size_t i) {
  return 100003 * static_cast<int64_t>(k + 1) + 7919 * r + static_cast<int64_t>(i * i % 10007) +
         static_cast<int64_t>(i);
}

size_t sizeOf(tuttiDataType_t t) { return t == tuttiFloat64 ? 8 : 4; }

void put(std::vector<std::byte>& b, tuttiDataType_t t, size_t i, double v) {
  if (t == tuttiFloat32) reinterpret_cast<float*>(b.data())[i] = static_cast<float>(v);
  if (t == tuttiFloat64) reinterpret_cast<double*>(b.data())[i] = v;
  if (t == tuttiInt32) reinterpret_cast<int32_t*>(b.data())[i] = static_cast<int32_t>(v);
}

double get(const std::vector<std::byte>& b, tuttiDataType_t t, size_t i) {
  if (t == tuttiFloat32) return reinterpret_cast<const float*>(b.data())[i];
  if (t == tuttiFloat64) return reinterpret_cast<const double*>(b.data())[i];
  return reinterpret_cast<const int32_t*>(b.data())[i];
}

// What the ranks write back (in memory shared with the parent).
struct Shared {
  std::atomic<int> mismatch, other, right, wrong, touched;
  std::atomic<int64_t> slowestUs;
  std::atomic<int> errorTaken, wrongTaken;
  char error[1024];
  char wrongText[256];
};

void takeText(std::atomic<int>& taken, char* to, size_t size, const std::string& text) {
  if (taken.exchange(1) == 0) snprintf(to, size, "%s", text.c_str());
}

// This rank's all-reduces: the reference assumes every rank made this rank's calls, so a
// success where another rank's calls differ shows as wrong.
struct Calls {
  std::vector<size_t> counts;
  std::vector<std::vector<std::byte>> in, out;
  std::vector<float> gatherIn, gatherOut;
};

Calls makeCalls(const IdentityCase& c, int rank) {
  Calls calls;
  calls.counts = rank == c.oddRank ? c.oddCounts : c.counts;
  const size_t es = sizeOf(c.dtype);
  for (size_t k = 0; k < calls.counts.size(); ++k) {
    calls.in.emplace_back(calls.counts[k] * es);
    calls.out.emplace_back(calls.counts[k] * es);
    for (size_t i = 0; i < calls.counts[k]; ++i) {
      put(calls.in[k], c.dtype, i, static_cast<double>(input(rank, k, i)));
      put(calls.out[k], c.dtype, i, kSentinel);
    }
  }
  calls.gatherIn.assign(kGatherCount, static_cast<float>(rank + 1));
  calls.gatherOut.assign(kGatherCount * static_cast<size_t>(c.ranks), kSentinel);
  return calls;
}

// The first element of the results that differs from the reference, or "".
std::string firstWrong(const IdentityCase& c, const Calls& calls) {
  for (size_t k = 0; k < calls.counts.size(); ++k)
    for (size_t i = 0; i < calls.counts[k]; ++i) {
      double want = c.op == tuttiMax ? static_cast<double>(input(0, k, i)) : 0;
      for (int q = 0; q < c.ranks; ++q) {
        const auto v = static_cast<double>(input(q, k, i));
        want = c.op == tuttiMax ? std::max(want, v) : want + v;
      }
      const double got = get(calls.out[k], c.dtype, i);
      if (got != want)
        return "all-reduce " + std::to_string(k) + " element " + std::to_string(i) + ": " +
               std::to_string(got) + " != " + std::to_string(want);
    }
  for (size_t i = 0; c.mixed && i < calls.gatherOut.size(); ++i)
    if (calls.gatherOut[i] != static_cast<float>(i / kGatherCount + 1))
      return "all-gather element " + std::to_string(i);
  return "";
}

bool outputsUntouched(const IdentityCase& c, const Calls& calls) {
  for (size_t k = 0; k < calls.counts.size(); ++k)
    for (size_t i = 0; i < calls.counts[k]; ++i)
      if (get(calls.out[k], c.dtype, i) != kSentinel) return false;
  return true;
}

void runRank(const IdentityCase& c, const tuttiUniqueId& id, int rank, int timeoutMs,
             Shared* shared) {
  tuttiConfig_t config = TUTTI_CONFIG_INITIALIZER;
  config.timeoutMs = timeoutMs;
  config.transport = c.transport;
  tuttiComm_t comm = nullptr;
  TUTTI_ASSERT_OK(tuttiCommInitRankConfig(&comm, c.ranks, id, rank, &config), nullptr);
  Calls calls = makeCalls(c, rank);
  const auto t0 = std::chrono::steady_clock::now();
  TUTTI_ASSERT_OK(tuttiGroupStart(), nullptr);
  if (c.mixed)
    TUTTI_ASSERT_OK(tuttiAllGather(calls.gatherIn.data(), calls.gatherOut.data(), kGatherCount,
                                   tuttiFloat32, comm, nullptr),
                    comm);
  for (size_t k = 0; k < calls.counts.size(); ++k)
    TUTTI_ASSERT_OK(tuttiAllReduce(calls.in[k].data(), calls.out[k].data(), calls.counts[k],
                                   c.dtype, c.op, comm, nullptr),
                    comm);
  const tuttiResult_t r = tuttiGroupEnd();
  const auto us =
      std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::steady_clock::now() - t0)
          .count();
  int64_t slowest = shared->slowestUs.load();
  while (us > slowest && !shared->slowestUs.compare_exchange_weak(slowest, us)) {
  }
  if (r == tuttiSuccess) {
    const std::string wrong = firstWrong(c, calls);
    (wrong.empty() ? shared->right : shared->wrong)++;
    if (!wrong.empty())
      takeText(shared->wrongTaken, shared->wrongText, sizeof(shared->wrongText),
               "rank " + std::to_string(rank) + ": " + wrong);
  } else {
    const std::string text = tuttiGetLastError(comm);
    const bool mismatch = text.find("mismatched collective calls") != std::string::npos;
    (mismatch ? shared->mismatch : shared->other)++;
    if (!c.mixed && !outputsUntouched(c, calls)) shared->touched++;
    takeText(shared->errorTaken, shared->error, sizeof(shared->error),
             "rank " + std::to_string(rank) + ": " + text);
  }
  tuttiCommAbort(comm);
  tuttiCommDestroy(comm);
}

}  // namespace

IdentityOutcome runIdentityCase(const IdentityCase& c, int timeoutMs) {
  void* mem =
      mmap(nullptr, sizeof(Shared), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (mem == MAP_FAILED) return {};
  auto* shared = new (mem) Shared{};
  const tuttiUniqueId id = makeId();
  const RanksResult ranks = runRanks(
      c.ranks, [&](int rank) { runRank(c, id, rank, timeoutMs, shared); },
      3.0 * timeoutMs / 1000 + 30);
  IdentityOutcome o;
  o.mismatchErrors = shared->mismatch.load();
  o.otherErrors = shared->other.load();
  o.rightResults = shared->right.load();
  o.wrongResults = shared->wrong.load();
  o.touchedOutputs = shared->touched.load();
  o.slowestSeconds = static_cast<double>(shared->slowestUs.load()) / 1e6;
  o.firstError = shared->error;
  o.firstWrong = shared->wrongText;
  o.ranAll = ranks.allOk();
  o.ranks = ranks.describe();
  munmap(mem, sizeof(Shared));
  return o;
}

}  // namespace tutti::test
