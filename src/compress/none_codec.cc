// "none": the float32 vector itself (4d bytes).
#include <cstring>

#include "common/error.h"
#include "compress/codec.h"

namespace tutti::compress {
namespace {

class NoneCodec final : public Codec {
 public:
  std::string describe() const override { return "none"; }
  size_t maxEncodedBytes(size_t d) const override { return 4 * d; }
  bool fixedSize() const override { return true; }
  size_t chunkAlign() const override { return 1; }

  size_t encode(std::span<const float> in, std::span<std::byte> out,
                const StepInfo&) const override {
    const size_t bytes = 4 * in.size();
    TUTTI_CHECK_ARG(out.size() >= bytes, "none codec: output of ", out.size(), " bytes, need ",
                    bytes);
    if (bytes) std::memcpy(out.data(), in.data(), bytes);
    return bytes;
  }

  void decodeAccumulate(std::span<const std::byte> wire, std::span<float> acc) const override {
    TUTTI_CHECK_ARG(wire.size() == 4 * acc.size(), "none codec: payload of ", wire.size(),
                    " bytes for ", acc.size(), " elements (need ", 4 * acc.size(), ")");
    const std::byte* p = wire.data();
    float* a = acc.data();
    const size_t n = acc.size();
    for (size_t i = 0; i < n; ++i) {
      float v;
      std::memcpy(&v, p + 4 * i, 4);
      a[i] += v;
    }
  }
};

}  // namespace

std::unique_ptr<Codec> makeNone() { return std::make_unique<NoneCodec>(); }

}  // namespace tutti::compress
