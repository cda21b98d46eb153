#include "values.h"

#include <algorithm>

#include "tutti/datatype.hpp"

namespace tutti::soak {

size_t dtypeBytes(tuttiDataType_t t) { return dataTypeSize(t); }

bool isFloat(tuttiDataType_t t) { return isFloatDataType(t); }

bool isUnsigned(tuttiDataType_t t) {
  return t == tuttiUint8 || t == tuttiUint16 || t == tuttiUint32 || t == tuttiUint64;
}

const char* dtypeText(tuttiDataType_t t) {
  static const char* names[] = {"int8",    "uint8",   "int32",   "uint32",   "int64", "uint64",
                                "float16", "float32", "float64", "bfloat16", "int16", "uint16"};
  static_assert(sizeof(names) / sizeof(names[0]) == tuttiNumTypes);
  return names[t];
}

const char* opText(tuttiRedOp_t op) { return tutti::redOpName(op); }

namespace {

// IEEE binary16 of a float that it represents exactly (normal, subnormal or zero).
uint16_t toHalf(float f) {
  uint32_t b;
  std::memcpy(&b, &f, 4);
  uint16_t sign = static_cast<uint16_t>((b >> 16) & 0x8000);
  if ((b & 0x7fffffff) == 0) return sign;
  int exp = static_cast<int>((b >> 23) & 0xff) - 127 + 15;
  uint32_t mant = (b & 0x7fffff) | 0x800000;
  if (exp <= 0) return static_cast<uint16_t>(sign | (mant >> (14 - exp)));  // subnormal
  return static_cast<uint16_t>(sign | (exp << 10) | ((mant >> 13) & 0x3ff));
}

double fromHalf(uint16_t h) {
  int exp = (h >> 10) & 0x1f;
  double mant = h & 0x3ff;
  double v = exp == 0    ? mant / 1024.0 * (1.0 / 16384.0)
             : exp == 31 ? 1e300 * 1e300
                         : (1.0 + mant / 1024.0) * static_cast<double>(1u << exp) / 32768.0;
  return (h & 0x8000) ? -v : v;
}

}  // namespace

namespace {
// The element at e as a T, widened to double.
template <typename T>
double loadAs(const std::byte* e) {
  T v;
  std::memcpy(&v, e, sizeof v);
  return static_cast<double>(v);
}
}  // namespace

double load(tuttiDataType_t t, const std::byte* p, size_t i) {
  const std::byte* e = p + i * dtypeBytes(t);
  switch (t) {
    case tuttiInt8:
      return loadAs<int8_t>(e);
    case tuttiUint8:
      return loadAs<uint8_t>(e);
    case tuttiInt16:
      return loadAs<int16_t>(e);
    case tuttiUint16:
      return loadAs<uint16_t>(e);
    case tuttiInt32:
      return loadAs<int32_t>(e);
    case tuttiUint32:
      return loadAs<uint32_t>(e);
    case tuttiInt64:
      return loadAs<int64_t>(e);
    case tuttiUint64:
      return loadAs<uint64_t>(e);
    case tuttiFloat16: {
      uint16_t v;
      std::memcpy(&v, e, 2);
      return fromHalf(v);
    }
    case tuttiBfloat16: {
      uint16_t v;
      std::memcpy(&v, e, 2);
      uint32_t b = static_cast<uint32_t>(v) << 16;
      float f;
      std::memcpy(&f, &b, 4);
      return f;
    }
    case tuttiFloat32:
      return loadAs<float>(e);
    default:
      return loadAs<double>(e);
  }
}

void store(tuttiDataType_t t, std::byte* p, size_t i, double v) {
  std::byte* e = p + i * dtypeBytes(t);
  auto put = [e](const auto& x) { std::memcpy(e, &x, sizeof(x)); };
  switch (t) {
    case tuttiInt8:
      put(static_cast<int8_t>(v));
      break;
    case tuttiUint8:
      put(static_cast<uint8_t>(v));
      break;
    case tuttiInt16:
      put(static_cast<int16_t>(v));
      break;
    case tuttiUint16:
      put(static_cast<uint16_t>(v));
      break;
    case tuttiInt32:
      put(static_cast<int32_t>(v));
      break;
    case tuttiUint32:
      put(static_cast<uint32_t>(v));
      break;
    case tuttiInt64:
      put(static_cast<int64_t>(v));
      break;
    case tuttiUint64:
      put(static_cast<uint64_t>(v));
      break;
    case tuttiFloat16:
      put(toHalf(static_cast<float>(v)));
      break;
    case tuttiBfloat16: {
      float f = static_cast<float>(v);
      uint32_t b;
      std::memcpy(&b, &f, 4);
      put(static_cast<uint16_t>(b >> 16));  // exact: the values need at most 8 bits
      break;
    }
    case tuttiFloat32:
      put(static_cast<float>(v));
      break;
    default:
      put(v);
      break;
  }
}

double inputValue(tuttiDataType_t t, tuttiRedOp_t op, uint64_t call, int rank, int n,
                  uint64_t elem) {
  if (op == tuttiProd) {
    // +-1, and 2 on one rank per element: |product| <= 2 at any rank count.
    if (static_cast<uint64_t>(rank) == (elem + call) % static_cast<uint64_t>(n)) return 2;
    if (isUnsigned(t)) return 1;
    return (hash3(call, rank, elem) & 1) ? 1 : -1;
  }
  if (op == tuttiAvg) {
    // a + (rank - (n-1)/2) * s: the ranks' sum is n * a, so the average is a exactly.
    double a = static_cast<double>(hash3(call, -1, elem) % 13) - 6;
    double s = static_cast<double>(hash3(call, -2, elem) & 1);
    return a + (rank - (n - 1) / 2.0) * s;
  }
  if (isBitwiseRedOp(op)) {
    // 4-bit values (0..15, or -8..7 in two's complement): and, or, xor stay in that range.
    uint64_t h = hash3(call, rank, elem) % 16;
    return isUnsigned(t) ? static_cast<double>(h) : static_cast<double>(h) - 8;
  }
  uint64_t h = hash3(call, rank, elem) % 13;
  return isUnsigned(t) ? static_cast<double>(h) : static_cast<double>(h) - 6;
}

namespace {

// The bitwise op on two of inputValue's small integers (two's complement in 64 bits).
double bitwise(tuttiRedOp_t op, double a, double b) {
  const int64_t x = static_cast<int64_t>(a), y = static_cast<int64_t>(b);
  const int64_t r = op == tuttiBand ? (x & y) : op == tuttiBor ? (x | y) : (x ^ y);
  return static_cast<double>(r);
}

}  // namespace

double reducedValue(tuttiDataType_t t, tuttiRedOp_t op, uint64_t call, int n, uint64_t elem) {
  if (op == tuttiAvg) return static_cast<double>(hash3(call, -1, elem) % 13) - 6;
  double acc = inputValue(t, op, call, 0, n, elem);
  for (int r = 1; r < n; ++r) {
    double v = inputValue(t, op, call, r, n, elem);
    switch (op) {
      case tuttiSum:
        acc += v;
        break;
      case tuttiProd:
        acc *= v;
        break;
      case tuttiMax:
        acc = std::max(acc, v);
        break;
      case tuttiBand:
      case tuttiBor:
      case tuttiBxor:
        acc = bitwise(op, acc, v);
        break;
      default:
        acc = std::min(acc, v);
        break;
    }
  }
  return acc;
}

}  // namespace tutti::soak
