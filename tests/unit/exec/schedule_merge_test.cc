// Merging schedules (exec/schedule_merge.h): which algorithms' schedules are round-aligned,
// and merged groups of all-reduce + all-gather + reduce-scatter + all-to-all (one member each,
// the aligned algorithms in rotation, 2-8 ranks) run through the simulator, which checks the
// matching of every message, with results equal to values computed here; the merge's buffer
// and scratch moves; what it refuses.
#include "exec/schedule_merge.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "common/error.h"
#include "exec/simulator.h"
#include "interfaces/algorithm.h"

namespace tutti::exec {
namespace {

const algo::Coll kColls[] = {algo::Coll::kAllReduce, algo::Coll::kAllGather,
                             algo::Coll::kReduceScatter, algo::Coll::kAllToAll};

algo::CollArgs argsOf(algo::Coll coll, size_t count, int rank, int n) {
  algo::CollArgs a;
  a.coll = coll;
  a.count = count;
  a.dtype = tuttiInt32;
  a.op = tuttiSum;
  a.rank = rank;
  a.nranks = n;
  return a;
}

std::vector<Schedule> everyRank(const algo::AlgorithmInfo& info, algo::Coll coll, size_t count,
                                int n) {
  std::vector<Schedule> all;
  for (int r = 0; r < n; ++r) all.push_back(info.build(argsOf(coll, count, r, n)));
  return all;
}

// The algorithms of coll that apply on one host without a window and whose schedules merge
// (mergeable and round-aligned at n ranks and `count`).
std::vector<const algo::AlgorithmInfo*> merging(algo::Coll coll, size_t count, int n) {
  std::vector<const algo::AlgorithmInfo*> out;
  for (const auto& info : algo::registry()) {
    if (info.coll != coll || !info.applicable(argsOf(coll, count, 0, n))) continue;
    auto all = everyRank(info, coll, count, n);
    bool ok = roundsAligned(all);
    for (const auto& s : all) ok = ok && mergeable(s);
    if (ok) out.push_back(&info);
  }
  return out;
}

// Input element i of member m on rank r: distinct per rank, member and element, not periodic.
int32_t input(int r, int m, size_t i) {
  return static_cast<int32_t>(1000003 * m + 7919 * r + static_cast<int32_t>(i * i % 10007) + i);
}

size_t inElems(algo::Coll c, size_t count, int n) {
  return c == algo::Coll::kAllReduce || c == algo::Coll::kAllGather ? count : count * n;
}
size_t outElems(algo::Coll c, size_t count, int n) {
  return c == algo::Coll::kAllReduce || c == algo::Coll::kReduceScatter ? count : count * n;
}

// Element i of member m's output on rank r, computed from the inputs.
int32_t expected(algo::Coll c, int m, size_t count, int r, int n, size_t i) {
  int64_t sum = 0;
  switch (c) {
    case algo::Coll::kAllReduce:
      for (int q = 0; q < n; ++q) sum += input(q, m, i);
      return static_cast<int32_t>(sum);
    case algo::Coll::kAllGather:
      return input(static_cast<int>(i / count), m, i % count);
    case algo::Coll::kReduceScatter:
      for (int q = 0; q < n; ++q) sum += input(q, m, r * count + i);
      return static_cast<int32_t>(sum);
    default:  // all-to-all: block q of the output is block r of rank q's input
      return input(static_cast<int>(i / count), m, r * count + i % count);
  }
}

TEST(ScheduleMerge, RingSchedulesAreRoundAlignedAndSomeAreNot) {
  for (int n : {2, 3, 4, 5, 8}) {
    for (algo::Coll c :
         {algo::Coll::kAllReduce, algo::Coll::kAllGather, algo::Coll::kReduceScatter}) {
      auto all = everyRank(*algo::find(c, "ring"), c, 96, n);
      EXPECT_TRUE(roundsAligned(all)) << algo::collName(c) << " ring at " << n << " ranks";
    }
  }
  // Rank 0 sends in round 0, rank 1 receives in round 1.
  std::vector<Schedule> skewed(2);
  skewed[0].newRound().ops.push_back(Schedule::send(1, Slice{Buf::kInput, 0, 4}));
  skewed[1].newRound();
  skewed[1].newRound().ops.push_back(Schedule::recv(0, Slice{Buf::kOutput, 0, 4}));
  EXPECT_FALSE(roundsAligned(skewed));
  skewed[1].rounds.erase(skewed[1].rounds.begin());
  EXPECT_TRUE(roundsAligned(skewed));
}

// The aligned algorithms in rotation: member kinds x algorithm choices across rank counts.
TEST(ScheduleMerge, MergedGroupsGiveEachMembersResult) {
  std::set<std::string> seen;
  int groups = 0;
  for (int n : {2, 3, 4, 5, 6, 8}) {
    for (int variant = 0; variant < 3; ++variant) {
      const size_t counts[] = {size_t(37 + 5 * variant), size_t(1 + 9 * variant), size_t(24 + n),
                               size_t(3 + variant)};
      std::vector<const algo::AlgorithmInfo*> chosen;
      for (int m = 0; m < 4; ++m) {
        auto options = merging(kColls[m], counts[m], n);
        ASSERT_FALSE(options.empty()) << algo::collName(kColls[m]) << " at " << n << " ranks";
        chosen.push_back(options[(variant + 2 * n + m) % options.size()]);
        seen.insert(std::string(algo::collName(kColls[m])) + ":" + chosen.back()->name);
      }
      // Members side by side in one input and one output per rank (int32 elements).
      std::vector<size_t> inAt(5), outAt(5);
      for (int m = 0; m < 4; ++m) {
        inAt[m + 1] = inAt[m] + inElems(kColls[m], counts[m], n) * 4;
        outAt[m + 1] = outAt[m] + outElems(kColls[m], counts[m], n) * 4;
      }
      std::vector<Schedule> merged;
      std::vector<std::vector<int32_t>> in(n), out(n);
      std::vector<SimRankBuffers> bufs(n);
      for (int r = 0; r < n; ++r) {
        std::vector<Schedule> parts;
        for (int m = 0; m < 4; ++m)
          parts.push_back(chosen[m]->build(argsOf(kColls[m], counts[m], r, n)));
        std::vector<MergeMember> members;
        for (int m = 0; m < 4; ++m) members.push_back({&parts[m], 0, 1, inAt[m], outAt[m]});
        merged.push_back(mergeSchedules(members, "fused"));
        in[r].resize(inAt[4] / 4);
        out[r].assign(outAt[4] / 4, -1);
        for (int m = 0; m < 4; ++m)
          for (size_t i = 0; i < inElems(kColls[m], counts[m], n); ++i)
            in[r][inAt[m] / 4 + i] = input(r, m, i);
        bufs[r] = {reinterpret_cast<std::byte*>(in[r].data()), inAt[4],
                   reinterpret_cast<std::byte*>(out[r].data()), outAt[4]};
      }
      SimResult res = simulate(merged, bufs);
      size_t longest = 0;
      for (int m = 0; m < 4; ++m)
        longest =
            std::max(longest, chosen[m]->build(argsOf(kColls[m], counts[m], 0, n)).rounds.size());
      EXPECT_EQ(merged[0].rounds.size(), longest);
      for (int r = 0; r < n; ++r)
        for (int m = 0; m < 4; ++m)
          for (size_t i = 0; i < outElems(kColls[m], counts[m], n); ++i)
            ASSERT_EQ(out[r][outAt[m] / 4 + i], expected(kColls[m], m, counts[m], r, n, i))
                << algo::collName(kColls[m]) << ":" << chosen[m]->name << " rank " << r << "/" << n
                << " element " << i;
      ++groups;
    }
  }
  EXPECT_EQ(groups, 18);
  std::string list;
  for (const auto& s : seen) list += s + " ";
  RecordProperty("merged_algorithms", list);
  std::printf("merged algorithms: %s\n", list.c_str());
  // Every collective had more than one algorithm to rotate through somewhere.
  EXPECT_GE(seen.size(), 8u) << list;
}

TEST(ScheduleMerge, BuffersAndScratchMoveAndConflictsAreRefused) {
  Schedule a, b;
  a.dtype = tuttiFloat32;
  a.op = tuttiSum;
  a.scratchBytes = 10;
  a.newRound().ops.push_back(Schedule::copy(Slice{Buf::kInput, 0, 8}, Slice{Buf::kScratch, 0, 8}));
  a.rounds[0].ops.push_back(Schedule::send(1, Slice{Buf::kScratch, 0, 8}));
  b.dtype = tuttiFloat32;
  b.op = tuttiSum;
  b.scratchBytes = 16;
  b.newRound().ops.push_back(
      Schedule::recvReduce(1, Slice{Buf::kInput, 4, 8}, Slice{Buf::kScratch, 8, 8}));
  b.newRound().ops.push_back(Schedule::copy(Slice{Buf::kScratch, 8, 8}, Slice{Buf::kOutput, 0, 8}));
  MergeMember members[] = {{&a, kFirstUserBuf, kFirstUserBuf + 1},
                           {&b, kFirstUserBuf + 2, kFirstUserBuf + 3}};
  Schedule m = mergeSchedules(members, "fused");
  ASSERT_EQ(m.rounds.size(), 2u);
  EXPECT_EQ(m.scratchBytes, 128u);  // each member's part rounded up to 64 bytes
  ASSERT_EQ(m.rounds[0].ops.size(), 3u);
  // Local ops first (a's copy), then the transfers in member order.
  EXPECT_EQ(m.rounds[0].ops[0].type, OpType::kCopy);
  EXPECT_EQ(static_cast<int>(m.rounds[0].ops[0].src.buf), kFirstUserBuf);
  EXPECT_EQ(m.rounds[0].ops[1].type, OpType::kSend);
  EXPECT_EQ(m.rounds[0].ops[2].type, OpType::kRecvReduce);
  EXPECT_EQ(static_cast<int>(m.rounds[0].ops[2].src.buf), kFirstUserBuf + 2);
  EXPECT_EQ(m.rounds[0].ops[2].src.offset, 4u);
  EXPECT_EQ(m.rounds[0].ops[2].dst.buf, Buf::kScratch);
  EXPECT_EQ(m.rounds[0].ops[2].dst.offset, 64u + 8u);
  EXPECT_EQ(static_cast<int>(m.rounds[1].ops[0].dst.buf), kFirstUserBuf + 3);

  Schedule other = b;
  other.dtype = tuttiFloat64;
  MergeMember clash[] = {{&b, kFirstUserBuf, kFirstUserBuf + 1},
                         {&other, kFirstUserBuf + 2, kFirstUserBuf + 3}};
  EXPECT_THROW(mergeSchedules(clash, "fused"), Error);
  Schedule windowed = a;
  windowed.rounds[0].ops.push_back(Schedule::post(1));
  EXPECT_FALSE(mergeable(windowed));
  MergeMember withWindow[] = {{&windowed, kFirstUserBuf, kFirstUserBuf + 1}};
  EXPECT_THROW(mergeSchedules(withWindow, "fused"), Error);
  EXPECT_FALSE(reduces(a));
  EXPECT_TRUE(reduces(b));
}

}  // namespace
}  // namespace tutti::exec
