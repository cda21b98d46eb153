// AVX2 (+FMA, F16C) kernels. Compiled with -mavx2 -mfma -mf16c; see kernels.h for the rules
// (no external-linkage inline code from other headers may be instantiated here).
#include <immintrin.h>

#include <cstddef>
#include <cstdint>

#include "reduce/kernels.h"

namespace tutti::reduce::detail {
namespace {

#include "reduce/simd_loop.h"

// ---- floating ops on 8 x f32 / 4 x f64; NaN in either operand propagates (a's first) ----
template <int kOp>
inline __m256 fop(__m256 a, __m256 b) {
  if constexpr (kOp == tuttiSum) return _mm256_add_ps(a, b);
  if constexpr (kOp == tuttiProd) return _mm256_mul_ps(a, b);
  if constexpr (kOp == tuttiMax || kOp == tuttiMin) {
    __m256 r = kOp == tuttiMax ? _mm256_max_ps(a, b) : _mm256_min_ps(a, b);  // NaN -> b
    return _mm256_blendv_ps(r, a, _mm256_cmp_ps(a, a, _CMP_UNORD_Q));
  }
}
template <int kOp>
inline __m256d fop(__m256d a, __m256d b) {
  if constexpr (kOp == tuttiSum) return _mm256_add_pd(a, b);
  if constexpr (kOp == tuttiProd) return _mm256_mul_pd(a, b);
  if constexpr (kOp == tuttiMax || kOp == tuttiMin) {
    __m256d r = kOp == tuttiMax ? _mm256_max_pd(a, b) : _mm256_min_pd(a, b);
    return _mm256_blendv_pd(r, a, _mm256_cmp_pd(a, a, _CMP_UNORD_Q));
  }
}

template <int kOp>
struct F32 {
  using T = float;
  static constexpr size_t kW = 8;
  static void apply(float* d, const float* a, const float* b) {
    _mm256_storeu_ps(d, fop<kOp>(_mm256_loadu_ps(a), _mm256_loadu_ps(b)));
  }
};

template <int kOp>
struct F64 {
  using T = double;
  static constexpr size_t kW = 4;
  static void apply(double* d, const double* a, const double* b) {
    _mm256_storeu_pd(d, fop<kOp>(_mm256_loadu_pd(a), _mm256_loadu_pd(b)));
  }
};

// float16 through F16C: vcvtph2ps, vcvtps2ph with round-to-nearest-even (imm 0).
inline __m256 loadHalf(const uint16_t* p) {
  return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
}
inline void storeHalf(uint16_t* p, __m256 v) {
  _mm_storeu_si128(reinterpret_cast<__m128i*>(p), _mm256_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT));
}

// bfloat16: widen by a 16-bit shift; narrow with round-to-nearest-even
// ((x + 0x7fff + ((x >> 16) & 1)) >> 16), NaN -> (x >> 16) | 0x40 (quiet).
inline __m256 loadBf16(const uint16_t* p) {
  __m256i w = _mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
  return _mm256_castsi256_ps(_mm256_slli_epi32(w, 16));
}
inline void storeBf16(uint16_t* p, __m256 v) {
  const __m256i x = _mm256_castps_si256(v);
  const __m256i hi = _mm256_srli_epi32(x, 16);
  const __m256i bias =
      _mm256_add_epi32(_mm256_set1_epi32(0x7fff), _mm256_and_si256(hi, _mm256_set1_epi32(1)));
  const __m256i rounded = _mm256_srli_epi32(_mm256_add_epi32(x, bias), 16);
  const __m256i nan = _mm256_or_si256(hi, _mm256_set1_epi32(0x40));
  const __m256i isnan = _mm256_castps_si256(_mm256_cmp_ps(v, v, _CMP_UNORD_Q));
  const __m256i r = _mm256_blendv_epi8(rounded, nan, isnan);
  const __m128i packed =
      _mm_packus_epi32(_mm256_castsi256_si128(r), _mm256_extracti128_si256(r, 1));
  _mm_storeu_si128(reinterpret_cast<__m128i*>(p), packed);
}

template <int kOp, bool kBf16>
struct F16 {
  using T = uint16_t;
  static constexpr size_t kW = 8;
  static void apply(uint16_t* d, const uint16_t* a, const uint16_t* b) {
    if constexpr (kBf16) {
      storeBf16(d, fop<kOp>(loadBf16(a), loadBf16(b)));
    } else {
      storeHalf(d, fop<kOp>(loadHalf(a), loadHalf(b)));
    }
  }
};

// ---- integer ops: sum/prod wrap, min/max signed or unsigned ----
inline __m256i mul64(__m256i a, __m256i b) {
  const __m256i lo = _mm256_mul_epu32(a, b);
  const __m256i t1 = _mm256_mul_epu32(_mm256_srli_epi64(a, 32), b);
  const __m256i t2 = _mm256_mul_epu32(a, _mm256_srli_epi64(b, 32));
  return _mm256_add_epi64(lo, _mm256_slli_epi64(_mm256_add_epi64(t1, t2), 32));
}

inline __m256i mul8(__m256i a, __m256i b) {
  const __m256i lowMask = _mm256_set1_epi16(0x00ff);
  const __m256i even = _mm256_and_si256(_mm256_mullo_epi16(a, b), lowMask);
  const __m256i odd =
      _mm256_slli_epi16(_mm256_mullo_epi16(_mm256_srli_epi16(a, 8), _mm256_srli_epi16(b, 8)), 8);
  return _mm256_or_si256(even, odd);
}

template <int kOp, typename T>
inline __m256i iop(__m256i a, __m256i b) {
  constexpr bool kSigned = static_cast<T>(-1) < static_cast<T>(0);
  if constexpr (kOp == tuttiBand) {
    return _mm256_and_si256(a, b);
  } else if constexpr (kOp == tuttiBor) {
    return _mm256_or_si256(a, b);
  } else if constexpr (kOp == tuttiBxor) {
    return _mm256_xor_si256(a, b);
  } else if constexpr (kOp == tuttiSum) {
    if constexpr (sizeof(T) == 1) return _mm256_add_epi8(a, b);
    if constexpr (sizeof(T) == 2) return _mm256_add_epi16(a, b);
    if constexpr (sizeof(T) == 4) return _mm256_add_epi32(a, b);
    if constexpr (sizeof(T) == 8) return _mm256_add_epi64(a, b);
  } else if constexpr (kOp == tuttiProd) {
    if constexpr (sizeof(T) == 1) return mul8(a, b);
    if constexpr (sizeof(T) == 2) return _mm256_mullo_epi16(a, b);
    if constexpr (sizeof(T) == 4) return _mm256_mullo_epi32(a, b);
    if constexpr (sizeof(T) == 8) return mul64(a, b);
  } else if constexpr (sizeof(T) == 1) {
    if constexpr (kOp == tuttiMax) return kSigned ? _mm256_max_epi8(a, b) : _mm256_max_epu8(a, b);
    if constexpr (kOp == tuttiMin) return kSigned ? _mm256_min_epi8(a, b) : _mm256_min_epu8(a, b);
  } else if constexpr (sizeof(T) == 2) {
    if constexpr (kOp == tuttiMax) return kSigned ? _mm256_max_epi16(a, b) : _mm256_max_epu16(a, b);
    if constexpr (kOp == tuttiMin) return kSigned ? _mm256_min_epi16(a, b) : _mm256_min_epu16(a, b);
  } else if constexpr (sizeof(T) == 4) {
    if constexpr (kOp == tuttiMax) return kSigned ? _mm256_max_epi32(a, b) : _mm256_max_epu32(a, b);
    if constexpr (kOp == tuttiMin) return kSigned ? _mm256_min_epi32(a, b) : _mm256_min_epu32(a, b);
  } else {
    __m256i gt;
    if constexpr (kSigned) {
      gt = _mm256_cmpgt_epi64(a, b);
    } else {
      const __m256i flip = _mm256_set1_epi64x(static_cast<long long>(0x8000000000000000ull));
      gt = _mm256_cmpgt_epi64(_mm256_xor_si256(a, flip), _mm256_xor_si256(b, flip));
    }
    if constexpr (kOp == tuttiMax) return _mm256_blendv_epi8(b, a, gt);
    if constexpr (kOp == tuttiMin) return _mm256_blendv_epi8(a, b, gt);
  }
}

template <int kOp, typename IntT>
struct Int {
  using T = IntT;
  static constexpr size_t kW = 32 / sizeof(IntT);
  static void apply(T* d, const T* a, const T* b) {
    const __m256i x = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(a));
    const __m256i y = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(d), iop<kOp, IntT>(x, y));
  }
};

