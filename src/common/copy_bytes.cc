#include "common/copy_bytes.h"

#include <cstdint>
#include <cstring>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace tutti {
namespace {

// The offsets of the destination past the source (modulo 4 KiB) at which `rep movsb` is slow
// on AMD Zen (measured: 4-28 bytes; the margin covers a cache line), and the smallest copy
// glibc's memcpy runs with it (its rep_movsb_threshold is 2 KiB or more).
constexpr uintptr_t kSlowOffsets = 64;
constexpr size_t kLoopFrom = 1024;

#if defined(__x86_64__)
__attribute__((target("avx2"))) void copyAvx2(std::byte* d, const std::byte* s, size_t n) {
  size_t i = 0;
  for (; i + 128 <= n; i += 128) {
    const __m256i a = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(s + i));
    const __m256i b = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(s + i + 32));
    const __m256i c = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(s + i + 64));
    const __m256i e = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(s + i + 96));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(d + i), a);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(d + i + 32), b);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(d + i + 64), c);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(d + i + 96), e);
  }
  if (i < n) std::memcpy(d + i, s + i, n - i);  // under 128 bytes: no rep movsb
}

void copySse2(std::byte* d, const std::byte* s, size_t n) {
  size_t i = 0;
  for (; i + 64 <= n; i += 64) {
    const __m128i a = _mm_loadu_si128(reinterpret_cast<const __m128i*>(s + i));
    const __m128i b = _mm_loadu_si128(reinterpret_cast<const __m128i*>(s + i + 16));
    const __m128i c = _mm_loadu_si128(reinterpret_cast<const __m128i*>(s + i + 32));
    const __m128i e = _mm_loadu_si128(reinterpret_cast<const __m128i*>(s + i + 48));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(d + i), a);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(d + i + 16), b);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(d + i + 32), c);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(d + i + 48), e);
  }
  if (i < n) std::memcpy(d + i, s + i, n - i);
}

using CopyLoop = void (*)(std::byte*, const std::byte*, size_t);
CopyLoop copyLoop() {
  static const CopyLoop loop = [] {
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx2") ? copyAvx2 : copySse2;
  }();
  return loop;
}
#endif

bool overlaps(const std::byte* d, const std::byte* s, size_t n) {
  const auto a = reinterpret_cast<uintptr_t>(d), b = reinterpret_cast<uintptr_t>(s);
  return a < b + n && b < a + n;
}

// True at the offsets and sizes where glibc's memcpy is slow (never off x86-64).
bool slowForMemcpy(const std::byte* d, const std::byte* s, size_t n) {
#if defined(__x86_64__)
  const uintptr_t past = (reinterpret_cast<uintptr_t>(d) - reinterpret_cast<uintptr_t>(s)) % 4096;
  return n >= kLoopFrom && past > 0 && past < kSlowOffsets;
#else
  (void)d, (void)s, (void)n;
  return false;
#endif
}

}  // namespace

bool copyBytesAvoidsMemcpy(const void* dst, const void* src, size_t n) {
  const auto* d = static_cast<const std::byte*>(dst);
  const auto* s = static_cast<const std::byte*>(src);
  return !overlaps(d, s, n) && slowForMemcpy(d, s, n);
}

void copyBytes(void* dst, const void* src, size_t n) {
  auto* d = static_cast<std::byte*>(dst);
  const auto* s = static_cast<const std::byte*>(src);
  if (n == 0 || d == s) return;
  if (overlaps(d, s, n)) {
    std::memmove(d, s, n);
    return;
  }
#if defined(__x86_64__)
  if (slowForMemcpy(d, s, n)) return copyLoop()(d, s, n);
#endif
  std::memcpy(d, s, n);
}

}  // namespace tutti
