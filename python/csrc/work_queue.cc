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

void WorkQueue::submit(const c10::intrusive_ptr<TuttiWork>& work) {
  work->setQueue(weak_from_this());
  std::unique_lock lock(mu_);
  if (work->bytes() <= inlineBytes_ && queue_.empty() && !busy_) {
    runHere(lock, work);
    return;
  }
  queue_.push_back(work);
  lock.unlock();
  cv_.notify_all();
}

bool WorkQueue::runIfNext(const TuttiWork* work) {
  std::unique_lock lock(mu_);
  if (busy_ || queue_.empty() || queue_.front().get() != work) return false;
  auto next = std::move(queue_.front());
  queue_.pop_front();
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
    lock.unlock();
    work->run();
    lock.lock();
    busy_ = false;
  }
}

}  // namespace tutti::torch_backend
