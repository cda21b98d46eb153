// Reduction kernels: every dtype x op x length (0..67, 1000003) x aliasing, for every ISA
// variant this CPU can run, against an independent scalar reference (exact for integers and
// min/max; float results bitwise equal to the library's scalar path). The bitwise ops run on
// the integer types; a floating type with a bitwise op is refused.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "common/dtype.h"
#include "common/error.h"
#include "reduce/reduce.h"
#include "reduce/reduce_testing.h"

namespace tutti::reduce {
namespace {

constexpr tuttiDataType_t kTypes[] = {tuttiInt8,    tuttiUint8,    tuttiInt16,   tuttiUint16,
                                      tuttiInt32,   tuttiUint32,   tuttiInt64,   tuttiUint64,
                                      tuttiFloat16, tuttiBfloat16, tuttiFloat32, tuttiFloat64};
constexpr tuttiRedOp_t kOps[] = {tuttiSum,  tuttiProd, tuttiMax, tuttiMin,
                                 tuttiBand, tuttiBor,  tuttiBxor};
constexpr tuttiRedOp_t kBitwiseOps[] = {tuttiBand, tuttiBor, tuttiBxor};
constexpr tuttiDataType_t kFloatTypes[] = {tuttiFloat16, tuttiBfloat16, tuttiFloat32, tuttiFloat64};

// The (dtype, op) pairs that have a kernel: every op on integers, no bitwise op on floats.
bool hasKernel(tuttiDataType_t t, tuttiRedOp_t op) {
  const bool bitwise = op == tuttiBand || op == tuttiBor || op == tuttiBxor;
  return !(bitwise && dtypeIsFloat(t));
}

// ---- inputs: random bits for integers and half types; floats mix values with specials ----
template <typename F>
F special(std::mt19937_64& rng) {
  const F nanPayload = std::nan("0x5");
  const F vals[] = {std::numeric_limits<F>::quiet_NaN(),
                    -std::numeric_limits<F>::quiet_NaN(),
                    std::numeric_limits<F>::signaling_NaN(),
                    nanPayload,
                    std::numeric_limits<F>::infinity(),
                    -std::numeric_limits<F>::infinity(),
                    F(0),
                    -F(0),
                    std::numeric_limits<F>::denorm_min(),
                    -std::numeric_limits<F>::denorm_min() * 3,
                    std::numeric_limits<F>::max(),
                    std::numeric_limits<F>::lowest()};
  return vals[rng() % (sizeof(vals) / sizeof(vals[0]))];
}

std::vector<uint8_t> makeInput(tuttiDataType_t t, size_t n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<uint8_t> v(n * dtypeSize(t) + 8);
  for (size_t i = 0; i < v.size(); i += 8) {
    const uint64_t r = rng();
    std::memcpy(v.data() + i, &r, std::min<size_t>(8, v.size() - i));
  }
  v.resize(n * dtypeSize(t));
  std::normal_distribution<double> g(0.0, 4.0);
  auto fill = [&]<typename F>(F*) {
    F* p = reinterpret_cast<F*>(v.data());
    for (size_t i = 0; i < n; ++i) p[i] = (rng() % 8 == 0) ? special<F>(rng) : F(g(rng));
  };
  if (t == tuttiFloat32) fill(static_cast<float*>(nullptr));
  if (t == tuttiFloat64) fill(static_cast<double*>(nullptr));
  if (t == tuttiFloat16 || t == tuttiBfloat16) {  // half of them: values in a sane range
    uint16_t* p = reinterpret_cast<uint16_t*>(v.data());
    for (size_t i = 0; i < n; i += 2) {
      float f = static_cast<float>(g(rng));
      p[i] = t == tuttiFloat16 ? floatToHalf(f) : floatToBf16(f);
    }
  }
  return v;
}

// ---- independent reference (written without the library's helpers) ----
template <typename T>
T refInt(tuttiRedOp_t op, T a, T b) {
  using U = std::make_unsigned_t<T>;
  switch (op) {
    case tuttiSum:
      return static_cast<T>(static_cast<uint64_t>(a) + static_cast<uint64_t>(b));
    case tuttiProd:
      return static_cast<T>(static_cast<U>(static_cast<uint64_t>(a) * static_cast<uint64_t>(b)));
    case tuttiMax:
      return std::max(a, b);
    case tuttiMin:
      return std::min(a, b);
    case tuttiBand:
      return static_cast<T>(static_cast<uint64_t>(a) & static_cast<uint64_t>(b));
    case tuttiBor:
      return static_cast<T>(static_cast<uint64_t>(a) | static_cast<uint64_t>(b));
    case tuttiBxor:
      return static_cast<T>(static_cast<uint64_t>(a) ^ static_cast<uint64_t>(b));
    default:
      ADD_FAILURE() << "no reference for op " << op;
      return 0;
  }
}

template <typename F>
F refFloat(tuttiRedOp_t op, F a, F b) {
  switch (op) {
    case tuttiSum:
      return a + b;
    case tuttiProd:
      return a * b;
    case tuttiMax:
      return std::isnan(a) ? a : std::isnan(b) ? b : (a > b ? a : b);
    default:
      return std::isnan(a) ? a : std::isnan(b) ? b : (a < b ? a : b);
  }
}

bool halfIsNan(uint16_t h, bool bf16) {
  return bf16 ? (h & 0x7fffu) > 0x7f80u : (h & 0x7fffu) > 0x7c00u;
}

// Index of the first element where out differs from the reference, or -1.
long firstRefMismatch(tuttiDataType_t t, tuttiRedOp_t op, const uint8_t* a, const uint8_t* b,
                      const uint8_t* out, size_t n) {
  auto ints = [&]<typename T>(T*) -> long {
    for (size_t i = 0; i < n; ++i) {
      T x, y, r;
      std::memcpy(&x, a + i * sizeof(T), sizeof(T));
      std::memcpy(&y, b + i * sizeof(T), sizeof(T));
      std::memcpy(&r, out + i * sizeof(T), sizeof(T));
      if (r != refInt<T>(op, x, y)) return static_cast<long>(i);
    }
    return -1;
  };
  auto floats = [&]<typename F>(F*) -> long {
    for (size_t i = 0; i < n; ++i) {
      F x, y, r;
      std::memcpy(&x, a + i * sizeof(F), sizeof(F));
      std::memcpy(&y, b + i * sizeof(F), sizeof(F));
      std::memcpy(&r, out + i * sizeof(F), sizeof(F));
      F e = refFloat<F>(op, x, y);
      if (std::isnan(e) ? !std::isnan(r) : std::memcmp(&e, &r, sizeof(F)) != 0) return i;
    }
    return -1;
  };
  auto halves = [&](bool bf16) -> long {
    for (size_t i = 0; i < n; ++i) {
      uint16_t x, y, r;
      std::memcpy(&x, a + 2 * i, 2);
      std::memcpy(&y, b + 2 * i, 2);
      std::memcpy(&r, out + 2 * i, 2);
      float fx = bf16 ? bf16ToFloat(x) : halfToFloat(x);
      float fy = bf16 ? bf16ToFloat(y) : halfToFloat(y);
      float fe = refFloat<float>(op, fx, fy);
      uint16_t e = bf16 ? floatToBf16(fe) : floatToHalf(fe);
      if (std::isnan(fe) ? !halfIsNan(r, bf16) : e != r) return static_cast<long>(i);
    }
    return -1;
  };
  switch (t) {
    case tuttiInt8:
      return ints(static_cast<int8_t*>(nullptr));
    case tuttiUint8:
      return ints(static_cast<uint8_t*>(nullptr));
    case tuttiInt16:
      return ints(static_cast<int16_t*>(nullptr));
    case tuttiUint16:
      return ints(static_cast<uint16_t*>(nullptr));
    case tuttiInt32:
      return ints(static_cast<int32_t*>(nullptr));
    case tuttiUint32:
      return ints(static_cast<uint32_t*>(nullptr));
    case tuttiInt64:
      return ints(static_cast<int64_t*>(nullptr));
    case tuttiUint64:
      return ints(static_cast<uint64_t*>(nullptr));
    case tuttiFloat16:
      return halves(false);
    case tuttiBfloat16:
      return halves(true);
    case tuttiFloat32:
      return floats(static_cast<float*>(nullptr));
    case tuttiFloat64:
      return floats(static_cast<double*>(nullptr));
    default:
      return 0;
  }
}

// Bitwise equality, except that where both results are NaN and the op is sum/prod of two NaNs
// the payload may differ (x86 returns the first operand's NaN and the compiler may commute the
// operands); min/max must match exactly.
bool sameBits(tuttiDataType_t t, tuttiRedOp_t op, const std::vector<uint8_t>& x,
              const std::vector<uint8_t>& y) {
  if (x.size() != y.size()) return false;
  if (!dtypeIsFloat(t) || op == tuttiMax || op == tuttiMin) return x == y;
  const size_t es = dtypeSize(t);
  for (size_t i = 0; i < x.size(); i += es) {
    if (std::memcmp(&x[i], &y[i], es) == 0) continue;
    auto isNan = [&](const uint8_t* p) {
      if (t == tuttiFloat32) {
        float f;
        std::memcpy(&f, p, 4);
        return std::isnan(f);
      }
      if (t == tuttiFloat64) {
        double f;
        std::memcpy(&f, p, 8);
        return std::isnan(f);
      }
      uint16_t h;
      std::memcpy(&h, p, 2);
      return halfIsNan(h, t == tuttiBfloat16);
    };
    if (!isNan(&x[i]) || !isNan(&y[i])) return false;
  }
  return true;
}

enum Alias { kNone, kDstIsA, kDstIsB, kAllSame };

// Runs one case with the ISA currently selected; returns the output bytes.
std::vector<uint8_t> runCase(tuttiDataType_t t, tuttiRedOp_t op, const std::vector<uint8_t>& a,
                             const std::vector<uint8_t>& b, size_t n, Alias alias) {
  const size_t es = dtypeSize(t);
  // One element of offset so that vectors start unaligned; a guard element after the end.
  std::vector<uint8_t> bufA((n + 2) * es, 0xA5), bufB((n + 2) * es, 0x5A), bufD((n + 2) * es, 0xCC);
  std::memcpy(bufA.data() + es, a.data(), n * es);
  std::memcpy(bufB.data() + es, alias == kAllSame ? a.data() : b.data(), n * es);
  uint8_t* pa = bufA.data() + es;
  uint8_t* pb = bufB.data() + es;
  uint8_t* pd = bufD.data() + es;
  switch (alias) {
    case kNone:
      reduce(pd, pa, pb, n, t, op);
      break;
    case kDstIsA:
      reduce(pa, pa, pb, n, t, op), pd = pa;
      break;
    case kDstIsB:
      reduce(pb, pa, pb, n, t, op), pd = pb;
      break;
    case kAllSame:
      reduce(pa, pa, pa, n, t, op), pd = pa;
      break;
  }
  std::vector<uint8_t>& buf = pd == pa ? bufA : pd == pb ? bufB : bufD;
  const uint8_t guard = pd == pa ? 0xA5 : pd == pb ? 0x5A : 0xCC;
  for (size_t i = 0; i < es; ++i) {
    EXPECT_EQ(buf[i], guard) << "wrote before the start";
    EXPECT_EQ(buf[(n + 1) * es + i], guard) << "wrote past the end";
  }
  return std::vector<uint8_t>(pd, pd + n * es);
}

class ReduceIsaTest : public testing::TestWithParam<const char*> {
 protected:
  void SetUp() override {
    if (!detail::isaSupported(GetParam())) GTEST_SKIP() << GetParam() << " not on this CPU";
  }
  void TearDown() override { detail::setIsaForTesting("auto"); }

