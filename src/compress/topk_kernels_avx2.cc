// AVX2 candidate scan: keys are <= 0x7fffffff, so a signed compare with t - 1 is key >= t.
#include "compress/topk_kernels.h"

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>

namespace tutti::compress::detail {

size_t collectAtLeastAvx2(const float* x, size_t n, uint32_t t, std::vector<uint32_t>& idx,
                          std::vector<uint32_t>& keys) {
  const size_t n8 = n & ~size_t{7};
  const __m256i absMask = _mm256_set1_epi32(0x7fffffff);
  const __m256i below = _mm256_set1_epi32(static_cast<int>(t - 1));
  for (size_t i = 0; i < n8; i += 8) {
    const __m256i k =
        _mm256_and_si256(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(x + i)), absMask);
    unsigned mask = static_cast<unsigned>(
        _mm256_movemask_ps(_mm256_castsi256_ps(_mm256_cmpgt_epi32(k, below))));
    if (mask == 0) continue;
    alignas(32) uint32_t kk[8];
    _mm256_store_si256(reinterpret_cast<__m256i*>(kk), k);
    while (mask != 0) {
      const unsigned j = static_cast<unsigned>(__builtin_ctz(mask));
      idx.push_back(static_cast<uint32_t>(i + j));
      keys.push_back(kk[j]);
      mask &= mask - 1;
    }
  }
  return n8;
}

}  // namespace tutti::compress::detail
#endif
