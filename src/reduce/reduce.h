// Host reduction kernels for every datatype and op, vectorised (AVX2 / AVX-512 chosen at run
// time); float16 / bfloat16 go through float32 with round-to-nearest-even.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

#include "tutti/tutti.h"

namespace tutti::reduce {

// dst[i] = a[i] (op) b[i] for i < count. dst may alias a or b exactly. op must not be
// tuttiAvg (use tuttiSum, then divide()).
void reduce(void* dst, const void* a, const void* b, size_t count, tuttiDataType_t dtype,
            tuttiRedOp_t op);

// The kernel reduce() would run for (dtype, op) on this CPU now: callers that reduce many
// small slices with one (dtype, op) -- the executor's window programs -- look it up once per
// call instead of paying reduce()'s checks and dispatch per slice. Same preconditions.
using Kernel = void (*)(void* dst, const void* a, const void* b, size_t count);
Kernel kernelFor(tuttiDataType_t dtype, tuttiRedOp_t op);

// dst[i] = sum_k weights[k] * srcs[k][i] for i < count, summed in the order k = 0, 1, ...
// (no fused multiply-add): float32 / float16 / bfloat16 in float32 (rounded to the type
// once), float64 in float64. dst may alias any source exactly. Float types only.
void weightedSum(void* dst, std::span<const void* const> srcs, std::span<const double> weights,
                 size_t count, tuttiDataType_t dtype);

// dst[i] /= divisor (finishes tuttiAvg; integer types use truncating division).
void divide(void* dst, size_t count, tuttiDataType_t dtype, int64_t divisor);

// The instruction set the kernels chose on this CPU: "avx512", "avx2" or "scalar".
const char* isaName();

}  // namespace tutti::reduce
