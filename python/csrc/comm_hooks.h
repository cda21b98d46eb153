// DDP communication hooks in C++ (c10d::CppCommHookInterface), registered on a DDP model's
// reducer by tutti.torch.hooks.register_*: no Python runs per bucket, and the bucket's
// future is the tutti work's own.
#pragma once

#include <cstdint>
#include <string>
#include <torch/csrc/distributed/c10d/comm.hpp>

#include "process_group.h"

namespace tutti::torch_backend {

// Each bucket all-reduced with AVG on the group: the division by the group size happens in
// the reduction (DDP's default divides in a pass of its own).
class AvgCommHook : public c10d::CppCommHookInterface<c10::intrusive_ptr<ProcessGroupTutti>> {
 public:
  using CppCommHookInterface::CppCommHookInterface;
  c10::intrusive_ptr<c10::ivalue::Future> runHook(c10d::GradBucket& bucket) override;
};

struct CompressedHookState {
  c10::intrusive_ptr<ProcessGroupTutti> group;
  std::string compressor;  // "topk:ratio=0.01", "qsgd:s=4,b=512", ...
  uint64_t keyBase = 0;    // bucket i uses key keyBase + i (its error-feedback residual)
  bool errorFeedback = true;
};

// Each bucket summed through tuttiAllReduceCompressed under its own key, then divided by the
// group size (as tutti.torch.hooks.compressed_hook does in Python).
class CompressedCommHook : public c10d::CppCommHookInterface<CompressedHookState> {
 public:
  using CppCommHookInterface::CppCommHookInterface;
  c10::intrusive_ptr<c10::ivalue::Future> runHook(c10d::GradBucket& bucket) override;
};

}  // namespace tutti::torch_backend
