// Device (CUDA) reduction kernels: the device twin of reduce/reduce.h. Plain C++ (no CUDA
// syntax): the stream is a cudaStream_t passed as void* (nullptr = the legacy default stream).
// Built only when TUTTI_HAVE_CUDA (target tutti_reduce_cuda).
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

#include "tutti/tutti.h"

namespace tutti::reduce {

// Enqueues dst[i] = a[i] (op) b[i] for i < count on `stream`; returns without synchronising.
// dst, a, b are device (or managed) pointers; dst may alias a or b exactly. Results match
// reduce() bit for bit (integer sum/prod wrap; float16/bfloat16 go through float32 with
// round-to-nearest-even; min/max propagate NaN). op must not be tuttiAvg, nor a bitwise op
// (band, bor, bxor) on a floating type.
// Throws tutti::Error (tuttiInvalidArgument, or tuttiSystemError naming the CUDA error).
void reduceCuda(void* dst, const void* a, const void* b, size_t count, tuttiDataType_t dtype,
                tuttiRedOp_t op, void* stream);

// Enqueues dst[i] /= divisor on `stream` (finishes tuttiAvg; integers truncate).
void divideCuda(void* dst, size_t count, tuttiDataType_t dtype, int64_t divisor, void* stream);

// Enqueues dst[i] = srcs[0][i] (op) srcs[1][i] (op) ... for i < count, folded in that order
// one binary step at a time (bit for bit the host's left-to-right fold), then divided by
// `divisor` when it is > 1 (tuttiAvg: pass tuttiSum and the rank count). dst may alias one
// source exactly. At most 16 sources. When abortFlag (a device-memory word; each block reads
// it once) is non-null and reads non-zero as a block starts, that block reads and writes
// nothing.
void reduceManyCuda(void* dst, std::span<const void* const> srcs, size_t count,
                    tuttiDataType_t dtype, tuttiRedOp_t op, int64_t divisor,
                    const uint32_t* abortFlag, void* stream);
inline constexpr int kMaxReduceSources = 16;

}  // namespace tutti::reduce
