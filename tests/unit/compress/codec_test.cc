// Codec wire sizes (byte exact), round trips, determinism, edge cases and malformed payloads.
#include "compress/codec.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "common/error.h"

namespace tutti::compress {
namespace {

std::vector<float> gaussian(size_t d, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> g;
  std::vector<float> v(d);
  for (auto& x : v) x = g(rng);
  return v;
}

size_t encodeSize(const Codec& c, const std::vector<float>& v, StepInfo s = {}) {
  std::vector<std::byte> out(c.maxEncodedBytes(v.size()));
  return c.encode(v, out, s);
}

TEST(CompressWire, ExactBytesForD650) {
  const auto v = gaussian(650, 1);
  auto none = makeCodec("none");
  auto topk = makeTopK({.k = 6});
  auto topkRatio = makeCodec("topk:ratio=0.01");  // floor(6.5) = 6
  auto qsgd = makeQsgd({.s = 4, .bucket = 512, .norm = Norm::kL2});
  EXPECT_EQ(none->maxEncodedBytes(650), 2600u);
  EXPECT_EQ(encodeSize(*none, v), 2600u);
  EXPECT_EQ(topk->maxEncodedBytes(650), 48u);
  EXPECT_EQ(encodeSize(*topk, v), 48u);
  EXPECT_EQ(encodeSize(*topkRatio, v), 48u);
  EXPECT_EQ(qsgd->maxEncodedBytes(650), 333u);
  EXPECT_EQ(encodeSize(*qsgd, v), 333u);
  EXPECT_TRUE(none->fixedSize());
  EXPECT_TRUE(topk->fixedSize());
  EXPECT_TRUE(qsgd->fixedSize());
  // Other widths: s = 1 -> 2 bits, s = 16 -> 6 bits, B = 128 -> 6 buckets.
  EXPECT_EQ(makeCodec("qsgd:s=1,b=512")->maxEncodedBytes(650), 8u + 163u);
  EXPECT_EQ(makeCodec("qsgd:s=16,b=128")->maxEncodedBytes(650), 24u + 488u);
}

TEST(CompressWire, TopKPayloadIsIndexValuePairsAscending) {
  std::vector<float> v(650, 0.5f);
  const uint32_t hot[] = {600, 3, 77, 400, 12, 649};
  for (int j = 0; j < 6; ++j) v[hot[j]] = (j % 2 ? -1.0f : 1.0f) * static_cast<float>(10 + j);
  auto topk = makeTopK({.k = 6});
  std::vector<std::byte> out(48);
  ASSERT_EQ(topk->encode(v, out, {}), 48u);
  const uint32_t want[] = {3, 12, 77, 400, 600, 649};
  for (int j = 0; j < 6; ++j) {
    uint32_t idx;
    float val;
    std::memcpy(&idx, out.data() + 8 * j, 4);
    std::memcpy(&val, out.data() + 8 * j + 4, 4);
    EXPECT_EQ(idx, want[j]);
    EXPECT_EQ(val, v[want[j]]);
  }
}

TEST(CompressWire, NoneRoundTripsBitwise) {
  auto v = gaussian(1000, 2);
  v[3] = std::numeric_limits<float>::quiet_NaN();
  v[4] = -std::numeric_limits<float>::infinity();
  v[5] = -0.0f;
  auto none = makeNone();
  std::vector<std::byte> out(4000);
  none->encode(v, out, {});
  std::vector<float> back(1000);
  none->decode(out, back);
  EXPECT_TRUE(std::isnan(back[3]));
  EXPECT_EQ(back[4], v[4]);
  for (size_t i = 0; i < v.size(); ++i) {
    if (i != 3 && i != 5) {
      EXPECT_EQ(back[i], v[i]);
    }
  }
}

TEST(CompressQsgd, FixedWidthRoundTripWithinOneLevel) {
  struct Case {
    const char* spec;
    double s;
  };
  for (const Case& cs : {Case{"qsgd:s=1,b=1000", 1}, Case{"qsgd:s=4,b=512", 4},
                         Case{"qsgd:s=4,b=512,norm=max", 4}, Case{"qsgd:s=16,b=128", 16},
                         Case{"qsgd:s=4,b=100,gamma", 4}, Case{"qsgd:s=127,b=64", 127}}) {
    auto c = makeCodec(cs.spec);
    const auto v = gaussian(1001, 3);
    std::vector<std::byte> out(c->maxEncodedBytes(v.size()));
    const size_t n = c->encode(v, out, {.seed = 9});
    ASSERT_LE(n, out.size());
    std::vector<float> q(v.size());
    c->decode(std::span(out).first(n), q);
    // |Q(v)_i - v_i| <= norm/s with norm <= ||v||_2 (per-bucket L2 or max norm).
    double norm = 0;
    for (float x : v) norm += double(x) * x;
    const double bound = std::sqrt(norm) / cs.s;
    for (size_t i = 0; i < v.size(); ++i) {
      ASSERT_TRUE(std::isfinite(q[i])) << cs.spec;
      ASSERT_LE(std::fabs(q[i] - v[i]), bound * 1.0001) << cs.spec << " i=" << i;
      ASSERT_TRUE(q[i] == 0 || std::signbit(q[i]) == std::signbit(v[i])) << cs.spec;
    }
  }
}

TEST(CompressQsgd, GammaMatchesFixedWidthValues) {
  const auto v = gaussian(5000, 4);
  auto fixed = makeCodec("qsgd:s=2,b=256");
  auto gamma = makeCodec("qsgd:s=2,b=256,gamma");
  EXPECT_FALSE(gamma->fixedSize());
  std::vector<std::byte> a(fixed->maxEncodedBytes(v.size())), b(gamma->maxEncodedBytes(v.size()));
  const StepInfo step{.seed = 5, .rank = 1, .step = 7, .key = 3};
  const size_t na = fixed->encode(v, a, step);
  const size_t nb = gamma->encode(v, b, step);
  EXPECT_LT(nb, na);  // most levels are 0 at s = 2, B = 256: 1 bit instead of 3
  std::vector<float> qa(v.size()), qb(v.size());
  fixed->decode(std::span(a).first(na), qa);
  gamma->decode(std::span(b).first(nb), qb);
  EXPECT_EQ(0, std::memcmp(qa.data(), qb.data(), qa.size() * 4));
}

TEST(CompressQsgd, ReproducibleAndRankDependent) {
  const auto v = gaussian(3000, 5);
  auto c = makeCodec("qsgd:s=4,b=512");
  std::vector<std::byte> a(c->maxEncodedBytes(3000)), b(a.size()), r(a.size()), t(a.size());
  c->encode(v, a, {.seed = 1, .rank = 0, .step = 3});
  c->encode(v, b, {.seed = 1, .rank = 0, .step = 3});
  c->encode(v, r, {.seed = 1, .rank = 1, .step = 3});
  c->encode(v, t, {.seed = 1, .rank = 0, .step = 4});
  EXPECT_EQ(a, b);
  EXPECT_NE(a, r);
  EXPECT_NE(a, t);
  // Two tensors (keys) of one step draw different streams; a run seed changes them all.
  std::vector<std::byte> k(a.size()), s2(a.size());
  c->encode(v, k, {.seed = 1, .rank = 0, .step = 3, .key = 7});
  c->encode(v, s2, {.seed = 2, .rank = 0, .step = 3});
  EXPECT_NE(a, k);
  EXPECT_NE(a, s2);
}

TEST(CompressCodecs, DecodeInRankOrderIsIdenticalOnEveryRank) {
  constexpr int kRanks = 4;
  for (const char* spec : {"none", "topk:k=50", "qsgd:s=4,b=512", "topk:ratio=0.05,approx"}) {
    auto c = makeCodec(spec);
    std::vector<std::vector<std::byte>> wire(kRanks);
    for (int r = 0; r < kRanks; ++r) {
      const auto v = gaussian(777, 100 + r);
      wire[r].resize(c->maxEncodedBytes(777));
      wire[r].resize(c->encode(v, wire[r], {.seed = 3, .rank = uint32_t(r)}));
    }
    std::vector<float> ref;
    for (int self = 0; self < kRanks; ++self) {  // every rank decodes all payloads, rank order
      std::vector<float> acc(777, 0.0f);
      for (int r = 0; r < kRanks; ++r) c->decodeAccumulate(wire[r], acc);
      if (self == 0) ref = acc;
      EXPECT_EQ(0, std::memcmp(ref.data(), acc.data(), 777 * 4)) << spec;
    }
  }
}

// decodeSum (blocked for QSGD) is bitwise the zero-fill + rank-order decodeAccumulate loop.
TEST(CompressCodecs, DecodeSumEqualsRankOrderLoop) {
  constexpr size_t d = 20000;  // several 16-bucket blocks, last bucket partial
  for (const char* spec : {"none", "topk:k=50", "qsgd:s=4,b=512", "qsgd:s=1,b=100",
                           "qsgd:s=100,b=64", "qsgd:s=3,b=512", "qsgd:s=4,b=512,gamma"}) {
    auto c = makeCodec(spec);
    std::vector<std::vector<std::byte>> wire(3);
    std::vector<std::span<const std::byte>> spans;
    for (uint32_t r = 0; r < 3; ++r) {
      wire[r].resize(c->maxEncodedBytes(d));
      wire[r].resize(c->encode(gaussian(d, 40 + r), wire[r], {.seed = 5, .rank = r}));
      spans.emplace_back(wire[r]);
    }
    std::vector<float> loop(d, 0.0f), sum(d, 1.0f);
    for (const auto& w : spans) c->decodeAccumulate(w, loop);
    c->decodeSum(spans, sum);
    EXPECT_EQ(0, std::memcmp(loop.data(), sum.data(), d * 4)) << spec;
  }
}

// Chunkable codecs: chunks of a multiple of chunkAlign() elements encoded with their offset
// give exactly maxEncodedBytes(chunk) bytes, summing to the whole payload's size, and decode
// to the whole payload's values, bitwise.
TEST(CompressCodecs, ChunksEncodeLikeTheWholeVector) {
  constexpr size_t d = 5000;  // not a multiple of B
  const auto v = gaussian(d, 77);
  for (const char* spec : {"none", "qsgd:s=4,b=512", "qsgd:s=1,b=128", "qsgd:s=4,b=512,norm=max"}) {
    auto c = makeCodec(spec);
    const size_t a = c->chunkAlign();
    ASSERT_GT(a, 0u) << spec;
    const StepInfo step{.seed = 9, .rank = 2, .step = 4, .key = 1};
    std::vector<std::byte> whole(c->maxEncodedBytes(d));
    ASSERT_EQ(c->encode(v, whole, step), whole.size());
    std::vector<float> ref(d), got(d);
    c->decode(whole, ref);
    const size_t per = 2 * a;
    size_t total = 0;
    for (size_t b = 0; b < d; b += per) {
      const size_t n = std::min(per, d - b);
      StepInfo s = step;
      s.offset = b;
      std::vector<std::byte> part(c->maxEncodedBytes(n));
      ASSERT_EQ(c->encode(std::span(v).subspan(b, n), part, s), part.size()) << spec;
      total += part.size();
      c->decode(part, std::span(got).subspan(b, n));
    }
    EXPECT_EQ(total, whole.size()) << spec;
    EXPECT_EQ(0, std::memcmp(ref.data(), got.data(), d * 4)) << spec;
  }
  EXPECT_EQ(makeCodec("topk:k=5")->chunkAlign(), 0u);
  EXPECT_EQ(makeCodec("qsgd:s=3,b=512")->chunkAlign(), 0u);  // 3-bit codes: not byte aligned
  EXPECT_EQ(makeCodec("qsgd:s=4,b=511")->chunkAlign(), 0u);  // odd bucket of 4-bit codes
}

TEST(CompressEdge, ZeroTensorDecodesToZeros) {
  for (const char* spec : {"none", "topk:k=5", "topk:ratio=0.1,approx", "qsgd:s=4,b=512",
                           "qsgd:s=4,b=512,norm=max", "qsgd:s=1,b=7,gamma"}) {
    auto c = makeCodec(spec);
    std::vector<float> z(650, 0.0f), out(650, 1.0f);
    std::vector<std::byte> w(c->maxEncodedBytes(650));
    const size_t n = c->encode(z, w, {});
    c->decode(std::span(w).first(n), out);
    for (float x : out) ASSERT_EQ(x, 0.0f) << spec;
  }
}

TEST(CompressEdge, BucketsNotDividingD) {
  auto c = makeCodec("qsgd:s=4,b=512");
  std::vector<float> v(513, 0.0f);
  v[512] = 3.0f;  // the last bucket has one element: its norm is 3, level s exactly
  std::vector<std::byte> w(c->maxEncodedBytes(513));
  EXPECT_EQ(w.size(), 8u + (513u * 4 + 7) / 8);
  c->encode(v, w, {});
  std::vector<float> q(513);
  c->decode(w, q);
  EXPECT_EQ(q[512], 3.0f);
  for (int i = 0; i < 512; ++i) EXPECT_EQ(q[i], 0.0f);
}

TEST(CompressEdge, KAtLeastDSendsEverything) {
  const auto v = gaussian(10, 6);
  for (const char* spec : {"topk:k=10", "topk:k=1000", "topk:ratio=1"}) {
    auto c = makeCodec(spec);
    EXPECT_EQ(c->maxEncodedBytes(10), 80u) << spec;
    std::vector<std::byte> w(80);
    ASSERT_EQ(c->encode(v, w, {}), 80u);
    std::vector<float> q(10);
    c->decode(w, q);
    EXPECT_EQ(q, v) << spec;
  }
}

TEST(CompressEdge, KZeroRejected) {
  try {
    makeTopK({.k = 0});
    FAIL() << "k = 0 accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), tuttiInvalidArgument);
    EXPECT_NE(std::string(e.what()).find("k = 0"), std::string::npos) << e.what();
  }
  EXPECT_THROW(makeCodec("topk:k=0"), Error);
  EXPECT_THROW(makeTopK({.ratio = 1.5}), Error);
  EXPECT_THROW(makeQsgd({.s = 0}), Error);
  EXPECT_THROW(makeQsgd({.bucket = 0}), Error);
  EXPECT_THROW(makeCodec("zip"), Error);
  EXPECT_THROW(makeCodec("qsgd:s=x"), Error);
  EXPECT_THROW(makeCodec("topk:k=5,foo=1"), Error);
  EXPECT_EQ(makeCodec("qsgd:4")->describe(), "qsgd:s=4,b=512,norm=l2");
  EXPECT_EQ(makeCodec("topk:k=6")->describe(), "topk:k=6");
}

// Out-of-range parameters name the spec they came from (found by the fuzz targets: the error
// said "top-k codec: ratio 5.01 outside (0, 1]" without saying which setting).
TEST(CompressEdge, RangeErrorsNameTheSpec) {
  for (const char* spec : {"topk:5.01", "topk:ratio=-1", "qsgd:s=0", "qsgd:s=40000", "qsgd:b=0"}) {
    try {
      makeCodec(spec);
      FAIL() << spec << " accepted";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), tuttiInvalidArgument);
      EXPECT_NE(std::string(e.what()).find("compression spec '" + std::string(spec) + "'"),
                std::string::npos)
          << e.what();
    }
  }
}

