// Fuzz target: compressor specs (TUTTI_COMPRESS, tuttiAllReduceCompressed's spec) and the
// codecs' wire decoders. Input: spec '\n' d(u16) then payload bytes. The spec must give a
// codec or a tuttiInvalidArgument naming it; a codec must then encode d values within
// maxEncodedBytes(d) (exactly, when fixedSize), decode its own payload, and decode the
// arbitrary payload bytes or refuse them with tuttiInvalidArgument.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <memory>
#include <vector>

#include "compress/codec.h"
#include "fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace tutti;
  fuzz::Input in(data, size);
  // Specs come from C strings (TUTTI_COMPRESS, tuttiAllReduceCompressed): no NUL inside.
  std::string spec(in.until('\n'));
  spec.resize(std::min(spec.size(), spec.find('\0')));
  std::unique_ptr<compress::Codec> codec;
  if (!fuzz::refusesCleanly([&] { codec = compress::makeCodec(spec); }, tuttiInvalidArgument,
                            "compression spec '" + spec + "'"))
    return 0;
  const size_t d = in.u16() % 4097;
  const std::string_view payload = in.remaining();
  (void)codec->describe();

  std::vector<float> x(d);
  for (size_t i = 0; i < d; ++i) x[i] = std::sin(static_cast<float>(i) * 0.7f) * (1 + i % 5);
  const size_t max = codec->maxEncodedBytes(d);
  if (max > (size_t{1} << 24))
    fuzz::bug("maxEncodedBytes(" + std::to_string(d) + ") = " + std::to_string(max) + " for '" +
              spec + "'");
  std::vector<std::byte> wire(max);
  compress::StepInfo step;
  step.seed = 42;
  size_t n = codec->encode(x, wire, step);
  if (n > max || (codec->fixedSize() && n != max))
    fuzz::bug("encode wrote " + std::to_string(n) + " bytes, maxEncodedBytes " +
              std::to_string(max) + " for '" + spec + "'");
  std::vector<float> acc(d, 0.0f);
  codec->decodeAccumulate(std::span(wire).first(n), acc);
  for (float v : acc)
    if (!std::isfinite(v)) fuzz::bug("decoding its own payload gave a non-finite value");

  // Arbitrary payload bytes as if received from a peer.
  std::vector<std::byte> hostile(payload.size());
  if (!payload.empty()) std::memcpy(hostile.data(), payload.data(), payload.size());
  fuzz::refusesCleanly([&] { codec->decodeAccumulate(hostile, acc); }, tuttiInvalidArgument, "");
  return 0;
}