  void check(size_t n, std::initializer_list<Alias> aliases) {
    for (tuttiDataType_t t : kTypes) {
      for (tuttiRedOp_t op : kOps) {
        if (!hasKernel(t, op)) continue;
        const auto a = makeInput(t, n, 1000 * n + 10 * t + op);
        const auto b = makeInput(t, n, 7 + 1000 * n + 10 * t + op);
        detail::setIsaForTesting("scalar");
        const auto scalarOut = runCase(t, op, a, b, n, kNone);
        const auto scalarSame = runCase(t, op, a, a, n, kNone);
        detail::setIsaForTesting(GetParam());
        for (Alias alias : aliases) {
          const auto out = runCase(t, op, a, b, n, alias);
          const auto& bIn = alias == kAllSame ? a : b;
          const long bad = firstRefMismatch(t, op, a.data(), bIn.data(), out.data(), n);
          ASSERT_EQ(bad, -1) << GetParam() << " " << dtypeName(t) << " " << opName(op) << " n=" << n
                             << " alias=" << alias;
          ASSERT_TRUE(sameBits(t, op, out, alias == kAllSame ? scalarSame : scalarOut))
              << GetParam() << " differs bitwise from scalar: " << dtypeName(t) << " " << opName(op)
              << " n=" << n << " alias=" << alias;
        }
      }
    }
  }
};

TEST_P(ReduceIsaTest, ShortLengthsAllAliasings) {
  detail::setIsaForTesting(GetParam());
  EXPECT_STREQ(isaName(), GetParam());
  for (size_t n = 0; n <= 67; ++n) check(n, {kNone, kDstIsA, kDstIsB, kAllSame});
}

INSTANTIATE_TEST_SUITE_P(Isa, ReduceIsaTest, testing::Values("scalar", "avx2", "avx512"),
                         [](const auto& info) { return std::string(info.param); });

// 1000003 elements: the scalar result is checked against the independent reference once, and
// every vector variant must match it bitwise (inputs generated once per dtype).
TEST(Reduce, LongOddLengthAllIsas) {
  constexpr size_t n = 1000003;
  for (tuttiDataType_t t : kTypes) {
    const auto a = makeInput(t, n, 11 + t);
    const auto b = makeInput(t, n, 23 + t);
    for (tuttiRedOp_t op : kOps) {
      if (!hasKernel(t, op)) continue;
      detail::setIsaForTesting("scalar");
      const auto ref = runCase(t, op, a, b, n, kNone);
      ASSERT_EQ(firstRefMismatch(t, op, a.data(), b.data(), ref.data(), n), -1)
          << dtypeName(t) << " " << opName(op);
      for (const char* isa : {"avx2", "avx512"}) {
        if (!detail::isaSupported(isa)) continue;
        detail::setIsaForTesting(isa);
        const Alias alias = op == tuttiSum ? kDstIsB : kNone;
        ASSERT_TRUE(sameBits(t, op, runCase(t, op, a, b, n, alias), ref))
            << isa << " " << dtypeName(t) << " " << opName(op);
      }
    }
  }
  detail::setIsaForTesting("auto");
}

// Every float16 / bfloat16 bit pattern survives max(x, x) (widen + narrow) on every variant:
// finite and infinite values exactly, NaNs quieted (bit 9 / bit 6 set) with their payload.
TEST(Reduce, HalfConversionsExhaustive) {
  std::vector<uint16_t> all(65536), out(65536);
  for (size_t i = 0; i < all.size(); ++i) all[i] = static_cast<uint16_t>(i);
  for (const char* isa : {"scalar", "avx2", "avx512"}) {
    if (!detail::isaSupported(isa)) continue;
    detail::setIsaForTesting(isa);
    for (bool bf16 : {false, true}) {
      reduce(out.data(), all.data(), all.data(), all.size(), bf16 ? tuttiBfloat16 : tuttiFloat16,
             tuttiMax);
      for (size_t i = 0; i < all.size(); ++i) {
        const uint16_t want = halfIsNan(all[i], bf16) ? (all[i] | (bf16 ? 0x40 : 0x200)) : all[i];
        ASSERT_EQ(out[i], want) << isa << (bf16 ? " bf16 " : " f16 ") << i;
      }
    }
  }
  detail::setIsaForTesting("auto");
}

TEST(Reduce, DispatchPicksBestSupported) {
  const std::string isa = isaName();
  if (detail::isaSupported("avx512")) {
    EXPECT_EQ(isa, "avx512");
  } else if (detail::isaSupported("avx2")) {
    EXPECT_EQ(isa, "avx2");
  } else {
    EXPECT_EQ(isa, "scalar");
  }
}

TEST(Reduce, RejectsBadArguments) {
  float x[4] = {1, 2, 3, 4};
  EXPECT_THROW(reduce(x, x, x, 4, tuttiFloat32, tuttiAvg), Error);
  EXPECT_THROW(reduce(x, x, x, 4, static_cast<tuttiDataType_t>(42), tuttiSum), Error);
  EXPECT_THROW(reduce(nullptr, x, x, 4, tuttiFloat32, tuttiSum), Error);
  EXPECT_NO_THROW(reduce(nullptr, nullptr, nullptr, 0, tuttiFloat32, tuttiSum));
  EXPECT_THROW(divide(x, 4, tuttiFloat32, 0), Error);
  EXPECT_THROW(detail::setIsaForTesting("sse9"), Error);
  try {
    reduce(x, x, x, 4, tuttiFloat32, tuttiAvg);
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), tuttiInvalidArgument);
    EXPECT_NE(std::string(e.what()).find("divide"), std::string::npos);
  }
}

