// Internal, included only by the per-ISA kernel files (inside their anonymous namespace, so
// every instantiation has internal linkage and carries that file's instruction set).
// runKernel<K> walks the arrays in vectors of K::kW elements; the tail goes through a
// zero-padded vector on the stack so that it takes exactly the same vector code path.
#pragma once

#include <cstddef>

template <class K>
void runKernel(void* dst, const void* a, const void* b, size_t n) {
  using T = typename K::T;
  constexpr size_t W = K::kW;
  T* d = static_cast<T*>(dst);
  const T* x = static_cast<const T*>(a);
  const T* y = static_cast<const T*>(b);
  size_t i = 0;
  for (; i + 4 * W <= n; i += 4 * W) {
    K::apply(d + i, x + i, y + i);
    K::apply(d + i + W, x + i + W, y + i + W);
    K::apply(d + i + 2 * W, x + i + 2 * W, y + i + 2 * W);
    K::apply(d + i + 3 * W, x + i + 3 * W, y + i + 3 * W);
  }
  for (; i + W <= n; i += W) K::apply(d + i, x + i, y + i);
  if (i < n) {
    T ta[W] = {};
    T tb[W] = {};
    T td[W];
    const size_t rest = (n - i) * sizeof(T);
    __builtin_memcpy(ta, x + i, rest);
    __builtin_memcpy(tb, y + i, rest);
    K::apply(td, ta, tb);
    __builtin_memcpy(d + i, td, rest);
  }
}
