// What one process tells tutti-inspect: for each of its live communicators, the call in
// progress or the last one, the peer it waits for, its failure, its recent calls and its
// latency counts. Plain data and its text form (one "key value" line each); knows nothing of
// communicators or sockets.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace tutti::inspect {

struct CommReport {
  enum class State { kNoCall, kRunning, kDone, kFailed };
  std::string name;  // the communicator's (CommOptions::name)
  int rank = -1, nranks = 0;
  State state = State::kNoCall;
  uint64_t record = 0;      // the flight recorder's number of the call (1, 2, ...; all calls)
  uint64_t collective = 0;  // its collective call number, alike on every rank (0: point-to-point)
  std::string call;         // "allreduce(count 1024, float32, sum)"
  std::string algorithm;
  double seconds = 0;  // running for (kRunning) / since it ended
  int waitPeer = -1;   // the peer a running call has waited for, without progress
  double waitSeconds = 0;
  std::string waitStep;             // what it waits for: "receive 0/1328 B", "window phase 12, ..."
  std::string failure;              // what ended the communicator ("" while none)
  std::vector<std::string> recent;  // the flight recorder's last lines, oldest first
  std::vector<std::string> latency;  // counts and latency histograms, a line each
};

struct ProcessReport {
  std::string host;
  long pid = 0;
  std::vector<CommReport> comms;
};

const char* stateName(CommReport::State s);  // "none", "running", "done", "failed"

// The text form; decode throws tuttiInvalidArgument on a line it cannot read.
std::string encode(const ProcessReport& report);
ProcessReport decode(const std::string& text);

}  // namespace tutti::inspect
