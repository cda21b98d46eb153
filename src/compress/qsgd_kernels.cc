// Scalar QSGD level kernel and the run-time dispatch to the AVX2 one.
#include "compress/qsgd_kernels.h"

#include <cmath>

#include "compress/rng.h"

namespace tutti::compress {
namespace detail {

void qsgdLevelsScalar(const float* x, size_t n, float scale, uint32_t s, uint64_t stream,
                      uint64_t first, uint32_t* codes) {
  for (size_t i = 0; i < n; ++i) {
    const float r = std::fabs(x[i]) * scale;       // in [0, s] (up to rounding)
    const uint32_t lo = static_cast<uint32_t>(r);  // floor: r >= 0
    const float u = uniform24(draw(stream, first + i));
    uint32_t level = lo + (u < r - static_cast<float>(lo) ? 1u : 0u);
    level = level < s ? level : s;
    codes[i] = std::signbit(x[i]) ? s - level : s + level;
  }
}

double sumSquaresScalar(const float* x, size_t n) {
  double p[4] = {0, 0, 0, 0};
  size_t i = 0;
  for (; i + 4 <= n; i += 4)
    for (size_t j = 0; j < 4; ++j) p[j] += static_cast<double>(x[i + j]) * x[i + j];
  for (; i < n; ++i) p[i % 4] += static_cast<double>(x[i]) * x[i];
  return (p[0] + p[1]) + (p[2] + p[3]);
}

uint32_t qsgdDecode4Scalar(const uint8_t* in, size_t n, float unit, uint32_t s, float* acc) {
  uint32_t hi = 0;
  for (size_t i = 0; i < n; ++i) {
    const uint32_t c = (in[i / 2] >> (4 * (i % 2))) & 15u;
    hi = c > hi ? c : hi;
    acc[i] += unit * static_cast<float>(static_cast<int32_t>(c) - static_cast<int32_t>(s));
  }
  return hi;
}

bool haveAvx2() {
#if defined(__x86_64__) || defined(__i386__)
  static const bool has = __builtin_cpu_supports("avx2");
  return has;
#else
  return false;
#endif
}

#if !(defined(__x86_64__) || defined(__i386__))
size_t qsgdLevelsAvx2(const float*, size_t, float, uint32_t, uint64_t, uint64_t, uint32_t*) {
  return 0;
}
double sumSquaresAvx2(const float* x, size_t n) { return sumSquaresScalar(x, n); }
size_t qsgdDecode4Avx2(const uint8_t*, size_t, float, uint32_t, float*, uint32_t* maxCode) {
  *maxCode = 0;
  return 0;
}
#endif

}  // namespace detail

uint32_t qsgdDecode4(const uint8_t* in, size_t n, float unit, uint32_t s, float* acc) {
  size_t done = 0;
  uint32_t hi = 0;
  if (detail::haveAvx2()) done = detail::qsgdDecode4Avx2(in, n, unit, s, acc, &hi);
  const uint32_t tail = detail::qsgdDecode4Scalar(in + done / 2, n - done, unit, s, acc + done);
  return tail > hi ? tail : hi;
}

double sumSquares(const float* x, size_t n) {
  return detail::haveAvx2() ? detail::sumSquaresAvx2(x, n) : detail::sumSquaresScalar(x, n);
}

void qsgdLevels(const float* x, size_t n, float scale, uint32_t s, uint64_t stream, uint64_t first,
                uint32_t* codes) {
  size_t done = 0;
  if (detail::haveAvx2()) done = detail::qsgdLevelsAvx2(x, n, scale, s, stream, first, codes);
  detail::qsgdLevelsScalar(x + done, n - done, scale, s, stream, first + done, codes + done);
}

}  // namespace tutti::compress
