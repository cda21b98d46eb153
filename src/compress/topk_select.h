// Top-k selection by magnitude. Elements are ranked by the bit pattern of |x| as an unsigned
// integer, which orders non-negative floats numerically and puts NaN above +Inf, so NaN and
// Inf are selected first (never dropped). Ties are broken by index: the smaller index wins.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

namespace tutti::compress {

// Rank key of one element: bits of |x|.
inline uint32_t magnitudeKey(float x) {
  uint32_t b;
  __builtin_memcpy(&b, &x, 4);
  return b & 0x7fffffffu;
}

// The indices (ascending) of the k largest-magnitude elements; k <= x.size() < 2^32.
void selectTopKExact(std::span<const float> x, size_t k, std::vector<uint32_t>& out);

// Approximate selection: the indices (ascending) of the c largest elements (same order and
// tie-break as the exact one) for some c in [ceil(0.8k), floor(1.3k)] (c = k when the exact
// path is taken: small inputs, or when the sampled threshold misses twice). The threshold is
// estimated from a sample drawn from `seed`, so the result is deterministic.
void selectTopKApprox(std::span<const float> x, size_t k, uint64_t seed,
                      std::vector<uint32_t>& out);

}  // namespace tutti::compress
