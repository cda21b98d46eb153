// The verifiable data's promises: every reduction exact in every type, in any order, at every
// rank count the tests use; values that differ between ranks, elements and calls (a swapped
// block, a shifted element, a dropped rank or a stale call changes the result).
#include "support/verifiable.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <set>
#include <vector>

#include "tutti/datatype.hpp"

namespace tutti::verifiable {
namespace {

const tuttiDataType_t kTypes[] = {tuttiInt8,    tuttiUint8,    tuttiInt16,   tuttiUint16,
                                  tuttiInt32,   tuttiUint32,   tuttiInt64,   tuttiUint64,
                                  tuttiFloat16, tuttiBfloat16, tuttiFloat32, tuttiFloat64};
const tuttiDataType_t kIntTypes[] = {tuttiInt8,  tuttiUint8,  tuttiInt16, tuttiUint16,
                                     tuttiInt32, tuttiUint32, tuttiInt64, tuttiUint64};
const Kind kKinds[] = {Kind::kCopy, Kind::kSum,  Kind::kProd, Kind::kMin, Kind::kMax,
                       Kind::kAvg,  Kind::kBand, Kind::kBor,  Kind::kBxor};
// (kSumInOrder is checked on its own: its reductions round by design.)

// Rounds v to t (through its bytes), as a kernel working in t does after every operation.
double inType(tuttiDataType_t t, double v) {
  std::byte b[8];
  store(t, b, 0, v);
  return load(t, b, 0);
}

// The bitwise op of two of the bitwise kinds' values, in 64-bit two's complement.
double bitwise(Kind k, double a, double b) {
  const int64_t x = static_cast<int64_t>(a), y = static_cast<int64_t>(b);
  return static_cast<double>(k == Kind::kBand ? x & y : k == Kind::kBor ? x | y : x ^ y);
}

// Reduces element i over the ranks in `order`, rounding to the type after every step.
double reduceInType(const Spec& s, const std::vector<int>& order, size_t i) {
  double acc = value(s, order[0], i);
  for (size_t k = 1; k < order.size(); ++k) {
    const double v = value(s, order[k], i);
    switch (s.kind) {
      case Kind::kBand:
      case Kind::kBor:
      case Kind::kBxor:
        acc = inType(s.dtype, bitwise(s.kind, acc, v));
        break;
      case Kind::kProd:
        acc = inType(s.dtype, acc * v);
        break;
      case Kind::kMin:
        acc = std::min(acc, v);
        break;
      case Kind::kMax:
        acc = std::max(acc, v);
        break;
      default:
        acc = inType(s.dtype, acc + v);
        break;
    }
  }
  if (s.kind == Kind::kAvg)
    acc = inType(s.dtype, isFloat(s.dtype) ? acc / s.nranks : std::trunc(acc / s.nranks));
  return acc;
}

TEST(Verifiable, ValuesAreExactInTheirType) {
  for (tuttiDataType_t t : kTypes)
    for (Kind k : kKinds)
      for (int n : {1, 2, 3, 4, 5, 7, 8, 16, 17}) {
        Spec s{t, k, n, seedOf({static_cast<uint64_t>(t), static_cast<uint64_t>(k)})};
        for (int r = 0; r < n; ++r)
          for (size_t i = 0; i < 200; ++i) {
            const double v = value(s, r, i);
            ASSERT_EQ(inType(t, v), v) << dataTypeName(t) << " " << kindName(k) << " n=" << n;
          }
      }
}

TEST(Verifiable, EveryOrderGivesTheReference) {
  for (tuttiDataType_t t : kTypes)
    for (Kind k : kKinds)
      for (int n : {1, 2, 3, 4, 5, 7, 8, 16, 17}) {
        Spec s{t, k, n, seedOf({7, static_cast<uint64_t>(t), static_cast<uint64_t>(k)})};
        std::vector<int> forward(n), backward(n), interleaved;
        for (int r = 0; r < n; ++r) forward[r] = backward[n - 1 - r] = r;
        for (int r = 0; r < n; r += 2) interleaved.push_back(r);
        for (int r = 1; r < n; r += 2) interleaved.push_back(r);
        for (size_t i = 0; i < 500; ++i) {
          const double want = reduced(s, i);
          ASSERT_EQ(inType(t, want), want) << dataTypeName(t) << " " << kindName(k) << " n=" << n;
          if (k == Kind::kCopy) continue;
          for (const auto* order : {&forward, &backward, &interleaved})
            ASSERT_EQ(reduceInType(s, *order, i), want)
                << dataTypeName(t) << " " << kindName(k) << " n=" << n << " element " << i;
        }
      }
}

TEST(Verifiable, DifferentPerRankElementAndCall) {
  for (tuttiDataType_t t : {tuttiFloat32, tuttiInt32, tuttiFloat16, tuttiInt8}) {
    for (Kind k : {Kind::kCopy, Kind::kSum}) {
      const int n = 8;
      const size_t count = 1023;
      Spec a{t, k, n, seedOf({1})}, b{t, k, n, seedOf({2})};
      // Rank r's block against rank r+3's, element i against i+1, call a against call b:
      // most elements differ (none of the old generator's periods survive).
      size_t sameRank = 0, sameShift = 0, sameCall = 0;
      for (size_t i = 0; i < count; ++i) {
        sameRank += value(a, 0, i) == value(a, 3, i);
        sameShift += value(a, 1, i) == value(a, 1, i + 1);
        sameCall += value(a, 2, i) == value(b, 2, i);
      }
      // At most 1 in 8 equal, even for 8-bit types at 8 ranks (sum: 31 values).
      EXPECT_LT(sameRank, count / 8) << dataTypeName(t) << " " << kindName(k);
      EXPECT_LT(sameShift, count / 8) << dataTypeName(t) << " " << kindName(k);
      EXPECT_LT(sameCall, count / 8) << dataTypeName(t) << " " << kindName(k);
      std::set<double> distinct;
      for (size_t i = 0; i < count; ++i) distinct.insert(value(a, 5, i));
      EXPECT_GT(distinct.size(), t == tuttiInt8 ? 25u : 200u) << dataTypeName(t);
    }
  }
}

TEST(Verifiable, ReductionsSeeEveryRank) {
  // Dropping any one rank's contribution changes most reduced elements (not for unsigned
  // 8-bit products: 2^8 overflows, so only a rotating window of 6 ranks may contribute 2, the
  // others contribute 1).
  for (tuttiDataType_t t : {tuttiFloat32, tuttiBfloat16, tuttiInt8, tuttiUint8})
    for (Kind k : {Kind::kSum, Kind::kProd, Kind::kAvg}) {
      if (t == tuttiUint8 && k == Kind::kProd) continue;
      const int n = 8;
      Spec s{t, k, n, seedOf({3})};
      for (int drop = 0; drop < n; ++drop) {
        size_t same = 0;
        for (size_t i = 0; i < 512; ++i) {
          double acc = k == Kind::kProd ? 1 : 0;
          for (int r = 0; r < n; ++r)
            if (r != drop) acc = k == Kind::kProd ? acc * value(s, r, i) : acc + value(s, r, i);
          if (k == Kind::kAvg) acc /= n;
          same += acc == reduced(s, i);
        }
        EXPECT_LT(same, 512u / 2) << dataTypeName(t) << " " << kindName(k) << " without rank "
                                  << drop;
      }
    }
}

TEST(Verifiable, MinAndMaxMoveBetweenRanks) {
  // Every rank holds the extreme of some elements, and dropping it changes most of those.
  for (tuttiDataType_t t : {tuttiFloat32, tuttiInt8, tuttiUint8, tuttiFloat16})
    for (Kind k : {Kind::kMin, Kind::kMax}) {
      const int n = 8;
      Spec s{t, k, n, seedOf({4})};
      for (int drop = 0; drop < n; ++drop) {
        size_t held = 0, same = 0;
        for (size_t i = 0; i < 1024; ++i) {
          double acc = k == Kind::kMin ? INFINITY : -INFINITY;
          for (int r = 0; r < n; ++r)
            if (r != drop)
              acc = k == Kind::kMin ? std::min(acc, value(s, r, i)) : std::max(acc, value(s, r, i));
          if (value(s, drop, i) != reduced(s, i)) continue;
          ++held;
          same += acc == reduced(s, i);
        }
        EXPECT_GT(held, 1024u / n / 2) << dataTypeName(t) << " " << kindName(k) << " rank " << drop;
        EXPECT_LT(same, held / 4) << dataTypeName(t) << " " << kindName(k) << " rank " << drop;
      }
    }
}

TEST(Verifiable, BitwiseResultsAreHeldByNoRankAndAreNotMinOrMax) {
  // band (bor) gives a pattern no rank holds, below (above) every rank's bits: a kernel that
  // computed min (max) instead, or took one rank's value, gets most elements wrong. 8-bit
  // patterns have few free bits, so some elements do coincide there.
  for (tuttiDataType_t t : kIntTypes)
    for (Kind k : {Kind::kBand, Kind::kBor})
      for (int n : {2, 3, 4, 8}) {
        Spec s{t, k, n, seedOf({10, static_cast<uint64_t>(t)})};
        const size_t count = 1024;
        size_t held = 0, extreme = 0;
        for (size_t i = 0; i < count; ++i) {
          const double want = reduced(s, i);
          double lo = value(s, 0, i), hi = lo;
          bool anyHolds = false;
          for (int r = 0; r < n; ++r) {
            const double v = value(s, r, i);
            lo = std::min(lo, v);
            hi = std::max(hi, v);
            anyHolds |= v == want;
          }
          held += anyHolds;
          extreme += (k == Kind::kBand ? lo : hi) == want;
        }
        const size_t limit = elementSize(t) == 1 ? count / 2 : count / 8;
        EXPECT_LT(held, limit) << dataTypeName(t) << " " << kindName(k) << " n=" << n;
        EXPECT_LT(extreme, limit) << dataTypeName(t) << " " << kindName(k) << " n=" << n;
      }
}

TEST(Verifiable, BxorSeesEveryRank) {
  // Dropping any one rank's pattern changes most reduced elements.
  for (tuttiDataType_t t : kIntTypes) {
    const int n = 8;
    Spec s{t, Kind::kBxor, n, seedOf({11, static_cast<uint64_t>(t)})};
    for (int drop = 0; drop < n; ++drop) {
      size_t same = 0;
      for (size_t i = 0; i < 512; ++i) {
        double acc = 0;
        for (int r = 0; r < n; ++r)
          if (r != drop) acc = bitwise(Kind::kBxor, acc, value(s, r, i));
        same += acc == reduced(s, i);
      }
      EXPECT_LT(same, 512u / 8) << dataTypeName(t) << " without rank " << drop;
    }
  }
}

TEST(Verifiable, SixteenBitTypesAndBitwiseOpsHaveTheirKinds) {
  EXPECT_EQ(kindOf(true, tuttiBand), Kind::kBand);
  EXPECT_EQ(kindOf(true, tuttiBor), Kind::kBor);
  EXPECT_EQ(kindOf(true, tuttiBxor), Kind::kBxor);
  EXPECT_EQ(kindOf(false, tuttiBxor), Kind::kCopy);
  EXPECT_STREQ(kindName(Kind::kBxor), "bxor");
  EXPECT_EQ(elementSize(tuttiInt16), 2u);
  EXPECT_EQ(elementSize(tuttiUint16), 2u);
  std::byte b[2];
  store(tuttiInt16, b, 0, -32768);
  EXPECT_EQ(load(tuttiInt16, b, 0), -32768);
  store(tuttiUint16, b, 0, 65535);
  EXPECT_EQ(load(tuttiUint16, b, 0), 65535);
}

TEST(Verifiable, SumInOrderDependsOnTheOrder) {
  // The deterministic mode's data: the rank-order reference is what float arithmetic gives in
  // rank order, and most elements differ in another order.
  for (tuttiDataType_t t : {tuttiFloat32, tuttiFloat64}) {
    const int n = 4;
    Spec s{t, Kind::kSumInOrder, n, seedOf({9})};
    size_t differs = 0;
    for (size_t i = 0; i < 256; ++i) {
      double inOrder = 0, swapped = 0;
      if (t == tuttiFloat32) {
        float a = static_cast<float>(value(s, 0, i));
        for (int r = 1; r < n; ++r) a += static_cast<float>(value(s, r, i));
        inOrder = a;
        float b = static_cast<float>(value(s, 0, i)) + static_cast<float>(value(s, 2, i));
        b += static_cast<float>(value(s, 1, i));
        b += static_cast<float>(value(s, 3, i));
        swapped = b;
      } else {
        double a = value(s, 0, i);
        for (int r = 1; r < n; ++r) a += value(s, r, i);
        inOrder = a;
        swapped = ((value(s, 0, i) + value(s, 2, i)) + value(s, 1, i)) + value(s, 3, i);
      }
      ASSERT_EQ(reduced(s, i), inOrder) << dataTypeName(t) << " element " << i;
      differs += swapped != inOrder;
    }
    EXPECT_GT(differs, 256u / 8) << dataTypeName(t);
  }
}

TEST(Verifiable, MatchesIsExactButForFloatAverages) {
  Spec sum{tuttiFloat32, Kind::kSum, 4, 0}, avg{tuttiFloat32, Kind::kAvg, 3, 0};
  EXPECT_TRUE(matches(sum, 3.0, 3.0));
  EXPECT_FALSE(matches(sum, 3.0 + std::ldexp(1.0, -21), 3.0));
  EXPECT_TRUE(matches(avg, 3.0 + std::ldexp(1.0, -22), 3.0));
  EXPECT_FALSE(matches(avg, 3.0 + std::ldexp(1.0, -18), 3.0));
  std::vector<float> got = {1, 2, 3, 4}, want = {1, 2, 5, 4};
  size_t first = 0;
  EXPECT_EQ(countWrong(sum, got.data(), want.data(), 4, &first), 1u);
  EXPECT_EQ(first, 2u);
  EXPECT_NE(firstMismatch(sum, got.data(), want.data(), 4).find("element 2"), std::string::npos);
}

TEST(Verifiable, GuardsCatchWritesJustOutside) {
  GuardedBuffer b(100);
  EXPECT_EQ(b.checkGuards(), "");
  b.data()[100] = std::byte{0};
  EXPECT_NE(b.checkGuards().find("after"), std::string::npos);
  b.resize(100);
  EXPECT_EQ(b.checkGuards(), "");
  b.data()[-1] = std::byte{0};
  EXPECT_NE(b.checkGuards().find("before"), std::string::npos);
  b.resize(0);
  EXPECT_EQ(b.checkGuards(), "");
}

}  // namespace
}  // namespace tutti::verifiable
