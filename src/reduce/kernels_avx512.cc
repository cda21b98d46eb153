// AVX-512 (F, BW) kernels. Compiled with -mavx512f -mavx512bw (+avx2, fma, f16c); see
// kernels.h for the rules. No AVX512DQ/VL: 64-bit products are built from vpmuludq.
#include <immintrin.h>

#include <cstddef>
#include <cstdint>

#include "reduce/kernels.h"

namespace tutti::reduce::detail {
namespace {

#include "reduce/simd_loop.h"

// ---- floating ops on 16 x f32 / 8 x f64; NaN in either operand propagates (a's first) ----
template <int kOp>
inline __m512 fop(__m512 a, __m512 b) {
  if constexpr (kOp == tuttiSum) return _mm512_add_ps(a, b);
  if constexpr (kOp == tuttiProd) return _mm512_mul_ps(a, b);
  if constexpr (kOp == tuttiMax || kOp == tuttiMin) {
    __m512 r = kOp == tuttiMax ? _mm512_max_ps(a, b) : _mm512_min_ps(a, b);  // NaN -> b
    return _mm512_mask_blend_ps(_mm512_cmp_ps_mask(a, a, _CMP_UNORD_Q), r, a);
  }
}
template <int kOp>
inline __m512d fop(__m512d a, __m512d b) {
  if constexpr (kOp == tuttiSum) return _mm512_add_pd(a, b);
  if constexpr (kOp == tuttiProd) return _mm512_mul_pd(a, b);
  if constexpr (kOp == tuttiMax || kOp == tuttiMin) {
    __m512d r = kOp == tuttiMax ? _mm512_max_pd(a, b) : _mm512_min_pd(a, b);
    return _mm512_mask_blend_pd(_mm512_cmp_pd_mask(a, a, _CMP_UNORD_Q), r, a);
  }
}

template <int kOp>
struct F32 {
  using T = float;
  static constexpr size_t kW = 16;
  static void apply(float* d, const float* a, const float* b) {
    _mm512_storeu_ps(d, fop<kOp>(_mm512_loadu_ps(a), _mm512_loadu_ps(b)));
  }
};

template <int kOp>
struct F64 {
  using T = double;
  static constexpr size_t kW = 8;
  static void apply(double* d, const double* a, const double* b) {
    _mm512_storeu_pd(d, fop<kOp>(_mm512_loadu_pd(a), _mm512_loadu_pd(b)));
  }
};

inline __m512 loadHalf(const uint16_t* p) {
  return _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
}
inline void storeHalf(uint16_t* p, __m512 v) {
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(p), _mm512_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT));
}

inline __m512 loadBf16(const uint16_t* p) {
  __m512i w = _mm512_cvtepu16_epi32(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
  return _mm512_castsi512_ps(_mm512_slli_epi32(w, 16));
}
inline void storeBf16(uint16_t* p, __m512 v) {
  const __m512i x = _mm512_castps_si512(v);
  const __m512i hi = _mm512_srli_epi32(x, 16);
  const __m512i bias =
      _mm512_add_epi32(_mm512_set1_epi32(0x7fff), _mm512_and_si512(hi, _mm512_set1_epi32(1)));
  const __m512i rounded = _mm512_srli_epi32(_mm512_add_epi32(x, bias), 16);
  const __m512i nan = _mm512_or_si512(hi, _mm512_set1_epi32(0x40));
  const __m512i r = _mm512_mask_blend_epi32(_mm512_cmp_ps_mask(v, v, _CMP_UNORD_Q), rounded, nan);
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(p), _mm512_cvtepi32_epi16(r));
}

template <int kOp, bool kBf16>
struct F16 {
  using T = uint16_t;
  static constexpr size_t kW = 16;
  static void apply(uint16_t* d, const uint16_t* a, const uint16_t* b) {
    if constexpr (kBf16) {
      storeBf16(d, fop<kOp>(loadBf16(a), loadBf16(b)));
    } else {
      storeHalf(d, fop<kOp>(loadHalf(a), loadHalf(b)));
    }
  }
};

