#include "bootstrap/host_id.h"

#include <sys/stat.h>
#include <unistd.h>

#include <fstream>

#include "common/env.h"
#include "common/host_name.h"

namespace tutti::bootstrap {

std::string localHostId() {
  if (auto v = env::raw("TUTTI_HOSTID")) return *v;
  std::string boot;
  std::ifstream f("/proc/sys/kernel/random/boot_id");
  std::getline(f, boot);
  if (boot.empty()) {
    boot = "host-" + hostName();
  }
  struct stat st {};
  std::string ns = ::stat("/proc/self/ns/net", &st) == 0 ? std::to_string(st.st_ino) : "0";
  return boot + ":" + ns;
}

}  // namespace tutti::bootstrap
