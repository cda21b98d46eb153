// Internal: per-ISA kernel tables behind reduce::reduce(). Each ISA file fills a table of
// elementwise kernels indexed [dtype][op]; a null entry falls back to the scalar kernel.
// The ISA files are compiled with their own -m flags and must not define functions with
// external linkage other than the table getters below (so that no AVX code can be picked by
// the linker for a baseline caller).
#pragma once

#include <cstddef>

#include "tutti/tutti.h"

namespace tutti::reduce::detail {

using Kernel = void (*)(void* dst, const void* a, const void* b, size_t count);

// Indexed by tuttiRedOp_t: Sum, Prod, Max, Min, then Band, Bor, Bxor (integer types only).
// tuttiAvg's slot stays null (avg is a sum, then divide()), as do the bitwise ops' slots of
// the floating types.
constexpr int kNumKernelOps = tuttiNumOps;
static_assert(tuttiAvg < kNumKernelOps && tuttiBxor < kNumKernelOps);

struct KernelTable {
  Kernel k[tuttiNumTypes][kNumKernelOps];
};

const KernelTable& scalarKernels();
const KernelTable& avx2Kernels();    // requires avx2, fma, f16c
const KernelTable& avx512Kernels();  // requires avx512f, avx512bw

}  // namespace tutti::reduce::detail
