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
  // --hosts / --hosts-file: network namespaces (/var/run/netns/<name>) acting as hosts.
  // Empty: every rank runs here, TUTTI_ADDR on 127.0.0.1.
  std::vector<std::string> hosts;
  std::vector<int> slots;  // per host; 0: not given (ceil(nranks / hosts) then)
};

// Rank r's host index: blocks of slots[h] ranks per host in order; hosts without a slot count
// take ceil(nranks / hosts.size()). Throws std::runtime_error if the slots cannot hold nranks.
std::vector<int> placeRanks(int nranks, const std::vector<int>& slots);

// Parses a hosts file: one namespace name per line, optional ":slots"; '#' starts a comment.
void parseHostsFile(const std::string& path, std::vector<std::string>* hosts,
                    std::vector<int>* slots);
// Parses one "name[:slots]" entry (shared by --hosts and --hosts-file).
void parseHostEntry(const std::string& entry, std::vector<std::string>* hosts,
                    std::vector<int>* slots);

// Runs the job; returns tuttirun's exit status: 0, the first failing rank's exit code,
// 128+signal for a rank killed by a signal (or for tuttirun itself on SIGINT/SIGTERM),
// 124 on timeout, 127 when the command cannot be executed.
int runJob(const Options& opts);

}  // namespace tutti::tuttirun
