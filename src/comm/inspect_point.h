// A communicator's side of tutti-inspect (src/inspect): registers a report of it with the
// process's responder (its name and place, the call in progress or the last one, the peer a
// running call waits for, its failure, its recent calls and latency counts), notes the waits
// that stall, and on rank 0 of a communicator made at a launch writes the job file that
// tutti-inspect reads (removed again on destruction). Knows nothing of its owner: it reads the
// owner's failure monitor.
#pragma once

#include <atomic>
#include <mutex>
#include <span>
#include <string>

#include "comm/failure_monitor.h"
#include "inspect/report.h"
#include "inspect/responder.h"
#include "interfaces/transport.h"

namespace tutti {

class InspectPoint {
 public:
  // Registers with the responder, which listens on bindHost when it starts now. Throws
  // tuttiSystemError when it cannot listen.
  InspectPoint(std::string name, int rank, int nranks, const FailureMonitor* monitor,
               const std::string& bindHost);
  ~InspectPoint();
  InspectPoint(const InspectPoint&) = delete;
  InspectPoint& operator=(const InspectPoint&) = delete;

  // The process's responder: "host:port|token" (each rank's goes in its peer record).
  const std::string& address() const { return registration_.address(); }
  // A wait of the running call for `peer` (at `step`) has made no progress for about a second
  // (ExecOptions::onStall). Any number of times.
  void stalledOn(int peer, const std::string& step);
  // Writes the job file for these peers in dir (job_file.h); a failure is logged, not thrown
  // (the job runs on without it).
  void writeJobFile(const std::string& dir, std::span<const transport::PeerInfo> peers);

  inspect::CommReport report() const;

 private:
  std::string name_;
  int rank_, nranks_;
  const FailureMonitor* monitor_;
  std::atomic<uint64_t> waitCall_{0};  // the call (flight recorder number) that stalled
  std::atomic<int> waitPeer_{-1};
  std::atomic<double> waitSince_{0};               // steady seconds when that call's wait began
  mutable std::mutex stepMutex_;                   // waitStep_
  std::string waitStep_;                           // what the wait awaits (the last report's)
  std::string jobFile_;                            // written by writeJobFile ("" when none)
  inspect::Responder::Registration registration_;  // last: it goes first
};

}  // namespace tutti
