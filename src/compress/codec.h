// Gradient compression codecs: a payload ("wire") is produced by encode() on one rank and
// consumed by decodeAccumulate() on every rank. Decoding all ranks' payloads in rank order
// into the same accumulator gives bitwise identical results on every rank (decode is a fixed
// sequence of float32 operations per payload).
//
// Wire formats (byte exact, little-endian) are in docs/compression.md:
//   none : d float32 values                                     -> 4d bytes
//   topk : k pairs (uint32 index, float32 value), ascending index -> 8k bytes (k implicit)
//   qsgd : ceil(d/B) float32 bucket norms, then the level stream -> 4*ceil(d/B) +
//          ceil(d * ceil(log2(2s+1)) / 8) bytes (fixed width), or Elias-gamma coded.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>

#include "compress/rng.h"

namespace tutti::compress {

class Codec {
 public:
  virtual ~Codec() = default;

  // "none", "topk" or "qsgd", plus the parameters, e.g. "qsgd:s=4,b=512,norm=l2".
  virtual std::string describe() const = 0;

  // Upper bound of encode()'s result for d elements.
  virtual size_t maxEncodedBytes(size_t d) const = 0;

  // True when every encode of d elements writes exactly maxEncodedBytes(d) bytes, so that
  // payload sizes are known to all ranks in advance (an all-gather needs no size exchange).
  virtual bool fixedSize() const = 0;

  // Compresses `in` into `out` (at least maxEncodedBytes(in.size()) bytes); returns the
  // payload size. Randomised codecs draw only from `step` (reproducible).
  virtual size_t encode(std::span<const float> in, std::span<std::byte> out,
                        const StepInfo& step) const = 0;

  // acc[i] += decoded[i] for the payload `wire` (exactly the bytes encode() returned) of a
  // vector with acc.size() elements. Throws tuttiInvalidArgument on a malformed payload.
  virtual void decodeAccumulate(std::span<const std::byte> wire, std::span<float> acc) const = 0;

  // acc = decoded (overwrites; same arithmetic as decodeAccumulate into zeros).
  void decode(std::span<const std::byte> wire, std::span<float> out) const;

  // 0: a payload covers the whole vector. A > 0: a vector may be cut into chunks of a
  // multiple of A elements (the last one shorter), each encoded on its own with
  // StepInfo::offset = its first index; the chunk payloads then have exactly the sizes
  // maxEncodedBytes(chunk) (summing to maxEncodedBytes(d)) and decode to the same values as
  // the whole vector's payload. Lets the all-reduce pipeline encode, transfer and decode.
  virtual size_t chunkAlign() const { return 0; }

  // x[i] -= decoded[i]: the error-feedback residual e = p - D(C(p)) computed in place (equal
  // to decode() into q followed by x - q, up to the sign of zeros). The default decodes into a
  // scratch buffer; sparse codecs touch only the sent elements.
  virtual void decodeSubtract(std::span<const std::byte> wire, std::span<float> x) const;

  // out = ((0 + D(wires[0])) + D(wires[1])) + ...: bitwise the same as zero-filling out and
  // calling decodeAccumulate for every payload in order. Codecs may decode block by block
  // (all payloads of one cache-sized block before the next) to save memory passes.
  virtual void decodeSum(std::span<const std::span<const std::byte>> wires,
                         std::span<float> out) const;
};

enum class Norm { kL2, kMax };

struct TopKOptions {
  size_t k = 0;              // number of elements to send; if 0, ratio is used
  double ratio = 0;          // k = max(1, floor(ratio * d)) when k == 0; in (0, 1]
  bool approximate = false;  // threshold from a sample: count within [0.8k, 1.3k]
};

struct QsgdOptions {
  uint32_t s = 4;       // levels per sign, >= 1 (at most 32767)
  size_t bucket = 512;  // bucket size B >= 1 (one norm per bucket)
  Norm norm = Norm::kL2;
  bool eliasGamma = false;  // variable-length levels instead of fixed width
};

std::unique_ptr<Codec> makeNone();
std::unique_ptr<Codec> makeTopK(const TopKOptions& opt);
std::unique_ptr<Codec> makeQsgd(const QsgdOptions& opt);

// Parses "none", "topk:k=6", "topk:ratio=0.01[,approx]", "topk:0.01" (ratio),
// "qsgd:s=4,b=512,norm=l2|max[,gamma]", "qsgd:4". Throws tuttiInvalidArgument naming the
// spec on anything malformed.
std::unique_ptr<Codec> makeCodec(std::string_view spec);

}  // namespace tutti::compress
