#include "driver/types.h"

#include <strings.h>

#include <cstring>

#include "tutti/datatype.hpp"

namespace tutti_perf {

const std::vector<tuttiDataType_t>& allTypes() {
  static const std::vector<tuttiDataType_t> kTypes = {
      tuttiInt8,  tuttiUint8,  tuttiInt16,   tuttiUint16,  tuttiInt32,   tuttiUint32,
      tuttiInt64, tuttiUint64, tuttiFloat16, tuttiFloat32, tuttiFloat64, tuttiBfloat16};
  return kTypes;
}

const std::vector<tuttiRedOp_t>& allOps() {
  static const std::vector<tuttiRedOp_t> kOps = {tuttiSum, tuttiProd, tuttiMax, tuttiMin,
                                                 tuttiAvg, tuttiBand, tuttiBor, tuttiBxor};
  return kOps;
}

const char* opName(tuttiRedOp_t op) { return tutti::redOpName(op); }

bool opApplies(tuttiDataType_t t, tuttiRedOp_t op) { return tutti::redOpAppliesTo(t, op); }

size_t typeSize(tuttiDataType_t t) { return tutti::dataTypeSize(t); }

bool isFloat(tuttiDataType_t t) { return tutti::isFloatDataType(t); }

bool isSigned(tuttiDataType_t t) {
  return isFloat(t) || t == tuttiInt8 || t == tuttiInt16 || t == tuttiInt32 || t == tuttiInt64;
}

bool parseType(const std::string& s, tuttiDataType_t* out) {
  static const struct {
    const char* name;
    tuttiDataType_t t;
  } kNames[] = {{"int8", tuttiInt8},     {"char", tuttiInt8},         {"uint8", tuttiUint8},
                {"int16", tuttiInt16},   {"uint16", tuttiUint16},     {"int32", tuttiInt32},
                {"int", tuttiInt32},     {"uint32", tuttiUint32},     {"int64", tuttiInt64},
                {"uint64", tuttiUint64}, {"half", tuttiFloat16},      {"float16", tuttiFloat16},
                {"fp16", tuttiFloat16},  {"float", tuttiFloat32},     {"float32", tuttiFloat32},
                {"fp32", tuttiFloat32},  {"double", tuttiFloat64},    {"float64", tuttiFloat64},
                {"fp64", tuttiFloat64},  {"bfloat16", tuttiBfloat16}, {"bf16", tuttiBfloat16}};
  for (const auto& n : kNames) {
    if (strcasecmp(s.c_str(), n.name) == 0) {
      *out = n.t;
      return true;
    }
  }
  return false;
}

bool parseOp(const std::string& s, tuttiRedOp_t* out) {
  for (tuttiRedOp_t op : allOps()) {
    if (strcasecmp(s.c_str(), opName(op)) == 0) {
      *out = op;
      return true;
    }
  }
  return false;
}

uint16_t floatToHalf(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  const uint32_t sign = (x >> 16) & 0x8000u;
  const int32_t exp = static_cast<int32_t>((x >> 23) & 0xff) - 127 + 15;
  uint32_t mant = x & 0x7fffffu;
  if (((x >> 23) & 0xff) == 0xff)
    return static_cast<uint16_t>(sign | 0x7c00u | (mant ? 0x200u : 0));
  if (exp >= 31) return static_cast<uint16_t>(sign | 0x7c00u);
  if (exp <= 0) {
    if (exp < -10) return static_cast<uint16_t>(sign);
    mant |= 0x800000u;
    const int shift = 14 - exp;
    uint32_t h = mant >> shift;
    const uint32_t rem = mant & ((1u << shift) - 1);
    const uint32_t half = 1u << (shift - 1);
    if (rem > half || (rem == half && (h & 1))) ++h;
    return static_cast<uint16_t>(sign | h);
  }
  uint32_t h = (static_cast<uint32_t>(exp) << 10) | (mant >> 13);
  const uint32_t rem = mant & 0x1fffu;
  if (rem > 0x1000u || (rem == 0x1000u && (h & 1))) ++h;
  return static_cast<uint16_t>(sign | h);
}

float halfToFloat(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  uint32_t exp = (h >> 10) & 0x1f;
  uint32_t mant = h & 0x3ffu;
  uint32_t x;
  if (exp == 0) {
    if (mant == 0) {
      x = sign;
    } else {
      exp = 127 - 15 + 1;
      while (!(mant & 0x400u)) {
        mant <<= 1;
        --exp;
      }
      mant &= 0x3ffu;
      x = sign | (exp << 23) | (mant << 13);
    }
  } else if (exp == 31) {
    x = sign | 0x7f800000u | (mant << 13);
  } else {
    x = sign | ((exp - 15 + 127) << 23) | (mant << 13);
  }
  float f;
  std::memcpy(&f, &x, 4);
  return f;
}

uint16_t floatToBf16(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  if ((x & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((x >> 16) | 0x40);  // NaN
  x += 0x7fffu + ((x >> 16) & 1);
  return static_cast<uint16_t>(x >> 16);
}

float bf16ToFloat(uint16_t b) {
  const uint32_t x = static_cast<uint32_t>(b) << 16;
  float f;
  std::memcpy(&f, &x, 4);
  return f;
}

namespace {
template <typename T>
T get(const void* base, size_t i) {
  T v;
  std::memcpy(&v, static_cast<const char*>(base) + i * sizeof(T), sizeof(T));
  return v;
}
template <typename T>
void put(void* base, size_t i, T v) {
  std::memcpy(static_cast<char*>(base) + i * sizeof(T), &v, sizeof(T));
}
}  // namespace

double loadFloat(tuttiDataType_t t, const void* base, size_t i) {
  switch (t) {
    case tuttiFloat16:
      return halfToFloat(get<uint16_t>(base, i));
    case tuttiBfloat16:
      return bf16ToFloat(get<uint16_t>(base, i));
    case tuttiFloat32:
      return get<float>(base, i);
    case tuttiFloat64:
      return get<double>(base, i);
    default:
      return static_cast<double>(loadInt(t, base, i));
  }
}

int64_t loadInt(tuttiDataType_t t, const void* base, size_t i) {
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
      return get<int64_t>(base, i);
    case tuttiUint64:
      return static_cast<int64_t>(get<uint64_t>(base, i));
    default:
      return static_cast<int64_t>(loadFloat(t, base, i));
  }
}

void storeValue(tuttiDataType_t t, void* base, size_t i, int64_t v) {
  const uint64_t u = static_cast<uint64_t>(v);  // integers wrap modulo 2^bits
  switch (t) {
    case tuttiInt8:
      put<int8_t>(base, i, static_cast<int8_t>(static_cast<uint8_t>(u)));
      break;
    case tuttiUint8:
      put<uint8_t>(base, i, static_cast<uint8_t>(u));
      break;
    case tuttiInt16:
      put<int16_t>(base, i, static_cast<int16_t>(static_cast<uint16_t>(u)));
      break;
    case tuttiUint16:
      put<uint16_t>(base, i, static_cast<uint16_t>(u));
      break;
    case tuttiInt32:
      put<int32_t>(base, i, static_cast<int32_t>(static_cast<uint32_t>(u)));
      break;
    case tuttiUint32:
      put<uint32_t>(base, i, static_cast<uint32_t>(u));
      break;
    case tuttiInt64:
      put<int64_t>(base, i, v);
      break;
    case tuttiUint64:
      put<uint64_t>(base, i, u);
      break;
    default:
      storeDouble(t, base, i, static_cast<double>(v));
      break;
  }
}

void storeDouble(tuttiDataType_t t, void* base, size_t i, double v) {
  switch (t) {
    case tuttiFloat16:
      put<uint16_t>(base, i, floatToHalf(static_cast<float>(v)));
      break;
    case tuttiBfloat16:
      put<uint16_t>(base, i, floatToBf16(static_cast<float>(v)));
      break;
    case tuttiFloat32:
      put<float>(base, i, static_cast<float>(v));
      break;
    case tuttiFloat64:
      put<double>(base, i, v);
      break;
    default:
      storeValue(t, base, i, static_cast<int64_t>(v));
      break;
  }
}

}  // namespace tutti_perf
