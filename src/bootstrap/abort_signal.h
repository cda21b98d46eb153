// An abort flag with an eventfd a poll(2) can wait on: the abort of one communicator's
// waits on a store shared with other communicators (PrefixStore), so that aborting a split
// child leaves its parent's store usable.
#pragma once

#include <atomic>

#include "common/unique_fd.h"

namespace tutti::bootstrap {

class AbortSignal {
 public:
  AbortSignal();
  ~AbortSignal();
  AbortSignal(const AbortSignal&) = delete;
  AbortSignal& operator=(const AbortSignal&) = delete;

  // Any thread; idempotent.
  void raise();
  bool raised() const { return raised_.load(); }
  // Readable once raised.
  int fd() const { return fd_.get(); }

 private:
  std::atomic<bool> raised_{false};
  UniqueFd fd_;
};

}  // namespace tutti::bootstrap
