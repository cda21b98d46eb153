#include "comm_hooks.h"

#include <vector>

namespace tutti::torch_backend {

c10::intrusive_ptr<c10::ivalue::Future> AvgCommHook::runHook(c10d::GradBucket& bucket) {
  std::vector<at::Tensor> tensors{bucket.getBufferRef()};
  c10d::AllreduceOptions opts;
  opts.reduceOp = c10d::ReduceOp::AVG;
  return state_->allreduce(tensors, opts)->getFuture();
}

c10::intrusive_ptr<c10::ivalue::Future> CompressedCommHook::runHook(c10d::GradBucket& bucket) {
  at::Tensor tensor = bucket.getBufferRef();
  auto work = state_.group->allreduceCompressed(
      tensor, state_.compressor, state_.keyBase + bucket.getIndex(), state_.errorFeedback);
  const double size = state_.group->getSize();
  auto future = work->getFuture();
  return future->then(
      [size](c10::ivalue::Future& done) {
        at::Tensor sum = done.value().toTensorVector()[0];
        return c10::IValue(sum.div_(size));
      },
      c10::TensorType::get());
}

}  // namespace tutti::torch_backend
