// torch's on-completion hook (Backend::registerOnCompletionHook, ProcessGroup.
// _register_on_completion_hook): called once per completed operation with its c10d::WorkInfo
// (type, sequence number, submit and completion times, time it ran), on a thread of its own in
// completion order, so that a slow hook, or one that takes Python's lock, never holds up the
// operations themselves.
#pragma once

#include <condition_variable>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <torch/csrc/distributed/c10d/Work.hpp>

namespace tutti::torch_backend {

class CompletionHooks {
 public:
  using Hook = std::function<void(std::shared_ptr<c10d::WorkInfo>)>;
  explicit CompletionHooks(Hook hook);
  // Runs the hooks of what was posted, then ends the thread (which finishes them by itself
  // when a hook dropped the last owner of this object).
  ~CompletionHooks();
  CompletionHooks(const CompletionHooks&) = delete;
  CompletionHooks& operator=(const CompletionHooks&) = delete;

  void post(std::shared_ptr<c10d::WorkInfo> info);
  // Waits until the hook ran for everything posted so far (Python's lock released meanwhile
  // when the caller holds it: a Python hook needs it).
  void drain();

 private:
  // What the thread uses: shared with it, so it outlives this object if it must.
  struct State {
    Hook hook;
    std::mutex mu;
    std::condition_variable cv;
    std::deque<std::shared_ptr<c10d::WorkInfo>> queue;
    uint64_t posted = 0;
    uint64_t ran = 0;
    bool stopping = false;
  };
  static void loop(const std::shared_ptr<State>& state);
  std::shared_ptr<State> state_;
  std::thread thread_;
};

}  // namespace tutti::torch_backend
