// Error feedback: mass conservation over 500 steps with several simulated ranks, residual
// exactly zero on the sent indices, key isolation, size-change reset, per-call switch, and
// float16/bfloat16 inputs with a float32 residual.
#include "compress/error_feedback.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "common/dtype.h"
#include "common/error.h"
#include "compress/codec.h"

namespace tutti::compress {
namespace {

class EfConservation : public testing::TestWithParam<const char*> {};

TEST_P(EfConservation, FiveHundredStepsFourRanks) {
  constexpr int kRanks = 4, kSteps = 500;
  constexpr size_t d = 1000;
  auto codec = makeCodec(GetParam());
  std::vector<ErrorFeedback> ef(kRanks);  // one per simulated rank
  std::vector<std::vector<std::byte>> wire(kRanks,
                                           std::vector<std::byte>(codec->maxEncodedBytes(d)));
  std::vector<size_t> len(kRanks);
  std::vector<float> sumDelta(d, 0.0f);  // float32, as a training loop would keep it
  std::vector<double> sumU(d, 0.0);
  std::mt19937_64 rng(1);
  std::normal_distribution<float> g;
  std::vector<float> u(d), delta(d);
  for (int t = 0; t < kSteps; ++t) {
    for (int r = 0; r < kRanks; ++r) {
      for (size_t i = 0; i < d; ++i) u[i] = g(rng) + 0.05f * float(r);
      for (size_t i = 0; i < d; ++i) sumU[i] += u[i];
      const StepInfo step{.seed = 3, .rank = uint32_t(r), .step = uint64_t(t), .key = 1};
      len[r] = ef[r].encode(uint64_t{1}, u, *codec, wire[r], step);
      const auto e = ef[r].residual(uint64_t{1});
      if (std::string(GetParam()).rfind("topk", 0) == 0) {  // exactly zero where sent
        for (size_t j = 0; j < len[r] / 8; ++j) {
          uint32_t idx;
          std::memcpy(&idx, wire[r].data() + 8 * j, 4);
          ASSERT_EQ(e[idx], 0.0f) << "step " << t << " rank " << r;
        }
      }
    }
    std::fill(delta.begin(), delta.end(), 0.0f);
    for (int r = 0; r < kRanks; ++r) {
      codec->decodeAccumulate(std::span(wire[r]).first(len[r]), delta);
    }
    for (size_t i = 0; i < d; ++i) sumDelta[i] += delta[i];
  }
  double err = 0, norm = 0;
  for (size_t i = 0; i < d; ++i) {
    double total = sumDelta[i];
    for (int r = 0; r < kRanks; ++r) total += ef[r].residual(uint64_t{1})[i];
    err += (total - sumU[i]) * (total - sumU[i]);
    norm += sumU[i] * sumU[i];
  }
  EXPECT_LE(std::sqrt(err / norm), 1e-5) << GetParam();
}

INSTANTIATE_TEST_SUITE_P(
    Codecs, EfConservation,
    // EF needs a contractive codec, E||C(x) - x||^2 <= (1 - delta)||x||^2: top-k always; QSGD
    // only when min(B/s^2, sqrt(B)/s) < 1 (s = 16, B = 128 -> 0.5; s = 4, B = 512 would diverge).
    testing::Values("topk:k=10", "topk:ratio=0.01", "qsgd:s=16,b=128", "qsgd:s=16,b=64,norm=max",
                    "none"),
    [](const auto& info) {
      std::string n = info.param;
      for (char& c : n) c = std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
      return n;
    });

TEST(ErrorFeedback, KeysNeverShareState) {
  auto codec = makeTopK({.k = 1});
  ErrorFeedback ef;
  std::vector<std::byte> w(8);
  const std::vector<float> a = {1, 2, 3}, b = {30, 20, 10};
  ef.encode(uint64_t{7}, a, *codec, w, {});
  ef.encode(std::string("7"), b, *codec, w, {});
  ef.encode(std::string("x"), a, *codec, w, {});
  EXPECT_EQ(ef.keys(), 3u);
  const auto e7 = ef.residual(uint64_t{7});
  const auto s7 = ef.residual(std::string("7"));
  ASSERT_EQ(e7.size(), 3u);
  EXPECT_EQ(std::vector<float>(e7.begin(), e7.end()), (std::vector<float>{1, 2, 0}));
  EXPECT_EQ(std::vector<float>(s7.begin(), s7.end()), (std::vector<float>{0, 20, 10}));
  // Next step of key 7: p = a + e = {2, 4, 3}: sends index 1.
  ef.encode(uint64_t{7}, a, *codec, w, {});
  uint32_t idx;
  float val;
  std::memcpy(&idx, w.data(), 4);
  std::memcpy(&val, w.data() + 4, 4);
  EXPECT_EQ(idx, 1u);
  EXPECT_EQ(val, 4.0f);
  ef.reset(uint64_t{7});
  EXPECT_TRUE(ef.residual(uint64_t{7}).empty());
  EXPECT_EQ(ef.residual(std::string("7")).size(), 3u);
  ef.clear();
  EXPECT_EQ(ef.keys(), 0u);
}

TEST(ErrorFeedback, SizeChangeResetsResidual) {
  auto codec = makeTopK({.k = 1});
  ErrorFeedback ef;
  std::vector<std::byte> w(8);
  ef.encode(std::string("layer"), std::vector<float>{1, 5}, *codec, w, {});
  EXPECT_EQ(ef.residual(std::string("layer"))[0], 1.0f);
  ef.encode(std::string("layer"), std::vector<float>{2, 0, 0}, *codec, w, {});
  EXPECT_EQ(ef.resets(), 1u);
  const auto e = ef.residual(std::string("layer"));
  ASSERT_EQ(e.size(), 3u);
  EXPECT_EQ(e[0], 0.0f);  // the old residual (1 at index 0) is gone; 2 was sent
  float val;
  std::memcpy(&val, w.data() + 4, 4);
  EXPECT_EQ(val, 2.0f);
}

TEST(ErrorFeedback, SwitchableOffPerCall) {
  auto codec = makeTopK({.k = 1});
  ErrorFeedback ef;
  std::vector<std::byte> w(8), plain(8);
  ef.encode(uint64_t{1}, std::vector<float>{1, 5}, *codec, w, {});  // e = {1, 0}
  const std::vector<float> g = {0.5f, 0.25f};
  ef.encode(uint64_t{1}, g, *codec, w, {}, /*useEf=*/false);
  codec->encode(g, plain, {});
  EXPECT_EQ(w, plain);
  EXPECT_EQ(ef.residual(uint64_t{1})[0], 1.0f);  // untouched
}

TEST(ErrorFeedback, HalfAndBf16InputsUseFloatResidual) {
  auto codec = makeQsgd({.s = 2, .bucket = 64});
  std::mt19937_64 rng(5);
  std::normal_distribution<float> g;
  for (tuttiDataType_t t : {tuttiFloat16, tuttiBfloat16}) {
    ErrorFeedback viaHalf, viaFloat;
    for (int step = 0; step < 20; ++step) {
      std::vector<uint16_t> h(300);
      std::vector<float> f(300);
      for (size_t i = 0; i < h.size(); ++i) {
        h[i] = t == tuttiFloat16 ? floatToHalf(g(rng)) : floatToBf16(g(rng));
        f[i] = t == tuttiFloat16 ? halfToFloat(h[i]) : bf16ToFloat(h[i]);
      }
      std::vector<std::byte> a(codec->maxEncodedBytes(300)), b(a.size());
      const StepInfo s{.seed = 1, .step = uint64_t(step)};
      viaHalf.encode(std::string("w"), h.data(), h.size(), t, *codec, a, s);
      viaFloat.encode(std::string("w"), f, *codec, b, s);
      ASSERT_EQ(a, b);
    }
    const auto e1 = viaHalf.residual(std::string("w"));
    const auto e2 = viaFloat.residual(std::string("w"));
    ASSERT_EQ(e1.size(), 300u);
    EXPECT_EQ(0, std::memcmp(e1.data(), e2.data(), 300 * 4));
  }
  ErrorFeedback ef;
  std::vector<std::byte> w(1000);
  int32_t ints[4] = {};
  EXPECT_THROW(ef.encode(uint64_t{1}, ints, 4, tuttiInt32, *codec, w, {}), Error);
}

}  // namespace
}  // namespace tutti::compress
