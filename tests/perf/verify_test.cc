// The perf tests' data (tests/support/verifiable.h) is exactly predictable: reducing the inputs
// in the element type's own arithmetic, in any order, gives the expected values bit for bit.
#include "driver/verify.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <vector>

#include "driver/options.h"
#include "driver/output.h"
#include "driver/types.h"
#include "tutti/datatype.hpp"

namespace tutti_perf {
namespace {

// Rounds v to the element type (what storing it and loading it back gives).
double roundTo(tuttiDataType_t t, double v) {
  std::vector<char> buf(8);
  storeDouble(t, buf.data(), 0, v);
  return loadFloat(t, buf.data(), 0);
}

double apply(tuttiRedOp_t op, double a, double b) {
  switch (op) {
    case tuttiSum:
    case tuttiAvg:
      return a + b;
    case tuttiProd:
      return a * b;
    case tuttiMax:
      return std::max(a, b);
    case tuttiMin:
      return std::min(a, b);
    default:  // the bitwise ops have no floating-point meaning
      ADD_FAILURE() << "no floating " << opName(op);
      return 0;
  }
}

// The bitwise op of two integers (two's complement).
int64_t bitwise(tuttiRedOp_t op, int64_t a, int64_t b) {
  return op == tuttiBand ? (a & b) : op == tuttiBor ? (a | b) : (a ^ b);
}

// Reduces element i over ranks in `order`, rounding to the type after every step (floating
// types) or wrapping (integer types), as a library would.
void reduceInType(const Pattern& p, const std::vector<int>& order, size_t i, void* out) {
  if (isFloat(p.type)) {
    double acc = roundTo(p.type, static_cast<double>(inputValue(p, order[0], i)));
    for (size_t k = 1; k < order.size(); ++k) {
      acc = roundTo(p.type, apply(p.op, acc, static_cast<double>(inputValue(p, order[k], i))));
    }
    if (p.op == tuttiAvg) acc = roundTo(p.type, acc / p.nranks);
    storeDouble(p.type, out, 0, acc);
    return;
  }
  std::vector<char> acc(8), v(8);
  storeValue(p.type, acc.data(), 0, static_cast<int64_t>(inputValue(p, order[0], i)));
  for (size_t k = 1; k < order.size(); ++k) {
    const int64_t a = loadInt(p.type, acc.data(), 0);
    const auto b = static_cast<int64_t>(inputValue(p, order[k], i));
    const bool isBitwise = p.op == tuttiBand || p.op == tuttiBor || p.op == tuttiBxor;
    int64_t r = p.op == tuttiProd  ? a * b
                : p.op == tuttiMax ? std::max(a, b)
                : p.op == tuttiMin ? std::min(a, b)
                : isBitwise        ? bitwise(p.op, a, b)
                                   : a + b;
    storeValue(p.type, acc.data(), 0, r);
  }
  int64_t r = loadInt(p.type, acc.data(), 0);
  if (p.op == tuttiAvg) r /= p.nranks;
  storeValue(p.type, out, 0, r);
}

TEST(PerfVerify, ReductionsAreExactInEveryTypeOrderAndRankCount) {
  for (int n : {1, 2, 3, 4, 5, 7, 8, 16, 33, 64}) {
    std::vector<int> fwd(n), rev(n), mid(n);
    std::iota(fwd.begin(), fwd.end(), 0);
    rev.assign(fwd.rbegin(), fwd.rend());
    for (int k = 0; k < n; ++k) mid[k] = (k + n / 2) % n;  // a rotation
    for (tuttiDataType_t t : allTypes()) {
      for (tuttiRedOp_t op : allOps()) {
        if (!opApplies(t, op)) continue;
        Pattern p{true, op, t, n, 7};
        const size_t count = 97;
        std::vector<char> expected(count * 8), got(8);
        fillReduced(p, expected.data(), count, 0);
        for (const auto* order : {&fwd, &rev, &mid}) {
          for (size_t i = 0; i < count; ++i) {
            reduceInType(p, *order, i, got.data());
            EXPECT_EQ(countWrong(p, got.data(), expected.data() + i * typeSize(t), 1), 0)
                << "n=" << n << " type=" << tutti::dataTypeName(t) << " op=" << opName(op)
                << " i=" << i;
          }
        }
      }
    }
  }
}

TEST(PerfVerify, AvgInputsSumToAMultipleOfN) {
  for (int n : {1, 2, 3, 6, 9}) {
    Pattern p{true, tuttiAvg, tuttiInt32, n, 3};
    for (size_t i = 0; i < 50; ++i) {
      double sum = 0;
      for (int r = 0; r < n; ++r) sum += inputValue(p, r, i);
      EXPECT_EQ(std::fmod(sum, n), 0);
      EXPECT_EQ(sum / n, reducedValue(p, i));
    }
  }
}

TEST(PerfVerify, CountWrongSeesASingleBitFlip) {
  for (tuttiDataType_t t : allTypes()) {
    Pattern p{false, tuttiSum, t, 4, 1};
    std::vector<char> a(64 * 8), b(64 * 8);
    fillInput(p, 2, a.data(), 64, 0);
    fillInput(p, 2, b.data(), 64, 0);
    EXPECT_EQ(countWrong(p, a.data(), b.data(), 64), 0);
    b[typeSize(t) * 10 + typeSize(t) - 1] ^= 0x01;  // high byte of element 10
    EXPECT_EQ(countWrong(p, a.data(), b.data(), 64), 1) << tutti::dataTypeName(t);
  }
}

TEST(PerfVerify, HalfAndBfloat16RoundTripSmallIntegers) {
  for (int v = -2048; v <= 2048; ++v) {
    EXPECT_EQ(halfToFloat(floatToHalf(static_cast<float>(v))), static_cast<float>(v));
  }
  for (int v = -256; v <= 256; ++v) {
    EXPECT_EQ(bf16ToFloat(floatToBf16(static_cast<float>(v))), static_cast<float>(v));
  }
  EXPECT_EQ(floatToHalf(1.0f), 0x3c00);
  EXPECT_EQ(floatToBf16(1.0f), 0x3f80);
}

TEST(PerfOptions, NcclTestsDefaultsAndSizes) {
  Options o;
  EXPECT_EQ(o.minBytes, 32u << 20);
  EXPECT_EQ(o.maxBytes, 32u << 20);
  EXPECT_EQ(o.stepBytes, 1u << 20);
  EXPECT_EQ(o.stepFactor, 1u);
  EXPECT_EQ(o.iters, 20);
  EXPECT_EQ(o.warmupIters, 5);
  EXPECT_EQ(o.check, 1);
  EXPECT_EQ(o.average, 1);
  EXPECT_EQ(o.op, tuttiSum);
  EXPECT_EQ(o.type, tuttiFloat32);
  EXPECT_EQ(parseSize("32M"), 32.0 * 1024 * 1024);
  EXPECT_EQ(parseSize("8"), 8.0);
  EXPECT_EQ(parseSize("1G"), 1024.0 * 1024 * 1024);
  EXPECT_LT(parseSize("3X"), 0);

  const char* argv[] = {"all_reduce_perf",
                        "-b",
                        "8",
                        "-e",
                        "1M",
                        "-f",
                        "4",
                        "-d",
                        "all",
                        "-o",
                        "all",
                        "-A",
                        "all",
                        "--csv",
                        "x.csv",
                        "-r",
                        "all"};
  Options p;
  ASSERT_EQ(parseOptions(17, const_cast<char**>(argv), &p, true, true), -1);
  EXPECT_EQ(p.minBytes, 8u);
  EXPECT_EQ(p.maxBytes, 1u << 20);
  EXPECT_EQ(p.stepFactor, 4u);
  EXPECT_EQ(p.type, -1);
  EXPECT_EQ(p.op, -1);
  EXPECT_EQ(p.root, -1);
  EXPECT_EQ(p.algo, "all");
  EXPECT_EQ(p.csvFile, "x.csv");

  const char* bad[] = {"all_reduce_perf", "-b", "1M", "-e", "8"};
  Options q;
  EXPECT_EQ(parseOptions(5, const_cast<char**>(bad), &q, true, false), 1);
}

TEST(PerfOptions, SixteenBitTypesAndBitwiseOps) {
  tuttiDataType_t t;
  ASSERT_TRUE(parseType("int16", &t));
  EXPECT_EQ(t, tuttiInt16);
  ASSERT_TRUE(parseType("uint16", &t));
  EXPECT_EQ(t, tuttiUint16);
  for (tuttiRedOp_t op : {tuttiBand, tuttiBor, tuttiBxor}) {
    tuttiRedOp_t parsed;
    ASSERT_TRUE(parseOp(opName(op), &parsed)) << opName(op);
    EXPECT_EQ(parsed, op);
  }
  EXPECT_TRUE(isSigned(tuttiInt16));
  EXPECT_FALSE(isSigned(tuttiUint16));
  EXPECT_EQ(typeSize(tuttiUint16), 2u);
  // -o all / -d all: 12 types, 8 ops; the drivers skip the 4 floating types' bitwise ops.
  EXPECT_EQ(allTypes().size(), 12u);
  EXPECT_EQ(allOps().size(), 8u);
  EXPECT_TRUE(opApplies(tuttiUint16, tuttiBxor));
  EXPECT_FALSE(opApplies(tuttiFloat32, tuttiBxor));
  std::vector<char> buf(2);
  storeValue(tuttiInt16, buf.data(), 0, -32768);
  EXPECT_EQ(loadInt(tuttiInt16, buf.data(), 0), -32768);
  storeValue(tuttiUint16, buf.data(), 0, 65536 + 5);  // wraps
  EXPECT_EQ(loadInt(tuttiUint16, buf.data(), 0), 5);

  const char* ok[] = {"all_reduce_perf", "-d", "uint16", "-o", "bxor"};
  Options a;
  ASSERT_EQ(parseOptions(5, const_cast<char**>(ok), &a, true, false), -1);
  EXPECT_EQ(a.type, tuttiUint16);
  EXPECT_EQ(a.op, tuttiBxor);
  // An explicit floating type with an explicit bitwise op is refused; with -d all it is not.
  const char* bad[] = {"all_reduce_perf", "-d", "float", "-o", "band"};
  Options b;
  EXPECT_EQ(parseOptions(5, const_cast<char**>(bad), &b, true, false), 1);
  const char* all[] = {"all_reduce_perf", "-d", "all", "-o", "bor"};
  Options c;
  EXPECT_EQ(parseOptions(5, const_cast<char**>(all), &c, true, false), -1);
  // Collectives without an op ignore -o.
  Options d;
  EXPECT_EQ(parseOptions(5, const_cast<char**>(bad), &d, false, false), -1);
}

TEST(PerfOutput, FormatFloatMatchesNcclTests) {
  EXPECT_EQ(formatFloat(21.5612, 7), "  21.56");
  EXPECT_EQ(formatFloat(12345.6, 7), "12345.6");
  EXPECT_EQ(formatFloat(123456.0, 7), " 123456");
  EXPECT_EQ(formatFloat(0.0, 6), "  0.00");
  EXPECT_EQ(formatFloat(1234.5, 6), "1234.5");
}

}  // namespace
}  // namespace tutti_perf
