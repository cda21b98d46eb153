// Which rank failed first, when a call fails because a peer did (exec::PeerFailure): the peer
// may only have given up after a failure of its own, found through the failure records in the
// store (FailureMonitor) or in another communicator the two processes share
// (ProcessFailures), or its process may be alive while another rank's is gone (PeerProbe). It
// knows nothing of the communicator.
#pragma once

#include <string>

#include "comm/failure_monitor.h"
#include "comm/membership.h"
#include "comm/peer_probe.h"
#include "comm/process_failures.h"
#include "exec/executor.h"

namespace tutti {

struct FailureVerdict {
  int first = -1;    // the rank that failed first (-1: unknown)
  std::string text;  // the peer failure's text, what was found, and "(the first rank to fail: R)"
};

// self: the communicator's registration in ProcessFailures (its own records are not looked up
// there again).
FailureVerdict attributePeerFailure(const exec::PeerFailure& e, FailureMonitor& monitor,
                                    const PeerProbe& probe, const Membership& membership,
                                    const ProcessFailures::Registration& self);

// The process of rank r (host id and pid), as ProcessFailures names processes.
ProcessFailures::Process processOf(const Membership& membership, int r);

}  // namespace tutti