template <int kOp>
constexpr void fillOp(KernelTable& t) {
  t.k[tuttiInt8][kOp] = runKernel<Int<kOp, int8_t>>;
  t.k[tuttiUint8][kOp] = runKernel<Int<kOp, uint8_t>>;
  t.k[tuttiInt16][kOp] = runKernel<Int<kOp, int16_t>>;
  t.k[tuttiUint16][kOp] = runKernel<Int<kOp, uint16_t>>;
  t.k[tuttiInt32][kOp] = runKernel<Int<kOp, int32_t>>;
  t.k[tuttiUint32][kOp] = runKernel<Int<kOp, uint32_t>>;
  t.k[tuttiInt64][kOp] = runKernel<Int<kOp, int64_t>>;
  t.k[tuttiUint64][kOp] = runKernel<Int<kOp, uint64_t>>;
  if constexpr (kOp != tuttiBand && kOp != tuttiBor && kOp != tuttiBxor) {  // integers only
    t.k[tuttiFloat16][kOp] = runKernel<F16<kOp, false>>;
    t.k[tuttiBfloat16][kOp] = runKernel<F16<kOp, true>>;
    t.k[tuttiFloat32][kOp] = runKernel<F32<kOp>>;
    t.k[tuttiFloat64][kOp] = runKernel<F64<kOp>>;
  }
}

constexpr KernelTable makeTable() {
  KernelTable t{};
  fillOp<tuttiSum>(t);
  fillOp<tuttiProd>(t);
  fillOp<tuttiMax>(t);
  fillOp<tuttiMin>(t);
  fillOp<tuttiBand>(t);
  fillOp<tuttiBor>(t);
  fillOp<tuttiBxor>(t);
  return t;
}

constexpr KernelTable kTable = makeTable();

}  // namespace

const KernelTable& avx2Kernels() { return kTable; }

}  // namespace tutti::reduce::detail
