#include "work.h"

#include <stdexcept>

namespace tutti::torch_backend {

TuttiWork::TuttiWork(int rank, c10d::OpType type, const char* profilingTitle,
                     std::vector<at::Tensor> outputs,
                     const std::optional<std::vector<at::Tensor>>& inputs)
    : c10d::Work(rank, type, profilingTitle, inputs ? inputs : std::optional(outputs)),
      outputs_(std::move(outputs)) {}

TuttiWork::~TuttiWork() { tuttiEventDestroy(event_); }

namespace {
int64_t nsSince(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - t0)
      .count();
}
}  // namespace

void TuttiWork::markStarted() {
  int64_t unset = -1;
  if (startedNs_.compare_exchange_strong(unset, nsSince(created_), std::memory_order_relaxed))
    FlightRecorder::get().started(record_);
}

int TuttiWork::sourceRank() const {
  if (!source_) return c10d::Work::sourceRank();  // torch's refusal: not a recv from any source
  if (*source_ < 0)
    throw std::runtime_error(
        "tutti: the receive from any source has not completed yet: wait "
        "for it before asking for its sender");
  return *source_;
}

float TuttiWork::getDuration() const {
  if (!timing_)
    throw std::runtime_error(
        "tutti: getDuration needs timing: call the group's _enable_collectives_timing() before "
        "the operation");
  const int64_t end = finishedNs_.load(std::memory_order_acquire);
  const int64_t start = startedNs_.load(std::memory_order_relaxed);
  if (end < 0 || start < 0)
    throw std::runtime_error("tutti: getDuration: the operation has not completed");
  return static_cast<float>(end - start) / 1e6f;
}

void TuttiWork::complete(std::exception_ptr error) {
  if (wantsStart()) finishedNs_.store(nsSince(created_), std::memory_order_release);
  if (record_ != FlightRecorder::kNone) {
    const int64_t start = startedNs_.load(std::memory_order_relaxed);
    const int64_t end = finishedNs_.load(std::memory_order_relaxed);
    std::optional<double> ms;
    if (timing_ && start >= 0) ms = (end - start) / 1e6;
    FlightRecorder::get().completed(record_, ms);
  }
  finish(error);
  if (hooks_) {
    const int64_t end = finishedNs_.load(std::memory_order_relaxed);
    const int64_t start = startedNs_.load(std::memory_order_relaxed);
    const auto active = std::chrono::duration<float>(start >= 0 ? (end - start) / 1e9f : 0.f);
    hooks_->post(std::make_shared<c10d::WorkInfo>(
        opType_, seq_, created_, created_ + std::chrono::nanoseconds(end), active));
  }
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