inline __m512i mul64(__m512i a, __m512i b) {
  const __m512i lo = _mm512_mul_epu32(a, b);
  const __m512i t1 = _mm512_mul_epu32(_mm512_srli_epi64(a, 32), b);
  const __m512i t2 = _mm512_mul_epu32(a, _mm512_srli_epi64(b, 32));
  return _mm512_add_epi64(lo, _mm512_slli_epi64(_mm512_add_epi64(t1, t2), 32));
}

inline __m512i mul8(__m512i a, __m512i b) {
  const __m512i lowMask = _mm512_set1_epi16(0x00ff);
  const __m512i even = _mm512_and_si512(_mm512_mullo_epi16(a, b), lowMask);
  const __m512i odd =
      _mm512_slli_epi16(_mm512_mullo_epi16(_mm512_srli_epi16(a, 8), _mm512_srli_epi16(b, 8)), 8);
  return _mm512_or_si512(even, odd);
}

template <int kOp, typename T>
inline __m512i iop(__m512i a, __m512i b) {
  constexpr bool kSigned = static_cast<T>(-1) < static_cast<T>(0);
  if constexpr (kOp == tuttiBand) {
    return _mm512_and_si512(a, b);
  } else if constexpr (kOp == tuttiBor) {
    return _mm512_or_si512(a, b);
  } else if constexpr (kOp == tuttiBxor) {
    return _mm512_xor_si512(a, b);
  } else if constexpr (kOp == tuttiSum) {
    if constexpr (sizeof(T) == 1) return _mm512_add_epi8(a, b);
    if constexpr (sizeof(T) == 2) return _mm512_add_epi16(a, b);
    if constexpr (sizeof(T) == 4) return _mm512_add_epi32(a, b);
    if constexpr (sizeof(T) == 8) return _mm512_add_epi64(a, b);
  } else if constexpr (kOp == tuttiProd) {
    if constexpr (sizeof(T) == 1) return mul8(a, b);
    if constexpr (sizeof(T) == 2) return _mm512_mullo_epi16(a, b);
    if constexpr (sizeof(T) == 4) return _mm512_mullo_epi32(a, b);
    if constexpr (sizeof(T) == 8) return mul64(a, b);
  } else if constexpr (sizeof(T) == 1) {
    if constexpr (kOp == tuttiMax) return kSigned ? _mm512_max_epi8(a, b) : _mm512_max_epu8(a, b);
    if constexpr (kOp == tuttiMin) return kSigned ? _mm512_min_epi8(a, b) : _mm512_min_epu8(a, b);
  } else if constexpr (sizeof(T) == 2) {
    if constexpr (kOp == tuttiMax) return kSigned ? _mm512_max_epi16(a, b) : _mm512_max_epu16(a, b);
    if constexpr (kOp == tuttiMin) return kSigned ? _mm512_min_epi16(a, b) : _mm512_min_epu16(a, b);
  } else if constexpr (sizeof(T) == 4) {
    if constexpr (kOp == tuttiMax) return kSigned ? _mm512_max_epi32(a, b) : _mm512_max_epu32(a, b);
    if constexpr (kOp == tuttiMin) return kSigned ? _mm512_min_epi32(a, b) : _mm512_min_epu32(a, b);
  } else {
    if constexpr (kOp == tuttiMax) return kSigned ? _mm512_max_epi64(a, b) : _mm512_max_epu64(a, b);
    if constexpr (kOp == tuttiMin) return kSigned ? _mm512_min_epi64(a, b) : _mm512_min_epu64(a, b);
  }
}

template <int kOp, typename IntT>
struct Int {
  using T = IntT;
  static constexpr size_t kW = 64 / sizeof(IntT);
  static void apply(T* d, const T* a, const T* b) {
    const __m512i x = _mm512_loadu_si512(a);
    const __m512i y = _mm512_loadu_si512(b);
    _mm512_storeu_si512(d, iop<kOp, IntT>(x, y));
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

const KernelTable& avx512Kernels() { return kTable; }

}  // namespace tutti::reduce::detail
