// A memory cgroup made by a test, for tests that allocate near a memory limit (never more
// than a cgroup the test made itself): cgroup v2 below the process's own cgroup, or the v1
// memory controller's hierarchy. Removed (rmdir) when destroyed, which needs every process
// that joined it to have exited.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <memory>
#include <string>

namespace tutti::test {

class MemoryCgroup {
 public:
  // A cgroup limited to limitBytes (swap too where it can be limited), or null with
  // *whyNot saying why (not root, no writable memory controller, ...): the caller skips.
  static std::unique_ptr<MemoryCgroup> make(uint64_t limitBytes, std::string* whyNot);
  ~MemoryCgroup();
  MemoryCgroup(const MemoryCgroup&) = delete;
  MemoryCgroup& operator=(const MemoryCgroup&) = delete;

  // Moves process pid (0: the caller) into the cgroup.
  bool join(pid_t pid = 0) const;
  const std::string& path() const { return dir_; }
  bool v2() const { return v2_; }

 private:
  MemoryCgroup(std::string dir, bool v2) : dir_(std::move(dir)), v2_(v2) {}
  std::string dir_;
  bool v2_;
};

}  // namespace tutti::test
