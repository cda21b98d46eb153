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

CompletionHooks::CompletionHooks(Hook hook) : hook_(std::move(hook)) {
  thread_ = std::thread([this] { loop(); });
}

CompletionHooks::~CompletionHooks() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  withoutPythonLock([this] { thread_.join(); });
}

void CompletionHooks::post(std::shared_ptr<c10d::WorkInfo> info) {
  {
    std::lock_guard lock(mu_);
    queue_.push_back(std::move(info));
    ++posted_;
  }
  cv_.notify_all();
}

void CompletionHooks::drain() {
  withoutPythonLock([this] {
    std::unique_lock lock(mu_);
    const uint64_t target = posted_;
    cv_.wait(lock, [&] { return ran_ >= target; });
  });
}

void CompletionHooks::loop() {
  std::unique_lock lock(mu_);
  for (;;) {
    cv_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
    if (queue_.empty()) return;  // stopping, nothing left
    auto info = std::move(queue_.front());
    queue_.pop_front();
    lock.unlock();
    try {
      if (!interpreterFinalizing()) hook_(std::move(info));
    } catch (const std::exception& e) {
      LOG(ERROR) << "tutti: an on-completion hook threw: " << e.what();  // as NCCL's: logged
    }
    lock.lock();
    ++ran_;
    cv_.notify_all();
  }
}

}  // namespace tutti::torch_backend
