// One operation of the torch backend: a body that runs on the backend's worker thread (or
// inline, see WorkQueue), then completes the c10d::Work (wait(), is_completed(), futures).
#pragma once

#include <ATen/core/ivalue.h>

#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <torch/csrc/distributed/c10d/Work.hpp>
#include <vector>

namespace tutti::torch_backend {

class TuttiWork : public c10d::Work {
 public:
  TuttiWork(int rank, c10d::OpType type, const char* profilingTitle,
            std::vector<at::Tensor> outputs, std::function<void()> body, size_t bytes);

  // Runs the body once and completes the work with its exception, if any.
  void run();
  // Completes the work without running it (a batch ran it, or the queue shut down).
  void complete(std::exception_ptr error);

  bool wait(std::chrono::milliseconds timeout) override;
  // Polling for completion is asynchronous use (WorkQueue::noteAsync).
  bool isCompleted() override;
  std::vector<at::Tensor> result() override { return outputs_; }
  c10::intrusive_ptr<c10::ivalue::Future> getFuture() override;
  size_t bytes() const { return bytes_; }
  // Called by the submitting thread when submit returns to it.
  void markSubmitted();
  // Whether this thread's wait comes right after the submit returned: same thread, under
  // cpuGap of its CPU time since then (the caller did no work in between; time it spent
  // descheduled on a busy machine does not count) and under wallGap (nor did it sleep).
  bool waitedRightAway(std::chrono::microseconds cpuGap, std::chrono::microseconds wallGap) const;
  // The queue that runs this work: wait() runs it on the waiting thread when it is next.
  void setQueue(std::weak_ptr<class WorkQueue> queue) { queue_ = std::move(queue); }
  // Called first by wait(), isCompleted() and getFuture() (pending point-to-point work is
  // flushed into a group there).
  std::function<void()> beforeUse;
  // Called when wait() times out (the backend aborts its communicator).
  std::function<void()> onTimeout;
  // wait() without a timeout waits this long (the group's setTimeout; 0: for ever).
  std::chrono::milliseconds defaultTimeout{0};

 private:
  std::vector<at::Tensor> outputs_;
  std::function<void()> body_;
  std::weak_ptr<class WorkQueue> queue_;
  size_t bytes_;
  std::chrono::steady_clock::time_point submittedAt_{};
  std::chrono::nanoseconds submitterCpu_{0};
  std::thread::id submitter_;
  void markFuture(std::exception_ptr error);
  std::mutex futureMu_;
  c10::intrusive_ptr<c10::ivalue::Future> future_;  // made on first getFuture()
  bool futureMarked_ = false;
};

}  // namespace tutti::torch_backend
