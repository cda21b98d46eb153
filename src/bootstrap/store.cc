#include "bootstrap/store.h"

#include <poll.h>

#include <algorithm>

#include "bootstrap/abort_signal.h"
#include "bootstrap/store_util.h"
#include "common/error.h"

namespace tutti::bootstrap {

std::vector<std::byte> Store::get(const std::string& key, const Deadline& deadline,
                                  const AbortSignal& also) {
  int pauseMs = 1;
  for (;;) {
    if (also.raised()) throwAborted("store", key);
    if (check({key})) return get(key, deadline);
    if (deadline.expired()) throwGetTimeout("store", key, deadline.totalSeconds());
    pollfd pfd{also.fd(), POLLIN, 0};
    ::poll(&pfd, 1, std::max(0, std::min(pauseMs, deadline.msLeft())));
    pauseMs = std::min(pauseMs * 2, 10);
  }
}

std::vector<bool> Store::checkEach(const std::vector<std::string>& keys) {
  std::vector<bool> present;
  present.reserve(keys.size());
  for (const auto& k : keys) present.push_back(check({k}));
  return present;
}

}  // namespace tutti::bootstrap
