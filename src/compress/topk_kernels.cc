// Scalar candidate scan and the dispatch to the AVX2 one.
#include "compress/topk_kernels.h"

#include "compress/qsgd_kernels.h"  // detail::haveAvx2
#include "compress/topk_select.h"

namespace tutti::compress {
namespace detail {

void collectAtLeastScalar(const float* x, size_t n, uint32_t t, uint32_t first,
                          std::vector<uint32_t>& idx, std::vector<uint32_t>& keys) {
  for (size_t i = 0; i < n; ++i) {
    const uint32_t key = magnitudeKey(x[i]);
    if (key >= t) {
      idx.push_back(first + static_cast<uint32_t>(i));
      keys.push_back(key);
    }
  }
}

#if !(defined(__x86_64__) || defined(__i386__))
size_t collectAtLeastAvx2(const float*, size_t, uint32_t, std::vector<uint32_t>&,
                          std::vector<uint32_t>&) {
  return 0;
}
#endif

}  // namespace detail

void collectAtLeast(const float* x, size_t n, uint32_t t, std::vector<uint32_t>& idx,
                    std::vector<uint32_t>& keys) {
  idx.clear();
  keys.clear();
  size_t done = 0;
  if (detail::haveAvx2()) done = detail::collectAtLeastAvx2(x, n, t, idx, keys);
  detail::collectAtLeastScalar(x + done, n - done, t, static_cast<uint32_t>(done), idx, keys);
}

}  // namespace tutti::compress
