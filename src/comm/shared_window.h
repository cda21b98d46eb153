// SharedWindow: a communicator's shared-memory window (transport::Window) as its calls use it.
// The window is made at most once, by the first collective (every rank makes its first
// collective call in the same order, so its creation is collective too); the executor keeps
// its bookkeeping of the window's calls here (exec::WindowState); and each collective's call
// tag goes into the window's tag slot of its call number, for the peers' mismatch checks
// (exec::ExecOptions::windowTags). It knows nothing of collectives or of the communicator.
#pragma once

#include <algorithm>
#include <array>
#include <atomic>
#include <cstddef>
#include <memory>

#include "comm/call_tag.h"
#include "exec/executor.h"
#include "interfaces/window.h"

namespace tutti {

class SharedWindow {
 public:
  // Whether the window was tried (made, or found not to apply) already; marks it tried.
  bool firstTry() {
    bool first = !tried_;
    tried_ = true;
    return first;
  }
  void adopt(std::unique_ptr<transport::Window> window) {
    window_ = std::move(window);
    published_.store(window_.get(), std::memory_order_release);
  }
  transport::Window* get() const { return window_.get(); }
  explicit operator bool() const { return window_ != nullptr; }
  size_t bytes() const { return window_ ? window_->bytes() : 0; }
  // Whether the window was tried (made, or found not to apply) already.
  bool tried() const { return tried_; }
  // The direct algorithms' chunk in the window: at most maxChunk (0: the whole window).
  void setMaxChunk(size_t maxChunk) { maxChunk_ = maxChunk; }
  size_t chunkBytes() const { return chunkBytesOf(bytes()); }
  // ... in a window of `bytes`.
  size_t chunkBytesOf(size_t bytes) const {
    return maxChunk_ == 0 ? bytes : std::min(bytes, maxChunk_);
  }
  // The call's tag into slot (call number modulo kTagSlots); nothing without a window.
  void writeTag(const CallTag& tag);
  // After a failure or an abort: the peers' waits on this rank's window fail instead of
  // hanging. Any thread (an abort's), also while a call makes the window.
  void markFailed() {
    if (transport::Window* w = published_.load(std::memory_order_acquire)) w->markFailed();
  }
  // The executor's window fields: the window, its bookkeeping and the tag slots.
  void fill(exec::ExecOptions& options);

 private:
  std::unique_ptr<transport::Window> window_;
  std::atomic<transport::Window*> published_{nullptr};  // window_, for markFailed
  exec::WindowState state_;
  bool tried_ = false;
  size_t maxChunk_ = 0;
  std::array<CallTag, transport::Window::kTagSlots> tags_{};
};

}  // namespace tutti
