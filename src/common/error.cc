#include "common/error.h"

#include <sys/resource.h>

namespace tutti {

void throwSystemError(const std::string& what, int err) {
  char buf[256];
  const char* text = strerror_r(err, buf, sizeof(buf));
  std::string message = what + ": " + text + " (errno " + std::to_string(err) + ")";
  if (err == EMFILE) {
    // Out of descriptors: say which limit, so the user knows what to raise.
    rlimit lim{};
    if (getrlimit(RLIMIT_NOFILE, &lim) == 0)
      message += "; this process may hold " + std::to_string(lim.rlim_cur) +
                 " descriptors (RLIMIT_NOFILE, ulimit -n): raise it (docs/transports.md, "
                 "\"Descriptors\", says what each rank holds)";
  } else if (err == ENFILE) {
    message += "; the system-wide limit on open files (fs.file-max) is reached";
  }
  throw Error(tuttiSystemError, message);
}

}  // namespace tutti
