#include "topology/probe_cache.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <sstream>

#include "common/env.h"
#include "common/host_name.h"
#include "tutti/config.h"

#if TUTTI_HAVE_HWLOC
#include <hwloc.h>
#endif

namespace tutti::topo {

namespace {

constexpr int kFormatVersion = 1;

std::string readFile(const char* path) {
  std::ifstream f(path);
  return std::string(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>());
}

std::string oneLine(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  for (char& c : s)
    if (c == '\n') c = ';';
  return s;
}

std::string hostName() {
  std::string h = tutti::hostName();
  for (char& c : h)
    if (c == '/') c = '_';
  return h.empty() ? "localhost" : h;
}

bool makeDirs(const std::string& dir) {
  for (size_t pos = 1; pos <= dir.size(); ++pos) {
    if (pos != dir.size() && dir[pos] != '/') continue;
    std::string part = dir.substr(0, pos);
    if (::mkdir(part.c_str(), 0700) != 0 && errno != EEXIST) return false;
  }
  struct stat st {};
  return ::stat(dir.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

}  // namespace

std::string probeCacheFile() {
  std::string setting = env::getString("TUTTI_TOPO_CACHE");
  if (setting == "0" || setting == "off" || setting.empty()) return "";
  std::string dir = setting;
  if (setting == "auto") {
    const char* xdg = std::getenv("XDG_CACHE_HOME");
    const char* home = std::getenv("HOME");
    if (xdg && *xdg == '/') {
      dir = std::string(xdg) + "/tutti";
    } else if (home && *home == '/') {
      dir = std::string(home) + "/.cache/tutti";
    } else {
      return "";
    }
  }
  return dir + "/topology-" + hostName() + ".xml";
}

std::string probeStamp() {
  std::ostringstream s;
  s << "tutti-probe " << kFormatVersion;
#if TUTTI_HAVE_HWLOC
  s << " hwloc " << std::hex << hwloc_get_api_version() << std::dec;
#endif
  s << " boot " << oneLine(readFile("/proc/sys/kernel/random/boot_id"));
  s << " cgroup " << oneLine(readFile("/proc/self/cgroup"));
  return s.str();
}

bool writeFileAtomically(const std::string& path, const std::string& content) {
  size_t slash = path.rfind('/');
  if (slash != std::string::npos && slash > 0 && !makeDirs(path.substr(0, slash))) return false;
  const std::string tmp = path + ".tmp." + std::to_string(::getpid());
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    out << content;
    out.flush();
    if (!out) {
      std::remove(tmp.c_str());
      return false;
    }
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    std::remove(tmp.c_str());
    return false;
  }
  return true;
}

}  // namespace tutti::topo
