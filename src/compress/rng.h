// Counter-based random numbers for stochastic rounding: a pure function of
// (seed, rank, step, key, index), so every run (and every re-encode) is reproducible and
// ranks never share streams. splitmix64's finaliser is the mixing function.
#pragma once

#include <cstdint>

namespace tutti::compress {

constexpr uint64_t mix64(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

// Identifies one encode call; the codec derives all its randomness from it.
struct StepInfo {
  uint64_t seed = 0;  // run-wide seed (same on every rank)
  uint32_t rank = 0;  // encoding rank
  uint64_t step = 0;  // training step / call counter
  uint64_t key = 0;   // tensor identity (e.g. a hash of the error-feedback key)
  // Index of in[0] within the whole tensor when a chunk is encoded on its own (see
  // Codec::chunkAlign): element i draws number offset + i, so the chunks' codes equal the
  // whole tensor's. Not part of streamBase.
  uint64_t offset = 0;
};

// Stream base for one encode call.
constexpr uint64_t streamBase(const StepInfo& s) {
  uint64_t h = mix64(s.seed ^ 0x9e3779b97f4a7c15ull);
  h = mix64(h ^ (static_cast<uint64_t>(s.rank) + 0x632be59bd9b4e019ull));
  h = mix64(h ^ (s.step * 0xd1b54a32d192ed03ull + 1));
  return mix64(h ^ (s.key * 0x8cb92ba72f3d8dd7ull + 2));
}

// The index-th 64-bit draw of a stream.
constexpr uint64_t draw(uint64_t base, uint64_t index) {
  return mix64(base + (index + 1) * 0x9e3779b97f4a7c15ull);
}

// Uniform in [0, 1) with 24 random bits (exact in float).
constexpr float uniform24(uint64_t bits) {
  return static_cast<float>(bits >> 40) * (1.0f / 16777216.0f);
}

}  // namespace tutti::compress
