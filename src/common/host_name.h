// This machine's host name (gethostname(2); empty when it cannot be read). For messages, file
// names and comparing where processes run; ranks' host identity is bootstrap/host_id.h's.
#pragma once

#include <unistd.h>

#include <string>

namespace tutti {

inline std::string hostName() {
  char host[256] = {0};
  ::gethostname(host, sizeof host - 1);
  return host;
}

}  // namespace tutti
