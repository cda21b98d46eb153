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
  return t == tuttiUint8 || t == tuttiUint32 || t == tuttiUint64;
}

// Largest magnitude B such that every integer in [-B, B] is exact in t (and in a double).
int64_t bound(tuttiDataType_t t) {
  switch (t) {
    case tuttiInt8:
      return 127;
    case tuttiUint8:
      return 255;
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

// How many ranks (a rotating per-element window) may contribute a factor other than +-1 to a
// product: integers floor(log2(max)) - 1 (factors 2), floats the exponent range of the type
// (factors 2^-1 or 2^1; half: 2^-14 .. 2^15).
int prodWindow(tuttiDataType_t t) {
  switch (t) {
    case tuttiInt8:
      return 5;
    case tuttiUint8:
      return 6;
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

// The per-element offsets of the sum and avg kinds: e(r) random in [0, R] for ranks 0..n-2,
// e(-1) = e(n-1) = 0, and rank r contributes e(r) - e(r-1), so the offsets telescope to 0
// over all ranks while every rank's value is its own (two hashes per value, no loop).
int64_t telescoped(const Spec& s, int rank, size_t i, int64_t range) {
  const int n = std::max(s.nranks, 1);
  auto e = [&](int q) { return q < 0 || q >= n - 1 ? 0 : pick(hash(s.seed, q, i, 2), 0, range); };
  return e(rank) - e(rank - 1);
}

// Sum and avg: the common part w in [-R, R], R = B / 2n (unsigned: [R, 2R], R = B / 3n);
// every value in [-2R, 2R] ([0, 3R]), so every partial sum of any subset of ranks stays
// within B.
int64_t sumRange(const Spec& s) {
  return bound(s.dtype) / ((isUnsigned(s.dtype) ? 3 : 2) * std::max(s.nranks, 1));
}
int64_t sumCommon(const Spec& s, size_t i) {
  const int64_t r = sumRange(s);
  const uint64_t h = hash(s.seed, -1, i, 1);
  return isUnsigned(s.dtype) ? pick(h, r, 2 * r) : pick(h, -r, r);
}

// Min (max): the extreme m(i) in the lower (upper) half of the type's range, held by one
// rank chosen per element; every other rank a value between m(i) and the far end.
int64_t extreme(const Spec& s, size_t i, bool isMin) {
  const int64_t b = bound(s.dtype), lo = isUnsigned(s.dtype) ? 0 : -b, mid = lo + (b - lo) / 2;
  const uint64_t h = hash(s.seed, -1, i, 5);
  return isMin ? pick(h, lo, mid) : pick(h, mid, b);
}
int extremeRank(const Spec& s, size_t i) {
  return static_cast<int>(hash(s.seed, -1, i, 6) % static_cast<uint64_t>(std::max(s.nranks, 1)));
}

}  // namespace

double value(const Spec& s, int rank, size_t i) {
  const int n = std::max(s.nranks, 1);
  const bool uns = isUnsigned(s.dtype);
  const int64_t b = bound(s.dtype);
  const uint64_t h = hash(s.seed, rank, i, 0);
  switch (s.kind) {
    case Kind::kCopy:
      return static_cast<double>(uns ? pick(h, 0, b) : pick(h, -b, b));
    case Kind::kMin:
    case Kind::kMax: {
      const bool isMin = s.kind == Kind::kMin;
      const int64_t m = extreme(s, i, isMin);
      if (rank == extremeRank(s, i)) return static_cast<double>(m);
      const int64_t lo = uns ? 0 : -b;
      return static_cast<double>(isMin ? pick(h, m, b) : pick(h, lo, m));
    }
    case Kind::kSum:
    case Kind::kAvg:
      return static_cast<double>(sumCommon(s, i) + telescoped(s, rank, i, sumRange(s)));
    case Kind::kSumInOrder: {
      if (!isFloat(s.dtype)) return static_cast<double>(pick(h, 0, b / n));
      const int digits = s.dtype == tuttiFloat16    ? 11
                         : s.dtype == tuttiBfloat16 ? 8
                         : s.dtype == tuttiFloat32  ? 24
                                                    : 53;
      const int64_t top = int64_t{1} << (std::min(digits, 52) - 1);
      const int e = static_cast<int>(hash(s.seed, rank, i, 4) % 21) - 10;
      return std::ldexp(static_cast<double>(pick(h, -top, top)), e - (std::min(digits, 52) - 1));
    }
    case Kind::kProd: {
      const double sign = (!uns && (h & 1)) ? -1.0 : 1.0;
      const int window = prodWindow(s.dtype);
      const int start = static_cast<int>(hash(s.seed, -1, i, 3) % static_cast<uint64_t>(n));
      if (n > window && (rank - start + n) % n >= window) return sign;
      if (isFloat(s.dtype)) return sign * std::ldexp(1.0, static_cast<int>((h >> 1) % 3) - 1);
      return sign * (((h >> 1) & 1) ? 2.0 : 1.0);
    }
  }
  return 0;
}

// Closed forms where the data allows one (nccl-tests computes its expected values the same
// way): no loop over the ranks, so checking a call costs O(count), not O(n x count).
double reduced(const Spec& s, size_t i) {
  const int n = std::max(s.nranks, 1);
  switch (s.kind) {
    case Kind::kCopy:
      return value(s, 0, i);
    case Kind::kSum:
      return static_cast<double>(n * sumCommon(s, i));
    case Kind::kAvg:
      return static_cast<double>(sumCommon(s, i));
    case Kind::kMin:
    case Kind::kMax:
      return static_cast<double>(extreme(s, i, s.kind == Kind::kMin));
    case Kind::kSumInOrder: {
      // Rank order, rounded to the type after every addition (the sum of two values of the
      // type is exact in a double, so rounding it once is the type's own addition).
      double acc = value(s, 0, i);
      std::byte tmp[8];
      for (int r = 1; r < n; ++r) {
        store(s.dtype, tmp, 0, acc + value(s, r, i));
        acc = load(s.dtype, tmp, 0);
      }
      return acc;
    }
    case Kind::kProd:
      break;
  }
  // Products: a loop (the window of non-unit factors rotates with the element).
  double acc = 1;
  for (int r = 0; r < n; ++r) acc *= value(s, r, i);
  return acc;
}

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
  for (size_t k = 0; k < count; ++k) store(s.dtype, buf, k, value(s, rank, offset + k));
}

void fillReduced(const Spec& s, void* buf, size_t count, size_t offset) {
  for (size_t k = 0; k < count; ++k) store(s.dtype, buf, k, reduced(s, offset + k));
}

bool matches(const Spec& s, double got, double want) {
  if (s.kind != Kind::kAvg || !isFloat(s.dtype)) return got == want;
  int digits = s.dtype == tuttiFloat16    ? 11
               : s.dtype == tuttiBfloat16 ? 8
               : s.dtype == tuttiFloat32  ? 24
                                          : 53;
  return std::fabs(got - want) <= std::ldexp(std::fabs(want), 2 - digits);
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
