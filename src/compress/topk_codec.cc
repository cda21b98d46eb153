// "topk": k (uint32 index, float32 value) pairs in ascending index order; k is implicit in
// the payload size (8k bytes), so no header travels.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "common/error.h"
#include "compress/codec.h"
#include "compress/topk_select.h"

namespace tutti::compress {
namespace {

class TopKCodec final : public Codec {
 public:
  explicit TopKCodec(const TopKOptions& opt) : opt_(opt) {
    TUTTI_CHECK_ARG(opt.k > 0 || opt.ratio > 0,
                    "top-k codec: k = 0 selects nothing; give k >= 1 or a ratio in (0, 1]");
    TUTTI_CHECK_ARG(opt.k > 0 || (opt.ratio > 0 && opt.ratio <= 1), "top-k codec: ratio ",
                    opt.ratio, " outside (0, 1]");
  }

  // Elements sent for a vector of d: min(k, d), or max(1, floor(ratio * d)).
  size_t kFor(size_t d) const {
    if (d == 0) return 0;
    if (opt_.k > 0) return std::min(opt_.k, d);
    const double k = std::floor(opt_.ratio * static_cast<double>(d));
    return std::clamp<size_t>(static_cast<size_t>(k), 1, d);
  }

  std::string describe() const override {
    std::string s = "topk:";
    s += opt_.k > 0 ? "k=" + std::to_string(opt_.k) : "ratio=" + std::to_string(opt_.ratio);
    if (opt_.approximate) s += ",approx";
    return s;
  }

  size_t maxEncodedBytes(size_t d) const override {
    const size_t k = kFor(d);
    return 8 * (opt_.approximate ? std::min(d, 13 * k / 10) : k);
  }

  bool fixedSize() const override { return !opt_.approximate; }

  size_t encode(std::span<const float> in, std::span<std::byte> out,
                const StepInfo& step) const override {
    thread_local std::vector<uint32_t> idx;
    const size_t k = kFor(in.size());
    if (opt_.approximate) {
      selectTopKApprox(in, k, streamBase(step), idx);
    } else {
      selectTopKExact(in, k, idx);
    }
    const size_t bytes = 8 * idx.size();
    TUTTI_CHECK_ARG(out.size() >= bytes, "top-k codec: output of ", out.size(), " bytes, need ",
                    bytes);
    std::byte* p = out.data();
    for (uint32_t i : idx) {
      std::memcpy(p, &i, 4);
      std::memcpy(p + 4, &in[i], 4);
      p += 8;
    }
    return bytes;
  }

  void decodeAccumulate(std::span<const std::byte> wire, std::span<float> acc) const override {
    TUTTI_CHECK_ARG(wire.size() % 8 == 0, "top-k codec: payload of ", wire.size(),
                    " bytes is not a whole number of 8-byte (index, value) pairs");
    const size_t pairs = wire.size() / 8;
    const std::byte* p = wire.data();
    const size_t d = acc.size();
    for (size_t j = 0; j < pairs; ++j, p += 8) {
      uint32_t i;
      float v;
      std::memcpy(&i, p, 4);
      std::memcpy(&v, p + 4, 4);
      TUTTI_CHECK_ARG(i < d, "top-k codec: index ", i, " in pair ", j, " out of range for ", d,
                      " elements (corrupt payload?)");
      acc[i] += v;
    }
  }

  void decodeSubtract(std::span<const std::byte> wire, std::span<float> x) const override {
    TUTTI_CHECK_ARG(wire.size() % 8 == 0, "top-k codec: payload of ", wire.size(),
                    " bytes is not a whole number of 8-byte (index, value) pairs");
    const std::byte* p = wire.data();
    for (size_t j = 0; j < wire.size() / 8; ++j, p += 8) {
      uint32_t i;
      float v;
      std::memcpy(&i, p, 4);
      std::memcpy(&v, p + 4, 4);
      TUTTI_CHECK_ARG(i < x.size(), "top-k codec: index ", i, " out of range for ", x.size(),
                      " elements (corrupt payload?)");
      x[i] -= v;
    }
  }

 private:
  TopKOptions opt_;
};

}  // namespace

std::unique_ptr<Codec> makeTopK(const TopKOptions& opt) { return std::make_unique<TopKCodec>(opt); }

}  // namespace tutti::compress
