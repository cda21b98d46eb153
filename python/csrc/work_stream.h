// Runs a process group's operations on one tutti host stream (tutti.h, "Host streams"), the
// library's asynchronous path: an operation's tutti calls are enqueued on the stream at submit
// (so they take their place in the communicator's call order at once, and point-to-point
// calls progress independently), with the local tensor work around them -- copies into
// contiguous buffers before, copies back after -- as host functions in stream order. The work
// completes in a last host function that asks the stream (tuttiStreamSynchronize from inside)
// whether the calls before it failed. wait() synchronises with an event recorded after it, so
// a thread that waits while the stream's worker sleeps runs the operation itself, and the
// stream learns synchronous use (enqueue, then wait) as for any C caller.
// An operation may also run now on the caller's thread with blocking calls, when the stream
// has nothing in flight (runNow): the backend does so for synchronous calls and small ones.
#pragma once

#include <c10/util/intrusive_ptr.h>

#include <atomic>
#include <cstdint>
#include <exception>
#include <functional>
#include <mutex>
#include <string>

#include "tutti/tutti.h"
#include "work.h"

namespace tutti::torch_backend {

// One operation: local work before its calls, the calls, local work after them.
struct WorkSteps {
  // Runs in stream order before the calls (tensor copies the calls read); may be empty.
  std::function<void()> before;
  // Issues the operation's tutti calls on `stream` (NULL: blocking) and returns the first
  // failure; on the caller's thread, at submit.
  std::function<tuttiResult_t(tuttiStream_t stream)> issue;
  // Runs in stream order after the calls succeeded (copies out); may be empty.
  std::function<void()> after;
  // Called last with the operation's outcome (a batch completes its members' works).
  std::function<void(std::exception_ptr)> done;
};

class WorkStream {
 public:
  // Called when an operation's tutti call fails (the group marks itself failed); the work
  // fails with "tutti <what> failed: <code>: <the call's error text>".
  using OnFailure = std::function<void()>;
  explicit WorkStream(OnFailure onFailure);
  // Waits for what was submitted, then destroys the stream.
  ~WorkStream();
  WorkStream(const WorkStream&) = delete;
  WorkStream& operator=(const WorkStream&) = delete;

  // Enqueues the operation; the work completes in stream order. what names it in errors.
  void submit(const c10::intrusive_ptr<TuttiWork>& work, const char* what, WorkSteps steps,
              tuttiComm_t comm);
  // Runs the operation on this thread with blocking calls and completes the work; only when
  // nothing is in flight (idle()).
  void runNow(const c10::intrusive_ptr<TuttiWork>& work, const char* what, WorkSteps steps,
              tuttiComm_t comm);
  // Whether every operation submitted so far has completed (its work; the host function that
  // completed it may still be releasing its tensors).
  bool idle() const { return inFlight_.load(std::memory_order_acquire) == 0; }
  // Waits until every operation submitted so far has completed (their failures went to
  // their works).
  void synchronize();

  // Where operations ran (tests and tools/torch-bench.py): on the caller's thread at submit
  // (runNow), on the submitting thread later (it waited while the stream's worker slept), on
  // the stream's worker.
  struct Stats {
    uint64_t atSubmit = 0;
    uint64_t byWaiter = 0;
    uint64_t onWorker = 0;
  };
  Stats stats();

 private:
  struct Pending;
  static tuttiResult_t runBefore(void* pending);
  static tuttiResult_t finish(void* pending);
  // The error of a failed call, as the backend reports it, marking the group failed.
  std::exception_ptr failure(const char* what, tuttiResult_t r, const std::string& text);
  void count(uint64_t Stats::*where);

  OnFailure onFailure_;
  tuttiStream_t stream_ = nullptr;
  std::atomic<uint64_t> inFlight_{0};  // submitted, not yet completed
  std::mutex mu_;
  Stats stats_;
};

}  // namespace tutti::torch_backend
