// A host stream (tuttiStreamCreate): calls run one after another, in the order they were
// enqueued, on the stream's own worker thread, which sleeps on a condition variable while the
// stream is empty (no core is spent on an idle stream), or on a thread waiting for the stream
// that finds the worker asleep (waitFor's help). Synchronous use is learnt: after kLazyStreak
// waits for the newest task before it finished (enqueue, then synchronise), an enqueue no
// longer wakes the worker, so the synchronising thread runs the call itself with no thread
// hand-off; the worker sleeps kLazyWake at a time instead (doubling up to kLazyWakeMax while a
// helper's call runs), so a task nobody waits for still starts within kLazyWake (within
// kLazyWakeMax just after a long call a helper ran), a task found that way ends the learning,
// and the worker goes back to sleeping until woken after kLazyIdleWakes empty wake-ups.
// Knows nothing of communicators: a call is a task that returns a result code and leaves its
// text in threadLastError() (api_guard.h). The first failure stays until a synchronise reports
// it; events are positions in the stream.
#pragma once

#include <unistd.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "tutti/tutti.h"

namespace tutti::api {

class HostStream {
 public:
  using Task = std::function<tuttiResult_t()>;
  static constexpr int kLazyStreak = 2;
  static constexpr std::chrono::microseconds kLazyWake{200};
  static constexpr std::chrono::microseconds kLazyWakeMax{6400};
  static constexpr int kLazyIdleWakes = 50;
  struct Failure {
    tuttiResult_t code = tuttiSuccess;
    std::string text;
    uint64_t position = 0;  // the failed task's position (1 = the stream's first task)
  };

  HostStream();
  // Waits for the tasks enqueued so far, then ends the worker.
  ~HostStream();
  HostStream(const HostStream&) = delete;
  HostStream& operator=(const HostStream&) = delete;

  // Appends a task; returns its position. Throws tuttiInvalidUsage once the stream is closed.
  uint64_t enqueue(Task task);
  // The position of the last task enqueued (0 before the first): what an event records.
  uint64_t lastPosition() const;
  // Whether every task up to `position` has finished.
  bool finished(uint64_t position) const;
  // The position of the task of this stream that the calling thread is running (a host
  // function asking about its own stream), 0 when it runs none.
  uint64_t runningHere() const;
  // Blocks until every task up to `position` has finished. help: while the worker is asleep
  // (it found the queue empty and has not woken yet), the waiting thread runs the queued tasks
  // itself (in order, one runner at a time), sparing the two thread hand-offs a short call
  // would cost; a busy worker keeps its queue. For callers outside a group only (a task may
  // run calls of the caller's library).
  void waitFor(uint64_t position, bool help = false);
  // The first failure at or before `position` not yet cleared, if any (code tuttiSuccess
  // when none). clear: a synchronise reports it once, and later calls start afresh.
  Failure failureUpTo(uint64_t position, bool clear);
  // Waits for the tasks enqueued so far, refuses new ones and ends the worker (destroy).
  void close();
  // Throws tuttiInvalidUsage in a child made by fork() after the stream (fork_guard.h): the
  // child has no copy of its worker thread, so a task enqueued there would never run.
  void checkUsableHere() const;

 private:
  void work();
  // The learnt synchronous use's sleep (see above): kLazyWake at a time until `ready` or
  // kLazyIdleWakes empty wake-ups; lock held.
  template <typename Ready>
  void sleepTimed(std::unique_lock<std::mutex>& lock, Ready& ready);
  // Runs the front task with the lock released (running_ set meanwhile) and records its end.
  void runFront(std::unique_lock<std::mutex>& lock);
  struct ThreadExitGuard {
    HostStream& stream;
    bool armed = true;
    ~ThreadExitGuard();
  };

  // Counts a thread waiting for the stream (waitFor, close) while alive.
  class Waiting {
   public:
    explicit Waiting(std::atomic<int>& waiters);
    ~Waiting();
    Waiting(const Waiting&) = delete;
    Waiting& operator=(const Waiting&) = delete;

   private:
    std::atomic<int>& waiters_;
  };

  mutable std::mutex mutex_;
  mutable std::condition_variable changed_;  // a task finished (waiters)
  std::condition_variable workCv_;           // work for the worker, or closing
  std::deque<Task> queue_;
  uint64_t enqueued_ = 0;
  uint64_t finished_ = 0;
  bool running_ = false;       // a task runs (on the worker or on a helping waiter)
  bool workerAsleep_ = false;  // the worker waits for work (a waiter may help)
  bool timedSleep_ = false;    // it sleeps kLazyWake at a time: an enqueue need not wake it
  int syncStreak_ = 0;         // synchronises on the newest unfinished task since async use
  bool closing_ = false;
  bool workerGone_ = false;  // the worker's thread ended inside a task (ThreadExitGuard)
  Failure failure_;
  // Threads blocked in waitFor or close: the worker's calls spin while a network peer is late
  // only while some thread waits (common/spin_gate.h); otherwise the caller may be computing
  // on the core the spin would take.
  std::atomic<int> waiters_{0};
  const pid_t creatorPid_ = ::getpid();
  const uint64_t forkGeneration_;
  std::thread worker_;  // last: starts after the state above exists
};

// The host streams alive in this process: tuttiStream_t values that tuttiStreamCreate made
// (any other non-NULL value is a cudaStream_t, or ignored for host buffers).
std::shared_ptr<HostStream> hostStreamOf(tuttiStream_t stream);
tuttiStream_t registerHostStream(std::shared_ptr<HostStream> stream);
// Removes it from the registry and returns it (null when it is not a live host stream).
std::shared_ptr<HostStream> unregisterHostStream(tuttiStream_t stream);

}  // namespace tutti::api
