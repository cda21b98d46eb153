// Runs a process group's operations in issue order on one worker thread, so async_op calls
// return at once and overlap with the caller (DDP's backward pass). Two short cuts keep the
// order and save the thread hand-off (a wake-up of 5-50 us, more on a loaded machine):
// operations of at most inlineBytes that find the queue empty and the worker idle run on the
// caller's thread at submit, and a thread that waits for an operation at the head of the
// queue while the worker is idle runs it itself (a synchronous call of any size).
#pragma once

#include <c10/util/intrusive_ptr.h>

#include <condition_variable>
#include <deque>
#include <memory>
#include <mutex>
#include <thread>

#include "work.h"

namespace tutti::torch_backend {

class WorkQueue : public std::enable_shared_from_this<WorkQueue> {
 public:
  explicit WorkQueue(size_t inlineBytes);
  ~WorkQueue();  // runs what is queued, then joins the worker
  WorkQueue(const WorkQueue&) = delete;
  WorkQueue& operator=(const WorkQueue&) = delete;

  void submit(const c10::intrusive_ptr<TuttiWork>& work);
  // Runs work on this thread if it is next and nothing runs; false otherwise.
  bool runIfNext(const TuttiWork* work);

 private:
  void loop();
  // Runs work on this thread as the one running operation (lock held on entry, released on
  // return), then wakes the worker if work was queued meanwhile.
  void runHere(std::unique_lock<std::mutex>& lock, const c10::intrusive_ptr<TuttiWork>& work);

  const size_t inlineBytes_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<c10::intrusive_ptr<TuttiWork>> queue_;
  bool busy_ = false;  // an operation is running (worker or inline)
  bool stop_ = false;
  std::thread worker_;
};

}  // namespace tutti::torch_backend