// A floating type with a bitwise op has no kernel: reduce() and kernelFor() refuse it,
// naming the op and the type, instead of calling a null kernel; on every ISA.
TEST(Reduce, RefusesBitwiseOpsOnFloatingTypes) {
  double x[2] = {1, 2};
  for (const char* isa : {"scalar", "avx2", "avx512"}) {
    if (!detail::isaSupported(isa)) continue;
    detail::setIsaForTesting(isa);
    for (tuttiDataType_t t : kFloatTypes) {
      for (tuttiRedOp_t op : kBitwiseOps) {
        for (size_t n : {size_t{0}, size_t{1}}) {
          try {
            reduce(x, x, x, n, t, op);
            ADD_FAILURE() << isa << " " << dtypeName(t) << " " << opName(op) << " accepted";
          } catch (const Error& e) {
            EXPECT_EQ(e.code(), tuttiInvalidArgument);
            const std::string what = e.what();
            EXPECT_NE(what.find(opName(op)), std::string::npos) << what;
            EXPECT_NE(what.find(dtypeName(t)), std::string::npos) << what;
          }
        }
        EXPECT_THROW(kernelFor(t, op), Error) << dtypeName(t) << " " << opName(op);
      }
    }
    for (tuttiDataType_t t : kTypes) {
      for (tuttiRedOp_t op : kOps) {
        if (hasKernel(t, op)) {
          EXPECT_NE(kernelFor(t, op), nullptr) << dtypeName(t) << " " << opName(op);
        }
      }
    }
  }
  detail::setIsaForTesting("auto");
}

