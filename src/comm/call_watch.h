// Mismatched calls that no message reveals (issue 30, E9/E10): ranks that wait on each other
// in different collectives (a broadcast against a reduce, different roots or counts) and
// whose transports carry no tag the other side checks (the shared window's programs, a
// connection a peer never makes, point-to-point batches). A rank whose wait for a peer has
// made no progress for a second publishes the tags of its recent calls in the
// communicator's store ("calls/<rank>") and reads the peer's; when the peer's call with this
// call's number is another call, the wait ends with the mismatch named, about a second after
// it began instead of at the timeout. Calls that make progress never publish or read.
// Knows nothing of its owner: it reads the owner's current call and flight recorder.
#pragma once

#include <chrono>
#include <functional>
#include <string>
#include <unordered_map>
#include <vector>

#include "bootstrap/store.h"
#include "comm/call_tag.h"
#include "comm/call_trace.h"

namespace tutti {

class CallWatch {
 public:
  // current: the tag of the call being made ({0, 0} between calls, p2pMessageTag in
  // point-to-point batches); trace: the owner's flight recorder (the recent calls it publishes).
  CallWatch(bootstrap::Store* store, int rank, const CallTag* current, const CallTrace* trace,
            std::function<std::string(int peer)> describePeer);

  // Called by waits for `peer` that have made no progress for about a second (any number of
  // times: it reads a peer's record at most once a second per call). Throws exec::CallMismatch
  // (tuttiInvalidUsage) naming both calls when the peer's published call with this call's number
  // differs. Store errors are ignored (the timeout still ends the wait).
  void stalledOn(int peer);

 private:
  static constexpr std::chrono::milliseconds kInterval{1000};
  static constexpr size_t kPublished = 8;  // calls per record

  void publish();
  std::vector<CallTag> recordOf(int peer);

  bootstrap::Store* store_;
  int rank_;
  const CallTag* current_;
  const CallTrace* trace_;
  std::function<std::string(int)> describePeer_;
  CallTag lastPublished_{};
  CallTag watchedCall_{};
  std::unordered_map<int, std::chrono::steady_clock::time_point> lastRead_;
};

}  // namespace tutti
