// Starts N local ranks of one command and supervises them (see docs/bootstrap.md):
// each rank runs in its own process group with PR_SET_PDEATHSIG=SIGKILL; the first failure
// (or SIGINT/SIGTERM to tuttirun, or the timeout) sends SIGTERM to every rank's group, then
// SIGKILL after killGraceSec. Every child is reaped.
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace tutti::tuttirun {

struct Options {
  int nranks = 0;
  std::vector<std::pair<std::string, std::string>> env;  // -x VAR=val
  bool tagOutput = false;
  double timeoutSec = 0;  // 0: none
  double killGraceSec = 3;
  std::vector<std::string> command;
};

// Runs the job; returns tuttirun's exit status: 0, the first failing rank's exit code,
// 128+signal for a rank killed by a signal (or for tuttirun itself on SIGINT/SIGTERM),
// 124 on timeout, 127 when the command cannot be executed.
int runJob(const Options& opts);

}  // namespace tutti::tuttirun
