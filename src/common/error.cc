#include "common/error.h"

namespace tutti {

void throwSystemError(const std::string& what, int err) {
  char buf[256];
  const char* text = strerror_r(err, buf, sizeof(buf));
  throw Error(tuttiSystemError, what + ": " + text + " (errno " + std::to_string(err) + ")");
}

}  // namespace tutti