// Hand-picked elements, each its own value, for the 16-bit types and the bitwise ops.
TEST(Reduce, SixteenBitAndBitwiseKnownValues) {
  int16_t a[4] = {32767, -32768, -3, 0x1234}, b[4] = {1, -1, 5, -0x0f0f}, d[4];
  reduce(d, a, b, 4, tuttiInt16, tuttiSum);
  EXPECT_EQ(d[0], -32768);  // wraps
  EXPECT_EQ(d[1], 32767);
  EXPECT_EQ(d[2], 2);
  EXPECT_EQ(d[3], 0x1234 - 0x0f0f);
  reduce(d, a, b, 4, tuttiInt16, tuttiProd);
  EXPECT_EQ(d[0], 32767);
  EXPECT_EQ(d[1], -32768);  // -32768 * -1 wraps to itself
  EXPECT_EQ(d[2], -15);
  reduce(d, a, b, 4, tuttiInt16, tuttiMin);
  EXPECT_EQ(d[0], 1);
  EXPECT_EQ(d[1], -32768);
  EXPECT_EQ(d[3], -0x0f0f);
  reduce(d, a, b, 4, tuttiInt16, tuttiBand);
  EXPECT_EQ(d[1], -32768);
  EXPECT_EQ(d[2], 5);                                      // ...11111101 & 00000101
  EXPECT_EQ(d[3], static_cast<int16_t>(0x1234 & 0xf0f1));  // -0x0f0f is 0xf0f1
  reduce(d, a, b, 4, tuttiInt16, tuttiBor);
  EXPECT_EQ(d[0], 32767);
  EXPECT_EQ(d[1], -1);
  EXPECT_EQ(d[2], -3);
  reduce(d, a, b, 4, tuttiInt16, tuttiBxor);
  EXPECT_EQ(d[0], 32766);
  EXPECT_EQ(d[1], 32767);  // 0x8000 ^ 0xffff
  EXPECT_EQ(d[2], -8);     // 0xfffd ^ 0x0005 = 0xfff8
  uint16_t u[3] = {65535, 0xf0f0, 300}, v[3] = {2, 0x0ff0, 301}, w[3];
  reduce(w, u, v, 3, tuttiUint16, tuttiSum);
  EXPECT_EQ(w[0], 1);
  EXPECT_EQ(w[2], 601);
  reduce(w, u, v, 3, tuttiUint16, tuttiProd);
  EXPECT_EQ(w[0], 65534);  // 65535 * 2 mod 2^16
  EXPECT_EQ(w[2], static_cast<uint16_t>(300 * 301));
  reduce(w, u, v, 3, tuttiUint16, tuttiMax);
  EXPECT_EQ(w[0], 65535);
  EXPECT_EQ(w[1], 0xf0f0);
  reduce(w, u, v, 3, tuttiUint16, tuttiBand);
  EXPECT_EQ(w[1], 0x00f0);
  reduce(w, u, v, 3, tuttiUint16, tuttiBor);
  EXPECT_EQ(w[1], 0xfff0);
  reduce(w, u, v, 3, tuttiUint16, tuttiBxor);
  EXPECT_EQ(w[0], 65533);
  EXPECT_EQ(w[1], 0xff00);
  EXPECT_EQ(w[2], 300 ^ 301);
  uint64_t x[2] = {0xff00ff00ff00ff00ull, 1}, y[2] = {0x0ff00ff00ff00ff0ull, 3}, z[2];
  reduce(z, x, y, 2, tuttiUint64, tuttiBxor);
  EXPECT_EQ(z[0], 0xf0f0f0f0f0f0f0f0ull);
  EXPECT_EQ(z[1], 2u);
  int8_t c[2] = {-128, 0x55}, e[2] = {127, 0x0f}, f[2];
  reduce(f, c, e, 2, tuttiInt8, tuttiBor);
  EXPECT_EQ(f[0], -1);
  EXPECT_EQ(f[1], 0x5f);
}

