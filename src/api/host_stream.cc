#include "host_stream.h"

#include <algorithm>
#include <map>
#include <utility>

#include "api_guard.h"
#include "common/error.h"
#include "common/spin_gate.h"
#include "fork_guard.h"

namespace tutti::api {

namespace {
// The task the calling thread runs (runFront), if any: a task may run another stream's tasks
// (a host function synchronising with a second stream helps run them), so it nests.
struct RunningTask {
  const HostStream* stream = nullptr;
  uint64_t position = 0;
};
thread_local RunningTask tlsRunning;
}  // namespace

HostStream::HostStream() : forkGeneration_(forkGeneration()), worker_([this] { work(); }) {}

void HostStream::checkUsableHere() const {
  if (forkGeneration_ != forkGeneration())
    fail(tuttiInvalidUsage, "the stream was made by process ", creatorPid_,
         " before a fork; its worker thread does not exist in process ", ::getpid(),
         " (make a new stream here)");
}

HostStream::~HostStream() { close(); }

uint64_t HostStream::enqueue(Task task) {
  uint64_t position = 0;
  bool wake = true;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (closing_) fail(tuttiInvalidUsage, "the stream was destroyed");
    queue_.push_back(std::move(task));
    position = ++enqueued_;
    // A worker in a timed sleep finds the task within kLazyWake; a waiter may run it sooner.
    wake = !(workerAsleep_ && timedSleep_);
  }
  if (wake) workCv_.notify_one();
  return position;
}

uint64_t HostStream::lastPosition() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return enqueued_;
}

bool HostStream::finished(uint64_t position) const {
  std::lock_guard<std::mutex> lock(mutex_);
  return finished_ >= position;
}

uint64_t HostStream::runningHere() const {
  return tlsRunning.stream == this ? tlsRunning.position : 0;
}

HostStream::Waiting::Waiting(std::atomic<int>& waiters) : waiters_(waiters) {
  waiters_.fetch_add(1, std::memory_order_relaxed);
}

HostStream::Waiting::~Waiting() { waiters_.fetch_sub(1, std::memory_order_relaxed); }

void HostStream::waitFor(uint64_t position, bool help) {
  std::unique_lock<std::mutex> lock(mutex_);
  // Waiting for the newest task before it finished: enqueue, then synchronise.
  if (position == enqueued_ && finished_ < position) ++syncStreak_;
  if (finished_ >= position) return;
  Waiting waiting(waiters_);  // the worker may spin now
  while (finished_ < position) {
    if ((help || workerGone_) && (workerAsleep_ || workerGone_) && !running_ && !queue_.empty()) {
      SpinGate mine(nullptr);  // a waiter running the call itself may spin
      runFront(lock);
    } else {
      changed_.wait(lock);
    }
  }
}

HostStream::Failure HostStream::failureUpTo(uint64_t position, bool clear) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (failure_.code == tuttiSuccess || failure_.position > position) return {};
  Failure f = failure_;
  if (clear) failure_ = {};
  return f;
}

void HostStream::close() {
  {
    std::unique_lock<std::mutex> lock(mutex_);
    closing_ = true;
    Waiting waiting(waiters_);
    while (finished_ < enqueued_) {
      if (workerGone_ && !running_ && !queue_.empty())
        runFront(lock);  // nobody else will
      else
        changed_.wait(lock);
    }
  }
  workCv_.notify_one();  // the worker, asleep on an empty queue, sees closing_ and ends
  if (!worker_.joinable()) return;
  if (worker_.get_id() == std::this_thread::get_id())
    worker_.detach();  // the last reference went inside one of its own tasks
  else
    worker_.join();
}

void HostStream::work() {
  std::unique_lock<std::mutex> lock(mutex_);
  auto ready = [&] {
    return !running_ && (!queue_.empty() || (closing_ && finished_ >= enqueued_));
  };
  for (;;) {
    workerAsleep_ = true;
    bool timed = false;
    while (!ready()) {
      if (syncStreak_ >= kLazyStreak) {
        sleepTimed(lock, ready);  // until ready, or idle for long enough
        timed = true;
      } else {
        workCv_.wait(lock);  // woken by an enqueue (or a helper's end): look again
      }
    }
    workerAsleep_ = false;
    if (queue_.empty()) return;
    if (timed) syncStreak_ = 0;  // found by a timed wake-up: nobody synchronised at once
    SpinGate gate(&waiters_);    // the caller may be computing: spin only while it waits
    runFront(lock);
  }
}

