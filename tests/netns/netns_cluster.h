// Shared by the netns tests: run a shell command, and bring the namespaces of
// tools/netns-cluster.sh up for one test, always tearing them down (also on failure).
#pragma once

#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <string>

namespace tutti::test {

// Runs cmd through the shell; returns stdout+stderr, sets *rc to the exit status (-1: none).
inline std::string runCommand(const std::string& cmd, int* rc) {
  std::string out;
  FILE* p = popen((cmd + " 2>&1").c_str(), "r");
  if (!p) {
    *rc = -1;
    return "popen failed";
  }
  char buf[1024];
  while (fgets(buf, sizeof buf, p)) out += buf;
  int st = pclose(p);
  *rc = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  return out;
}

class NetnsCluster {
 public:
  // n namespaces tutti-h0..; shaping: netns-cluster.sh options ("--rate 1gbit") or "".
  // purpose completes the skip message ("... run as root to test <purpose>").
  NetnsCluster(int n, const std::string& shaping, const std::string& purpose) {
    if (geteuid() != 0) {
      why_ = "needs root (network namespaces); run as root to test " + purpose;
      return;
    }
    int rc = 0;
    runCommand("ip netns list", &rc);
    if (rc != 0) {
      why_ = "`ip netns` is not usable here (iproute2 missing or no permission)";
      return;
    }
    attempted_ = true;
    std::string out = runCommand(
        std::string(TUTTI_NETNS_SCRIPT) + " up " + std::to_string(n) + " " + shaping, &rc);
    if (rc != 0) {
      why_ = "tools/netns-cluster.sh up failed (no bridge or tc here?): " + out;
      return;
    }
    up_ = true;
    std::printf("%s", out.c_str());
  }
  ~NetnsCluster() {
    if (!attempted_) return;  // a failed `up` may have left part of the cluster behind
    int rc = 0;
    runCommand(std::string(TUTTI_NETNS_SCRIPT) + " down", &rc);
  }
  NetnsCluster(const NetnsCluster&) = delete;
  NetnsCluster& operator=(const NetnsCluster&) = delete;
  bool up() const { return up_; }
  const std::string& why() const { return why_; }

 private:
  bool attempted_ = false;
  bool up_ = false;
  std::string why_;
};

}  // namespace tutti::test