TEST(CompressEdge, NanAndInfPropagate) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float inf = std::numeric_limits<float>::infinity();
  auto v = gaussian(650, 7);
  v[10] = nan;
  v[600] = -inf;
  {  // top-k selects non-finite values first and keeps them
    auto c = makeTopK({.k = 6});
    std::vector<std::byte> w(48);
    c->encode(v, w, {});
    std::vector<float> q(650);
    c->decode(w, q);
    EXPECT_TRUE(std::isnan(q[10]));
    EXPECT_EQ(q[600], -inf);
  }
  for (const char* spec : {"qsgd:s=4,b=512", "qsgd:s=4,b=512,norm=max"}) {
    // QSGD: a non-finite value poisons its bucket (decodes to NaN), never silently zero.
    auto c = makeCodec(spec);
    std::vector<std::byte> w(c->maxEncodedBytes(650));
    c->encode(v, w, {});
    std::vector<float> q(650);
    c->decode(w, q);
    for (int i = 0; i < 512; ++i) ASSERT_TRUE(std::isnan(q[i])) << spec << " " << i;
    for (int i = 512; i < 650; ++i) ASSERT_TRUE(std::isnan(q[i])) << spec << " " << i;
    auto w2 = v;
    w2[10] = 0.0f;  // only the Inf in bucket 1 now: bucket 0 stays finite
    c->encode(w2, w, {});
    c->decode(w, q);
    for (int i = 0; i < 512; ++i) ASSERT_TRUE(std::isfinite(q[i])) << spec;
    for (int i = 512; i < 650; ++i) ASSERT_TRUE(std::isnan(q[i])) << spec;
  }
}

TEST(CompressEdge, MalformedPayloadsRejected) {
  std::vector<float> acc(650);
  std::vector<std::byte> w(333);
  EXPECT_THROW(makeNone()->decodeAccumulate(std::span(w).first(100), acc), Error);
  EXPECT_THROW(makeTopK({.k = 6})->decodeAccumulate(std::span(w).first(47), acc), Error);
  std::vector<std::byte> bad(8);
  const uint32_t idx = 650;
  std::memcpy(bad.data(), &idx, 4);
  EXPECT_THROW(makeTopK({.k = 6})->decodeAccumulate(bad, acc), Error);
  auto q = makeQsgd({.s = 4, .bucket = 512});
  EXPECT_THROW(q->decodeAccumulate(std::span(w).first(332), acc), Error);
  std::fill(w.begin(), w.end(), std::byte{0xff});  // codes 15 > 2s = 8
  EXPECT_THROW(q->decodeAccumulate(w, acc), Error);
}

}  // namespace
}  // namespace tutti::compress
