// The dispatched (AVX2 where the CPU has it) QSGD level kernel gives bitwise the scalar codes.
#include "compress/qsgd_kernels.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <vector>

namespace tutti::compress {
namespace {

TEST(QsgdKernels, DispatchedEqualsScalar) {
  std::mt19937_64 rng(5);
  std::normal_distribution<float> g;
  for (size_t n : {1u, 7u, 8u, 9u, 31u, 512u, 1000u, 4099u}) {
    for (uint32_t s : {1u, 4u, 16u, 127u, 32767u}) {
      std::vector<float> x(n);
      for (auto& v : x) v = g(rng);
      x[0] = -0.0f;
      if (n > 2) x[2] = 0.0f;
      float m = 0;
      for (float v : x) m = std::max(m, std::fabs(v));
      if (n > 3) x[3] = -m;  // r == s exactly
      const float scale = static_cast<float>(s) / m;
      const uint64_t stream = rng(), first = rng() % 100000;
      std::vector<uint32_t> a(n), b(n);
      qsgdLevels(x.data(), n, scale, s, stream, first, a.data());
      detail::qsgdLevelsScalar(x.data(), n, scale, s, stream, first, b.data());
      ASSERT_EQ(a, b) << "n = " << n << ", s = " << s << ", avx2 = " << detail::haveAvx2();
      for (size_t i = 0; i < n; ++i) {
        ASSERT_LE(a[i], 2 * s);
      }
      if (n > 3) {
        EXPECT_EQ(a[3], 0u);  // -m: level s, negative
      }
    }
  }
}

TEST(QsgdKernels, SumSquaresEqualsScalar) {
  std::mt19937_64 rng(6);
  std::normal_distribution<float> g(0.0f, 3.0f);
  for (size_t n : {0u, 1u, 3u, 4u, 5u, 128u, 511u, 512u, 1000u}) {
    std::vector<float> x(n);
    for (auto& v : x) v = g(rng);
    const double a = sumSquares(x.data(), n), b = detail::sumSquaresScalar(x.data(), n);
    EXPECT_EQ(a, b) << "n = " << n;
    double ref = 0;
    for (float v : x) ref += static_cast<double>(v) * v;
    EXPECT_NEAR(a, ref, 1e-12 * (ref + 1)) << "n = " << n;
  }
}

TEST(QsgdKernels, Decode4EqualsScalar) {
  std::mt19937_64 rng(7);
  std::normal_distribution<float> g;
  for (size_t n : {1u, 15u, 16u, 17u, 33u, 512u, 999u}) {
    std::vector<uint8_t> bytes((n + 1) / 2);
    for (auto& b : bytes) b = static_cast<uint8_t>(rng());
    std::vector<float> a(n), b(n);
    for (size_t i = 0; i < n; ++i) a[i] = b[i] = g(rng);
    const float unit = 0.37f;
    const uint32_t ma = qsgdDecode4(bytes.data(), n, unit, 4, a.data());
    const uint32_t mb = detail::qsgdDecode4Scalar(bytes.data(), n, unit, 4, b.data());
    EXPECT_EQ(ma, mb) << "n = " << n;
    EXPECT_EQ(std::memcmp(a.data(), b.data(), 4 * n), 0) << "n = " << n;
    uint32_t hi = 0;
    for (size_t i = 0; i < n; ++i)
      hi = std::max<uint32_t>(hi, (bytes[i / 2] >> (4 * (i % 2))) & 15);
    EXPECT_EQ(ma, hi) << "n = " << n;
  }
}

}  // namespace
}  // namespace tutti::compress
