// tuttiAllGatherV, tuttiAllToAllV, tuttiReduceScatterV, tuttiGatherV, tuttiScatterV, tuttiGather
// and tuttiScatter (each algorithm in turn) over real processes at 1-5 ranks, shm and tcp forced:
// uneven counts with zeros, blocks at permuted displacements with guard bytes between and around
// them (which must stay untouched), data distinct per (sender, receiver, byte, call) from a hash,
// several calls in a row, in-place layouts, calls inside a group, and argument errors; all-to-all-v
// across 2 and 3 hosts (TUTTI_HOSTID) with hier, and counts that disagree inside a host.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <functional>
#include <memory>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "comm_test_util.h"
#include "harness/fork_harness.h"
#include "tutti/tutti.h"

namespace tutti::test {
namespace {

uint64_t mix(uint64_t x) {  // splitmix64 finaliser
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}
uint64_t mix(uint64_t a, uint64_t b) { return mix(mix(a) ^ (b * 0x632be59bd9b4e019ull)); }
uint64_t mix(uint64_t a, uint64_t b, uint64_t c) { return mix(mix(a, b), c); }

// Byte `i` of the data `from` sends to `to` in call `call` (to = -1: the same to everyone).
uint8_t dataByte(int from, int to, int call, size_t i) {
  return static_cast<uint8_t>(mix(mix(from + 1000, to + 1000, call), i) >> 17);
}
// Byte `i` of a guard-filled buffer (`which` tells a rank's buffers apart).
uint8_t guardByte(int rank, int which, int call, size_t i) {
  return static_cast<uint8_t>(mix(mix(rank + 77777, which, call + 555), i) >> 23);
}

constexpr tuttiDataType_t kTypes[] = {tuttiUint8, tuttiFloat16, tuttiInt32, tuttiFloat64,
                                      tuttiUint64};
size_t typeSize(tuttiDataType_t t) {
  switch (t) {
    case tuttiUint8:
      return 1;
    case tuttiFloat16:
      return 2;
    case tuttiInt32:
      return 4;
    default:
      return 8;
  }
}
tuttiDataType_t typeOf(int call) { return kTypes[call % 5]; }

// Elements of one block: a quarter are zero; the size range changes with the call.
size_t countFor(int call, uint64_t a, uint64_t b) {
  static const size_t kMax[] = {5, 300, 6000, 70000};
  const uint64_t h = mix(call, a, b);
  if (h % 4 == 0) return 0;
  return 1 + (h >> 8) % kMax[call % 4];
}

std::vector<uint8_t> guarded(size_t bytes, int rank, int which, int call) {
  std::vector<uint8_t> v(bytes);
  for (size_t i = 0; i < bytes; ++i) v[i] = guardByte(rank, which, call, i);
  return v;
}

// Places blocks of counts[r] elements in a permuted order with 1-3 guard elements before,
// between and after them. Zero-count blocks get a displacement far outside the buffer (it
// must not be used). Returns the total elements.
size_t layOut(const std::vector<size_t>& counts, uint64_t seed, std::vector<size_t>& displs) {
  const int n = static_cast<int>(counts.size());
  std::vector<int> order(n);
  for (int i = 0; i < n; ++i) order[i] = i;
  std::mt19937_64 rng(seed);
  for (int i = n - 1; i > 0; --i) std::swap(order[i], order[rng() % (i + 1)]);
  displs.assign(n, 0);
  size_t pos = 1 + seed % 3;
  for (int r : order) {
    displs[r] = counts[r] ? pos : (size_t{1} << 40) + r;
    pos += counts[r] + 1 + mix(seed, r) % 3;
  }
  return pos + 2;
}

// Fills block [displ, displ + count) of buf with the data from -> to.
void fillBlock(std::vector<uint8_t>& buf, size_t displ, size_t count, size_t es, int from, int to,
               int call) {
  for (size_t i = 0; i < count * es; ++i) buf[displ * es + i] = dataByte(from, to, call, i);
}

// First differing byte, described; empty when equal.
std::string firstDiff(const std::vector<uint8_t>& got, const std::vector<uint8_t>& want,
                      const std::string& what) {
  if (got.size() != want.size()) return what + ": size differs";
  for (size_t i = 0; i < got.size(); ++i)
    if (got[i] != want[i])
      return what + ": byte " + std::to_string(i) + " of " + std::to_string(got.size()) + " is " +
             std::to_string(got[i]) + ", expected " + std::to_string(want[i]);
  return "";
}

// One call: buffers made by the constructor, issued by issue(), checked by verify().
struct Case {
  virtual ~Case() = default;
  virtual tuttiResult_t issue(tuttiComm_t comm) = 0;
  virtual std::string verify() = 0;
};

struct AllGatherVCase : Case {
  int me, call;
  tuttiDataType_t dt;
  size_t es, sendcount;
  bool inPlace;
  std::vector<size_t> counts, displs;
  std::vector<uint8_t> send, sendOrig, recv, expect;
  AllGatherVCase(int n, int me_, int c, bool inPlace_)
      : me(me_), call(c), dt(typeOf(c)), es(typeSize(dt)), inPlace(inPlace_) {
    counts.resize(n);
    for (int r = 0; r < n; ++r) counts[r] = countFor(call, r, 1);
    sendcount = counts[me];
    const size_t total = layOut(counts, mix(call, 2), displs);  // the same on every rank
    recv = guarded(total * es, me, 1, call);
    expect = recv;
    for (int r = 0; r < n; ++r) fillBlock(expect, displs[r], counts[r], es, r, -1, call);
    if (inPlace) {
      fillBlock(recv, displs[me], sendcount, es, me, -1, call);
    } else {
      send = guarded((sendcount + 3) * es, me, 2, call);  // a guard after the block
      fillBlock(send, 0, sendcount, es, me, -1, call);
      sendOrig = send;
    }
  }
  tuttiResult_t issue(tuttiComm_t comm) override {
    const void* s = send.data();
    if (inPlace) s = sendcount ? recv.data() + displs[me] * es : nullptr;
    return tuttiAllGatherV(s, sendcount, recv.data(), counts.data(), displs.data(), dt, comm,
                           nullptr);
  }
  std::string verify() override {
    std::string d = firstDiff(recv, expect, "allgatherv call " + std::to_string(call) + " recv");
    if (d.empty()) d = firstDiff(send, sendOrig, "allgatherv sendbuff");
    return d;
  }
};

struct AllToAllVCase : Case {
  int me, call;
  tuttiDataType_t dt;
  size_t es;
  bool inPlace;  // one buffer holds the send blocks and receives the receive blocks
  std::vector<size_t> scounts, sdispls, rcounts, rdispls;
  std::vector<uint8_t> send, sendOrig, recv, expect;
  AllToAllVCase(int n, int me_, int c, bool inPlace_)
      : me(me_), call(c), dt(typeOf(c)), es(typeSize(dt)), inPlace(inPlace_) {
    scounts.resize(n);
    rcounts.resize(n);
    for (int j = 0; j < n; ++j) {
      scounts[j] = countFor(call, me, j);  // me -> j
      rcounts[j] = countFor(call, j, me);  // j -> me
    }
    const size_t stotal = layOut(scounts, mix(call, me, 3), sdispls);
    const size_t rtotal = layOut(rcounts, mix(call, me, 4), rdispls);
    send = guarded((inPlace ? std::max(stotal, rtotal) : stotal) * es, me, 3, call);
    for (int j = 0; j < n; ++j) fillBlock(send, sdispls[j], scounts[j], es, me, j, call);
    if (inPlace) {
      recv = send;
      expect = recv;
      send.clear();
    } else {
      sendOrig = send;
      recv = guarded(rtotal * es, me, 4, call);
      expect = recv;
    }
    for (int j = 0; j < n; ++j) fillBlock(expect, rdispls[j], rcounts[j], es, j, me, call);
  }
  tuttiResult_t issue(tuttiComm_t comm) override {
    const void* s = inPlace ? recv.data() : send.data();
    return tuttiAllToAllV(s, scounts.data(), sdispls.data(), recv.data(), rcounts.data(),
                          rdispls.data(), dt, comm, nullptr);
  }
  std::string verify() override {
    std::string d = firstDiff(recv, expect, "alltoallv call " + std::to_string(call) + " recv");
    if (d.empty()) d = firstDiff(send, sendOrig, "alltoallv sendbuff");
    return d;
  }
};

// Gather (scatter = false) or scatter to/from `root`. The root's full buffer sits between
// guards; a non-root passes NULL for the buffer it does not use (even calls) or a guarded
// buffer that must stay untouched (odd calls).
struct RootedCase : Case {
  bool scatter;
  int n, me, call, root;
  tuttiDataType_t dt;
  size_t es, count;
  bool inPlace;
  static constexpr size_t kGuard = 5;  // elements before and after
  std::vector<uint8_t> full, fullExpect, block, blockExpect;
  RootedCase(bool scatter_, int n_, int me_, int c, int root_, bool inPlace_)
      : scatter(scatter_),
        n(n_),
        me(me_),
        call(c),
        root(root_),
        dt(typeOf(c)),
        es(typeSize(dt)),
        count(countFor(call, scatter, 5)),
        inPlace(inPlace_ && me_ == root_) {
    const bool isRoot = me == root;
    if (isRoot || call % 2) full = guarded((n * count + 2 * kGuard) * es, me, 5, call);
    if (isRoot) {
      for (int r = 0; r < n; ++r)
        if (scatter || r == me) {  // the root's input: all blocks (scatter) or its own (gather)
          if (scatter || inPlace) fillBlock(full, kGuard + r * count, count, es, me, r, call);
        }
    }
    fullExpect = full;
    if (isRoot && !scatter)
      for (int r = 0; r < n; ++r) fillBlock(fullExpect, kGuard + r * count, count, es, r, me, call);
    if (!inPlace) {
      block = guarded((count + 2 * kGuard) * es, me, 6, call);
      if (!scatter) fillBlock(block, kGuard, count, es, me, root, call);
    }
    blockExpect = block;
    if (scatter && !inPlace) fillBlock(blockExpect, kGuard, count, es, root, me, call);
  }
  tuttiResult_t issue(tuttiComm_t comm) override {
    uint8_t* f = full.empty() ? nullptr : full.data() + kGuard * es;
    uint8_t* b = block.empty() ? nullptr : block.data() + kGuard * es;
    if (inPlace) b = f + me * count * es;
    return scatter ? tuttiScatter(f, b, count, dt, root, comm, nullptr)
                   : tuttiGather(b, f, count, dt, root, comm, nullptr);
  }
  std::string verify() override {
    const std::string what = std::string(scatter ? "scatter" : "gather") + " call " +
                             std::to_string(call) + " root " + std::to_string(root);
    std::string d = firstDiff(full, fullExpect, what + " full buffer");
    if (d.empty()) d = firstDiff(block, blockExpect, what + " block buffer");
    return d;
  }
};

// Gather-v (scatter = false) or scatter-v to/from `root`: blocks of their own size at permuted
// displacements with guards between them in the root's buffer (the same layout on every
// rank); a non-root passes NULL for the buffer it does not use (even calls) or a guarded buffer
// that must stay untouched (odd calls).
struct RootedVCase : Case {
  bool scatter;
  int n, me, call, root;
  tuttiDataType_t dt;
  size_t es;
  bool inPlace;
  static constexpr size_t kGuard = 3;  // elements before and after the rank's own block
  std::vector<size_t> counts, displs;
  std::vector<uint8_t> full, fullExpect, block, blockExpect;
  RootedVCase(bool scatter_, int n_, int me_, int c, int root_, bool inPlace_)
      : scatter(scatter_),
        n(n_),
        me(me_),
        call(c),
        root(root_),
        dt(typeOf(c)),
        es(typeSize(dt)),
        inPlace(inPlace_ && me_ == root_) {
    counts.resize(n);
    for (int r = 0; r < n; ++r) counts[r] = countFor(call, r, scatter ? 7 : 8);
    const size_t total = layOut(counts, mix(call, scatter ? 9 : 10), displs);
    const bool isRoot = me == root;
    if (isRoot || call % 2) full = guarded(total * es, me, 7, call);
    if (isRoot && scatter)
      for (int r = 0; r < n; ++r) fillBlock(full, displs[r], counts[r], es, me, r, call);
    if (isRoot && !scatter && inPlace) fillBlock(full, displs[me], counts[me], es, me, root, call);
    fullExpect = full;
    if (isRoot && !scatter)
      for (int r = 0; r < n; ++r) fillBlock(fullExpect, displs[r], counts[r], es, r, me, call);
    if (!inPlace) {
      block = guarded((counts[me] + 2 * kGuard) * es, me, 8, call);
      if (!scatter) fillBlock(block, kGuard, counts[me], es, me, root, call);
    }
    blockExpect = block;
    if (scatter && !inPlace) fillBlock(blockExpect, kGuard, counts[me], es, root, me, call);
  }
  tuttiResult_t issue(tuttiComm_t comm) override {
    uint8_t* f = full.empty() ? nullptr : full.data();
    uint8_t* b = block.empty() ? nullptr : block.data() + kGuard * es;
    if (inPlace) b = counts[me] ? f + displs[me] * es : f;
    return scatter ? tuttiScatterV(f, counts.data(), displs.data(), b, counts[me], dt, root, comm,
                                   nullptr)
                   : tuttiGatherV(b, counts[me], f, counts.data(), displs.data(), dt, root, comm,
                                  nullptr);
  }
  std::string verify() override {
    const std::string what = std::string(scatter ? "scatterv" : "gatherv") + " call " +
                             std::to_string(call) + " root " + std::to_string(root);
    std::string d = firstDiff(full, fullExpect, what + " full buffer");
    if (d.empty()) d = firstDiff(block, blockExpect, what + " block buffer");
    return d;
  }
};

// Reduce-scatter-v: every rank's input holds block r (counts[r] elements at displs[r], the
// same layout on every rank, guards between); rank r's result, the reduction of block r over
// the ranks in rank order, is checked against a loop over the ranks' values. Types and ops
// rotate (uint32 sum, float64 sum of exact values, int64 max, float32 min).
struct ReduceScatterVCase : Case {
  int n, me, call;
  tuttiDataType_t dt;
  tuttiRedOp_t op;
  size_t es;
  bool inPlace;
  static constexpr size_t kGuard = 2;
  std::vector<size_t> counts, displs;
  std::vector<uint8_t> send, sendOrig, recv, expect;
  // Element i of block `to` in rank `from`'s input, as the type's bytes.
  void value(int from, int to, size_t i, uint8_t* out) const {
    const uint64_t h = mix(mix(from + 31, to + 37, call), i);
    switch (dt) {
      case tuttiUint32: {
        const uint32_t v = static_cast<uint32_t>(h);
        std::memcpy(out, &v, 4);
        break;
      }
      case tuttiFloat64: {
        const double v = static_cast<double>(h % (1u << 20)) / 16.0 - 20000.0;  // exact sums
        std::memcpy(out, &v, 8);
        break;
      }
      case tuttiInt64: {
        const int64_t v = static_cast<int64_t>(h);
        std::memcpy(out, &v, 8);
        break;
      }
      default: {
        const float v = static_cast<float>(h % 100000) - 50000.0f;
        std::memcpy(out, &v, 4);
        break;
      }
    }
  }
  // The reduction of element i of block `to` over ranks 0..n-1, in rank order.
  void reduced(int to, size_t i, uint8_t* out) const {
    std::vector<uint8_t> x(es);
    value(0, to, i, out);
    for (int from = 1; from < n; ++from) {
      value(from, to, i, x.data());
      switch (dt) {
        case tuttiUint32: {
          uint32_t a, b;
          std::memcpy(&a, out, 4);
          std::memcpy(&b, x.data(), 4);
          a += b;
          std::memcpy(out, &a, 4);
          break;
        }
        case tuttiFloat64: {
          double a, b;
          std::memcpy(&a, out, 8);
          std::memcpy(&b, x.data(), 8);
          a += b;
          std::memcpy(out, &a, 8);
          break;
        }
        case tuttiInt64: {
          int64_t a, b;
          std::memcpy(&a, out, 8);
          std::memcpy(&b, x.data(), 8);
          a = std::max(a, b);
          std::memcpy(out, &a, 8);
          break;
        }
        default: {
          float a, b;
          std::memcpy(&a, out, 4);
          std::memcpy(&b, x.data(), 4);
          a = std::min(a, b);
          std::memcpy(out, &a, 4);
          break;
        }
      }
    }
  }
  ReduceScatterVCase(int n_, int me_, int c, bool inPlace_)
      : n(n_), me(me_), call(c), inPlace(inPlace_) {
    static const tuttiDataType_t kRsTypes[] = {tuttiUint32, tuttiFloat64, tuttiInt64, tuttiFloat32};
    static const tuttiRedOp_t kRsOps[] = {tuttiSum, tuttiSum, tuttiMax, tuttiMin};
    dt = kRsTypes[call % 4];
    op = kRsOps[call % 4];
    es = dt == tuttiUint32 || dt == tuttiFloat32 ? 4 : 8;
    counts.resize(n);
    for (int r = 0; r < n; ++r) counts[r] = countFor(call, r, 11) % 20000;
    const size_t total = layOut(counts, mix(call, 12), displs);
    send = guarded(total * es, me, 9, call);
    for (int r = 0; r < n; ++r)
      for (size_t i = 0; i < counts[r]; ++i) value(me, r, i, &send[(displs[r] + i) * es]);
    sendOrig = send;
    if (inPlace) {
      expect = send;
      for (size_t i = 0; i < counts[me]; ++i) reduced(me, i, &expect[(displs[me] + i) * es]);
    } else {
      recv = guarded((counts[me] + 2 * kGuard) * es, me, 10, call);
      expect = recv;
      for (size_t i = 0; i < counts[me]; ++i) reduced(me, i, &expect[(kGuard + i) * es]);
    }
  }
  tuttiResult_t issue(tuttiComm_t comm) override {
    uint8_t* r = inPlace ? (counts[me] ? send.data() + displs[me] * es : send.data())
                         : recv.data() + kGuard * es;
    return tuttiReduceScatterV(send.data(), r, counts.data(), displs.data(), dt, op, comm, nullptr);
  }
  std::string verify() override {
    const std::string what = "reducescatterv call " + std::to_string(call);
    if (inPlace) return firstDiff(send, expect, what + " (in place) sendbuff");
    std::string d = firstDiff(recv, expect, what + " recv");
    if (d.empty()) d = firstDiff(send, sendOrig, what + " sendbuff");
    return d;
  }
};

class VColl : public ::testing::TestWithParam<std::tuple<const char*, int>> {
 protected:
  void SetUp() override { setenv("TUTTI_TRANSPORT", std::get<0>(GetParam()), 1); }
  void TearDown() override { unsetenv("TUTTI_TRANSPORT"); }
  int ranks() const { return std::get<1>(GetParam()); }

