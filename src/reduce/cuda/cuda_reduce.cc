// Argument checks and error reporting for the device kernels (the launches live in
// cuda_kernels.cu).
#include "reduce/cuda/cuda_reduce.h"

#include "common/dtype.h"
#include "common/error.h"
#include "reduce/cuda/cuda_kernels.h"

namespace tutti::reduce {
namespace {

// No bitwise op on a floating type (the kernels have none).
void checkApplies(const char* call, tuttiDataType_t dtype, tuttiRedOp_t op) {
  TUTTI_CHECK_ARG(opAppliesTo(dtype, op), call, ": op ", opName(op), " is not defined on ",
                  dtypeName(dtype), " (bitwise ops take integer types only)");
}

void check(int err, const char* call, size_t count, tuttiDataType_t dtype) {
  if (err == 0) return;
  fail(tuttiSystemError, call, ": kernel launch failed for ", count, " x ", dtypeName(dtype), ": ",
       cudadetail::errorName(err), " (", cudadetail::errorString(err), ")");
}

}  // namespace

void reduceCuda(void* dst, const void* a, const void* b, size_t count, tuttiDataType_t dtype,
                tuttiRedOp_t op, void* stream) {
  TUTTI_CHECK_ARG(dtypeValid(dtype), "reduceCuda: invalid datatype ", static_cast<int>(dtype));
  TUTTI_CHECK_ARG(opValid(op) && op != tuttiAvg, "reduceCuda: invalid op ", static_cast<int>(op),
                  op == tuttiAvg ? " (tuttiAvg: reduce with tuttiSum, then divideCuda())" : "");
  checkApplies("reduceCuda", dtype, op);
  if (count == 0) return;
  TUTTI_CHECK_ARG(dst && a && b, "reduceCuda: null buffer with count ", count);
  check(cudadetail::launchReduce(dst, a, b, count, dtype, op, stream), "reduceCuda", count, dtype);
}

void reduceManyCuda(void* dst, std::span<const void* const> srcs, size_t count,
                    tuttiDataType_t dtype, tuttiRedOp_t op, int64_t divisor,
                    const uint32_t* abortFlag, void* stream) {
  static_assert(kMaxReduceSources == cudadetail::kMaxSources);
  TUTTI_CHECK_ARG(dtypeValid(dtype), "reduceManyCuda: invalid datatype ", static_cast<int>(dtype));
  TUTTI_CHECK_ARG(opValid(op) && op != tuttiAvg, "reduceManyCuda: invalid op ",
                  static_cast<int>(op));
  checkApplies("reduceManyCuda", dtype, op);
  TUTTI_CHECK_ARG(!srcs.empty() && srcs.size() <= cudadetail::kMaxSources,
                  "reduceManyCuda: ", srcs.size(), " sources (1..", cudadetail::kMaxSources, ")");
  TUTTI_CHECK_ARG(divisor >= 1, "reduceManyCuda: divisor must be positive, got ", divisor);
  if (count == 0) return;
  cudadetail::ManySources src{};
  for (size_t k = 0; k < srcs.size(); ++k) src.p[k] = srcs[k];
  check(cudadetail::launchReduceMany(dst, src, static_cast<int>(srcs.size()), count, dtype, op,
                                     divisor, abortFlag, stream),
        "reduceManyCuda", count, dtype);
}

void divideCuda(void* dst, size_t count, tuttiDataType_t dtype, int64_t divisor, void* stream) {
  TUTTI_CHECK_ARG(dtypeValid(dtype), "divideCuda: invalid datatype ", static_cast<int>(dtype));
  TUTTI_CHECK_ARG(divisor > 0, "divideCuda: divisor must be positive, got ", divisor);
  if (count == 0 || divisor == 1) return;
  TUTTI_CHECK_ARG(dst != nullptr, "divideCuda: null buffer with count ", count);
  check(cudadetail::launchDivide(dst, count, dtype, divisor, stream), "divideCuda", count, dtype);
}

}  // namespace tutti::reduce
