#include "bootstrap/abort_signal.h"

#include <sys/eventfd.h>
#include <unistd.h>

#include <cstdint>

#include "common/error.h"

namespace tutti::bootstrap {

AbortSignal::AbortSignal() {
  fd_ = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (fd_ < 0) throwSystemError("eventfd for a store abort signal");
}

AbortSignal::~AbortSignal() { ::close(fd_); }

void AbortSignal::raise() {
  if (raised_.exchange(true)) return;
  uint64_t one = 1;
  [[maybe_unused]] ssize_t w = ::write(fd_, &one, sizeof(one));
}

}  // namespace tutti::bootstrap
