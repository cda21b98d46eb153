// The long correctness matrix (label matrix): every algorithm x n x counts x in-place x every
// datatype x every op, and large counts on several rank counts.
#include <gtest/gtest.h>

#include "sim_harness.h"

namespace tutti::algo::testing {
namespace {

const tuttiDataType_t kTypes[] = {tuttiFloat32, tuttiInt32,   tuttiFloat64,
                                  tuttiUint8,   tuttiFloat16, tuttiBfloat16};
const tuttiRedOp_t kOps[] = {tuttiSum, tuttiProd, tuttiMin, tuttiMax};

bool isReduction(Coll c) {
  return c == Coll::kAllReduce || c == Coll::kReduceScatter || c == Coll::kReduce ||
         c == Coll::kReduceScatterV;
}

class Matrix : public ::testing::TestWithParam<const AlgorithmInfo*> {};

void sweep(const AlgorithmInfo& algo, std::span<const int> ranks, std::span<const size_t> counts,
           bool allTypes) {
  int k = 0;
  for (int n : ranks)
    for (size_t count : counts)
      for (int inPlace = 0; inPlace < 2; ++inPlace) {
        if (inPlace && (algo.coll == Coll::kAllToAll || algo.coll == Coll::kAllToAllV)) continue;
        ++k;
        Case c;
        c.algo = &algo;
        c.n = n;
        c.count = count;
        c.inPlace = inPlace;
        c.root = n - 1 - (k % n);
        c.ringOrder = k % 2 ? std::vector<int>{} : evensThenOdds(n);
        c.hostOf.resize(n);
        for (int r = 0; r < n; ++r) c.hostOf[r] = n == 2 ? r : (k % 2 ? r / 2 : r % 3);
        if (!algo.applicable(argsFor(c, 0))) continue;
        for (auto t : kTypes)
          for (auto op : kOps) {
            if (!isReduction(algo.coll) && op != tuttiSum) continue;
            if (!allTypes && !(t == tuttiFloat32 || t == tuttiFloat16 || t == tuttiInt32)) continue;
            if (!allTypes && op != tuttiSum && op != tuttiMax) continue;
            c.dtype = t;
            c.op = op;
            Outcome o = run(c);
            ASSERT_EQ(o.error, "") << describe(c);
          }
      }
}

TEST_P(Matrix, AllTypesAllOps) {
  const int ranks[] = {1, 2, 3, 4, 5, 6, 7, 8, 16};
  const size_t counts[] = {0, 1, 7, 1023};
  sweep(*GetParam(), ranks, counts, true);
}

TEST_P(Matrix, LargeCounts) {
  const int ranks[] = {3, 8};
  const size_t counts[] = {(1u << 20) + 3};
  sweep(*GetParam(), ranks, counts, false);
}

std::string name(const ::testing::TestParamInfo<const AlgorithmInfo*>& p) {
  return std::string(collName(p.param->coll)) + "_" + p.param->name;
}

INSTANTIATE_TEST_SUITE_P(Registry, Matrix, ::testing::ValuesIn([] {
                           std::vector<const AlgorithmInfo*> v;
                           for (const AlgorithmInfo& a : registry()) v.push_back(&a);
                           return v;
                         }()),
                         name);

}  // namespace
}  // namespace tutti::algo::testing
