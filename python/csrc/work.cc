#include "work.h"

#include <time.h>

#include <stdexcept>

#include "work_queue.h"

namespace tutti::torch_backend {

TuttiWork::TuttiWork(int rank, c10d::OpType type, const char* profilingTitle,
                     std::vector<at::Tensor> outputs, std::function<void()> body, size_t bytes)
    : c10d::Work(rank, type, profilingTitle),
      outputs_(std::move(outputs)),
      body_(std::move(body)),
      bytes_(bytes) {}

void TuttiWork::run() {
  std::exception_ptr error;
  try {
    body_();
  } catch (...) {
    error = std::current_exception();
  }
  body_ = nullptr;  // drops the tensors the body holds
  complete(error);
}

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
  if (auto queue = queue_.lock()) queue->noteAsync();  // DDP's hooks: asynchronous use
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

namespace {
std::chrono::nanoseconds threadCpuTime() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return std::chrono::seconds(ts.tv_sec) + std::chrono::nanoseconds(ts.tv_nsec);
}
}  // namespace

void TuttiWork::markSubmitted() {
  submittedAt_ = std::chrono::steady_clock::now();
  submitterCpu_ = threadCpuTime();
  submitter_ = std::this_thread::get_id();
}

bool TuttiWork::waitedRightAway(std::chrono::microseconds cpuGap,
                                std::chrono::microseconds wallGap) const {
  return std::this_thread::get_id() == submitter_ && threadCpuTime() - submitterCpu_ < cpuGap &&
         std::chrono::steady_clock::now() - submittedAt_ < wallGap;
}

bool TuttiWork::isCompleted() {
  if (beforeUse) beforeUse();
  if (auto queue = queue_.lock()) queue->noteAsync();
  return c10d::Work::isCompleted();
}

bool TuttiWork::wait(std::chrono::milliseconds timeout) {
  if (beforeUse) beforeUse();
  if (auto queue = queue_.lock()) {
    queue->noteWait(this);
    queue->runIfNext(this);
  }
  if (timeout == kNoTimeout) timeout = defaultTimeout;
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
