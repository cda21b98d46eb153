#include "work_queue.h"

namespace tutti::torch_backend {

WorkQueue::WorkQueue(size_t inlineBytes) : inlineBytes_(inlineBytes) {
  worker_ = std::thread([this] { loop(); });
}

WorkQueue::~WorkQueue() {
  {
    std::lock_guard lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  worker_.join();
}

bool WorkQueue::learnable(const TuttiWork& work) const {
  return work.bytes() > inlineBytes_ && work.bytes() != kNeverAtSubmit;
}

void WorkQueue::submit(const c10::intrusive_ptr<TuttiWork>& work) {
  work->setQueue(weak_from_this());
  std::unique_lock lock(mu_);
  const bool idle = queue_.empty() && !busy_;
  const bool small = work->bytes() <= inlineBytes_;
  const bool learn = learnable(*work);
  if (learn) {
    // The previous larger operation never waited for, or this one queued behind another:
    // asynchronous use.
    if (!lastLargeWaited_ || !idle) syncStreak_ = 0;
    lastLarge_ = work.get();
    lastLargeWaited_ = false;
  }
  if (idle && (small || (learn && syncStreak_ >= kSyncStreak))) {
    ++stats_.atSubmit;
    if (learn) ++stats_.learntSync;
    runHere(lock, work);
    if (learn) work->markSubmitted();  // a synchronous caller's wait comes right after this
    return;
  }
  if (learn) work->markSubmitted();  // before it is visible to the worker and to waiters
  queue_.push_back(work);
  lock.unlock();
  cv_.notify_all();
}

void WorkQueue::noteWait(const TuttiWork* work) {
  if (!learnable(*work)) return;
  const bool early = work->waitedRightAway(kSyncCpuGap, kSyncWallGap);
  std::lock_guard lock(mu_);
  if (work != lastLarge_ || lastLargeWaited_) return;
  lastLargeWaited_ = true;
  syncStreak_ = early ? syncStreak_ + 1 : 0;
}

void WorkQueue::noteAsync() {
  std::lock_guard lock(mu_);
  syncStreak_ = 0;
}

WorkQueue::Stats WorkQueue::stats() {
  std::lock_guard lock(mu_);
  return stats_;
}

bool WorkQueue::runIfNext(const TuttiWork* work) {
  std::unique_lock lock(mu_);
  if (busy_ || queue_.empty() || queue_.front().get() != work) return false;
  auto next = std::move(queue_.front());
  queue_.pop_front();
  ++stats_.byWaiter;
  runHere(lock, next);
  return true;
}

void WorkQueue::runHere(std::unique_lock<std::mutex>& lock,
                        const c10::intrusive_ptr<TuttiWork>& work) {
  busy_ = true;
  lock.unlock();
  work->run();
  lock.lock();
  busy_ = false;
  bool more = !queue_.empty();
  lock.unlock();
  if (more) cv_.notify_all();  // work was queued meanwhile: the worker may take it now
}

void WorkQueue::loop() {
  std::unique_lock lock(mu_);
  for (;;) {
    cv_.wait(lock,
             [&] { return (!queue_.empty() && !busy_) || (stop_ && queue_.empty() && !busy_); });
    if (queue_.empty()) return;  // stopping
    auto work = std::move(queue_.front());
    queue_.pop_front();
    busy_ = true;
    ++stats_.onWorker;
    lock.unlock();
    work->run();
    // The last reference may free tensors, and that can take the GIL: never under mu_ (a
    // thread holding the GIL may be waiting for mu_, e.g. in getFuture).
    work.reset();
    lock.lock();
    busy_ = false;
  }
}

}  // namespace tutti::torch_backend
