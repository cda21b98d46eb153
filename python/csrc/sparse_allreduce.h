// The sum of sparse COO tensors over a group, as gloo computes it: every rank's coalesced
// indices and values are gathered in rank order (tuttiAllGather of the counts, then
// tuttiAllGatherV), concatenated and coalesced. Blocking calls on the communicator.
#pragma once

#include <ATen/ATen.h>

#include "tutti/tutti.h"

namespace tutti::torch_backend {

// out = the sum of every rank's t (sparse COO, same sizes on every rank). A first failing
// call's result is returned (out untouched); ranks whose tensors differ in sizes, sparse
// dimensions or dtype all throw std::invalid_argument naming the difference.
tuttiResult_t sparseAllReduceSum(const at::Tensor& t, tuttiComm_t comm, int size, at::Tensor& out);

}  // namespace tutti::torch_backend
