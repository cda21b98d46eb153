#include "work.h"

#include <stdexcept>

namespace tutti::torch_backend {

TuttiWork::TuttiWork(int rank, c10d::OpType type, const char* profilingTitle,
                     std::vector<at::Tensor> outputs)
    : c10d::Work(rank, type, profilingTitle), outputs_(std::move(outputs)) {}

TuttiWork::~TuttiWork() { tuttiEventDestroy(event_); }

void TuttiWork::complete(std::exception_ptr error) {
  finish(error);
  std::lock_guard lock(futureMu_);
  if (future_ && !futureMarked_) markFuture(error);
}

// Under futureMu_: exactly one of complete() and getFuture() marks the future.
void TuttiWork::markFuture(std::exception_ptr error) {
  futureMarked_ = true;
  if (error)
    future_->setError(error);
  else
    future_->markCompleted(c10::IValue(outputs_));
}

c10::intrusive_ptr<c10::ivalue::Future> TuttiWork::getFuture() {
  if (beforeUse) beforeUse();
  if (auto u = syncUse_.lock()) u->async();  // DDP's hooks: asynchronous use
  std::lock_guard lock(futureMu_);
  if (future_) return future_;
  future_ = c10::make_intrusive<c10::ivalue::Future>(c10::ListType::create(c10::TensorType::get()));
  bool done;
  std::exception_ptr error;
  {
    std::lock_guard workLock(mutex_);
    done = completed_;
    error = exception_;
  }
  if (done) markFuture(error);  // completed before anyone asked: the future is born complete
  return future_;
}

bool TuttiWork::isCompleted() {
  if (beforeUse) beforeUse();
  if (auto u = syncUse_.lock()) u->async();
  return c10d::Work::isCompleted();
}

bool TuttiWork::wait(std::chrono::milliseconds timeout) {
  if (beforeUse) beforeUse();
  if (auto u = syncUse_.lock()) u->waited(this, submit_.waitedRightAway());
  if (timeout == kNoTimeout) timeout = defaultTimeout;
  if (event_ != nullptr &&
      (timeout == kNoTimeout || (helpBound != kNoTimeout && timeout >= helpBound)))
    tuttiEventSynchronize(event_);  // the outcome is the work's own, set by its last step
  std::unique_lock lock(mutex_);
  if (timeout == kNoTimeout) {
    cv_.wait(lock, [&] { return completed_; });
  } else if (!cv_.wait_for(lock, timeout, [&] { return completed_; })) {
    lock.unlock();
    if (onTimeout) onTimeout();
    throw std::runtime_error("tutti: operation did not complete within " +
                             std::to_string(timeout.count()) + " ms; the communicator was aborted");
  }
  if (exception_) std::rethrow_exception(exception_);
  return true;
}

}  // namespace tutti::torch_backend
