#include "bootstrap/abort_signal.h"

#include <sys/eventfd.h>
#include <unistd.h>

#include <cstdint>

#include "common/error.h"

namespace tutti::bootstrap {

AbortSignal::AbortSignal() {
  fd_.reset(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));
  if (!fd_.valid()) throwSystemError("eventfd for a store abort signal");
}

AbortSignal::~AbortSignal() = default;

void AbortSignal::raise() {
  if (raised_.exchange(true)) return;
  uint64_t one = 1;
  [[maybe_unused]] ssize_t w = ::write(fd_.get(), &one, sizeof(one));
}

}  // namespace tutti::bootstrap
