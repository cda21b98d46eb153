// copyBytes (common/copy_bytes.h): every byte copied at every relative offset of destination
// and source around the vector loop's range and sizes around its block sizes, nothing written
// outside the destination, overlapping ranges as memmove, and the loop taken exactly where
// glibc's memcpy is slow (the destination 1-63 bytes past the source modulo 4 KiB).
#include "common/copy_bytes.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <vector>

namespace {

// A byte per position that repeats with no short period.
uint8_t patternAt(size_t i, uint64_t seed) {
  uint64_t x = (i + 1) * 0x9e3779b97f4a7c15ULL ^ seed;
  x ^= x >> 31;
  x *= 0xbf58476d1ce4e5b9ULL;
  return static_cast<uint8_t>(x >> 56);
}

constexpr size_t kGuard = 64;
constexpr uint8_t kGuardByte = 0xa5;

// Copies n bytes from a source at srcOffset (from a 4 KiB boundary) to a destination
// `past` bytes further modulo 4 KiB, and checks every byte and the guards around it.
void checkCopy(size_t n, size_t srcOffset, size_t past, uint64_t seed) {
  std::vector<uint8_t> srcBuf(n + 2 * 4096), dstBuf(n + 3 * 4096, kGuardByte);
  auto* srcBase = reinterpret_cast<uint8_t*>((reinterpret_cast<uintptr_t>(srcBuf.data()) + 4095) &
                                             ~uintptr_t{4095});
  auto* dstBase = reinterpret_cast<uint8_t*>((reinterpret_cast<uintptr_t>(dstBuf.data()) + 4095) &
                                             ~uintptr_t{4095});
  uint8_t* src = srcBase + srcOffset;
  uint8_t* dst = dstBase + kGuard + (srcOffset + past) % 4096;
  for (size_t i = 0; i < n; ++i) src[i] = patternAt(i, seed);
  tutti::copyBytes(dst, src, n);
  for (size_t i = 0; i < n; ++i)
    ASSERT_EQ(dst[i], patternAt(i, seed)) << "byte " << i << " of " << n << ", past " << past;
  for (size_t i = 1; i <= kGuard; ++i) {
    ASSERT_EQ(dst[-static_cast<ptrdiff_t>(i)], kGuardByte) << "before, n " << n;
    ASSERT_EQ(dst[n + i - 1], kGuardByte) << "after, n " << n << ", past " << past;
  }
}

TEST(CopyBytes, EveryByteAtEveryOffsetNearTheLoopsRange) {
  const size_t sizes[] = {0,    1,    63,   64,   65,   127,  128,   129,   1023,
                          1024, 1025, 1151, 2048, 4095, 4096, 70001, 300000};
  uint64_t seed = 1;
  for (size_t n : sizes)
    for (size_t past = 0; past <= 72; ++past) {
      const size_t srcOffset = (past * 7 + n) % 48;  // rotated, not every pair
      checkCopy(n, srcOffset, past, seed++);
      if (testing::Test::HasFatalFailure()) return;
    }
  for (size_t past : {4032u, 4080u, 4095u}) checkCopy(300000, 16, past, seed++);
}

TEST(CopyBytes, TakesTheLoopWhereMemcpyIsSlow) {
  std::vector<uint8_t> buf(3 * 4096 + 8192);
  auto* base = reinterpret_cast<uint8_t*>((reinterpret_cast<uintptr_t>(buf.data()) + 4095) &
                                          ~uintptr_t{4095});
  const uint8_t* src = base;
  uint8_t* far = base + 8192;  // no overlap for n up to 8 KiB
  const bool x86 =
#if defined(__x86_64__)
      true;
#else
      false;
#endif
  for (size_t past = 0; past < 128; ++past)
    EXPECT_EQ(tutti::copyBytesAvoidsMemcpy(far + past, src, 4096), x86 && past > 0 && past < 64)
        << past;
  EXPECT_FALSE(tutti::copyBytesAvoidsMemcpy(far + 16, src, 1023));  // below rep movsb's sizes
  EXPECT_EQ(tutti::copyBytesAvoidsMemcpy(far + 16, src, 1024), x86);
  EXPECT_FALSE(tutti::copyBytesAvoidsMemcpy(base + 16, src, 4096));  // overlapping
}

TEST(CopyBytes, OverlappingRangesMoveAsMemmove) {
  for (ptrdiff_t shift : {-40, -8, 8, 16, 40}) {
    std::vector<uint8_t> a(8192), b;
    for (size_t i = 0; i < a.size(); ++i) a[i] = patternAt(i, 99);
    b = a;
    const size_t n = 4096;
    tutti::copyBytes(a.data() + 1024 + shift, a.data() + 1024, n);
    std::memmove(b.data() + 1024 + shift, b.data() + 1024, n);
    EXPECT_EQ(a, b) << "shift " << shift;
  }
}

}  // namespace
