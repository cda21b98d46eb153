// AVX2 QSGD level kernel: 8 elements per step; the splitmix64 draws run as 2 x 4 lanes of
// 64-bit arithmetic (the 64 x 64 -> 64 multiply built from three 32 x 32 -> 64 products).
// Compiled with -mavx2 only (no FMA: every float32 operation is the scalar kernel's).
#include "compress/qsgd_kernels.h"

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>

namespace tutti::compress::detail {
namespace {

// a * c (mod 2^64) per 64-bit lane, c a constant split into hi/lo 32-bit halves.
inline __m256i mul64(__m256i a, __m256i cLo, __m256i cHi) {
  const __m256i lo = _mm256_mul_epu32(a, cLo);  // aLo * cLo
  const __m256i cross = _mm256_add_epi64(_mm256_mul_epu32(_mm256_srli_epi64(a, 32), cLo),
                                         _mm256_mul_epu32(a, cHi));  // aHi*cLo + aLo*cHi
  return _mm256_add_epi64(lo, _mm256_slli_epi64(cross, 32));
}

inline __m256i mix64(__m256i z) {
  const __m256i c1Lo = _mm256_set1_epi64x(0x1ce4e5b9ll), c1Hi = _mm256_set1_epi64x(0xbf58476dll);
  const __m256i c2Lo = _mm256_set1_epi64x(0x133111ebll), c2Hi = _mm256_set1_epi64x(0x94d049bbll);
  z = mul64(_mm256_xor_si256(z, _mm256_srli_epi64(z, 30)), c1Lo, c1Hi);
  z = mul64(_mm256_xor_si256(z, _mm256_srli_epi64(z, 27)), c2Lo, c2Hi);
  return _mm256_xor_si256(z, _mm256_srli_epi64(z, 31));
}

}  // namespace

size_t qsgdLevelsAvx2(const float* x, size_t n, float scale, uint32_t s, uint64_t stream,
                      uint64_t first, uint32_t* codes) {
  constexpr uint64_t kPhi = 0x9e3779b97f4a7c15ull;
  const size_t n8 = n & ~size_t{7};
  if (n8 == 0) return 0;
  const __m256 vscale = _mm256_set1_ps(scale),
               absMask = _mm256_castsi256_ps(_mm256_set1_epi32(0x7fffffff));
  const __m256 two24 = _mm256_set1_ps(1.0f / 16777216.0f);
  const __m256i vs = _mm256_set1_epi32(static_cast<int>(s));
  const __m256i lowDwords = _mm256_setr_epi32(0, 2, 4, 6, 1, 3, 5, 7);
  // Counters base + (first + i + 1) * phi for lanes i = 0..3 and 4..7.
  __m256i c0 = _mm256_setr_epi64x(static_cast<long long>(stream + (first + 1) * kPhi),
                                  static_cast<long long>(stream + (first + 2) * kPhi),
                                  static_cast<long long>(stream + (first + 3) * kPhi),
                                  static_cast<long long>(stream + (first + 4) * kPhi));
  __m256i c1 = _mm256_add_epi64(c0, _mm256_set1_epi64x(static_cast<long long>(4 * kPhi)));
  const __m256i step = _mm256_set1_epi64x(static_cast<long long>(8 * kPhi));
  for (size_t i = 0; i < n8; i += 8) {
    const __m256 xv = _mm256_loadu_ps(x + i);
    const __m256 r = _mm256_mul_ps(_mm256_and_ps(xv, absMask), vscale);
    const __m256i lo = _mm256_cvttps_epi32(r);
    const __m256 frac = _mm256_sub_ps(r, _mm256_cvtepi32_ps(lo));
    // 24-bit uniforms: the top 24 bits of each draw, gathered into 8 x 32-bit lanes in order.
    const __m256i d0 = _mm256_permutevar8x32_epi32(_mm256_srli_epi64(mix64(c0), 40), lowDwords);
    const __m256i d1 = _mm256_permutevar8x32_epi32(_mm256_srli_epi64(mix64(c1), 40), lowDwords);
    const __m256i u24 = _mm256_permute2x128_si256(d0, d1, 0x20);
    const __m256 u = _mm256_mul_ps(_mm256_cvtepi32_ps(u24), two24);
    const __m256i up = _mm256_castps_si256(_mm256_cmp_ps(u, frac, _CMP_LT_OQ));  // -1 or 0
    const __m256i level = _mm256_min_epu32(_mm256_sub_epi32(lo, up), vs);
    const __m256i neg = _mm256_srai_epi32(_mm256_castps_si256(xv), 31);  // -1 if sign set
    const __m256i code =
        _mm256_sub_epi32(_mm256_add_epi32(vs, _mm256_xor_si256(level, neg)), neg);  // s -+ level
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(codes + i), code);
    c0 = _mm256_add_epi64(c0, step);
    c1 = _mm256_add_epi64(c1, step);
  }
  return n8;
}

size_t qsgdDecode4Avx2(const uint8_t* in, size_t n, float unit, uint32_t s, float* acc,
                       uint32_t* maxCode) {
  const size_t n16 = n & ~size_t{15};
  const __m128i low4 = _mm_set1_epi8(15);
  const __m256i vs = _mm256_set1_epi32(static_cast<int>(s));
  const __m256 vunit = _mm256_set1_ps(unit);
  __m128i hi = _mm_setzero_si128();
  for (size_t i = 0; i < n16; i += 16) {
    const __m128i bytes = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(in + i / 2));
    const __m128i lo = _mm_and_si128(bytes, low4);
    const __m128i up = _mm_and_si128(_mm_srli_epi16(bytes, 4), low4);
    const __m128i codes = _mm_unpacklo_epi8(lo, up);  // element order: lo0 hi0 lo1 hi1 ...
    hi = _mm_max_epu8(hi, codes);
    for (int h = 0; h < 2; ++h) {
      const __m256i c = _mm256_cvtepu8_epi32(h == 0 ? codes : _mm_srli_si128(codes, 8));
      const __m256 q = _mm256_cvtepi32_ps(_mm256_sub_epi32(c, vs));
      float* a = acc + i + 8 * h;
      _mm256_storeu_ps(a, _mm256_add_ps(_mm256_loadu_ps(a), _mm256_mul_ps(vunit, q)));
    }
  }
  alignas(16) uint8_t m[16];
  _mm_store_si128(reinterpret_cast<__m128i*>(m), hi);
  uint32_t best = 0;
  for (uint8_t v : m) best = v > best ? v : best;
  *maxCode = best;
  return n16;
}

double sumSquaresAvx2(const float* x, size_t n) {
  __m256d acc = _mm256_setzero_pd();  // lane j: the scalar kernel's p[j]
  size_t i = 0;
  for (; i + 4 <= n; i += 4) {
    const __m256d v = _mm256_cvtps_pd(_mm_loadu_ps(x + i));
    acc = _mm256_add_pd(acc, _mm256_mul_pd(v, v));
  }
  alignas(32) double p[4];
  _mm256_store_pd(p, acc);
  for (; i < n; ++i) p[i % 4] += static_cast<double>(x[i]) * x[i];
  return (p[0] + p[1]) + (p[2] + p[3]);
}

}  // namespace tutti::compress::detail
#endif
