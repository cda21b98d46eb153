// "qsgd": stochastic uniform quantisation to s levels per sign, per bucket of B elements.
// Wire: ceil(d/B) float32 bucket norms, then one code c = q + s in [0, 2s] per element
// (q = signed level), either fixed width ceil(log2(2s+1)) bits LSB-first, or Elias-gamma
// coded (n = zigzag(q) + 1). A bucket holding NaN/Inf gets a NaN norm: it decodes to NaN.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "common/error.h"
#include "compress/bitpack.h"
#include "compress/codec.h"

namespace tutti::compress {
namespace {

unsigned bitsFor(uint32_t s) {
  unsigned b = 0;
  while ((uint64_t{1} << b) < 2ull * s + 1) ++b;
  return b;
}

unsigned floorLog2(uint32_t n) { return 31u - static_cast<unsigned>(__builtin_clz(n)); }

class QsgdCodec final : public Codec {
 public:
  explicit QsgdCodec(const QsgdOptions& opt) : opt_(opt), bits_(bitsFor(opt.s)) {
    TUTTI_CHECK_ARG(opt.s >= 1 && opt.s <= 32767, "qsgd codec: s = ", opt.s,
                    " levels outside [1, 32767]");
    TUTTI_CHECK_ARG(opt.bucket >= 1, "qsgd codec: bucket size must be >= 1");
  }

  std::string describe() const override {
    return "qsgd:s=" + std::to_string(opt_.s) + ",b=" + std::to_string(opt_.bucket) +
           ",norm=" + (opt_.norm == Norm::kL2 ? "l2" : "max") + (opt_.eliasGamma ? ",gamma" : "");
  }

  size_t buckets(size_t d) const { return (d + opt_.bucket - 1) / opt_.bucket; }

  size_t maxEncodedBytes(size_t d) const override {
    const size_t perElem = opt_.eliasGamma ? 2 * floorLog2(2 * opt_.s + 1) + 1 : bits_;
    return 4 * buckets(d) + (d * perElem + 7) / 8;
  }

  bool fixedSize() const override { return !opt_.eliasGamma; }

  size_t encode(std::span<const float> in, std::span<std::byte> out,
                const StepInfo& step) const override {
    const size_t d = in.size();
    const size_t nb = buckets(d);
    TUTTI_CHECK_ARG(out.size() >= maxEncodedBytes(d), "qsgd codec: output of ", out.size(),
                    " bytes, need ", maxEncodedBytes(d));
    uint8_t* base = reinterpret_cast<uint8_t*>(out.data());
    BitWriter w(base + 4 * nb);
    const uint64_t stream = streamBase(step);
    const uint32_t s = opt_.s;
    const float sf = static_cast<float>(s);
    thread_local std::vector<uint32_t> codes;
    codes.resize(std::min(d, opt_.bucket));
    for (size_t b = 0; b < nb; ++b) {
      const size_t begin = b * opt_.bucket;
      const size_t n = std::min(opt_.bucket, d - begin);
      const float* x = in.data() + begin;
      float norm = bucketNorm(x, n);
      std::memcpy(base + 4 * b, &norm, 4);
      if (!(norm > 0) || !std::isfinite(norm)) {  // zero, NaN or Inf: every code is "0"
        std::fill(codes.begin(), codes.begin() + static_cast<std::ptrdiff_t>(n), s);
      } else {
        const float scale = sf / norm;
        for (size_t i = 0; i < n; ++i) {
          const float r = std::fabs(x[i]) * scale;  // in [0, s] (up to rounding)
          const float fl = std::floor(r);
          const float u = uniform24(draw(stream, begin + i));
          uint32_t level = static_cast<uint32_t>(fl) + (u < r - fl ? 1u : 0u);
          level = std::min(level, s);
          codes[i] = std::signbit(x[i]) ? s - level : s + level;
        }
      }
      if (opt_.eliasGamma) {
        for (size_t i = 0; i < n; ++i) putGamma(w, zigzagPlusOne(codes[i]));
      } else {
        for (size_t i = 0; i < n; ++i) w.put(codes[i], bits_);
      }
    }
    return 4 * nb + w.finish();
  }

