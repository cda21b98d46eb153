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
#include "compress/qsgd_kernels.h"

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

  // Buckets start on a byte boundary and codes fill whole bytes (2, 4 or 8 bits; B a multiple
  // of 8 / bits): the byte-wise fast paths apply.
  bool byteAligned() const {
    return !opt_.eliasGamma && 8 % bits_ == 0 && (opt_.bucket * bits_) % 8 == 0;
  }

  size_t chunkAlign() const override { return byteAligned() ? opt_.bucket : 0; }

  size_t encode(std::span<const float> in, std::span<std::byte> out,
                const StepInfo& step) const override {
    const size_t d = in.size();
    const size_t nb = buckets(d);
    TUTTI_CHECK_ARG(out.size() >= maxEncodedBytes(d), "qsgd codec: output of ", out.size(),
                    " bytes, need ", maxEncodedBytes(d));
    uint8_t* base = reinterpret_cast<uint8_t*>(out.data());
    uint8_t* stream8 = base + 4 * nb;
    BitWriter w(stream8);
    const uint64_t stream = streamBase(step);
    const uint32_t s = opt_.s;
    const float sf = static_cast<float>(s);
    const bool aligned = byteAligned();
    thread_local std::vector<uint32_t> codes;
    codes.resize(std::min(d, opt_.bucket));
    for (size_t b = 0; b < nb; ++b) {
      const size_t begin = b * opt_.bucket;
      const size_t n = std::min(opt_.bucket, d - begin);
      const float* x = in.data() + begin;
      float norm = bucketNorm(x, n);
      std::memcpy(base + 4 * b, &norm, 4);
      uint32_t* c = codes.data();
      if (!(norm > 0) || !std::isfinite(norm)) {  // zero, NaN or Inf: every code is "0"
        std::fill(c, c + n, s);
      } else {
        qsgdLevels(x, n, sf / norm, s, stream, step.offset + begin, c);
      }
      if (aligned) {  // n codes into n * bits / 8 bytes at the bucket's byte offset
        uint8_t* o = stream8 + begin * bits_ / 8;
        if (bits_ == 4) {
          size_t i = 0;
          for (; i + 2 <= n; i += 2) *o++ = static_cast<uint8_t>(c[i] | (c[i + 1] << 4));
          if (i < n) *o = static_cast<uint8_t>(c[i]);
        } else {
          const unsigned per = 8 / bits_;
          for (size_t i = 0; i < n; i += per) {
            uint32_t byte = 0;
            for (unsigned j = 0; j < per && i + j < n; ++j) byte |= c[i + j] << (j * bits_);
            *o++ = static_cast<uint8_t>(byte);
          }
        }
      } else if (opt_.eliasGamma) {
        for (size_t i = 0; i < n; ++i) putGamma(w, zigzagPlusOne(c[i]));
      } else {
        for (size_t i = 0; i < n; ++i) w.put(c[i], bits_);
      }
    }
    if (aligned) return maxEncodedBytes(d);
    return 4 * nb + w.finish();
  }

  void decodeAccumulate(std::span<const std::byte> wire, std::span<float> acc) const override {
    const size_t d = acc.size();
    checkSize(wire, d);
    if (byteAligned()) {
      decodeBuckets(wire, 0, buckets(d), acc);
      return;
    }
    const size_t nb = buckets(d);
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

  // Blocked: all payloads of a block of buckets (~32 KiB of floats) before the next block.
  void decodeSum(std::span<const std::span<const std::byte>> wires,
                 std::span<float> out) const override {
    if (!byteAligned()) return Codec::decodeSum(wires, out);
    const size_t d = out.size(), nb = buckets(d);
    for (const auto& w : wires) checkSize(w, d);
    const size_t step = std::max<size_t>(1, 8192 / opt_.bucket);
    for (size_t b = 0; b < nb; b += step) {
      const size_t e = std::min(nb, b + step);
      std::fill(out.begin() + b * opt_.bucket, out.begin() + std::min(d, e * opt_.bucket), 0.0f);
      for (const auto& w : wires) decodeBuckets(w, b, e, out);
    }
  }

 private:
  void checkSize(std::span<const std::byte> wire, size_t d) const {
    if (opt_.eliasGamma) {
      TUTTI_CHECK_ARG(wire.size() >= 4 * buckets(d) && wire.size() <= maxEncodedBytes(d),
                      "qsgd codec: gamma payload of ", wire.size(), " bytes for ", d, " elements");
    } else {
      TUTTI_CHECK_ARG(wire.size() == maxEncodedBytes(d), "qsgd codec: payload of ", wire.size(),
                      " bytes for ", d, " elements (need ", maxEncodedBytes(d), ")");
    }
  }

  // acc += D(wire) for buckets [b0, b1) of a byte-aligned payload: 4-bit codes through the
  // (AVX2) kernel, 2 / 8 bits through a table of the 2^bits values unit * q per bucket; both
  // compute the generic path's float32 product unit * q.
  void decodeBuckets(std::span<const std::byte> wire, size_t b0, size_t b1,
                     std::span<float> acc) const {
    const size_t d = acc.size(), nb = buckets(d);
    const uint8_t* base = reinterpret_cast<const uint8_t*>(wire.data());
    const uint8_t* stream8 = base + 4 * nb;
    const uint32_t s = opt_.s, mask = (1u << bits_) - 1;
    const float sf = static_cast<float>(s);
    float table[256];
    uint32_t bad = 0;
    for (size_t b = b0; b < b1; ++b) {
      const size_t begin = b * opt_.bucket;
      const size_t n = std::min(opt_.bucket, d - begin);
      float norm;
      std::memcpy(&norm, base + 4 * b, 4);
      const float unit = norm / sf;
      const uint8_t* in = stream8 + begin * bits_ / 8;
      float* a = acc.data() + begin;
      if (bits_ == 4) {
        bad |= qsgdDecode4(in, n, unit, s, a) > 2 * s;
      } else {
        for (uint32_t c = 0; c <= mask; ++c)
          table[c] = unit * static_cast<float>(static_cast<int32_t>(c) - static_cast<int32_t>(s));
        bad |= bits_ == 2 ? decodeTable<2>(in, n, table, s, a) : decodeTable<8>(in, n, table, s, a);
      }
    }
    TUTTI_CHECK_ARG(bad == 0, "qsgd codec: level code out of range (corrupt payload?)");
  }

  // a[i] += table[c_i] for n codes of Bits (2 or 8) bits; returns 1 if a code exceeds 2s.
  template <unsigned Bits>
  static uint32_t decodeTable(const uint8_t* in, size_t n, const float* table, uint32_t s,
                              float* a) {
    constexpr unsigned kPer = 8 / Bits;
    constexpr uint32_t kMask = (1u << Bits) - 1;
    uint32_t bad = 0;
    for (size_t i = 0; i < n; ++i) {
      const uint32_t c = (in[i / kPer] >> ((i % kPer) * Bits)) & kMask;
      bad |= c > 2 * s;
      a[i] += table[c];
    }
    return bad;
  }

  float bucketNorm(const float* x, size_t n) const {
    if (opt_.norm == Norm::kL2) {
      const double sq = sumSquares(x, n);
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
  // A level beyond +-s (only a corrupt payload has one) gives code 2s + 1, which the caller
  // reports; computed in 64 bits, as n may be anything up to 2^32 - 1.
  uint32_t unZigzag(uint32_t n) const {
    const int64_t z = static_cast<int64_t>(n) - 1;
    const int64_t c = ((z & 1) ? -(z + 1) / 2 : z / 2) + opt_.s;
    return c < 0 || c > 2 * int64_t{opt_.s} ? 2 * opt_.s + 1 : static_cast<uint32_t>(c);
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
