// Internal: the scalar element operations, the reference every vector variant must match
// bit for bit. float16/bfloat16 go through float32; their conversions follow the hardware
// (F16C vcvtph2ps / vcvtps2ph with round-to-nearest-even; NaNs are quieted and keep the top
// payload bits) so that the scalar and vector paths give identical bits, NaNs included.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "common/dtype.h"

namespace tutti::reduce::detail {

inline float halfBitsToFloat(uint16_t h) {
  if ((h & 0x7c00u) == 0x7c00u && (h & 0x3ffu) != 0) {  // NaN: quiet it, keep the payload
    uint32_t bits = (static_cast<uint32_t>(h & 0x8000u) << 16) | 0x7fc00000u |
                    (static_cast<uint32_t>(h & 0x3ffu) << 13);
    float f;
    std::memcpy(&f, &bits, 4);
    return f;
  }
  return halfToFloat(h);
}

inline uint16_t floatToHalfBits(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  if ((x & 0x7fffffffu) > 0x7f800000u) {  // NaN: quiet, keep the top 9 payload bits
    return static_cast<uint16_t>(((x >> 16) & 0x8000u) | 0x7e00u | ((x >> 13) & 0x3ffu));
  }
  return floatToHalf(f);
}

inline float bf16BitsToFloat(uint16_t b) { return bf16ToFloat(b); }
inline uint16_t floatToBf16Bits(float f) { return floatToBf16(f); }

// Floating max/min: a NaN in either operand propagates (a's NaN if a is NaN, else b's);
// otherwise max = (a > b ? a : b), min = (a < b ? a : b), which is what vmaxps/vminps give
// for (a, b) with no NaN (so max(+0, -0) = -0 and max(-0, +0) = +0: the second operand).
template <typename F>
inline F fmaxProp(F a, F b) {
  if (std::isnan(a)) return a;
  if (std::isnan(b)) return b;
  return a > b ? a : b;
}
template <typename F>
inline F fminProp(F a, F b) {
  if (std::isnan(a)) return a;
  if (std::isnan(b)) return b;
  return a < b ? a : b;
}

// Integer sum/prod wrap modulo 2^bits (computed in the unsigned type: no UB).
template <typename T>
inline T wrapAdd(T a, T b) {
  using U = std::make_unsigned_t<T>;
  return static_cast<T>(static_cast<U>(static_cast<U>(a) + static_cast<U>(b)));
}
template <typename T>
inline T wrapMul(T a, T b) {
  using U = std::make_unsigned_t<T>;
  using W = std::conditional_t<(sizeof(U) < sizeof(unsigned)), unsigned, U>;
  return static_cast<T>(
      static_cast<U>(static_cast<W>(static_cast<U>(a)) * static_cast<W>(static_cast<U>(b))));
}

}  // namespace tutti::reduce::detail