  void decodeAccumulate(std::span<const std::byte> wire, std::span<float> acc) const override {
    const size_t d = acc.size();
    const size_t nb = buckets(d);
    if (opt_.eliasGamma) {
      TUTTI_CHECK_ARG(wire.size() >= 4 * nb && wire.size() <= maxEncodedBytes(d),
                      "qsgd codec: gamma payload of ", wire.size(), " bytes for ", d, " elements");
    } else {
      TUTTI_CHECK_ARG(wire.size() == maxEncodedBytes(d), "qsgd codec: payload of ", wire.size(),
                      " bytes for ", d, " elements (need ", maxEncodedBytes(d), ")");
    }
    const uint8_t* base = reinterpret_cast<const uint8_t*>(wire.data());
    BitReader r(base + 4 * nb, wire.size() - 4 * nb);
    const uint32_t s = opt_.s;
    const float sf = static_cast<float>(s);
    uint32_t bad = 0;
    for (size_t b = 0; b < nb; ++b) {
      const size_t begin = b * opt_.bucket;
      const size_t n = std::min(opt_.bucket, d - begin);
      float norm;
      std::memcpy(&norm, base + 4 * b, 4);
      const float unit = norm / sf;  // value of one level
      float* a = acc.data() + begin;
      for (size_t i = 0; i < n; ++i) {
        uint32_t c;
        if (opt_.eliasGamma) {
          c = unZigzag(getGamma(r, bad));
        } else {
          c = r.get(bits_);
        }
        bad |= c > 2 * s;
        const float q = static_cast<float>(static_cast<int32_t>(c) - static_cast<int32_t>(s));
        a[i] += unit * q;
      }
    }
    TUTTI_CHECK_ARG(bad == 0, "qsgd codec: level code out of range (corrupt payload?)");
  }

 private:
  float bucketNorm(const float* x, size_t n) const {
    if (opt_.norm == Norm::kL2) {
      double sq = 0;
      for (size_t i = 0; i < n; ++i) sq += static_cast<double>(x[i]) * x[i];
      if (!std::isfinite(sq)) return std::numeric_limits<float>::quiet_NaN();
      return static_cast<float>(std::sqrt(sq));
    }
    float m = 0;
    bool finite = true;
    for (size_t i = 0; i < n; ++i) {
      const float a = std::fabs(x[i]);
      finite &= a <= std::numeric_limits<float>::max();
      m = a > m ? a : m;
    }
    return finite ? m : std::numeric_limits<float>::quiet_NaN();
  }

  // Code c = q + s  <->  n = zigzag(q) + 1 >= 1 (q = 0 -> 1, -1 -> 2, 1 -> 3, ...).
  uint32_t zigzagPlusOne(uint32_t c) const {
    const int32_t q = static_cast<int32_t>(c) - static_cast<int32_t>(opt_.s);
    return (q >= 0 ? 2u * static_cast<uint32_t>(q) : 2u * static_cast<uint32_t>(-q) - 1u) + 1u;
  }
  uint32_t unZigzag(uint32_t n) const {
    const uint32_t z = n - 1;
    const int32_t q = (z & 1u) ? -static_cast<int32_t>((z + 1) / 2) : static_cast<int32_t>(z / 2);
    return static_cast<uint32_t>(q + static_cast<int32_t>(opt_.s));
  }

  // Elias gamma: L = floor(log2 n) zero bits, then the L+1 bits of n, most significant first.
  static void putGamma(BitWriter& w, uint32_t n) {
    const unsigned l = floorLog2(n);
    if (l > 0) w.put(0, l);
    for (int j = static_cast<int>(l); j >= 0; --j) w.put((n >> j) & 1u, 1);
  }
  static uint32_t getGamma(BitReader& r, uint32_t& bad) {
    unsigned l = 0;
    while (r.bit() == 0) {
      if (++l > 31) {
        bad = 1;
        return 1;
      }
    }
    uint32_t n = 1;
    for (unsigned j = 0; j < l; ++j) n = (n << 1) | r.bit();
    return n;
  }

  QsgdOptions opt_;
  unsigned bits_;
};

}  // namespace

std::unique_ptr<Codec> makeQsgd(const QsgdOptions& opt) { return std::make_unique<QsgdCodec>(opt); }

}  // namespace tutti::compress
