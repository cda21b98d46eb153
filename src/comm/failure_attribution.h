// Which rank failed first, when a call fails because a peer did (exec::PeerFailure): the peer
// may only have given up after a failure of its own, found through the failure records in the
// store (FailureMonitor), or its process may be alive while another rank's is gone
// (PeerProbe). It knows nothing of the communicator.
#pragma once

#include <string>

#include "comm/failure_monitor.h"
#include "comm/membership.h"
#include "comm/peer_probe.h"
#include "exec/executor.h"

namespace tutti {

struct FailureVerdict {
  int first = -1;    // the rank that failed first (-1: unknown)
  std::string text;  // the peer failure's text, what was found, and "(the first rank to fail: R)"
};

FailureVerdict attributePeerFailure(const exec::PeerFailure& e, FailureMonitor& monitor,
                                    const PeerProbe& probe, const Membership& membership);

}  // namespace tutti
