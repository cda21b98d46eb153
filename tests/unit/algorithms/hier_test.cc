// The hierarchical all-gather, reduce-scatter and all-to-all (and all-reduce) on grids of
// hosts: results against the reference for 2-4 hosts x 1-4 ranks, ranks placed in blocks,
// interleaved and shuffled, with and without the communicator's host-sorted ring order, in
// and out of place; what crosses the hosts (the bytes each host's link must carry, the
// all-to-all's nh - 1 messages per rank); applicability and the error when forced elsewhere.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <string>

#include "common/error.h"
#include "sim_harness.h"

namespace tutti::algo::testing {
namespace {

const char* const kColls[][2] = {
    {"allgather", "hier"}, {"reducescatter", "hier"}, {"alltoall", "hier"}, {"allreduce", "hier"}};

const AlgorithmInfo* algoOf(const char* coll, const char* name) {
  for (const AlgorithmInfo& a : registry())
    if (std::string(collName(a.coll)) == coll && std::string(a.name) == name) return &a;
  return nullptr;
}

// Host of each rank: 0 blocks (r / L), 1 interleaved (r % H), 2 a fixed shuffle of blocks.
std::vector<int> placement(int H, int L, int kind) {
  int n = H * L;
  std::vector<int> h(n);
  for (int r = 0; r < n; ++r) h[r] = kind == 0 ? r / L : r % H;
  if (kind == 2)
    for (int r = 0; r < n; ++r) h[r] = ((r * 7 + 3) % n) / L;  // 7 is prime to n <= 16 but 7, 14
  return h;
}

// The communicator's ring order across hosts: ranks sorted by host, stable.
std::vector<int> hostSorted(const std::vector<int>& hostOf) {
  std::vector<int> order(hostOf.size());
  for (size_t r = 0; r < order.size(); ++r) order[r] = static_cast<int>(r);
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return hostOf[a] < hostOf[b]; });
  return order;
}

TEST(Hier, GridsPlacementsOrdersAgainstReference) {
  const tuttiDataType_t types[] = {tuttiFloat32, tuttiInt32, tuttiFloat64, tuttiUint8};
  const tuttiRedOp_t ops[] = {tuttiSum, tuttiProd, tuttiMin, tuttiMax};
  int k = 0, ran = 0;
  for (auto [coll, name] : kColls) {
    const AlgorithmInfo* algo = algoOf(coll, name);
    ASSERT_NE(algo, nullptr) << coll << " " << name;
    for (int H : {2, 3, 4})
      for (int L : {1, 2, 3, 4})
        for (int kind = 0; kind < 3; ++kind) {
          if (H * L % 7 == 0 && kind == 2) continue;
          ++k;
          Case c;
          c.algo = algo;
          c.n = H * L;
          c.hostOf = placement(H, L, kind);
          c.ringOrder = k % 2 ? hostSorted(c.hostOf) : std::vector<int>{};
          c.count = std::vector<size_t>{0, 1, 7, 333}[k % 4];
          c.inPlace = algo->coll != Coll::kAllToAll ? (k / 2) % 2 : k % 3 == 0;
          c.dtype = types[k % 4];
          c.op = ops[(k / 4) % 4];
          ASSERT_TRUE(algo->applicable(argsFor(c, 0))) << describe(c);
          Outcome o = run(c);
          ASSERT_EQ(o.error, "") << describe(c);
          ++ran;
        }
  }
  EXPECT_EQ(ran, k);
}

struct Crossing {
  size_t bytes = 0, messages = 0;  // sent to ranks on other hosts
  size_t localMessages = 0;        // sent to ranks on the same host
};

// What rank r's schedule sends, split by whether the peer is on another host.
Crossing crossing(const AlgorithmInfo& algo, Case c, int r) {
  c.algo = &algo;
  exec::Schedule s = algo.build(argsFor(c, r));
  Crossing x;
  for (const exec::Round& rd : s.rounds)
    for (const exec::Op& op : rd.ops) {
      if (op.type != exec::OpType::kSend) continue;
      if (c.hostOf[op.peer] != c.hostOf[r]) {
        x.bytes += op.src.bytes;
        ++x.messages;
      } else {
        ++x.localMessages;
      }
    }
  return x;
}

// All-gather and reduce-scatter: every rank sends (nh - 1) blocks across hosts, so a host's
// link carries (nh - 1) x L blocks each way, the bound; the flat ring in host order sends
// n - 1 blocks through each host's link. All-to-all: the same bytes as pairwise, in nh - 1
// messages per rank instead of n - L, and L - 1 messages inside the host.
TEST(Hier, WhatCrossesTheHosts) {
  for (int H : {2, 4})
    for (int L : {1, 2, 4})
      for (int kind : {0, 1}) {
        Case c;
        c.n = H * L;
        c.count = 100;
        c.hostOf = placement(H, L, kind);
        c.ringOrder = hostSorted(c.hostOf);
        const size_t block = c.count * 4;
        for (const char* coll : {"allgather", "reducescatter", "alltoall"}) {
          const AlgorithmInfo* algo = algoOf(coll, "hier");
          for (int r = 0; r < c.n; ++r) {
            Crossing x = crossing(*algo, c, r);
            std::string where = std::string(coll) + " " + std::to_string(H) + "x" +
                                std::to_string(L) + " placement " + std::to_string(kind) +
                                " rank " + std::to_string(r);
            if (std::string(coll) == "alltoall") {
              EXPECT_EQ(x.bytes, static_cast<size_t>(H - 1) * L * block) << where;
              EXPECT_EQ(x.messages, static_cast<size_t>(H - 1)) << where;
              EXPECT_EQ(x.localMessages, static_cast<size_t>(L - 1)) << where;
              Crossing flat = crossing(*algoOf(coll, "pairwise"), c, r);
              EXPECT_EQ(flat.bytes, x.bytes) << where;
              EXPECT_EQ(flat.messages, static_cast<size_t>(c.n - L)) << where;
            } else {
              EXPECT_EQ(x.bytes, static_cast<size_t>(H - 1) * block) << where;
            }
          }
        }
      }
}

TEST(Hier, AppliesOnlyToEqualHostsAndSaysWhyWhenForced) {
  for (auto [coll, name] : kColls) {
    if (std::string(coll) == "allreduce") continue;  // hier all-reduce also takes uneven hosts
    const AlgorithmInfo* algo = algoOf(coll, name);
    Case c;
    c.algo = algo;
    c.n = 5;
    c.hostOf = {0, 0, 1, 1, 1};
    EXPECT_FALSE(algo->applicable(argsFor(c, 0))) << coll;
    try {
      algo->build(argsFor(c, 0));
      ADD_FAILURE() << coll << ": built on uneven hosts";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("equally many"), std::string::npos) << e.what();
    }
    c.hostOf = {0, 0, 0, 0, 0};
    EXPECT_FALSE(algo->applicable(argsFor(c, 0))) << coll << ": one host";
    c.hostOf = {};
    EXPECT_FALSE(algo->applicable(argsFor(c, 0))) << coll << ": no hosts";
    c.n = 4;
    c.hostOf = {3, 9, 9, 3};
    EXPECT_TRUE(algo->applicable(argsFor(c, 0))) << coll;
  }
}

}  // namespace
}  // namespace tutti::algo::testing