  // Runs `calls` calls one after another on every rank (make(n, rank, call) builds them),
  // each checked right after it returns. coll: the registry's name of a scheduled collective
  // (its last algorithm must be one of tuttiAlgorithms(coll)), or nullptr for the
  // point-to-point path ("p2p").
  void runSequence(int calls, const std::function<std::unique_ptr<Case>(int, int, int)>& make,
                   const char* coll = nullptr) {
    const int n = ranks();
    const std::string transport = std::get<0>(GetParam());
    tuttiUniqueId id = makeId();
    auto result = runRanks(
        n,
        [&](int rank) {
          tuttiComm_t comm = nullptr;
          TUTTI_ASSERT_OK(tuttiCommInitRank(&comm, n, id, rank), nullptr);
          // A scheduled collective rotates its algorithms over the calls, then the automatic
          // choice.
          std::vector<std::string> forced;
          if (coll != nullptr) {
            std::string names = tuttiAlgorithms(coll);
            for (size_t at = 0, comma; at <= names.size(); at = comma + 1) {
              comma = std::min(names.find(',', at), names.size());
              forced.push_back(std::string(coll) + ":" + names.substr(at, comma - at));
            }
            forced.push_back("");
          }
          for (int call = 0; call < calls; ++call) {
            std::unique_ptr<Case> c = make(n, rank, call);
            std::string spec;
            if (!forced.empty()) {
              spec = forced[call % forced.size()];
              TUTTI_ASSERT_OK(tuttiCommSetAlgorithm(comm, spec.empty() ? nullptr : spec.c_str()),
                              comm);
            }
            const tuttiResult_t res = c->issue(comm);
            // A forced algorithm that needs ranks on several hosts (hier): refused up front.
            if (res == tuttiInvalidArgument && !spec.empty() &&
                std::string(tuttiGetLastError(comm)).find("does not apply") != std::string::npos)
              continue;
            TUTTI_ASSERT_OK(res, comm);
            const std::string diff = c->verify();
            ASSERT_EQ(diff, "") << "rank " << rank << " of " << n;
          }
          if (n > 1) {
            const std::string last = tuttiCommLastAlgorithm(comm);
            if (coll == nullptr) {
              EXPECT_EQ(last, "p2p");
            } else {
              const std::string names = "," + std::string(tuttiAlgorithms(coll)) + ",";
              EXPECT_NE(names.find("," + last + ","), std::string::npos) << last << " " << names;
            }
            EXPECT_EQ(std::string(tuttiCommTransports(comm)), transport);
          }
          TUTTI_ASSERT_OK(tuttiCommDestroy(comm), nullptr);
        },
        60);
    EXPECT_TRUE(result.allOk()) << n << " ranks: " << result.describe();
  }
};

TEST_P(VColl, AllGatherV) {
  runSequence(
      8,
      [](int n, int rank, int call) {
        return std::make_unique<AllGatherVCase>(n, rank, call, call % 3 == 2);
      },
      "allgatherv");
}

TEST_P(VColl, AllToAllV) {
  runSequence(
      8,
      [](int n, int rank, int call) {
        return std::make_unique<AllToAllVCase>(n, rank, call, call % 3 == 2);
      },
      "alltoallv");
}

TEST_P(VColl, Gather) {
  runSequence(
      8,
      [](int n, int rank, int call) {
        return std::make_unique<RootedCase>(false, n, rank, call, (call * 3 + 1) % n,
                                            call % 3 == 2);
      },
      "gather");
}

TEST_P(VColl, Scatter) {
  runSequence(
      8,
      [](int n, int rank, int call) {
        return std::make_unique<RootedCase>(true, n, rank, call, (call * 3 + 1) % n, call % 3 == 2);
      },
      "scatter");
}

TEST_P(VColl, GatherV) {
  runSequence(
      8,
      [](int n, int rank, int call) {
        return std::make_unique<RootedVCase>(false, n, rank, call, (call * 5 + 2) % n,
                                             call % 3 == 1);
      },
      "gatherv");
}

TEST_P(VColl, ScatterV) {
  runSequence(
      8,
      [](int n, int rank, int call) {
        return std::make_unique<RootedVCase>(true, n, rank, call, (call * 5 + 2) % n,
                                             call % 3 == 1);
      },
      "scatterv");
}

TEST_P(VColl, ReduceScatterV) {
  runSequence(
      8,
      [](int n, int rank, int call) {
        return std::make_unique<ReduceScatterVCase>(n, rank, call, call % 3 == 2);
      },
      "reducescatterv");
}

// All four kinds, two of some, with a send/recv ring, inside one group; twice. Then one more
// ungrouped call of each kind.
TEST_P(VColl, InsideGroup) {
  const int n = ranks();
  tuttiUniqueId id = makeId();
  auto result = runRanks(
      n,
      [&](int rank) {
        tuttiComm_t comm = nullptr;
        TUTTI_ASSERT_OK(tuttiCommInitRank(&comm, n, id, rank), nullptr);
        for (int round = 0; round < 2; ++round) {
          const int base = 100 + 10 * round;
          std::vector<std::unique_ptr<Case>> cases;
          cases.push_back(std::make_unique<AllToAllVCase>(n, rank, base + 0, round == 1));
          cases.push_back(std::make_unique<AllGatherVCase>(n, rank, base + 1, round == 1));
          cases.push_back(std::make_unique<RootedCase>(false, n, rank, base + 2, n - 1, false));
          cases.push_back(std::make_unique<AllToAllVCase>(n, rank, base + 3, false));
          cases.push_back(std::make_unique<RootedCase>(true, n, rank, base + 5, 0, round == 0));
          cases.push_back(std::make_unique<AllGatherVCase>(n, rank, base + 7, false));
          const size_t ringBytes = 4099;
          std::vector<uint8_t> ringOut(ringBytes), ringIn(ringBytes, 0);
          for (size_t i = 0; i < ringBytes; ++i) ringOut[i] = dataByte(rank, -2, base, i);
          TUTTI_ASSERT_OK(tuttiGroupStart(), nullptr);
          TUTTI_ASSERT_OK(
              tuttiSend(ringOut.data(), ringBytes, tuttiUint8, (rank + 1) % n, comm, nullptr),
              comm);
          for (auto& c : cases) TUTTI_ASSERT_OK(c->issue(comm), comm);
          TUTTI_ASSERT_OK(
              tuttiRecv(ringIn.data(), ringBytes, tuttiUint8, (rank + n - 1) % n, comm, nullptr),
              comm);
          TUTTI_ASSERT_OK(tuttiGroupEnd(), comm);
          for (auto& c : cases) ASSERT_EQ(c->verify(), "") << "rank " << rank << " of " << n;
          for (size_t i = 0; i < ringBytes; ++i)
            ASSERT_EQ(ringIn[i], dataByte((rank + n - 1) % n, -2, base, i)) << i;
        }
        std::vector<std::unique_ptr<Case>> after;
        after.push_back(std::make_unique<AllGatherVCase>(n, rank, 201, false));
        after.push_back(std::make_unique<AllToAllVCase>(n, rank, 202, false));
        after.push_back(std::make_unique<RootedCase>(false, n, rank, 203, n / 2, true));
        after.push_back(std::make_unique<RootedCase>(true, n, rank, 205, n / 2, true));
        for (auto& c : after) {
          TUTTI_ASSERT_OK(c->issue(comm), comm);
          ASSERT_EQ(c->verify(), "") << "rank " << rank << " of " << n;
        }
        TUTTI_ASSERT_OK(tuttiCommDestroy(comm), nullptr);
      },
      60);
  EXPECT_TRUE(result.allOk()) << n << " ranks: " << result.describe();
}

INSTANTIATE_TEST_SUITE_P(Transports, VColl,
                         ::testing::Combine(::testing::Values("shm", "tcp"),
                                            ::testing::Values(1, 2, 3, 4, 5)),
                         [](const auto& info) {
                           return std::string(std::get<0>(info.param)) + "_np" +
                                  std::to_string(std::get<1>(info.param));
                         });

// Each bad argument is tuttiInvalidArgument with a message naming the call and the problem,
// also inside a group (the group then runs the valid calls); the communicator stays usable.
TEST(VCollArgs, ErrorsAreInvalidArgument) {
  const int n = 3;
  tuttiUniqueId id = makeId();
  auto result = runRanks(n, [&](int rank) {
    tuttiComm_t comm = nullptr;
    TUTTI_ASSERT_OK(tuttiCommInitRank(&comm, n, id, rank), nullptr);
    std::vector<uint32_t> s(64, 7), r(64, 9);
    std::vector<size_t> counts(n, 2), displs = {0, 2, 4}, zeros(n, 0);
    auto expectInvalid = [&](tuttiResult_t res, const char* fn, const char* words, int line) {
      EXPECT_EQ(res, tuttiInvalidArgument) << "line " << line;
      const std::string msg = tuttiGetLastError(comm);
      EXPECT_NE(msg.find(fn), std::string::npos) << "line " << line << ": " << msg;
      EXPECT_NE(msg.find(words), std::string::npos) << "line " << line << ": " << msg;
      EXPECT_EQ(std::string(tuttiGetLastError(nullptr)), msg);
    };
#define EXPECT_INVALID(call, fn, words) expectInvalid((call), fn, words, __LINE__)
    const size_t huge = SIZE_MAX / 2;
    // tuttiAllGatherV
    EXPECT_INVALID(
        tuttiAllGatherV(s.data(), 2, r.data(), nullptr, displs.data(), tuttiUint32, comm, nullptr),
        "tuttiAllGatherV", "recvcounts is NULL");
    EXPECT_INVALID(
        tuttiAllGatherV(s.data(), 2, r.data(), counts.data(), nullptr, tuttiUint32, comm, nullptr),
        "tuttiAllGatherV", "displs is NULL");
    EXPECT_INVALID(tuttiAllGatherV(s.data(), 3, r.data(), counts.data(), displs.data(), tuttiUint32,
                                   comm, nullptr),
                   "tuttiAllGatherV", "differs from this rank's sendcount 3");
    EXPECT_INVALID(tuttiAllGatherV(nullptr, 2, r.data(), counts.data(), displs.data(), tuttiUint32,
                                   comm, nullptr),
                   "tuttiAllGatherV", "sendbuff is NULL");
    EXPECT_INVALID(tuttiAllGatherV(s.data(), 2, nullptr, counts.data(), displs.data(), tuttiUint32,
                                   comm, nullptr),
                   "tuttiAllGatherV", "recvbuff is NULL");
    {
      std::vector<size_t> bad = displs;
      bad[(rank + 1) % n] = huge;
      EXPECT_INVALID(tuttiAllGatherV(s.data(), 2, r.data(), counts.data(), bad.data(), tuttiUint32,
                                     comm, nullptr),
                     "tuttiAllGatherV", "overflows size_t");
      std::vector<size_t> big = counts;
      big[(rank + 1) % n] = huge;
      EXPECT_INVALID(tuttiAllGatherV(s.data(), 2, r.data(), big.data(), displs.data(), tuttiUint32,
                                     comm, nullptr),
                     "tuttiAllGatherV", "overflows size_t");
    }
    EXPECT_INVALID(tuttiAllGatherV(s.data(), 2, r.data(), counts.data(), displs.data(),
                                   static_cast<tuttiDataType_t>(99), comm, nullptr),
                   "tuttiAllGatherV", "invalid datatype 99");
    // tuttiAllToAllV
    const size_t* c = counts.data();
    const size_t* d = displs.data();
    EXPECT_INVALID(tuttiAllToAllV(s.data(), nullptr, d, r.data(), c, d, tuttiUint32, comm, nullptr),
                   "tuttiAllToAllV", "sendcounts is NULL");
    EXPECT_INVALID(tuttiAllToAllV(s.data(), c, nullptr, r.data(), c, d, tuttiUint32, comm, nullptr),
                   "tuttiAllToAllV", "sdispls is NULL");
    EXPECT_INVALID(tuttiAllToAllV(s.data(), c, d, r.data(), nullptr, d, tuttiUint32, comm, nullptr),
                   "tuttiAllToAllV", "recvcounts is NULL");
    EXPECT_INVALID(tuttiAllToAllV(s.data(), c, d, r.data(), c, nullptr, tuttiUint32, comm, nullptr),
                   "tuttiAllToAllV", "rdispls is NULL");
    EXPECT_INVALID(tuttiAllToAllV(nullptr, c, d, r.data(), c, d, tuttiUint32, comm, nullptr),
                   "tuttiAllToAllV", "sendbuff is NULL");
    EXPECT_INVALID(tuttiAllToAllV(s.data(), c, d, nullptr, c, d, tuttiUint32, comm, nullptr),
                   "tuttiAllToAllV", "recvbuff is NULL");
    {
      std::vector<size_t> other = counts;
      other[rank] = 1;
      EXPECT_INVALID(
          tuttiAllToAllV(s.data(), c, d, r.data(), other.data(), d, tuttiUint32, comm, nullptr),
          "tuttiAllToAllV", "itself");
      std::vector<size_t> bad = displs;
      bad[(rank + 2) % n] = huge;
      EXPECT_INVALID(
          tuttiAllToAllV(s.data(), c, bad.data(), r.data(), c, d, tuttiUint64, comm, nullptr),
          "tuttiAllToAllV", "sdispls[");
    }
    // tuttiGather / tuttiScatter
    EXPECT_INVALID(tuttiGather(s.data(), r.data(), 2, tuttiUint32, -1, comm, nullptr),
                   "tuttiGather", "root -1 out of range [0, 3)");
    EXPECT_INVALID(tuttiGather(s.data(), r.data(), 2, tuttiUint32, n, comm, nullptr), "tuttiGather",
                   "root 3 out of range");
    EXPECT_INVALID(tuttiGather(s.data(), r.data(), SIZE_MAX / 8, tuttiUint32, 0, comm, nullptr),
                   "tuttiGather", "overflows size_t");
    EXPECT_INVALID(tuttiGather(nullptr, r.data(), 2, tuttiUint32, 0, comm, nullptr), "tuttiGather",
                   "sendbuff is NULL");
    EXPECT_INVALID(tuttiGather(s.data(), nullptr, 2, tuttiUint32, rank, comm, nullptr),
                   "tuttiGather", "recvbuff is NULL on the root");
    EXPECT_INVALID(tuttiScatter(s.data(), r.data(), 2, tuttiUint32, 7, comm, nullptr),
                   "tuttiScatter", "root 7 out of range");
    EXPECT_INVALID(tuttiScatter(s.data(), r.data(), huge, tuttiUint8, 0, comm, nullptr),
                   "tuttiScatter", "overflows size_t");
    EXPECT_INVALID(tuttiScatter(nullptr, r.data(), 2, tuttiUint32, rank, comm, nullptr),
                   "tuttiScatter", "sendbuff is NULL on the root");
    EXPECT_INVALID(tuttiScatter(s.data(), nullptr, 2, tuttiUint32, 0, comm, nullptr),
                   "tuttiScatter", "recvbuff is NULL");
    EXPECT_EQ(tuttiScatter(s.data(), r.data(), 2, tuttiUint32, 0, nullptr, nullptr),
              tuttiInvalidArgument);
    EXPECT_EQ(std::string(tuttiGetLastError(nullptr)), "tuttiScatter: comm is NULL");
#undef EXPECT_INVALID

    // Inside a group: the bad call fails at once, and the group's end fails with its code
    // having run none of its calls (issue 68 F8); the same group without it runs.
    for (int i = 0; i < 6; ++i) s[i] = 100 * rank + i;
    for (bool withBadCall : {true, false}) {
      std::fill(r.begin(), r.end(), 0xdeadu);
      TUTTI_ASSERT_OK(tuttiGroupStart(), nullptr);
      if (withBadCall) {
        EXPECT_EQ(tuttiGather(s.data(), r.data(), 2, tuttiUint32, n, comm, nullptr),
                  tuttiInvalidArgument);
      }
      TUTTI_ASSERT_OK(tuttiAllGatherV(s.data(), 2, r.data(), c, d, tuttiUint32, comm, nullptr),
                      comm);
      TUTTI_ASSERT_OK(tuttiAllToAllV(s.data(), zeros.data(), zeros.data(), nullptr, zeros.data(),
                                     zeros.data(), tuttiUint32, comm, nullptr),
                      comm);
      if (withBadCall) {
        EXPECT_EQ(tuttiGroupEnd(), tuttiInvalidArgument);
        EXPECT_NE(std::string(tuttiGetLastError(nullptr)).find("root"), std::string::npos)
            << tuttiGetLastError(nullptr);
        for (uint32_t v : r) EXPECT_EQ(v, 0xdeadu) << "a call of the refused group ran";
      } else {
        TUTTI_ASSERT_OK(tuttiGroupEnd(), comm);
      }
    }
    for (int j = 0; j < n; ++j) {
      EXPECT_EQ(r[2 * j], static_cast<uint32_t>(100 * j));
      EXPECT_EQ(r[2 * j + 1], static_cast<uint32_t>(100 * j + 1));
    }
    // count 0: nothing happens, NULL buffers allowed.
    TUTTI_ASSERT_OK(tuttiGather(nullptr, nullptr, 0, tuttiUint32, 1, comm, nullptr), comm);
    TUTTI_ASSERT_OK(tuttiScatter(nullptr, nullptr, 0, tuttiUint32, 2, comm, nullptr), comm);
    TUTTI_ASSERT_OK(tuttiAllGatherV(nullptr, 0, nullptr, zeros.data(), zeros.data(), tuttiUint32,
                                    comm, nullptr),
                    comm);
    TUTTI_ASSERT_OK(tuttiCommDestroy(comm), nullptr);
  });
  EXPECT_TRUE(result.allOk()) << result.describe();
}

// Counts that disagree between ranks (rank 0 sends 3 elements to rank 1, which expects 5) are
// an error on the receiving rank, not a hang or an overrun.
TEST(VCollArgs, CountMismatchBetweenRanksIsAnError) {
  const int n = 2;
  tuttiUniqueId id = makeId();
  setenv("TUTTI_TIMEOUT", "5", 1);
  auto result = runRanks(n, [&](int rank) {
    tuttiComm_t comm = nullptr;
    TUTTI_ASSERT_OK(tuttiCommInitRank(&comm, n, id, rank), nullptr);
    std::vector<uint32_t> s(16, 1), r(16, 0);
    std::vector<size_t> sc = {1, 3}, rc = {1, 1}, sd = {0, 4}, rd = {0, 8};
    if (rank == 1) {
      sc = {1, 1};
      rc = {5, 1};
    }
    tuttiResult_t res = tuttiAllToAllV(s.data(), sc.data(), sd.data(), r.data(), rc.data(),
                                       rd.data(), tuttiUint32, comm, nullptr);
    if (rank == 1) {
      EXPECT_EQ(res, tuttiInvalidUsage) << tuttiGetLastError(comm);
      const std::string msg = tuttiGetLastError(comm);
      EXPECT_NE(msg.find("12"), std::string::npos) << msg;  // 3 x 4 B sent
      EXPECT_NE(msg.find("20"), std::string::npos) << msg;  // 5 x 4 B expected
      for (size_t i = 5; i < r.size(); ++i)  // nothing past the block (8: not copied either)
        EXPECT_EQ(r[i], 0u) << i;
    }
    tuttiCommDestroy(comm);
  });
  unsetenv("TUTTI_TIMEOUT");
  EXPECT_TRUE(result.allOk()) << result.describe();
}

// Two and three hosts (TUTTI_HOSTID, ranks interleaved across them): all-to-all-v's linear,
// hier and automatic choice in turn, each call checked (hier: the host's members exchange
// their send counts inside the call); also inside a group.
TEST(VCollHosts, AllToAllVAcrossHosts) {
  for (int hosts : {2, 3}) {
    const int n = 2 * hosts;
    tuttiUniqueId id = makeId();
    auto result = runRanks(
        n,
        [&](int rank) {
          setenv("TUTTI_HOSTID", ("vcoll-host-" + std::to_string(rank % hosts)).c_str(), 1);
          tuttiComm_t comm = nullptr;
          TUTTI_ASSERT_OK(tuttiCommInitRank(&comm, n, id, rank), nullptr);
          const char* specs[] = {"alltoallv:linear", "alltoallv:hier", nullptr};
          for (int call = 0; call < 9; ++call) {
            TUTTI_ASSERT_OK(tuttiCommSetAlgorithm(comm, specs[call % 3]), comm);
            AllToAllVCase c(n, rank, 300 + call + 10 * hosts, call % 4 == 1);
            TUTTI_ASSERT_OK(c.issue(comm), comm);
            ASSERT_EQ(c.verify(), "") << "rank " << rank << " of " << n << " call " << call;
            const std::string last = tuttiCommLastAlgorithm(comm);
            if (call % 3 == 2)  // the model's choice, alike on every rank (or the call fails)
              EXPECT_TRUE(last == "linear" || last == "hier") << last;
            else
              EXPECT_EQ(last, call % 3 == 0 ? "linear" : "hier") << "call " << call;
          }
          std::vector<std::unique_ptr<AllToAllVCase>> group;
          for (int k = 0; k < 3; ++k)
            group.push_back(std::make_unique<AllToAllVCase>(n, rank, 400 + k, false));
          TUTTI_ASSERT_OK(tuttiGroupStart(), nullptr);
          for (auto& c : group) TUTTI_ASSERT_OK(c->issue(comm), comm);
          TUTTI_ASSERT_OK(tuttiGroupEnd(), comm);
          for (auto& c : group) ASSERT_EQ(c->verify(), "") << "rank " << rank << " group";
          EXPECT_EQ(std::string(tuttiCommTransports(comm)), "shm,tcp");
          TUTTI_ASSERT_OK(tuttiCommDestroy(comm), nullptr);
        },
        90);
    EXPECT_TRUE(result.allOk()) << n << " ranks on " << hosts << " hosts: " << result.describe();
  }
}

// Counts that disagree inside a host (rank 0 sends 3 elements to rank 2, its host's other
// member, which expects 5): hier fails on rank 2 naming both, and no rank hangs.
TEST(VCollHosts, HierCountMismatchIsAnError) {
  const int n = 4;
  tuttiUniqueId id = makeId();
  auto result = runRanks(
      n,
      [&](int rank) {
        setenv("TUTTI_HOSTID", ("vcoll-mismatch-host-" + std::to_string(rank % 2)).c_str(), 1);
        setenv("TUTTI_TIMEOUT", "10", 1);
        setenv("TUTTI_ALGO", "alltoallv:hier", 1);
        tuttiComm_t comm = nullptr;
        TUTTI_ASSERT_OK(tuttiCommInitRank(&comm, n, id, rank), nullptr);
        std::vector<uint32_t> s(64, 1), r(64, 0);
        std::vector<size_t> sc(n, 2), rc(n, 2), sd, rd;
        if (rank == 0) sc[2] = 3;
        if (rank == 2) rc[0] = 5;
        for (int p = 0; p < n; ++p) {
          sd.push_back(8 * p);
          rd.push_back(8 * p);
        }
        const auto t0 = std::chrono::steady_clock::now();
        tuttiResult_t res = tuttiAllToAllV(s.data(), sc.data(), sd.data(), r.data(), rc.data(),
                                           rd.data(), tuttiUint32, comm, nullptr);
        const double sec =
            std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        EXPECT_NE(res, tuttiSuccess) << "rank " << rank;
        EXPECT_LT(sec, 9.0) << "rank " << rank << " waited for the timeout";
        const std::string msg = tuttiGetLastError(comm);
        if (rank == 2) {
          EXPECT_EQ(res, tuttiInvalidUsage) << msg;
          EXPECT_NE(msg.find("rank 0 sends 3 elements to rank 2, which expects 5"),
                    std::string::npos)
              << msg;
        }
        tuttiCommDestroy(comm);
      },
      60);
  EXPECT_TRUE(result.allOk()) << result.describe();
}

}  // namespace
}  // namespace tutti::test
