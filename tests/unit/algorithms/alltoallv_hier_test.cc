// The hierarchical all-to-all-v with uneven blocks, through the simulator: the host's send
// counts gathered by hostSendCountsExchange's own schedules, then hier's schedules; every
// rank's output buffer (blocks at shuffled displacements with gaps, zero-sized blocks, guard
// bytes around) against values computed here from (source, destination, element, call), the
// same as linear's; 2-4 hosts x 1-4 ranks placed in blocks, interleaved and shuffled, with and
// without the host-sorted ring order, in and out of place; the errors when the counts disagree.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <numeric>
#include <string>

#include "common/error.h"
#include "exec/simulator.h"
#include "interfaces/algorithm.h"

namespace tutti::algo {
namespace {

constexpr size_t kGuard = 16;  // bytes before and after every buffer
constexpr std::byte kFill{0xA5};

// Elements src sends to dst in call `call`: zero for about one pair in seven, else 1-40 with a
// few of a thousand.
size_t countOf(int src, int dst, int call) {
  const unsigned h = static_cast<unsigned>(src * 131 + dst * 71 + call * 29 + src * dst * 7);
  if (h % 7 == 3) return 0;
  return h % 11 == 5 ? 1000 + h % 37 : 1 + h % 40;
}

uint32_t valueOf(int src, int dst, size_t i, int call) {
  uint32_t x = static_cast<uint32_t>(src) * 0x9E3779B1u ^ static_cast<uint32_t>(dst) * 0x85EBCA77u ^
               static_cast<uint32_t>(i) * 0xC2B2AE3Du ^ static_cast<uint32_t>(call) * 0x27D4EB2Fu;
  return x ^ (x >> 15);
}

// Displacements for counts: blocks in reverse rank order with a gap of (r % 3) elements
// before each; returns the buffer's length.
size_t layOut(const std::vector<size_t>& counts, std::vector<size_t>& displs) {
  const int n = static_cast<int>(counts.size());
  displs.assign(n, 0);
  size_t at = 0;
  for (int r = n - 1; r >= 0; --r) {
    at += static_cast<size_t>(r % 3);
    displs[r] = at;
    at += counts[r];
  }
  return at;
}

struct RankBuffers {
  std::vector<size_t> sendCounts, sendDispls, recvCounts, recvDispls;
  std::vector<std::byte> mem;  // guard | input (| output) | guard
  size_t inBytes = 0, outBytes = 0;
  bool inPlace = false;
  std::byte* input() { return mem.data() + kGuard; }
  std::byte* output() { return inPlace ? input() : mem.data() + kGuard + inBytes; }
};

struct Grid {
  int hosts, perHost, kind;
  bool hostSortedRing;
};

std::vector<int> placement(const Grid& g) {
  const int n = g.hosts * g.perHost;
  std::vector<int> h(n);
  for (int r = 0; r < n; ++r)
    h[r] = g.kind == 0 ? r / g.perHost : g.kind == 1 ? r % g.hosts : ((r * 7 + 3) % n) / g.perHost;
  return h;
}

CollArgs argsOf(const Grid& g, const std::vector<int>& hostOf, int rank, const RankBuffers& b) {
  CollArgs a;
  a.coll = Coll::kAllToAllV;
  a.dtype = tuttiUint32;
  a.rank = rank;
  a.nranks = static_cast<int>(hostOf.size());
  a.hostOf = hostOf;
  a.inPlace = b.inPlace;
  if (g.hostSortedRing) {
    a.ringOrder.resize(hostOf.size());
    std::iota(a.ringOrder.begin(), a.ringOrder.end(), 0);
    std::stable_sort(a.ringOrder.begin(), a.ringOrder.end(),
                     [&](int x, int y) { return hostOf[x] < hostOf[y]; });
  }
  a.counts = b.recvCounts;
  a.displs = b.recvDispls;
  a.sendCounts = b.sendCounts;
  a.sendDispls = b.sendDispls;
  return a;
}

// Every rank's hostSendCounts through the exchange's schedules.
std::vector<std::vector<size_t>> exchangeCounts(std::vector<CollArgs>& args) {
  const int n = static_cast<int>(args.size());
  std::vector<exec::Schedule> scheds;
  std::vector<std::vector<size_t>> out(n);
  std::vector<exec::SimRankBuffers> bufs(n);
  for (int r = 0; r < n; ++r) {
    scheds.push_back(hostSendCountsExchange(args[r]));
    const size_t perHost = static_cast<size_t>(
        std::count(args[r].hostOf.begin(), args[r].hostOf.end(), args[r].hostOf[r]));
    out[r].assign(perHost * n, ~size_t{0});
    bufs[r] = {reinterpret_cast<std::byte*>(args[r].sendCounts.data()), n * sizeof(size_t),
               reinterpret_cast<std::byte*>(out[r].data()), out[r].size() * sizeof(size_t)};
  }
  exec::simulate(scheds, bufs);
  return out;
}

// Runs `algo` on the grid for one call; "" when every output is right.
std::string runCall(const Grid& g, const char* algo, int call, bool inPlace) {
  const std::vector<int> hostOf = placement(g);
  const int n = static_cast<int>(hostOf.size());
  std::vector<RankBuffers> b(n);
  std::vector<CollArgs> args;
  for (int r = 0; r < n; ++r) {
    RankBuffers& x = b[r];
    x.inPlace = inPlace;
    for (int p = 0; p < n; ++p) {
      x.sendCounts.push_back(countOf(r, p, call));
      x.recvCounts.push_back(countOf(p, r, call));
    }
    const size_t inElems = layOut(x.sendCounts, x.sendDispls);
    const size_t outElems = layOut(x.recvCounts, x.recvDispls) + (r % 2);
    x.inBytes = (inPlace ? std::max(inElems, outElems) : inElems) * 4;
    x.outBytes = inPlace ? x.inBytes : outElems * 4;
    x.mem.assign(2 * kGuard + x.inBytes + (inPlace ? 0 : x.outBytes), kFill);
    for (int p = 0; p < n; ++p)
      for (size_t i = 0; i < x.sendCounts[p]; ++i) {
        const uint32_t v = valueOf(r, p, i, call);
        std::memcpy(x.input() + (x.sendDispls[p] + i) * 4, &v, 4);
      }
    args.push_back(argsOf(g, hostOf, r, x));
  }
  const AlgorithmInfo* info = find(Coll::kAllToAllV, algo);
  if (info->needsHostSendCounts) {
    std::vector<std::vector<size_t>> counts = exchangeCounts(args);
    for (int r = 0; r < n; ++r) args[r].hostSendCounts = counts[r];
  }
  std::vector<exec::Schedule> scheds;
  std::vector<exec::SimRankBuffers> bufs;
  for (int r = 0; r < n; ++r) {
    scheds.push_back(info->build(args[r]));
    bufs.push_back({b[r].input(), b[r].inBytes, b[r].output(), b[r].outBytes});
  }
  std::vector<std::vector<std::byte>> inputs;
  for (int r = 0; r < n; ++r) inputs.emplace_back(b[r].input(), b[r].input() + b[r].inBytes);
  exec::simulate(scheds, bufs);
  for (int r = 0; r < n; ++r) {
    // What the whole allocation must hold: guards, the input untouched (out of place), the
    // output's gaps as they were (filled; in place: the input's bytes there) and every block.
    std::vector<std::byte> want(b[r].mem.size(), kFill);
    std::copy(inputs[r].begin(), inputs[r].end(), want.begin() + kGuard);
    std::byte* out = want.data() + kGuard + (inPlace ? 0 : b[r].inBytes);
    for (int p = 0; p < n; ++p)
      for (size_t i = 0; i < b[r].recvCounts[p]; ++i) {
        const uint32_t v = valueOf(p, r, i, call);
        std::memcpy(out + (b[r].recvDispls[p] + i) * 4, &v, 4);
      }
    for (size_t k = 0; k < want.size(); ++k)
      if (want[k] != b[r].mem[k])
        return std::string(algo) + " rank " + std::to_string(r) + " byte " + std::to_string(k) +
               " of " + std::to_string(want.size()) + " (guard " + std::to_string(kGuard) +
               ", input " + std::to_string(b[r].inBytes) + " bytes) is wrong";
  }
  return "";
}

std::string describe(const Grid& g, int call, bool inPlace) {
  return std::to_string(g.hosts) + " hosts x " + std::to_string(g.perHost) + " placement " +
         std::to_string(g.kind) + (g.hostSortedRing ? " host-sorted ring" : "") + " call " +
         std::to_string(call) + (inPlace ? " in place" : "");
}

TEST(AllToAllVHier, UnevenBlocksOnEveryGrid) {
  const int shapes[][2] = {{2, 1}, {2, 2}, {3, 2}, {2, 3}, {4, 2}, {2, 4}, {3, 3}, {4, 3}};
  int call = 0;
  for (auto [hosts, perHost] : shapes)
    for (int kind = 0; kind < 3; ++kind)
      for (int sorted = 0; sorted < 2; ++sorted) {
        const Grid g{hosts, perHost, kind, sorted == 1};
        const bool inPlace = call % 3 == 1;
        ASSERT_EQ(runCall(g, "hier", call, inPlace), "") << describe(g, call, inPlace);
        // linear reads its input while blocks arrive (the C API stages an overlapping input).
        ASSERT_EQ(runCall(g, "linear", call, false), "") << describe(g, call, false);
        ++call;
      }
}

// Few, large messages: at most L - 1 inside the host and nh - 1 across hosts per rank.
TEST(AllToAllVHier, MessagesPerRank) {
  const Grid g{4, 3, 1, false};
  const std::vector<int> hostOf = placement(g);
  const int n = 12;
  std::vector<exec::Schedule> scheds;
  for (int r = 0; r < n; ++r) {
    RankBuffers x;
    for (int p = 0; p < n; ++p) {
      x.sendCounts.push_back(5 + p);
      x.recvCounts.push_back(5 + r);
    }
    layOut(x.sendCounts, x.sendDispls);
    layOut(x.recvCounts, x.recvDispls);
    CollArgs a = argsOf(g, hostOf, r, x);
    std::vector<size_t> host;  // every member sends 5 + p to rank p: any member order
    for (int q = 0; q < n; ++q)
      if (hostOf[q] == hostOf[r])
        for (int p = 0; p < n; ++p) host.push_back(5 + p);
    a.hostSendCounts = host;
    scheds.push_back(find(Coll::kAllToAllV, "hier")->build(a));
    size_t sends = 0;
    for (const auto& rd : scheds.back().rounds)
      for (const auto& op : rd.ops) sends += op.type == exec::OpType::kSend;
    EXPECT_EQ(sends, static_cast<size_t>((g.perHost - 1) + (g.hosts - 1))) << "rank " << r;
  }
}

// A member's counts that disagree with this rank's own (its row, or the block it expects from
// a member) are an invalid argument naming the ranks.
TEST(AllToAllVHier, DisagreeingCountsAreErrors) {
  const Grid g{2, 2, 0, false};
  const std::vector<int> hostOf = placement(g);
  RankBuffers x;
  x.sendCounts = {1, 2, 3, 4};
  x.recvCounts = {1, 2, 3, 4};
  layOut(x.sendCounts, x.sendDispls);
  layOut(x.recvCounts, x.recvDispls);
  CollArgs a = argsOf(g, hostOf, 0, x);
  // The build's error text, or "" when it builds.
  auto buildError = [&] {
    try {
      find(Coll::kAllToAllV, "hier")->build(a);
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  std::string e = buildError();
  EXPECT_NE(e.find("send counts of the 2 members"), std::string::npos)
      << "no host send counts: " << e;
  // Rank 0's row is its own; rank 1 (its host's other member) sends 7 elements to rank 0,
  // which expects 2.
  a.hostSendCounts = {1, 2, 3, 4, 7, 2, 3, 4};
  e = buildError();
  EXPECT_NE(e.find("rank 1 sends 7 elements to rank 0, which expects 2"), std::string::npos)
      << "disagreeing counts: " << e;
  a.hostSendCounts = {1, 2, 3, 5, 1, 2, 3, 4};
  e = buildError();
  EXPECT_NE(e.find("disagree with this rank's own (to rank 3)"), std::string::npos)
      << "a row that is not the rank's own: " << e;
}

}  // namespace
}  // namespace tutti::algo
