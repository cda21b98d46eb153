// QSGD level kernels: stochastic rounding of one bucket to codes c = s +- level. The AVX2
// kernel (qsgd_kernels_avx2.cc, compiled with -mavx2 only) gives bitwise the same codes as the
// scalar one: the same float32 operations and the same counter-based draws (compress/rng.h).
#pragma once

#include <cstddef>
#include <cstdint>

namespace tutti::compress {

// codes[i] = s + sign(x[i]) * level_i for i in [0, n), where r = |x[i]| * scale,
// level = min(s, floor(r) + (u < r - floor(r))), u = uniform24(draw(stream, first + i)).
// x must be finite and scale >= 0 with r <= 2^31.
void qsgdLevels(const float* x, size_t n, float scale, uint32_t s, uint64_t stream, uint64_t first,
                uint32_t* codes);

// Sum of x[i]^2 in double: four partial sums p[i % 4] (products exact in double), combined
// as (p0 + p1) + (p2 + p3). The same value on every path.
double sumSquares(const float* x, size_t n);

// acc[i] += unit * float(c_i - s) for the n 4-bit codes at in (two per byte, low nibble
// first); returns the largest code seen (the caller rejects codes > 2s).
uint32_t qsgdDecode4(const uint8_t* in, size_t n, float unit, uint32_t s, float* acc);

namespace detail {
uint32_t qsgdDecode4Scalar(const uint8_t* in, size_t n, float unit, uint32_t s, float* acc);
// Handles a multiple of 16 codes; returns how many; *maxCode = the largest code seen.
size_t qsgdDecode4Avx2(const uint8_t* in, size_t n, float unit, uint32_t s, float* acc,
                       uint32_t* maxCode);
double sumSquaresScalar(const float* x, size_t n);
double sumSquaresAvx2(const float* x, size_t n);
void qsgdLevelsScalar(const float* x, size_t n, float scale, uint32_t s, uint64_t stream,
                      uint64_t first, uint32_t* codes);
// Handles a multiple of 8 elements; returns how many.
size_t qsgdLevelsAvx2(const float* x, size_t n, float scale, uint32_t s, uint64_t stream,
                      uint64_t first, uint32_t* codes);
bool haveAvx2();
}  // namespace detail

}  // namespace tutti::compress
