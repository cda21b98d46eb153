#include "verifiable.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>

#include "tutti/datatype.hpp"

namespace tutti::verifiable {
namespace {

uint64_t mix(uint64_t x) {  // splitmix64's finaliser
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

// Independent streams per (seed, rank, element, purpose): one mixing round per value (the
// large cases fill millions of elements per call).
uint64_t hash(uint64_t seed, int64_t rank, size_t i, uint64_t purpose) {
  return mix(seed + purpose * 0xD6E8FEB86659FD93ull +
             static_cast<uint64_t>(rank + 1) * 0xA0761D6478BD642Full +
             static_cast<uint64_t>(i) * 0xE7037ED1A0B428DBull);
}

bool isUnsigned(tuttiDataType_t t) {
  return t == tuttiUint8 || t == tuttiUint16 || t == tuttiUint32 || t == tuttiUint64;
}

// Largest magnitude B such that every integer in [-B, B] is exact in t (and in a double).
int64_t bound(tuttiDataType_t t) {
  switch (t) {
    case tuttiInt8:
      return 127;
    case tuttiUint8:
      return 255;
    case tuttiInt16:
      return 32767;
    case tuttiUint16:
      return 65535;
    case tuttiInt32:
      return 2147483647;
    case tuttiUint32:
      return 4294967295;
    case tuttiFloat16:
      return 2048;
    case tuttiBfloat16:
      return 256;
    case tuttiFloat32:
      return 1 << 24;
    default:  // int64, uint64, float64
      return int64_t{1} << 52;
  }
}

// Uniform integer in [lo, hi] from h.
int64_t pick(uint64_t h, int64_t lo, int64_t hi) {
  const uint64_t span = static_cast<uint64_t>(hi - lo) + 1;
  return lo + static_cast<int64_t>(h % span);
}

// h % d for a divisor fixed per Spec, without a division instruction (the large cases draw
// tens of millions of values per test): m = ceil(2^128 / d) makes m * h (mod 2^128) the
// fraction h / d - floor(h / d) in 128 bits, and that fraction times d, rounded down, is the
// remainder (Lemire, Kaser and Kurz, "Faster remainder by direct computation", 2019). Exact
// for every 64-bit h and d >= 1 (d = 1: m wraps to 0, and so does the remainder).
class FastMod {
 public:
  using U128 = unsigned __int128;
  explicit FastMod(uint64_t d = 1) : d_(d), m_(~U128{0} / d + 1) {}
  uint64_t operator()(uint64_t h) const {
    const U128 fraction = m_ * h;
    const U128 low = static_cast<U128>(static_cast<uint64_t>(fraction)) * d_;
    const U128 high = (fraction >> 64) * d_;
    return static_cast<uint64_t>((high + (low >> 64)) >> 64);
  }

 private:
  uint64_t d_;
  U128 m_;
};

// pick(h, lo, hi) for a range fixed per Spec.
class Range {
 public:
  Range() = default;
  Range(int64_t lo, int64_t hi) : lo_(lo), mod_(static_cast<uint64_t>(hi - lo) + 1) {}
  int64_t operator()(uint64_t h) const { return lo_ + static_cast<int64_t>(mod_(h)); }

 private:
  int64_t lo_ = 0;
  FastMod mod_;
};

// How many ranks (a rotating per-element window) may contribute a factor other than +-1 to a
// product: integers floor(log2(max)) - 1 (factors 2), floats the exponent range of the type
// (factors 2^-1 or 2^1; half: 2^-14 .. 2^15).
int prodWindow(tuttiDataType_t t) {
  switch (t) {
    case tuttiInt8:
      return 5;
    case tuttiUint8:
      return 6;
    case tuttiInt16:
      return 13;
    case tuttiUint16:
      return 14;
    case tuttiInt32:
      return 29;
    case tuttiUint32:
      return 30;
    case tuttiFloat16:
      return 14;
    default:
      return 61;
  }
}

uint16_t toHalf(double v) {
  uint16_t sign = std::signbit(v) ? 0x8000 : 0;
  double a = std::fabs(v);
  if (a == 0) return sign;
  int e;
  double m = std::frexp(a, &e);  // a = m * 2^e, m in [0.5, 1)
  int biased = e + 14;
  if (biased >= 1) {
    auto mant = static_cast<uint32_t>(std::nearbyint((2 * m - 1) * 1024));
    if (mant == 1024) {
      mant = 0;
      ++biased;
    }
    if (biased >= 31) return sign | 0x7C00;
    return static_cast<uint16_t>(sign | (biased << 10) | mant);
  }
  return static_cast<uint16_t>(sign | static_cast<uint32_t>(std::nearbyint(std::ldexp(a, 24))));
}

double fromHalf(uint16_t h) {
  const double sign = (h & 0x8000) ? -1.0 : 1.0;
  const int e = (h >> 10) & 0x1F;
  const int m = h & 0x3FF;
  if (e == 0) return sign * std::ldexp(m, -24);
  if (e == 31) return m ? NAN : sign * INFINITY;
  return sign * std::ldexp(1024 + m, e - 25);
}

uint16_t toBf16(double v) {
  const float f = static_cast<float>(v);
  uint32_t bits;
  std::memcpy(&bits, &f, 4);
  bits += 0x7FFF + ((bits >> 16) & 1);  // round to nearest even
  return static_cast<uint16_t>(bits >> 16);
}

double fromBf16(uint16_t b) {
  const uint32_t bits = static_cast<uint32_t>(b) << 16;
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

template <typename T>
void put(void* base, size_t i, T x) {
  std::memcpy(static_cast<std::byte*>(base) + i * sizeof(T), &x, sizeof(T));
}
template <typename T>
T get(const void* base, size_t i) {
  T x;
  std::memcpy(&x, static_cast<const std::byte*>(base) + i * sizeof(T), sizeof(T));
  return x;
}

}  // namespace

Kind kindOf(bool reduces, tuttiRedOp_t op) {
  if (!reduces) return Kind::kCopy;
  switch (op) {
    case tuttiProd:
      return Kind::kProd;
    case tuttiMin:
      return Kind::kMin;
    case tuttiMax:
      return Kind::kMax;
    case tuttiAvg:
      return Kind::kAvg;
    case tuttiBand:
      return Kind::kBand;
    case tuttiBor:
      return Kind::kBor;
    case tuttiBxor:
      return Kind::kBxor;
    default:
      return Kind::kSum;
  }
}

uint64_t seedOf(std::initializer_list<uint64_t> parts) {
  uint64_t s = 0x7475747469ull;  // "tutti"
  for (uint64_t p : parts) s = mix(s ^ p);
  return s;
}

namespace {

int digitsOf(tuttiDataType_t t) {
  return t == tuttiFloat16 ? 11 : t == tuttiBfloat16 ? 8 : t == tuttiFloat32 ? 24 : 53;
}

// The bits of the patterns the bitwise kinds draw: the type's width, 53 (int64: sign-extended,
// so within +-2^52) or 52 (uint64) for the 64-bit types, and digits - 1 on floating types.
int bitsOf(tuttiDataType_t t) {
  if (isFloat(t)) return digitsOf(t) - 1;
  if (t == tuttiInt64) return 53;
  if (t == tuttiUint64) return 52;
  return static_cast<int>(dataTypeSize(t)) * 8;
}

// value() and reduced() for one Spec, with its ranges and divisors worked out once (only
// those its kind draws from), so that filling a buffer costs no division per element.
class Generator {
 public:
  explicit Generator(const Spec& s);
  double value(int rank, size_t i) const;
  double reduced(size_t i) const;

 private:
  // Sum and avg: rank r holds w(i) + e(r, i) - e(r-1, i), e(q) random in [0, R] for ranks
  // 0..n-2 and e(-1) = e(n-1) = 0, so the offsets telescope to 0 over all ranks while every
  // rank's value is its own (two hashes per value, no loop). w in [-R, R], R = B / 2n
  // (unsigned: [R, 2R], R = B / 3n); every value in [-2R, 2R] ([0, 3R]), so every partial
  // sum of any subset of ranks stays within B.
  int64_t sumCommon(size_t i) const { return common_(hash(s_.seed, -1, i, 1)); }
  int64_t offset(int q, size_t i) const {
    return q < 0 || q >= n_ - 1 ? 0 : offset_(hash(s_.seed, q, i, 2));
  }
  // Min (max): the extreme m(i) in the lower (upper) half of the type's range, held by one
  // rank chosen per element; every other rank a value between m(i) and the far end.
  int64_t extreme(size_t i) const { return extreme_(hash(s_.seed, -1, i, 5)); }
  int extremeRank(size_t i) const { return static_cast<int>(ranks_(hash(s_.seed, -1, i, 6))); }
  // Bitwise kinds: patterns of bits_ bits, read as the type's value (sign-extended from bit
  // bits_ - 1 on signed integer types: the ops commute with that extension).
  uint64_t bits(uint64_t h) const { return h & bitMask_; }
  double asValue(uint64_t pattern) const {
    if (!signedBits_) return static_cast<double>(pattern);
    const uint64_t sign = uint64_t{1} << (bits_ - 1);
    return static_cast<double>(static_cast<int64_t>(pattern ^ sign) - static_cast<int64_t>(sign));
  }
  uint64_t target(size_t i) const { return bits(hash(s_.seed, -1, i, 7)); }
  uint64_t bitwiseValue(int rank, size_t i, uint64_t h) const;

  Spec s_;
  int n_;
  bool uns_;
  int64_t b_;
  int bits_;
  bool signedBits_;
  uint64_t bitMask_;
  Range copy_, common_, offset_, extreme_, inOrder_;
  FastMod ranks_;
};

Generator::Generator(const Spec& s)
    : s_(s),
      n_(std::max(s.nranks, 1)),
      uns_(isUnsigned(s.dtype)),
      b_(bound(s.dtype)),
      bits_(bitsOf(s.dtype)),
      signedBits_(!uns_ && !isFloat(s.dtype)),
      bitMask_((uint64_t{1} << bits_) - 1) {
  ranks_ = FastMod(static_cast<uint64_t>(n_));
  switch (s.kind) {
    case Kind::kCopy:
      copy_ = uns_ ? Range(0, b_) : Range(-b_, b_);
      break;
    case Kind::kSum:
    case Kind::kAvg: {
      const int64_t r = b_ / ((uns_ ? 3 : 2) * n_);
      common_ = uns_ ? Range(r, 2 * r) : Range(-r, r);
      offset_ = Range(0, r);
      break;
    }
    case Kind::kMin:
    case Kind::kMax: {
      const int64_t lo = uns_ ? 0 : -b_, mid = lo + (b_ - lo) / 2;
      extreme_ = s.kind == Kind::kMin ? Range(lo, mid) : Range(mid, b_);
      break;
    }
    case Kind::kSumInOrder: {
      const int64_t top = int64_t{1} << (std::min(digitsOf(s.dtype), 52) - 1);
      inOrder_ = isFloat(s.dtype) ? Range(-top, top) : Range(0, b_ / n_);
      break;
    }
    case Kind::kProd:
    case Kind::kBand:
    case Kind::kBor:
    case Kind::kBxor:
      break;
  }
}

// Band (bor): ranks A and B = A + 1 hold t | c and t | ~c (t & c and t & ~c), the others t |
// random (t & random); a single rank holds t. Bxor: e(r) ^ e(r - 1), the chain of random e
// from e(-1) = 0 to e(n - 1) = t.
uint64_t Generator::bitwiseValue(int rank, size_t i, uint64_t h) const {
  const uint64_t t = target(i);
  if (s_.kind == Kind::kBxor) {
    auto e = [&](int q) { return q < 0 ? 0 : q == n_ - 1 ? t : bits(hash(s_.seed, q, i, 9)); };
    return e(rank) ^ e(rank - 1);
  }
  if (n_ == 1) return t;
  const int a = extremeRank(i), b = (a + 1) % n_;
  const uint64_t c = bits(hash(s_.seed, -1, i, 8));
  const uint64_t part = rank == a ? c : rank == b ? ~c & bitMask_ : bits(h);
  return s_.kind == Kind::kBand ? t | part : t & part;
}

[[gnu::always_inline]] inline double Generator::value(int rank, size_t i) const {
  const uint64_t h = hash(s_.seed, rank, i, 0);
  switch (s_.kind) {
    case Kind::kCopy:
      return static_cast<double>(copy_(h));
    case Kind::kMin:
    case Kind::kMax: {
      const bool isMin = s_.kind == Kind::kMin;
      const int64_t m = extreme(i);
      if (rank == extremeRank(i)) return static_cast<double>(m);
      const int64_t lo = uns_ ? 0 : -b_;
      return static_cast<double>(isMin ? pick(h, m, b_) : pick(h, lo, m));
    }
    case Kind::kSum:
    case Kind::kAvg:
      return static_cast<double>(sumCommon(i) + offset(rank, i) - offset(rank - 1, i));
    case Kind::kSumInOrder: {
      if (!isFloat(s_.dtype)) return static_cast<double>(inOrder_(h));
      const int e = static_cast<int>(hash(s_.seed, rank, i, 4) % 21) - 10;
      return std::ldexp(static_cast<double>(inOrder_(h)),
                        e - (std::min(digitsOf(s_.dtype), 52) - 1));
    }
    case Kind::kProd: {
      const double sign = (!uns_ && (h & 1)) ? -1.0 : 1.0;
      const int window = prodWindow(s_.dtype);
      const int start = static_cast<int>(ranks_(hash(s_.seed, -1, i, 3)));
      if (n_ > window && (rank - start + n_) % n_ >= window) return sign;
      if (isFloat(s_.dtype)) return sign * std::ldexp(1.0, static_cast<int>((h >> 1) % 3) - 1);
      return sign * (((h >> 1) & 1) ? 2.0 : 1.0);
    }
    case Kind::kBand:
    case Kind::kBor:
    case Kind::kBxor:
      return asValue(bitwiseValue(rank, i, h));
  }
  return 0;
}

// Closed forms where the data allows one (nccl-tests computes its expected values the same
// way): no loop over the ranks, so checking a call costs O(count), not O(n x count).
[[gnu::always_inline]] inline double Generator::reduced(size_t i) const {
  switch (s_.kind) {
    case Kind::kCopy:
      return value(0, i);
    case Kind::kSum:
      return static_cast<double>(n_ * sumCommon(i));
    case Kind::kAvg:
      return static_cast<double>(sumCommon(i));
    case Kind::kMin:
    case Kind::kMax:
      return static_cast<double>(extreme(i));
    case Kind::kSumInOrder: {
      // Rank order, rounded to the type after every addition (the sum of two values of the
      // type is exact in a double, so rounding it once is the type's own addition).
      double acc = value(0, i);
      std::byte tmp[8];
      for (int r = 1; r < n_; ++r) {
        store(s_.dtype, tmp, 0, acc + value(r, i));
        acc = load(s_.dtype, tmp, 0);
      }
      return acc;
    }
    case Kind::kBand:
    case Kind::kBor:
    case Kind::kBxor:
      return asValue(target(i));
    case Kind::kProd:
      break;
  }
  // Products: a loop (the window of non-unit factors rotates with the element).
  double acc = 1;
  for (int r = 0; r < n_; ++r) acc *= value(r, i);
  return acc;
}

// buf[k] = v(k) converted to t, k < count: one switch on the type, not one per element.
template <typename T, typename Convert, typename Values>
void storeEach(void* buf, size_t count, Convert convert, const Values& v) {
  for (size_t k = 0; k < count; ++k) put(buf, k, static_cast<T>(convert(v(k))));
}
template <typename Values>
void storeAll(tuttiDataType_t t, void* buf, size_t count, const Values& v) {
  auto same = [](double x) { return x; };
  switch (t) {
    case tuttiInt8:
      return storeEach<int8_t>(buf, count, same, v);
    case tuttiUint8:
      return storeEach<uint8_t>(buf, count, same, v);
    case tuttiInt16:
      return storeEach<int16_t>(buf, count, same, v);
    case tuttiUint16:
      return storeEach<uint16_t>(buf, count, same, v);
    case tuttiInt32:
      return storeEach<int32_t>(buf, count, same, v);
    case tuttiUint32:
      return storeEach<uint32_t>(buf, count, same, v);
    case tuttiInt64:
      return storeEach<int64_t>(buf, count, same, v);
    case tuttiUint64:
      return storeEach<uint64_t>(buf, count, same, v);
    case tuttiFloat16:
      return storeEach<uint16_t>(buf, count, toHalf, v);
    case tuttiBfloat16:
      return storeEach<uint16_t>(buf, count, toBf16, v);
    case tuttiFloat32:
      return storeEach<float>(buf, count, same, v);
    case tuttiFloat64:
      return storeEach<double>(buf, count, same, v);
    default:
      return;
  }
}

}  // namespace

double value(const Spec& s, int rank, size_t i) { return Generator(s).value(rank, i); }

double reduced(const Spec& s, size_t i) { return Generator(s).reduced(i); }

size_t elementSize(tuttiDataType_t t) { return dataTypeSize(t); }

bool isFloat(tuttiDataType_t t) { return isFloatDataType(t); }

const char* kindName(Kind k) {
  switch (k) {
    case Kind::kCopy:
      return "copy";
    case Kind::kSum:
      return "sum";
    case Kind::kProd:
      return "prod";
    case Kind::kMin:
      return "min";
    case Kind::kMax:
      return "max";
    case Kind::kAvg:
      return "avg";
    case Kind::kSumInOrder:
      return "sum-in-order";
    case Kind::kBand:
      return "band";
    case Kind::kBor:
      return "bor";
    case Kind::kBxor:
      return "bxor";
  }
  return "?";
}

void store(tuttiDataType_t t, void* base, size_t i, double v) {
  switch (t) {
    case tuttiInt8:
      put(base, i, static_cast<int8_t>(v));
      break;
    case tuttiUint8:
      put(base, i, static_cast<uint8_t>(v));
      break;
    case tuttiInt16:
      put(base, i, static_cast<int16_t>(v));
      break;
    case tuttiUint16:
      put(base, i, static_cast<uint16_t>(v));
      break;
    case tuttiInt32:
      put(base, i, static_cast<int32_t>(v));
      break;
    case tuttiUint32:
      put(base, i, static_cast<uint32_t>(v));
      break;
    case tuttiInt64:
      put(base, i, static_cast<int64_t>(v));
      break;
    case tuttiUint64:
      put(base, i, static_cast<uint64_t>(v));
      break;
    case tuttiFloat16:
      put(base, i, toHalf(v));
      break;
    case tuttiBfloat16:
      put(base, i, toBf16(v));
      break;
    case tuttiFloat32:
      put(base, i, static_cast<float>(v));
      break;
    case tuttiFloat64:
      put(base, i, v);
      break;
    default:
      break;
  }
}

double load(tuttiDataType_t t, const void* base, size_t i) {
  switch (t) {
    case tuttiInt8:
      return get<int8_t>(base, i);
    case tuttiUint8:
      return get<uint8_t>(base, i);
    case tuttiInt16:
      return get<int16_t>(base, i);
    case tuttiUint16:
      return get<uint16_t>(base, i);
    case tuttiInt32:
      return get<int32_t>(base, i);
    case tuttiUint32:
      return get<uint32_t>(base, i);
    case tuttiInt64:
      return static_cast<double>(get<int64_t>(base, i));
    case tuttiUint64:
      return static_cast<double>(get<uint64_t>(base, i));
    case tuttiFloat16:
      return fromHalf(get<uint16_t>(base, i));
    case tuttiBfloat16:
      return fromBf16(get<uint16_t>(base, i));
    case tuttiFloat32:
      return get<float>(base, i);
    case tuttiFloat64:
      return get<double>(base, i);
    default:
      return NAN;
  }
}

void fill(const Spec& s, int rank, void* buf, size_t count, size_t offset) {
  const Generator g(s);
  storeAll(s.dtype, buf, count, [&](size_t k) { return g.value(rank, offset + k); });
}

void fillReduced(const Spec& s, void* buf, size_t count, size_t offset) {
  const Generator g(s);
  storeAll(s.dtype, buf, count, [&](size_t k) { return g.reduced(offset + k); });
}

bool matches(const Spec& s, double got, double want) {
  if (s.kind != Kind::kAvg || !isFloat(s.dtype)) return got == want;
  return std::fabs(got - want) <= std::ldexp(std::fabs(want), 2 - digitsOf(s.dtype));
}

size_t countWrong(const Spec& s, const void* got, const void* expected, size_t count,
                  size_t* firstWrong) {
  size_t wrong = 0, first = count;
  const size_t es = elementSize(s.dtype);
  const bool exact = s.kind != Kind::kAvg || !isFloat(s.dtype);
  for (size_t k = 0; k < count; ++k) {
    bool ok = exact ? std::memcmp(static_cast<const std::byte*>(got) + k * es,
                                  static_cast<const std::byte*>(expected) + k * es, es) == 0
                    : matches(s, load(s.dtype, got, k), load(s.dtype, expected, k));
    if (!ok) {
      if (first == count) first = k;
      ++wrong;
    }
  }
  if (firstWrong) *firstWrong = first;
  return wrong;
}

std::string firstMismatch(const Spec& s, const void* got, const void* expected, size_t count) {
  if (count == 0 || std::memcmp(got, expected, count * elementSize(s.dtype)) == 0) return "";
  size_t first = 0;
  size_t wrong = countWrong(s, got, expected, count, &first);
  if (wrong == 0) return "";
  char values[96];
  std::snprintf(values, sizeof(values), "got %.17g, want %.17g", load(s.dtype, got, first),
                load(s.dtype, expected, first));
  return std::to_string(wrong) + " wrong, first at element " + std::to_string(first) + ": " +
         values;
}

void GuardedBuffer::resize(size_t bytes) {
  bytes_ = bytes;
  mem_.resize(bytes + 2 * kGuardBytes);
  std::fill(mem_.begin(), mem_.begin() + kGuardBytes, kGuardByte);
  std::fill(mem_.end() - kGuardBytes, mem_.end(), kGuardByte);
}

std::string GuardedBuffer::checkGuards() const {
  for (size_t k = 0; k < kGuardBytes; ++k) {
    if (mem_[kGuardBytes - 1 - k] != kGuardByte)
      return "guard byte " + std::to_string(k + 1) + " before the buffer was overwritten";
    if (mem_[kGuardBytes + bytes_ + k] != kGuardByte)
      return "guard byte " + std::to_string(k + 1) + " after the buffer was overwritten";
  }
  return "";
}

}  // namespace tutti::verifiable
