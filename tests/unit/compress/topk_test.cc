// Top-k: contraction ||topk(x) - x||^2 <= (1 - k/d)||x||^2, exactly k non-zeros, the same set
// as a full sort (ties by index), and the approximate selector's count within [0.8k, 1.3k].
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>
#include <random>
#include <vector>

#include "compress/codec.h"
#include "compress/topk_select.h"

namespace tutti::compress {
namespace {

std::vector<uint32_t> wireIndices(const std::vector<std::byte>& w, size_t n) {
  std::vector<uint32_t> idx(n / 8);
  for (size_t j = 0; j < idx.size(); ++j) std::memcpy(&idx[j], w.data() + 8 * j, 4);
  return idx;
}

// Indices of the k largest |x| by a full sort (|x| descending, index ascending), sorted.
std::vector<uint32_t> fullSortTopK(const std::vector<float>& x, size_t k) {
  std::vector<uint32_t> order(x.size());
  std::iota(order.begin(), order.end(), 0u);
  std::stable_sort(order.begin(), order.end(),
                   [&](uint32_t a, uint32_t b) { return std::fabs(x[a]) > std::fabs(x[b]); });
  order.resize(k);
  std::sort(order.begin(), order.end());
  return order;
}

TEST(TopK, ContractionExactCountSameSetAsSort) {
  std::mt19937_64 rng(42);
  std::normal_distribution<float> gauss;
  std::student_t_distribution<float> heavy(1.5f);  // heavy-tailed (infinite variance)
  for (int trial = 0; trial < 2000; ++trial) {
    const size_t d = 1 + rng() % 3000;
    const size_t k = 1 + rng() % d;
    std::vector<float> x(d);
    for (auto& v : x) v = trial % 2 ? heavy(rng) : gauss(rng);
    if (trial % 10 == 0) {  // some ties at the threshold: quantise to few values
      for (auto& v : x) v = std::round(v);
    }
    auto c = makeTopK({.k = k});
    std::vector<std::byte> w(c->maxEncodedBytes(d));
    const size_t n = c->encode(x, w, {});
    ASSERT_EQ(n, 8 * k);
    std::vector<float> q(d, 0.0f);
    c->decode(std::span(w).first(n), q);
    double err = 0, norm = 0;
    size_t nonzero = 0;
    for (size_t i = 0; i < d; ++i) {
      err += (double(q[i]) - x[i]) * (double(q[i]) - x[i]);
      norm += double(x[i]) * x[i];
      nonzero += q[i] != 0.0f;
    }
    ASSERT_LE(err, (1.0 - double(k) / double(d)) * norm * (1 + 1e-12) + 1e-300)
        << "trial " << trial << " d=" << d << " k=" << k;
    const auto idx = wireIndices(w, n);
    ASSERT_EQ(idx, fullSortTopK(x, k)) << "trial " << trial;
    if (trial % 10 != 0) {  // no exact zeros drawn
      ASSERT_EQ(nonzero, k) << "trial " << trial;
    }
  }
}

// Large inputs take the sampled-threshold exact path (n >= 2^18, k <= n/16; falls back to the
// histogram when the sample misses): still exactly the full sort's set, ties to small indices.
TEST(TopK, LargeExactSameSetAsSort) {
  constexpr size_t d = (1 << 19) + 3;
  std::mt19937_64 rng(11);
  std::normal_distribution<float> gauss;
  std::cauchy_distribution<float> cauchy;
  std::vector<float> x(d);
  std::vector<uint32_t> sel;
  for (int dist = 0; dist < 4; ++dist) {
    for (auto& v : x) {
      v = dist == 0   ? gauss(rng)
          : dist == 1 ? cauchy(rng)
          : dist == 2 ? std::round(gauss(rng) * 3)               // many ties
                      : (rng() % 100 == 0 ? gauss(rng) : 0.0f);  // mostly zeros
    }
    for (size_t k : {size_t{1}, size_t{5242}, size_t{30000}}) {
      selectTopKExact(x, k, sel);
      EXPECT_EQ(sel, fullSortTopK(x, k)) << "distribution " << dist << ", k = " << k;
    }
  }
}

TEST(TopK, ApproximateCountWithinBounds) {
  constexpr size_t d = 1 << 20;
  std::mt19937_64 rng(7);
  std::normal_distribution<float> gauss;
  std::cauchy_distribution<float> cauchy;
  std::vector<float> x(d);
  std::vector<uint32_t> sel;
  int sampled = 0;
  for (int dist = 0; dist < 4; ++dist) {
    for (auto& v : x) {
      v = dist == 0   ? gauss(rng)
          : dist == 1 ? cauchy(rng)
          : dist == 2 ? std::round(gauss(rng) * 3)
                      : 1.0f;
    }
    for (size_t k : {size_t{2000}, size_t{10485}, size_t{50000}, size_t{200000}}) {
      for (uint64_t seed = 0; seed < 5; ++seed) {
        selectTopKApprox(x, k, seed, sel);
        ASSERT_GE(sel.size() * 10, 8 * k) << "dist " << dist << " k " << k;
        ASSERT_LE(sel.size() * 10, 13 * k) << "dist " << dist << " k " << k;
        sampled += sel.size() != k;
        ASSERT_TRUE(std::is_sorted(sel.begin(), sel.end()));
        ASSERT_TRUE(std::adjacent_find(sel.begin(), sel.end()) == sel.end());
        // A threshold selection: nothing left out is larger than anything selected.
        std::vector<char> in(d, 0);
        uint32_t minSel = ~0u, maxOut = 0;
        for (uint32_t i : sel) in[i] = 1, minSel = std::min(minSel, magnitudeKey(x[i]));
        for (size_t i = 0; i < d; ++i) {
          if (!in[i]) maxOut = std::max(maxOut, magnitudeKey(x[i]));
        }
        ASSERT_LE(maxOut, minSel) << "dist " << dist << " k " << k;
      }
    }
  }
  EXPECT_GT(sampled, 0) << "the sampled-threshold path never ran";
}

TEST(TopK, ApproximateCodecRoundTrip) {
  constexpr size_t d = 1 << 20;
  std::mt19937_64 rng(9);
  std::normal_distribution<float> gauss;
  std::vector<float> x(d);
  for (auto& v : x) v = gauss(rng);
  auto c = makeCodec("topk:ratio=0.01,approx");
  EXPECT_FALSE(c->fixedSize());
  std::vector<std::byte> w(c->maxEncodedBytes(d));
  EXPECT_EQ(w.size(), 8u * (13 * 10485 / 10));
  const size_t n = c->encode(x, w, {.seed = 1});
  std::vector<float> q(d, 0.0f);
  c->decode(std::span(w).first(n), q);
  size_t nonzero = 0;
  for (size_t i = 0; i < d; ++i) {
    if (q[i] != 0.0f) {
      ++nonzero;
      ASSERT_EQ(q[i], x[i]);
    }
  }
  EXPECT_EQ(nonzero * 8, n);
}

}  // namespace
}  // namespace tutti::compress