template <typename Ready>
void HostStream::sleepTimed(std::unique_lock<std::mutex>& lock, Ready& ready) {
  timedSleep_ = true;
  // While a helper runs a long call, each wake-up finding it still running doubles the sleep
  // (up to kLazyWakeMax): a 64 MiB call would otherwise see a wake-up every kLazyWake.
  auto sleep = kLazyWake;
  for (int idle = 0; !ready() && idle < kLazyIdleWakes;) {
    const uint64_t before = enqueued_;
    workCv_.wait_for(lock, sleep);
    sleep = running_ ? std::min(2 * sleep, kLazyWakeMax) : kLazyWake;
    if (!running_ && enqueued_ == before && queue_.empty()) ++idle;  // one idle wake-up
  }
  timedSleep_ = false;
  if (!ready()) syncStreak_ = 0;  // idle: enqueues wake the worker again
}

// A task that ends its thread (pthread_exit inside a host function: an interpreter finalising
// while the function waits for its lock ends threads that way) still counts as finished, as a
// failure, so that waiters and close() do not wait for it for ever; when the thread was the
// worker, the tasks after it are run by waiters and close() (workerGone_).
HostStream::ThreadExitGuard::~ThreadExitGuard() {
  if (!armed) return;
  std::lock_guard<std::mutex> lock(stream.mutex_);
  stream.running_ = false;
  ++stream.finished_;
  if (stream.worker_.get_id() == std::this_thread::get_id()) stream.workerGone_ = true;
  if (stream.failure_.code == tuttiSuccess)
    stream.failure_ = Failure{
        tuttiInternalError, "a task of the stream ended the thread that ran it", stream.finished_};
  stream.changed_.notify_all();
}

void HostStream::runFront(std::unique_lock<std::mutex>& lock) {
  Task task = std::move(queue_.front());
  queue_.pop_front();
  running_ = true;
  const RunningTask outer = std::exchange(tlsRunning, RunningTask{this, finished_ + 1});
  lock.unlock();
  ThreadExitGuard exiting{*this};
  tuttiResult_t code = task();
  exiting.armed = false;
  tlsRunning = outer;
  std::string text = code == tuttiSuccess ? std::string() : threadLastError();
  task = nullptr;  // what it holds goes before the task counts as finished
  lock.lock();
  running_ = false;
  ++finished_;
  if (code != tuttiSuccess && failure_.code == tuttiSuccess)
    failure_ = Failure{code, std::move(text), finished_};
  changed_.notify_all();  // waiters
  // A helper ran it while tasks queued up behind it: the worker may take them now. (The
  // worker itself needs no wake-up: it looks at the queue when it returns.)
  if (!queue_.empty()) workCv_.notify_one();
}

namespace {

// Never destroyed: at exit a stream that was not destroyed is abandoned with its worker (the
// process ends it), as a thread of the caller's would be. Destroying the registry at exit would
// wait for the tasks in flight, and a task completing a framework's work then may run code of
// an interpreter that is shutting down (a torch future's Python callback aborts the process
// there).
std::mutex& registryMutex() {
  static auto* m = new std::mutex;
  return *m;
}
std::map<const void*, std::shared_ptr<HostStream>>& registry() {
  static auto* r = new std::map<const void*, std::shared_ptr<HostStream>>;
  return *r;
}

}  // namespace

std::shared_ptr<HostStream> hostStreamOf(tuttiStream_t stream) {
  if (stream == nullptr) return nullptr;
  std::lock_guard<std::mutex> lock(registryMutex());
  auto it = registry().find(stream);
  return it == registry().end() ? nullptr : it->second;
}

tuttiStream_t registerHostStream(std::shared_ptr<HostStream> stream) {
  tuttiStream_t handle = stream.get();
  std::lock_guard<std::mutex> lock(registryMutex());
  registry().emplace(handle, std::move(stream));
  return handle;
}

std::shared_ptr<HostStream> unregisterHostStream(tuttiStream_t stream) {
  std::lock_guard<std::mutex> lock(registryMutex());
  auto it = registry().find(stream);
  if (it == registry().end()) return nullptr;
  std::shared_ptr<HostStream> s = std::move(it->second);
  registry().erase(it);
  return s;
}

}  // namespace tutti::api
