#include "completion_hooks.h"

#include <Python.h>
#include <c10/util/Logging.h>

#include "python_state.h"

namespace tutti::torch_backend {

namespace {
// Runs wait() with Python's lock released when this thread holds it.
template <typename Wait>
void withoutPythonLock(Wait wait) {
  if (Py_IsInitialized() && PyGILState_Check()) {
    PyThreadState* state = PyEval_SaveThread();
    wait();
    PyEval_RestoreThread(state);
  } else {
    wait();
  }
}
}  // namespace

CompletionHooks::CompletionHooks(Hook hook) : state_(std::make_shared<State>()) {
  state_->hook = std::move(hook);
  thread_ = std::thread([state = state_] { loop(state); });
}

CompletionHooks::~CompletionHooks() {
  {
    std::lock_guard lock(state_->mu);
    state_->stopping = true;
  }
  state_->cv.notify_all();
  if (thread_.get_id() == std::this_thread::get_id()) {  // a hook dropped the last owner
    thread_.detach();
    return;
  }
  withoutPythonLock([this] { thread_.join(); });
}

void CompletionHooks::post(std::shared_ptr<c10d::WorkInfo> info) {
  {
    std::lock_guard lock(state_->mu);
    state_->queue.push_back(std::move(info));
    ++state_->posted;
  }
  state_->cv.notify_all();
}

void CompletionHooks::drain() {
  withoutPythonLock([this] {
    State& s = *state_;
    std::unique_lock lock(s.mu);
    const uint64_t target = s.posted;
    s.cv.wait(lock, [&] { return s.ran >= target; });
  });
}

void CompletionHooks::loop(const std::shared_ptr<State>& state) {
  State& s = *state;
  std::unique_lock lock(s.mu);
  for (;;) {
    s.cv.wait(lock, [&] { return s.stopping || !s.queue.empty(); });
    if (s.queue.empty()) return;  // stopping, nothing left
    auto info = std::move(s.queue.front());
    s.queue.pop_front();
    lock.unlock();
    try {
      if (!interpreterFinalizing()) s.hook(std::move(info));
    } catch (const std::exception& e) {
      LOG(ERROR) << "tutti: an on-completion hook threw: " << e.what();  // as NCCL's: logged
    }
    lock.lock();
    ++s.ran;
    s.cv.notify_all();
  }
}

}  // namespace tutti::torch_backend
