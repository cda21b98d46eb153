// Runs a process group's operations in issue order on one worker thread, so async_op calls
// return at once and overlap with the caller (DDP's backward pass). Short cuts keep the order
// and save the thread hand-offs (a wake-up each way, 5-50 us, and far more when the ranks'
// threads outnumber the cores):
// - an operation of at most inlineBytes that finds the queue empty and the worker idle runs
//   on the caller's thread at submit;
// - a thread that waits for the operation at the head of the queue while the worker is idle
//   runs it itself;
// - synchronous use is learnt: when the last kSyncStreak larger operations were each waited
//   for right after their submit returned (dist.all_reduce without async_op: the same thread,
//   having spent almost no CPU time in between), the next one that finds the queue empty and
//   the worker idle runs at submit too, whatever its size. Any sign of asynchronous use -- a
//   future asked for (DDP's hooks), completion polled, a wait that comes later, an operation
//   submitted while another is pending or never waited -- ends it; the price of a wrong guess
//   is one operation that does not overlap.
// Point-to-point work (kNeverAtSubmit) never runs at submit: the caller may be the one who
// has to post the matching operation first.
#pragma once

#include <c10/util/intrusive_ptr.h>

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <thread>

#include "work.h"

namespace tutti::torch_backend {

class WorkQueue : public std::enable_shared_from_this<WorkQueue> {
 public:
  static constexpr size_t kNeverAtSubmit = SIZE_MAX;
  static constexpr int kSyncStreak = 2;
  // "Right after": under kSyncCpuGap of the caller's CPU time and kSyncWallGap of wall time.
  static constexpr std::chrono::microseconds kSyncCpuGap{200};
  static constexpr std::chrono::microseconds kSyncWallGap{20000};

  explicit WorkQueue(size_t inlineBytes);
  ~WorkQueue();  // runs what is queued, then joins the worker
  WorkQueue(const WorkQueue&) = delete;
  WorkQueue& operator=(const WorkQueue&) = delete;

  void submit(const c10::intrusive_ptr<TuttiWork>& work);
  // Runs work on this thread if it is next and nothing runs; false otherwise.
  bool runIfNext(const TuttiWork* work);
  // What the caller did with a work: waited for it (first wait only) or asked for its future.
  void noteWait(const TuttiWork* work);
  void noteAsync();

  // Where operations ran (tests and tools/torch-bench.py).
  struct Stats {
    uint64_t atSubmit = 0;    // on the caller's thread at submit
    uint64_t byWaiter = 0;    // on a waiting thread (runIfNext)
    uint64_t onWorker = 0;    // on the worker thread
    uint64_t learntSync = 0;  // of atSubmit: larger than inlineBytes (learnt synchronous use)
  };
  Stats stats();

 private:
  void loop();
  // Feeds the synchronous-use detector: above inlineBytes and allowed to run at submit.
  bool learnable(const TuttiWork& work) const;
  // Runs work on this thread as the one running operation (lock held on entry, released on
  // return), then wakes the worker if work was queued meanwhile.
  void runHere(std::unique_lock<std::mutex>& lock, const c10::intrusive_ptr<TuttiWork>& work);

  const size_t inlineBytes_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<c10::intrusive_ptr<TuttiWork>> queue_;
  bool busy_ = false;  // an operation is running (worker or inline)
  bool stop_ = false;
  // Larger operations in a row waited for right after their submit; the last larger one and
  // whether it was waited for.
  int syncStreak_ = 0;
  const TuttiWork* lastLarge_ = nullptr;
  bool lastLargeWaited_ = true;
  Stats stats_;
  std::thread worker_;
};

}  // namespace tutti::torch_backend
