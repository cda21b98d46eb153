// Fused groups (issue 32, src/api/group_fusion.h): a group's consecutive small all-reduces of
// one datatype and op run as one packed all-reduce. Over real processes: results equal those
// of the calls one after another (against closed forms) for mixed datatypes and ops, zero
// counts, in place, a call reading an earlier call's result, a call above the member limit and
// another collective between them, blocking and on a host stream; the bytes between the
// buffers stay untouched; ranks whose groups differ get an error, not a hang. Mixed groups
// (all-reduce, all-gather, reduce-scatter, all-to-all) fuse into one schedule at 2-4 ranks,
// blocking and on a host stream, with forced algorithms, or run call by call when a forced
// algorithm cannot merge; a call reading an earlier result starts a new run.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "comm_test_util.h"
#include "harness/fork_harness.h"
#include "tutti/tutti.h"

namespace tutti::test {
namespace {

constexpr uint8_t kGuard = 0xA5;

// One arena for every buffer of the group, 64 guard bytes between buffers.
struct Arena {
  std::vector<uint8_t> bytes;
  std::vector<std::pair<size_t, size_t>> spans;  // offset, length
  size_t add(size_t length) {
    const size_t at = bytes.size() + 64;
    bytes.resize(at + length + 64, kGuard);
    spans.emplace_back(at, length);
    return at;
  }
  template <typename T>
  T* at(size_t offset) {
    return reinterpret_cast<T*>(bytes.data() + offset);
  }
  // The guard bytes: every byte outside the spans.
  std::string damagedGuard() const {
    size_t next = 0;
    for (auto [at, len] : spans) {
      for (size_t i = next; i < at; ++i)
        if (bytes[i] != kGuard) return "guard byte " + std::to_string(i) + " was written";
      next = at + len;
    }
    return "";
  }
};

// Input element i of call k on rank r, exact in every type used (small integers).
int64_t input(int r, int k, size_t i) {
  return (r + 1) * (k % 9 + 1) + static_cast<int64_t>(i % 13);
}

struct Call {
  enum Kind { kF32Sum, kI32Max, kF64Avg, kAllGather } kind;
  size_t count;
  bool inPlace;
  int readsCall = -1;  // reads this earlier call's output as its input (sum of sums)
  size_t send = 0, recv = 0;
};

// The group: runs of fusible all-reduces broken by datatype/op changes, an all-gather, a
// call above the member limit (8 KiB) and a call reading an earlier result.
std::vector<Call> groupCalls() {
  std::vector<Call> calls;
  for (int k = 0; k < 20; ++k) calls.push_back({Call::kF32Sum, size_t(k * 37 % 300), k % 5 == 0});
  for (int k = 0; k < 8; ++k) calls.push_back({Call::kI32Max, size_t(1 + k * 11), k % 3 == 0});
  calls.push_back({Call::kF64Avg, 1000, false});
  calls.push_back({Call::kF64Avg, 0, false});
  calls.push_back({Call::kF64Avg, 77, true});
  calls.push_back({Call::kAllGather, 5, false});
  calls.push_back({Call::kF32Sum, 30000, false});  // 120000 B: above the member limit (8 KiB)
  for (int k = 0; k < 30; ++k) calls.push_back({Call::kF32Sum, size_t(1 + k * 7), false});
  calls.push_back({Call::kF32Sum, 8, false, static_cast<int>(calls.size()) - 3});
  calls.push_back({Call::kF32Sum, 8, false, static_cast<int>(calls.size()) - 1});
  return calls;
}

size_t elementSize(Call::Kind k) { return k == Call::kF64Avg ? 8 : 4; }

// Issues the group on this rank (stream may be NULL); returns the calls with their offsets.
std::vector<Call> issueGroup(tuttiComm_t comm, Arena& arena, int rank, int n,
                             tuttiStream_t stream) {
  std::vector<Call> calls = groupCalls();
  for (size_t k = 0; k < calls.size(); ++k) {
    Call& c = calls[k];
    const size_t es = elementSize(c.kind);
    const size_t outCount = c.kind == Call::kAllGather ? c.count * n : c.count;
    c.recv = arena.add(outCount * es);
    c.send = c.inPlace          ? c.recv
             : c.readsCall >= 0 ? calls[c.readsCall].recv
                                : arena.add(c.count * es);
    if (c.readsCall >= 0) continue;  // its input is written by the earlier call
    for (size_t i = 0; i < c.count; ++i) {
      const int64_t v = input(rank, static_cast<int>(k), i);
      if (c.kind == Call::kF32Sum || c.kind == Call::kAllGather)
        arena.at<float>(c.send)[i] = static_cast<float>(v);
      else if (c.kind == Call::kI32Max)
        arena.at<int32_t>(c.send)[i] = static_cast<int32_t>(v);
      else
        arena.at<double>(c.send)[i] = static_cast<double>(v);
    }
  }
  EXPECT_EQ(tuttiGroupStart(), tuttiSuccess);
  for (Call& c : calls) {
    void* s = arena.bytes.data() + c.send;
    void* r = arena.bytes.data() + c.recv;
    tuttiResult_t res = tuttiSuccess;
    switch (c.kind) {
      case Call::kF32Sum:
        res = tuttiAllReduce(s, r, c.count, tuttiFloat32, tuttiSum, comm, stream);
        break;
      case Call::kI32Max:
        res = tuttiAllReduce(s, r, c.count, tuttiInt32, tuttiMax, comm, stream);
        break;
      case Call::kF64Avg:
        res = tuttiAllReduce(s, r, c.count, tuttiFloat64, tuttiAvg, comm, stream);
        break;
      case Call::kAllGather:
        res = tuttiAllGather(s, r, c.count, tuttiFloat32, comm, stream);
        break;
    }
    EXPECT_EQ(res, tuttiSuccess) << tuttiGetLastError(comm);
  }
  return calls;
}

// The first wrong element, or "".
std::string check(Arena& arena, const std::vector<Call>& calls, int n) {
  auto sum = [&](int k, size_t i) {
    int64_t s = 0;
    for (int r = 0; r < n; ++r) s += input(r, k, i);
    return s;
  };
  for (size_t k = 0; k < calls.size(); ++k) {
    const Call& c = calls[k];
    const size_t outCount = c.kind == Call::kAllGather ? c.count * n : c.count;
    for (size_t i = 0; i < outCount; ++i) {
      double want = 0, got = 0;
      if (c.kind == Call::kF32Sum) {
        // A call reading call j's result sums n copies of it (twice: sum of sums of sums).
        int depth = 0;
        int src = static_cast<int>(k);
        while (calls[src].readsCall >= 0) src = calls[src].readsCall, ++depth;
        want = static_cast<double>(sum(src, i));
        for (int d = 0; d < depth; ++d) want *= n;
        got = arena.at<float>(c.recv)[i];
      } else if (c.kind == Call::kI32Max) {
        want = static_cast<double>(input(n - 1, static_cast<int>(k), i));
        got = arena.at<int32_t>(c.recv)[i];
      } else if (c.kind == Call::kF64Avg) {
        want = static_cast<double>(sum(static_cast<int>(k), i)) / n;
        got = arena.at<double>(c.recv)[i];
      } else {
        want = static_cast<double>(
            input(static_cast<int>(i / c.count), static_cast<int>(k), i % c.count));
        got = arena.at<float>(c.recv)[i];
      }
      if (got != want)
        return "call " + std::to_string(k) + " element " + std::to_string(i) + ": " +
               std::to_string(got) + " != " + std::to_string(want);
    }
  }
  return arena.damagedGuard();
}

class Fusion : public ::testing::TestWithParam<bool> {};

TEST_P(Fusion, ResultsEqualTheCallsOneAfterAnother) {
  const bool onStream = GetParam();
  for (int n : {2, 4}) {
    tuttiUniqueId id = makeId();
    auto result = runRanks(
        n,
        [&](int rank) {
          tuttiComm_t comm = nullptr;
          TUTTI_ASSERT_OK(tuttiCommInitRank(&comm, n, id, rank), nullptr);
          tuttiStream_t stream = nullptr;
          if (onStream) TUTTI_ASSERT_OK(tuttiStreamCreate(&stream), nullptr);
          for (int round = 0; round < 2; ++round) {
            Arena arena;
            arena.bytes.reserve(1 << 20);  // offsets stay valid; pointers are taken after
            std::vector<Call> calls = issueGroup(comm, arena, rank, n, stream);
            TUTTI_ASSERT_OK(tuttiGroupEnd(), comm);
            if (onStream) TUTTI_ASSERT_OK(tuttiStreamSynchronize(stream), comm);
            std::string err = check(arena, calls, n);
            ASSERT_TRUE(err.empty()) << "rank " << rank << " of " << n << ": " << err;
          }
          if (onStream) TUTTI_ASSERT_OK(tuttiStreamDestroy(stream), nullptr);
          TUTTI_ASSERT_OK(tuttiCommDestroy(comm), nullptr);
        },
        60);
    EXPECT_RANKS_OK(result);
  }
}

INSTANTIATE_TEST_SUITE_P(Blocking, Fusion, ::testing::Values(false, true),
                         [](const ::testing::TestParamInfo<bool>& i) {
                           return i.param ? "HostStream" : "Blocking";
                         });

// Two ranks issue different groups (issueGroup(comm, rank) records the calls): both get an
// error within seconds instead of a hang or a wrong result, whose text holds `named`.
void expectGroupsToFail(const std::function<void(tuttiComm_t, int)>& issueGroup,
                        const char* named) {
  const int n = 2;
  tuttiUniqueId id = makeId();
  auto result = runRanks(
      n,
      [&](int rank) {
        tuttiConfig_t config = TUTTI_CONFIG_INITIALIZER;
        config.timeoutMs = 5000;
        tuttiComm_t comm = nullptr;
        TUTTI_ASSERT_OK(tuttiCommInitRankConfig(&comm, n, id, rank, &config), nullptr);
        const auto t0 = std::chrono::steady_clock::now();
        TUTTI_ASSERT_OK(tuttiGroupStart(), nullptr);
        issueGroup(comm, rank);
        EXPECT_NE(tuttiGroupEnd(), tuttiSuccess) << "groups of different calls succeeded";
        EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(),
                  6.0);
        EXPECT_NE(std::string(tuttiGetLastError(comm)).find(named), std::string::npos)
            << tuttiGetLastError(comm);
        tuttiCommAbort(comm);
        tuttiCommDestroy(comm);
      },
      60);
  EXPECT_RANKS_OK(result);
}

// Rank 0's group holds three small all-reduces, rank 1's two: the packed calls differ in
// count.
TEST(FusionMismatch, DifferentGroupsFailOnEveryRank) {
  std::vector<float> a(100, 1.0f), b(100, 2.0f), c(100, 3.0f);
  expectGroupsToFail(
      [&](tuttiComm_t comm, int rank) {
        tuttiAllReduce(a.data(), a.data(), a.size(), tuttiFloat32, tuttiSum, comm, nullptr);
        tuttiAllReduce(b.data(), b.data(), b.size(), tuttiFloat32, tuttiSum, comm, nullptr);
        if (rank == 0)
          tuttiAllReduce(c.data(), c.data(), c.size(), tuttiFloat32, tuttiSum, comm, nullptr);
      },
      "mismatched collective calls");
}

// ---- Mixed groups: all-reduce, all-gather, reduce-scatter and all-to-all fused into one
// schedule (Communicator::fusedCollectives).

// Element i of member m's input on rank r: distinct per rank, member and element, not periodic.
int32_t mixedInput(int r, int m, size_t i) {
  return static_cast<int32_t>(1000003 * m + 7919 * r + static_cast<int64_t>(i * i % 10007) +
                              static_cast<int64_t>(i));
}

struct Mixed {
  enum Kind { kAllReduce, kAllGather, kReduceScatter, kAllToAll, kAvg64 } kind;
  size_t count;
  bool inPlace = false;
  int readsCall = -1;  // reduce-scatter of this earlier all-gather's output
  size_t send = 0, recv = 0;
};

size_t mixedIn(const Mixed& c, int n) {
  return c.kind == Mixed::kReduceScatter || c.kind == Mixed::kAllToAll ? c.count * n : c.count;
}
size_t mixedOut(const Mixed& c, int n) {
  return c.kind == Mixed::kAllGather || c.kind == Mixed::kAllToAll ? c.count * n : c.count;
}

// A float64 average first (a run of its own: another datatype and op), then six sets of the
// four collectives (in place where the call allows it), one reduce-scatter reading the third
// set's all-gather (it starts a new run), and one more set after it.
std::vector<Mixed> mixedCalls() {
  std::vector<Mixed> calls{{Mixed::kAvg64, 33}};
  for (int k = 0; k < 7; ++k) {
    calls.push_back({Mixed::kAllReduce, size_t(50 + 13 * k), k % 2 == 1});
    calls.push_back({Mixed::kAllGather, size_t(7 + 3 * k)});
    calls.push_back({Mixed::kReduceScatter, size_t(11 + k)});
    calls.push_back({Mixed::kAllToAll, size_t(4 + k), k % 2 == 0});
    if (k == 5) calls.push_back({Mixed::kReduceScatter, size_t(7 + 3 * 2), false, 1 + 4 * 2 + 1});
  }
  return calls;
}

void fillMixed(Arena& arena, std::vector<Mixed>& calls, int rank, int n) {
  for (size_t k = 0; k < calls.size(); ++k) {
    Mixed& c = calls[k];
    const size_t es = c.kind == Mixed::kAvg64 ? 8 : 4;
    c.recv = arena.add(mixedOut(c, n) * es);
    if (c.readsCall >= 0) {
      c.send = calls[c.readsCall].recv;
      continue;
    }
    // In place (all-reduce and all-to-all only): one buffer.
    c.send = c.inPlace ? c.recv : arena.add(mixedIn(c, n) * es);
    for (size_t i = 0; i < mixedIn(c, n); ++i) {
      const int32_t v = mixedInput(rank, static_cast<int>(k), i);
      if (c.kind == Mixed::kAvg64)
        arena.at<double>(c.send)[i] = v;
      else
        arena.at<int32_t>(c.send)[i] = v;
    }
  }
}

tuttiResult_t issueMixed(tuttiComm_t comm, Arena& arena, const Mixed& c, tuttiStream_t stream) {
  void* s = arena.bytes.data() + c.send;
  void* r = arena.bytes.data() + c.recv;
  switch (c.kind) {
    case Mixed::kAllReduce:
      return tuttiAllReduce(s, r, c.count, tuttiInt32, tuttiSum, comm, stream);
    case Mixed::kAllGather:
      return tuttiAllGather(s, r, c.count, tuttiInt32, comm, stream);
    case Mixed::kReduceScatter:
      return tuttiReduceScatter(s, r, c.count, tuttiInt32, tuttiSum, comm, stream);
    case Mixed::kAllToAll:
      return tuttiAllToAll(s, r, c.count, tuttiInt32, comm, stream);
    case Mixed::kAvg64:
      return tuttiAllReduce(s, r, c.count, tuttiFloat64, tuttiAvg, comm, stream);
  }
  return tuttiInternalError;
}

// Element i of call k's output on rank r, from the inputs alone.
double mixedWant(const std::vector<Mixed>& calls, size_t k, int r, int n, size_t i) {
  const Mixed& c = calls[k];
  const int m = static_cast<int>(k);
  double sum = 0;
  switch (c.kind) {
    case Mixed::kAllReduce:
    case Mixed::kAvg64:
      for (int q = 0; q < n; ++q) sum += mixedInput(q, m, i);
      return c.kind == Mixed::kAvg64 ? sum / n : sum;
    case Mixed::kAllGather:
      return mixedInput(static_cast<int>(i / c.count), m, i % c.count);
    case Mixed::kReduceScatter:
      if (c.readsCall >= 0)  // every rank's input is the same all-gather output
        return double(n) * mixedWant(calls, static_cast<size_t>(c.readsCall), r, n,
                                     static_cast<size_t>(r) * c.count + i);
      for (int q = 0; q < n; ++q) sum += mixedInput(q, m, static_cast<size_t>(r) * c.count + i);
      return sum;
    case Mixed::kAllToAll:
      return mixedInput(static_cast<int>(i / c.count), m,
                        static_cast<size_t>(r) * c.count + i % c.count);
  }
  return -1;
}

std::string checkMixed(Arena& arena, const std::vector<Mixed>& calls, int rank, int n) {
  for (size_t k = 0; k < calls.size(); ++k) {
    const Mixed& c = calls[k];
    for (size_t i = 0; i < mixedOut(c, n); ++i) {
      const double got =
          c.kind == Mixed::kAvg64 ? arena.at<double>(c.recv)[i] : arena.at<int32_t>(c.recv)[i];
      const double want = mixedWant(calls, k, rank, n, i);
      if (got != want)
        return "call " + std::to_string(k) + " element " + std::to_string(i) + ": " +
               std::to_string(got) + " != " + std::to_string(want);
    }
  }
  return arena.damagedGuard();
}

// spec: an algorithm spec forced on the communicator ("" = automatic); fuses: whether the
// group's last run must have been fused; hosts > 1: ranks on that many TUTTI_HOSTID hosts
// (round robin: shm inside a host, tcp between them).
void runMixed(int n, bool onStream, const char* spec, bool fuses, int hosts = 1) {
  tuttiUniqueId id = makeId();
  auto result = runRanks(
      n,
      [&](int rank) {
        if (hosts > 1)
          setenv("TUTTI_HOSTID", ("fusion-host-" + std::to_string(rank % hosts)).c_str(), 1);
        tuttiComm_t comm = nullptr;
        TUTTI_ASSERT_OK(tuttiCommInitRank(&comm, n, id, rank), nullptr);
        if (*spec != '\0') TUTTI_ASSERT_OK(tuttiCommSetAlgorithm(comm, spec), comm);
        tuttiStream_t stream = nullptr;
        if (onStream) TUTTI_ASSERT_OK(tuttiStreamCreate(&stream), nullptr);
        for (int round = 0; round < 2; ++round) {
          Arena arena;
          arena.bytes.reserve(1 << 20);  // offsets stay valid; pointers are taken after
          std::vector<Mixed> calls = mixedCalls();
          fillMixed(arena, calls, rank, n);
          TUTTI_ASSERT_OK(tuttiGroupStart(), nullptr);
          for (const Mixed& c : calls) TUTTI_ASSERT_OK(issueMixed(comm, arena, c, stream), comm);
          TUTTI_ASSERT_OK(tuttiGroupEnd(), comm);
          if (onStream) TUTTI_ASSERT_OK(tuttiStreamSynchronize(stream), comm);
          std::string err = checkMixed(arena, calls, rank, n);
          ASSERT_TRUE(err.empty()) << "rank " << rank << " of " << n << ": " << err;
          EXPECT_EQ(std::string(tuttiCommLastAlgorithm(comm)) == "fused", fuses)
              << "last algorithm " << tuttiCommLastAlgorithm(comm);
        }
        if (onStream) TUTTI_ASSERT_OK(tuttiStreamDestroy(stream), nullptr);
        TUTTI_ASSERT_OK(tuttiCommDestroy(comm), nullptr);
      },
      60);
  EXPECT_RANKS_OK(result);
}

TEST(MixedFusion, ResultsEqualTheCallsOneAfterAnother) {
  runMixed(2, false, "", true);
  runMixed(3, true, "", true);
  runMixed(4, false, "", true);
}

// Two hosts of two ranks: the members' algorithms (hierarchical ones among the candidates)
// merge over shm and tcp alike.
TEST(MixedFusion, AcrossHosts) { runMixed(4, false, "", true, 2); }

// Forced algorithms: ones that merge still fuse; a window-only one (direct) cannot, and the
// group runs call by call with the same results.
TEST(MixedFusion, ForcedAlgorithmsFuseOrRunCallByCall) {
  runMixed(4, false, "allreduce:ring,allgather:bruck,reducescatter:ring,alltoall:pairwise", true);
  runMixed(3, true, "allgather:direct", false);
}

// Rank 0's group holds an all-gather and a reduce-scatter, rank 1's one more reduce-scatter:
// the fused calls differ, and the error names a fused group.
TEST(MixedFusion, DifferentGroupsFailOnEveryRank) {
  std::vector<int32_t> in(64), gathered(128), a(32), b(32);
  expectGroupsToFail(
      [&](tuttiComm_t comm, int rank) {
        std::fill(in.begin(), in.end(), rank);
        tuttiAllGather(in.data(), gathered.data(), 64, tuttiInt32, comm, nullptr);
        tuttiReduceScatter(in.data(), a.data(), 32, tuttiInt32, tuttiSum, comm, nullptr);
        if (rank == 1)
          tuttiReduceScatter(in.data(), b.data(), 32, tuttiInt32, tuttiSum, comm, nullptr);
      },
      "fused group");
}

}  // namespace
}  // namespace tutti::test
