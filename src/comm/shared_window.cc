#include "comm/shared_window.h"

namespace tutti {

void SharedWindow::writeTag(const CallTag& tag) {
  if (!window_) return;
  const auto slot = static_cast<int>(collectiveCallNumber(tag) % transport::Window::kTagSlots);
  tags_[slot] = tag;
  window_->setTag(slot, tag);
}

void SharedWindow::fill(exec::ExecOptions& options) {
  options.window = window_.get();
  options.windowState = &state_;
  options.windowTags = window_ ? tags_.data() : nullptr;
}

}  // namespace tutti
