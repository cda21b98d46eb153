// Runs a process group's operations in issue order on one worker thread, so async_op calls
// return at once and overlap with the caller (DDP's backward pass). Operations of at most
// inlineBytes that find the queue empty and the worker idle run on the caller's thread
// instead: same order, no thread hand-off (~10 us of wake-ups) for small calls.
#pragma once

#include <c10/util/intrusive_ptr.h>

#include <condition_variable>
#include <deque>
#include <mutex>
#include <thread>

#include "work.h"

namespace tutti::torch_backend {

class WorkQueue {
 public:
  explicit WorkQueue(size_t inlineBytes);
  ~WorkQueue();  // runs what is queued, then joins the worker
  WorkQueue(const WorkQueue&) = delete;
  WorkQueue& operator=(const WorkQueue&) = delete;

  void submit(const c10::intrusive_ptr<TuttiWork>& work);

 private:
  void loop();

  const size_t inlineBytes_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<c10::intrusive_ptr<TuttiWork>> queue_;
  bool busy_ = false;  // an operation is running (worker or inline)
  bool stop_ = false;
  std::thread worker_;
};

}  // namespace tutti::torch_backend
