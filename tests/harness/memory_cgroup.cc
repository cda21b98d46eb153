#include "memory_cgroup.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

namespace tutti::test {

namespace {

bool writeFile(const std::string& path, const std::string& text) {
  std::ofstream out(path);
  out << text;
  out.flush();
  return static_cast<bool>(out);
}

std::string readFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// The path of this process's cgroup in the hierarchy whose /proc/self/cgroup line starts with
// `prefix` ("0::" for v2, or the v1 memory controller's "N:memory:"), or "" when absent.
std::string selfPath(bool v2) {
  std::istringstream lines(readFile("/proc/self/cgroup"));
  for (std::string line; std::getline(lines, line);) {
    size_t c1 = line.find(':'), c2 = c1 == std::string::npos ? c1 : line.find(':', c1 + 1);
    if (c2 == std::string::npos) continue;
    std::string controllers = line.substr(c1 + 1, c2 - c1 - 1);
    bool isV2 = line.compare(0, c1, "0") == 0 && controllers.empty();
    bool isV1Memory = ("," + controllers + ",").find(",memory,") != std::string::npos;
    if ((v2 && isV2) || (!v2 && isV1Memory)) return line.substr(c2 + 1);
  }
  return "";
}

}  // namespace

std::unique_ptr<MemoryCgroup> MemoryCgroup::make(uint64_t limitBytes, std::string* whyNot) {
  if (::geteuid() != 0) {
    *whyNot = "needs root to create a memory cgroup";
    return nullptr;
  }
  const std::string name = "/tutti-test-" + std::to_string(::getpid());
  std::string v2Path = selfPath(true);
  if (!v2Path.empty() &&
      readFile("/sys/fs/cgroup/cgroup.controllers").find("memory") != std::string::npos) {
    std::string parent = "/sys/fs/cgroup" + (v2Path == "/" ? std::string() : v2Path);
    if (readFile(parent + "/cgroup.subtree_control").find("memory") == std::string::npos &&
        !writeFile(parent + "/cgroup.subtree_control", "+memory")) {
      *whyNot = "cannot enable the memory controller below " + parent + ": " + std::strerror(errno);
      return nullptr;
    }
    std::string dir = parent + name;
    if (::mkdir(dir.c_str(), 0755) != 0) {
      *whyNot = "cannot create " + dir + ": " + std::strerror(errno);
      return nullptr;
    }
    std::unique_ptr<MemoryCgroup> cg(new MemoryCgroup(dir, true));
    if (!writeFile(dir + "/memory.max", std::to_string(limitBytes))) {
      *whyNot = "cannot set " + dir + "/memory.max";
      return nullptr;
    }
    writeFile(dir + "/memory.swap.max", "0");  // where swap accounting exists
    return cg;
  }
  std::string v1Path = selfPath(false);
  if (v1Path.empty()) {
    *whyNot = "no cgroup v2 memory controller and no v1 memory hierarchy";
    return nullptr;
  }
  std::string dir = "/sys/fs/cgroup/memory" + (v1Path == "/" ? std::string() : v1Path) + name;
  if (::mkdir(dir.c_str(), 0755) != 0) {
    *whyNot = "cannot create " + dir + ": " + std::strerror(errno);
    return nullptr;
  }
  std::unique_ptr<MemoryCgroup> cg(new MemoryCgroup(dir, false));
  if (!writeFile(dir + "/memory.limit_in_bytes", std::to_string(limitBytes))) {
    *whyNot = "cannot set " + dir + "/memory.limit_in_bytes";
    return nullptr;
  }
  writeFile(dir + "/memory.memsw.limit_in_bytes", std::to_string(limitBytes));  // if any
  return cg;
}

MemoryCgroup::~MemoryCgroup() { ::rmdir(dir_.c_str()); }

bool MemoryCgroup::join(pid_t pid) const {
  return writeFile(dir_ + "/cgroup.procs", std::to_string(pid == 0 ? ::getpid() : pid));
}

}  // namespace tutti::test