TEST(Reduce, KnownValues) {
  int8_t a8[3] = {127, -128, -3}, b8[3] = {1, -1, 5};
  reduce(a8, a8, b8, 3, tuttiInt8, tuttiSum);
  EXPECT_EQ(a8[0], -128);  // wraps
  EXPECT_EQ(a8[1], 127);
  EXPECT_EQ(a8[2], 2);
  uint64_t u[2] = {~0ull, 5}, v[2] = {3, 7}, w[2];
  reduce(w, u, v, 2, tuttiUint64, tuttiMax);
  EXPECT_EQ(w[0], ~0ull);
  EXPECT_EQ(w[1], 7u);
  reduce(w, u, v, 2, tuttiUint64, tuttiProd);
  EXPECT_EQ(w[0], ~0ull * 3);
  EXPECT_EQ(w[1], 35u);
  float f[3] = {NAN, 1.f, -0.f}, g[3] = {2.f, NAN, 0.f}, h[3];
  reduce(h, f, g, 3, tuttiFloat32, tuttiMax);
  EXPECT_TRUE(std::isnan(h[0]));
  EXPECT_TRUE(std::isnan(h[1]));
  reduce(h, f, g, 3, tuttiFloat32, tuttiMin);
  EXPECT_TRUE(std::isnan(h[0]));
  EXPECT_TRUE(std::isnan(h[1]));
}

