// Every collective x every algorithm through the simulator, checked against a reference.
// The unit suite rotates datatypes / ops over the cases; TUTTI_FULL_MATRIX (the matrix suite)
// runs the full product and the large counts.
#include <gtest/gtest.h>

#include "common/error.h"
#include "sim_harness.h"

namespace tutti::algo::testing {
namespace {

const tuttiDataType_t kTypes[] = {tuttiFloat32, tuttiInt32,   tuttiFloat64,
                                  tuttiUint8,   tuttiFloat16, tuttiBfloat16};
const tuttiRedOp_t kOps[] = {tuttiSum, tuttiProd, tuttiMin, tuttiMax};
const int kRanks[] = {1, 2, 3, 4, 5, 6, 7, 8, 16};

bool isReduction(Coll c) {
  return c == Coll::kAllReduce || c == Coll::kReduceScatter || c == Coll::kReduce ||
         c == Coll::kReduceScatterV;
}

std::vector<int> hostLayout(int n, int variant) {
  std::vector<int> h(n);
  for (int r = 0; r < n; ++r) h[r] = n == 2 ? r : variant % 2 ? r % 3 : r / 2;
  return h;
}

// Runs one algorithm over ranks x counts x in-place; full = every dtype x op.
void runMatrix(const AlgorithmInfo& algo, std::span<const size_t> counts, bool full,
               std::span<const int> ranks) {
  int k = 0;
  for (int n : ranks) {
    for (size_t count : counts) {
      for (int inPlace = 0; inPlace < 2; ++inPlace) {
        if (inPlace && (algo.coll == Coll::kAllToAll || algo.coll == Coll::kAllToAllV)) continue;
        ++k;
        Case c;
        c.algo = &algo;
        c.n = n;
        c.count = count;
        c.inPlace = inPlace;
        c.root = (k * 5) % n;
        c.ringOrder = k % 2 ? evensThenOdds(n) : std::vector<int>{};
        c.hostOf = hostLayout(n, k);
        if (!algo.applicable(argsFor(c, 0))) continue;
        std::vector<std::pair<tuttiDataType_t, tuttiRedOp_t>> combos;
        if (full) {
          for (auto t : kTypes)
            for (auto op : kOps)
              if (isReduction(algo.coll) || op == tuttiSum) combos.push_back({t, op});
        } else {
          combos.push_back({tuttiFloat32, tuttiSum});
          if (isReduction(algo.coll))
            combos.push_back({kTypes[k % 6], kOps[(k / 6 + k) % 4]});
          else
            combos.push_back({kTypes[k % 6], tuttiSum});
        }
        for (auto [t, op] : combos) {
          c.dtype = t;
          c.op = op;
          Outcome o = run(c);
          ASSERT_EQ(o.error, "") << describe(c);
        }
      }
    }
  }
}

class AllAlgorithms : public ::testing::TestWithParam<const AlgorithmInfo*> {};

TEST_P(AllAlgorithms, SmallCountsRotatingTypes) {
  const size_t counts[] = {0, 1, 7, 1023};
  runMatrix(*GetParam(), counts, false, kRanks);
}

TEST_P(AllAlgorithms, MediumCount) {
  const size_t counts[] = {20001};
  const int ranks[] = {5};
  const AlgorithmInfo& a = *GetParam();
  // Large counts on a non-power-of-two count (power-of-two only algorithms: 4).
  Case probe;
  probe.algo = &a;
  probe.n = 5;
  if (!a.applicable(argsFor(probe, 0))) {
    const int r4[] = {4};
    runMatrix(a, counts, false, r4);
  } else {
    runMatrix(a, counts, false, ranks);
  }
}

std::string name(const ::testing::TestParamInfo<const AlgorithmInfo*>& p) {
  return std::string(collName(p.param->coll)) + "_" + p.param->name;
}

INSTANTIATE_TEST_SUITE_P(Registry, AllAlgorithms, ::testing::ValuesIn([] {
                           std::vector<const AlgorithmInfo*> v;
                           for (const AlgorithmInfo& a : registry()) v.push_back(&a);
                           return v;
                         }()),
                         name);

// Gather and scatter: every root at 1..9 and 13 ranks (runs that wrap past rank n - 1 at
// every position), in and out of place, counts 1 and 5.
TEST(RootedCollectives, EveryRootEveryRankCount) {
  for (const AlgorithmInfo& a : registry()) {
    if (a.coll != Coll::kGather && a.coll != Coll::kScatter) continue;
    for (int n : {1, 2, 3, 4, 5, 6, 7, 8, 9, 13})
      for (int root = 0; root < n; ++root)
        for (size_t count : {size_t{1}, size_t{5}}) {
          Case c;
          c.algo = &a;
          c.n = n;
          c.root = root;
          c.count = count;
          c.inPlace = (root + count) % 2;
          c.dtype = count == 1 ? tuttiInt32 : tuttiFloat64;
          Outcome o = run(c);
          ASSERT_EQ(o.error, "") << describe(c);
        }
  }
}

TEST(Registry, EveryCollectiveHasAlgorithmsAndFindWorks) {
  for (int c = 0; c < kNumColls; ++c) {
    int count = 0;
    for (const AlgorithmInfo& a : registry()) {
      if (static_cast<int>(a.coll) != c) continue;
      ++count;
      EXPECT_EQ(find(a.coll, a.name), &a);
      EXPECT_NE(std::string(a.description), "");
    }
    EXPECT_GE(count, 1) << collName(static_cast<Coll>(c));
  }
  EXPECT_EQ(find(Coll::kAllReduce, "nope"), nullptr);
  EXPECT_EQ(find(Coll::kBroadcast, "ring"), nullptr);
  EXPECT_STREQ(collName(Coll::kReduceScatter), "reducescatter");
  for (const char* n :
       {"naive", "ps", "ring", "tree", "dbtree", "butterfly", "rabenseifner", "hier"})
    EXPECT_NE(find(Coll::kAllReduce, n), nullptr) << n;
}

TEST(Registry, BuildersRejectBadArguments) {
  const AlgorithmInfo* ring = find(Coll::kAllReduce, "ring");
  CollArgs a;
  a.nranks = 4;
  a.rank = 4;
  EXPECT_THROW(ring->build(a), Error);
  a.rank = 0;
  a.op = tuttiAvg;
  EXPECT_THROW(ring->build(a), Error);
  a.op = tuttiSum;
  a.ringOrder = {0, 1, 1, 2};
  EXPECT_THROW(ring->build(a), Error);
  a.ringOrder = {};
  a.root = 7;
  EXPECT_THROW(find(Coll::kBroadcast, "chain")->build(a), Error);
  CollArgs h;
  h.nranks = 4;
  EXPECT_FALSE(find(Coll::kAllReduce, "hier")->applicable(h));
  h.hostOf = {0, 0, 1, 1};
  EXPECT_TRUE(find(Coll::kAllReduce, "hier")->applicable(h));
  h.nranks = 6;
  EXPECT_FALSE(find(Coll::kAllGather, "rd")->applicable(h));
}

}  // namespace
}  // namespace tutti::algo::testing
