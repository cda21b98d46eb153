// Weighted sums of the neighbour all-reduce (reduce.h). Compiled with -ffp-contract=off: the
// products and sums are rounded one by one, in the documented order, on every CPU, so
// every rank and every test reference gets the same bits.
#include <algorithm>
#include <cstring>
#include <vector>

#include "common/error.h"
#include "reduce/reduce.h"
#include "scalar_ops.h"

namespace tutti::reduce {
namespace {

// Elements per block: the accumulator stays in L1 while the sources stream through.
constexpr size_t kBlock = 1024;

template <typename Acc, typename Load, typename Store>
void mixBlocks(void* dst, std::span<const void* const> srcs, std::span<const double> weights,
               size_t count, size_t es, Load load, Store store) {
  Acc acc[kBlock];
  Acc w[64];
  const size_t m = srcs.size();
  std::vector<Acc> wv;
  Acc* ws = w;
  if (m > 64) {
    wv.resize(m);
    ws = wv.data();
  }
  for (size_t k = 0; k < m; ++k) ws[k] = static_cast<Acc>(weights[k]);
  for (size_t off = 0; off < count; off += kBlock) {
    const size_t len = std::min(kBlock, count - off);
    const auto* s0 = static_cast<const std::byte*>(srcs[0]) + off * es;
    for (size_t i = 0; i < len; ++i) acc[i] = ws[0] * load(s0, i);
    for (size_t k = 1; k < m; ++k) {
      const auto* sk = static_cast<const std::byte*>(srcs[k]) + off * es;
      const Acc wk = ws[k];
      for (size_t i = 0; i < len; ++i) acc[i] = acc[i] + wk * load(sk, i);
    }
    auto* d = static_cast<std::byte*>(dst) + off * es;
    for (size_t i = 0; i < len; ++i) store(d, i, acc[i]);
  }
}

template <typename T>
T loadAs(const std::byte* p, size_t i) {
  T v;
  std::memcpy(&v, p + i * sizeof(T), sizeof(T));
  return v;
}
template <typename T>
void storeAs(std::byte* p, size_t i, T v) {
  std::memcpy(p + i * sizeof(T), &v, sizeof(T));
}

}  // namespace

void weightedSum(void* dst, std::span<const void* const> srcs, std::span<const double> weights,
                 size_t count, tuttiDataType_t dtype) {
  TUTTI_CHECK_ARG(srcs.size() == weights.size() && !srcs.empty(), "weightedSum: ", srcs.size(),
                  " sources for ", weights.size(), " weights");
  if (count == 0) return;
  switch (dtype) {
    case tuttiFloat32:
      mixBlocks<float>(dst, srcs, weights, count, 4, loadAs<float>, storeAs<float>);
      return;
    case tuttiFloat64:
      mixBlocks<double>(dst, srcs, weights, count, 8, loadAs<double>, storeAs<double>);
      return;
    case tuttiFloat16:
      mixBlocks<float>(
          dst, srcs, weights, count, 2,
          [](const std::byte* p, size_t i) {
            return detail::halfBitsToFloat(loadAs<uint16_t>(p, i));
          },
          [](std::byte* p, size_t i, float v) { storeAs(p, i, detail::floatToHalfBits(v)); });
      return;
    case tuttiBfloat16:
      mixBlocks<float>(
          dst, srcs, weights, count, 2,
          [](const std::byte* p, size_t i) {
            return detail::bf16BitsToFloat(loadAs<uint16_t>(p, i));
          },
          [](std::byte* p, size_t i, float v) { storeAs(p, i, detail::floatToBf16Bits(v)); });
      return;
    default:
      fail(tuttiInvalidArgument, "weightedSum: datatype ", dtypeName(dtype),
           " is not a floating type");
  }
}

}  // namespace tutti::reduce