TEST(Reduce, DivideTruncatesAndRounds) {
  int32_t i[4] = {7, -7, 8, -9};
  divide(i, 4, tuttiInt32, 2);
  EXPECT_EQ(i[0], 3);
  EXPECT_EQ(i[1], -3);
  EXPECT_EQ(i[2], 4);
  EXPECT_EQ(i[3], -4);
  int8_t c[2] = {-128, 127};
  divide(c, 2, tuttiInt8, 200);  // divisor beyond the type's range
  EXPECT_EQ(c[0], 0);
  EXPECT_EQ(c[1], 0);
  uint8_t u[2] = {255, 17};
  divide(u, 2, tuttiUint8, 4);
  EXPECT_EQ(u[0], 63);
  EXPECT_EQ(u[1], 4);
  int16_t s[3] = {-32768, 32767, -7};
  divide(s, 3, tuttiInt16, 2);
  EXPECT_EQ(s[0], -16384);
  EXPECT_EQ(s[1], 16383);
  EXPECT_EQ(s[2], -3);
  uint16_t us[2] = {65535, 9};
  divide(us, 2, tuttiUint16, 4);
  EXPECT_EQ(us[0], 16383);
  EXPECT_EQ(us[1], 2);
  uint64_t big = ~0ull;
  divide(&big, 1, tuttiUint64, 2);
  EXPECT_EQ(big, ~0ull / 2);
  double d = 1.0;
  divide(&d, 1, tuttiFloat64, 3);
  EXPECT_EQ(d, 1.0 / 3.0);
  uint16_t h = floatToHalf(3.0f), bf = floatToBf16(3.0f);
  divide(&h, 1, tuttiFloat16, 3);
  divide(&bf, 1, tuttiBfloat16, 3);
  EXPECT_EQ(halfToFloat(h), 1.0f);
  EXPECT_EQ(bf16ToFloat(bf), 1.0f);
  uint16_t h2 = floatToHalf(1.0f);
  divide(&h2, 1, tuttiFloat16, 3);
  EXPECT_EQ(h2, floatToHalf(1.0f / 3.0f));
}

}  // namespace
}  // namespace tutti::reduce
