// QSGD statistics: unbiasedness (per-coordinate z-scores over 20,000 quantisations) and the
// variance bound, with the exact per-coordinate variance (norm/s)^2 p (1 - p).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "compress/codec.h"

namespace tutti::compress {
namespace {

struct Config {
  uint32_t s;
  size_t bucket;
  Norm norm;
};

std::string name(const Config& c) {
  return "s" + std::to_string(c.s) + "_B" + std::to_string(c.bucket) +
         (c.norm == Norm::kL2 ? "_L2" : "_max");
}

std::vector<float> fixedGaussian(size_t d) {
  std::mt19937_64 rng(2024);
  std::normal_distribution<float> g;
  std::vector<float> v(d);
  for (auto& x : v) x = g(rng);
  return v;
}

// Exact variance of each coordinate of Q(v), computed in double from v.
std::vector<double> exactVariance(const std::vector<float>& v, const Config& c) {
  std::vector<double> var(v.size());
  for (size_t b = 0; b < v.size(); b += c.bucket) {
    const size_t e = std::min(v.size(), b + c.bucket);
    double norm = 0;
    for (size_t i = b; i < e; ++i) {
      norm = c.norm == Norm::kL2 ? norm + double(v[i]) * v[i]
                                 : std::max(norm, std::fabs(double(v[i])));
    }
    if (c.norm == Norm::kL2) norm = std::sqrt(norm);
    for (size_t i = b; i < e; ++i) {
      const double r = norm > 0 ? std::fabs(double(v[i])) * c.s / norm : 0;
      const double p = r - std::floor(r);
      var[i] = (norm / c.s) * (norm / c.s) * p * (1 - p);
    }
  }
  return var;
}

class QsgdStats : public testing::TestWithParam<Config> {};

TEST_P(QsgdStats, Unbiased) {
  const Config cfg = GetParam();
  constexpr size_t d = 1000;
  constexpr int kTrials = 20000;
  const auto v = fixedGaussian(d);
  auto codec = makeQsgd({.s = cfg.s, .bucket = cfg.bucket, .norm = cfg.norm});
  std::vector<std::byte> wire(codec->maxEncodedBytes(d));
  std::vector<float> q(d);
  std::vector<double> sum(d, 0.0);
  for (int t = 0; t < kTrials; ++t) {
    const size_t n = codec->encode(v, wire, {.seed = 77, .rank = 0, .step = uint64_t(t)});
    codec->decode(std::span(wire).first(n), q);
    for (size_t i = 0; i < d; ++i) sum[i] += q[i];
  }
  const auto var = exactVariance(v, cfg);
  double z2 = 0, maxZ = 0;
  int counted = 0;
  for (size_t i = 0; i < d; ++i) {
    if (var[i] <= 0) continue;
    const double z = (sum[i] / kTrials - v[i]) / std::sqrt(var[i] / kTrials);
    maxZ = std::max(maxZ, std::fabs(z));
    z2 += z * z;
    ++counted;
  }
  z2 /= counted;
  EXPECT_GT(counted, 990);
  EXPECT_LT(maxZ, 5.5) << name(cfg);
  EXPECT_GE(z2, 0.8) << name(cfg);
  EXPECT_LE(z2, 1.2) << name(cfg);
}

TEST_P(QsgdStats, VarianceBoundAndEmpirical) {
  const Config cfg = GetParam();
  constexpr size_t d = 1000;
  constexpr int kTrials = 400;
  const auto v = fixedGaussian(d);
  double norm2 = 0;
  for (float x : v) norm2 += double(x) * x;
  const auto var = exactVariance(v, cfg);
  double exact = 0;
  for (double x : var) exact += x;
  const double B = double(cfg.bucket), s = cfg.s;
  EXPECT_LE(exact, std::min(B / (s * s), std::sqrt(B) / s) * norm2) << name(cfg);

  auto codec = makeQsgd({.s = cfg.s, .bucket = cfg.bucket, .norm = cfg.norm});
  std::vector<std::byte> wire(codec->maxEncodedBytes(d));
  std::vector<float> q(d);
  double mean = 0;
  for (int t = 0; t < kTrials; ++t) {
    const size_t n = codec->encode(v, wire, {.seed = 5, .step = uint64_t(t)});
    codec->decode(std::span(wire).first(n), q);
    for (size_t i = 0; i < d; ++i) mean += (double(q[i]) - v[i]) * (double(q[i]) - v[i]);
  }
  mean /= kTrials;
  EXPECT_NEAR(mean / exact, 1.0, 0.05) << name(cfg) << " empirical " << mean << " exact " << exact;
}

INSTANTIATE_TEST_SUITE_P(Configs, QsgdStats,
                         testing::Values(Config{1, 1000, Norm::kL2}, Config{4, 1000, Norm::kL2},
                                         Config{4, 512, Norm::kL2}, Config{4, 512, Norm::kMax},
                                         Config{16, 128, Norm::kL2}),
                         [](const auto& info) { return name(info.param); });

// For v = +-1 with B = d = 4096 (L2 norm 64), p = s/64 everywhere, so
// Var/||v||^2 = (64/s)^2 (s/64)(1 - s/64) = 64/s - 1 = sqrt(B)/s - 1 exactly.
TEST(QsgdVariance, PlusMinusOneAttainsSqrtBOverS) {
  constexpr size_t d = 4096;
  std::vector<float> v(d);
  std::mt19937_64 rng(3);
  for (auto& x : v) x = (rng() & 1) ? 1.0f : -1.0f;
  for (uint32_t s : {1u, 2u, 4u}) {
    const Config cfg{s, d, Norm::kL2};
    const auto var = exactVariance(v, cfg);
    double exact = 0;
    for (double x : var) exact += x;
    EXPECT_EQ(exact / d, 64.0 / s - 1.0) << "s=" << s;  // 63, 31, 15
    auto codec = makeQsgd({.s = s, .bucket = d});
    std::vector<std::byte> wire(codec->maxEncodedBytes(d));
    std::vector<float> q(d);
    double mean = 0;
    for (int t = 0; t < 400; ++t) {
      codec->encode(v, wire, {.seed = 11, .step = uint64_t(t)});
      codec->decode(wire, q);
      for (size_t i = 0; i < d; ++i) mean += (double(q[i]) - v[i]) * (double(q[i]) - v[i]);
    }
    mean /= 400;
    EXPECT_NEAR(mean / exact, 1.0, 0.05) << "s=" << s;
  }
}

}  // namespace
}  // namespace tutti::compress
