// Candidate scan for top-k: the (index, key) pairs of every element whose magnitude key
// (topk_select.h) is >= t, in index order. One pass; the AVX2 version (topk_kernels_avx2.cc,
// -mavx2, run-time dispatch) tests 8 keys per compare and touches only blocks with a hit.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace tutti::compress {

// Appends to idx / keys (cleared first); t >= 1. Indices are first + i.
void collectAtLeast(const float* x, size_t n, uint32_t t, std::vector<uint32_t>& idx,
                    std::vector<uint32_t>& keys);

namespace detail {
void collectAtLeastScalar(const float* x, size_t n, uint32_t t, uint32_t first,
                          std::vector<uint32_t>& idx, std::vector<uint32_t>& keys);
size_t collectAtLeastAvx2(const float* x, size_t n, uint32_t t, std::vector<uint32_t>& idx,
                          std::vector<uint32_t>& keys);  // a multiple of 8; returns how many
}  // namespace detail

}  // namespace tutti::compress
