// torch's dtypes and reduce ops in tutti's terms, or a clear refusal.
#pragma once

#include <ATen/ATen.h>

#include <torch/csrc/distributed/c10d/Types.hpp>

#include "tutti/tutti.h"

namespace tutti::torch_backend {

// float16, bfloat16, float32, float64, int8, uint8, int16, uint16, int32, uint32, int64,
// uint64 and bool (as uint8); any other dtype throws naming it.
tuttiDataType_t dataTypeOf(const at::Tensor& t);

struct Reduction {
  tuttiRedOp_t op = tuttiSum;
  bool premultiply = false;  // PREMUL_SUM: multiply the input by factor, then sum
  double factor = 1.0;
};

// SUM, PRODUCT, MIN, MAX, AVG; on bool SUM is MAX and PRODUCT is MIN (logical or / and, as
// ProcessGroupNCCL maps them); BAND, BOR, BXOR on integer and bool tensors; PREMUL_SUM on
// floating types with a scalar factor. Everything else throws with the reason.
Reduction reductionOf(const c10d::ReduceOp& op, at::ScalarType type);

// Throws unless t is a CPU tensor (tutti's torch backend serves host memory).
void checkCpu(const at::Tensor& t, const char* what);

}  // namespace tutti::torch_backend
