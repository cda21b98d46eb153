// Deterministic mode: every reduction algorithm produces bitwise the same result, equal to
// ((x0 op x1) op x2) ... op x_{n-1} computed with the same kernels, whatever the size.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

#include "interfaces/algorithm.h"
#include "common/dtype.h"
#include "exec/simulator.h"
#include "reduce/reduce.h"

namespace tutti::algo {
namespace {

void fill(tuttiDataType_t t, std::byte* p, size_t count, int r) {
  for (size_t i = 0; i < count; ++i) {
    // Mixed magnitudes so that the summation order changes the rounding.
    double v = std::sin(r * 977.0 + i * 0.37) * std::pow(10.0, static_cast<int>((i + r) % 7) - 3);
    if (t == tuttiFloat32) {
      float f = static_cast<float>(v);
      std::memcpy(p + 4 * i, &f, 4);
    }
    if (t == tuttiFloat64) std::memcpy(p + 8 * i, &v, 8);
    if (t == tuttiFloat16) {
      uint16_t h = floatToHalf(static_cast<float>(v));
      std::memcpy(p + 2 * i, &h, 2);
    }
    if (t == tuttiBfloat16) {
      uint16_t h = floatToBf16(static_cast<float>(v));
      std::memcpy(p + 2 * i, &h, 2);
    }
  }
}

// Runs coll/algo deterministically; returns the concatenated outputs (roots only for reduce).
std::vector<std::byte> runDet(const AlgorithmInfo& algo, int n, size_t count, tuttiDataType_t t,
                              tuttiRedOp_t op, bool inPlace,
                              std::vector<std::vector<std::byte>>& inputs) {
  size_t es = dtypeSize(t);
  bool rs = algo.coll == Coll::kReduceScatter;
  size_t inB = (rs ? n * count : count) * es, outB = count * es;
  std::vector<exec::Schedule> sch;
  std::vector<std::vector<std::byte>> mem(n);
  std::vector<exec::SimRankBuffers> b(n);
  inputs.resize(n);
  for (int r = 0; r < n; ++r) {
    CollArgs a;
    a.coll = algo.coll;
    a.count = count;
    a.dtype = t;
    a.op = op;
    a.rank = r;
    a.nranks = n;
    a.root = n / 2;
    a.deterministic = true;
    if (n > 1) a.hostOf.assign(n, 0), a.hostOf[n - 1] = 1;
    a.windowBytes = 1024;  // direct too (its builder does not look at hostOf)
    if (!algo.applicable(a)) return {};
    sch.push_back(algo.build(a));
    mem[r].resize(inB + outB);
    fill(t, mem[r].data(), inB / es, r);
    inputs[r].assign(mem[r].begin(), mem[r].begin() + inB);
    if (inPlace)
      b[r] = {mem[r].data(), inB, mem[r].data() + (rs ? r * outB : 0), outB};
    else
      b[r] = {mem[r].data(), inB, mem[r].data() + inB, outB};
  }
  exec::simulate(sch, b);
  std::vector<std::byte> all;
  for (int r = 0; r < n; ++r) {
    if (algo.coll == Coll::kReduce && r != n / 2) continue;
    all.insert(all.end(), b[r].output, b[r].output + outB);
  }
  return all;
}

TEST(Deterministic, BitwiseIdenticalAcrossAlgorithmsAndEqualToRankOrder) {
  for (Coll coll : {Coll::kAllReduce, Coll::kReduceScatter, Coll::kReduce})
    for (tuttiDataType_t t : {tuttiFloat32, tuttiFloat16, tuttiBfloat16, tuttiFloat64})
      for (int n : {1, 3, 5, 8})
        for (size_t count : {size_t{7}, size_t{1023}, size_t{10007}})
          for (tuttiRedOp_t op : {tuttiSum, tuttiProd}) {
            if (op == tuttiProd && count > 7) continue;
            size_t es = dtypeSize(t);
            std::vector<std::byte> first;
            std::string firstName;
            std::vector<std::vector<std::byte>> inputs;
            for (const AlgorithmInfo& algo : registry()) {
              if (algo.coll != coll) continue;
              for (bool inPlace : {false, true}) {
                std::vector<std::byte> got = runDet(algo, n, count, t, op, inPlace, inputs);
                if (got.empty() && count) continue;  // not applicable
                if (firstName.empty()) {
                  first = got;
                  firstName = algo.name;
                  // Reference: rank order with the library's kernels.
                  bool rs = coll == Coll::kReduceScatter;
                  int outs = coll == Coll::kReduce ? 1 : n;
                  for (int o = 0; o < outs; ++o) {
                    size_t off = rs ? o * count * es : 0;
                    std::vector<std::byte> acc(inputs[0].begin() + off,
                                               inputs[0].begin() + off + count * es);
                    for (int r = 1; r < n; ++r)
                      reduce::reduce(acc.data(), acc.data(), inputs[r].data() + off, count, t, op);
                    ASSERT_EQ(0, std::memcmp(acc.data(), first.data() + o * count * es, count * es))
                        << collName(coll) << ":" << algo.name << " n=" << n << " count=" << count
                        << " " << dtypeName(t) << " output " << o << " differs from rank order";
                  }
                } else {
                  ASSERT_EQ(got.size(), first.size());
                  ASSERT_EQ(0, std::memcmp(got.data(), first.data(), got.size()))
                      << collName(coll) << ":" << algo.name << " vs " << firstName << " n=" << n
                      << " count=" << count << " " << dtypeName(t) << (inPlace ? " in-place" : "");
                }
              }
            }
          }
}

}  // namespace
}  // namespace tutti::algo
