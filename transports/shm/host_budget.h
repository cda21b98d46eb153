// The shared memory that the ranks of one host take for one communicator, counted together
// (issue 30, E5). Each segment is checked against the memory left when it is made
// (Segment::create), but ranks that make theirs at the same moment all see the same room
// and together exceed it: two ranks with 600 MiB FIFOs in a 1 GiB cgroup were OOM-killed.
// Here every segment first reserves its bytes with an atomic add on the communicator's store
// (one key per host), and a reservation that takes the host's total past the room measured
// when the communicator was set up (before any of its segments existed) is refused with an
// error naming the total, the room and the setting to lower.
#pragma once

#include <cstddef>
#include <string>

#include "bootstrap/store.h"
#include "shm_os.h"

namespace tutti::transport::shm {

class HostBudget {
 public:
  // store: the communicator's; hostId: this rank's host; room: measured at setup.
  HostBudget(bootstrap::Store* store, std::string hostId, MemoryRoom room);

  // Reserves `bytes` for a segment (`what`, e.g. "FIFO segment to rank 3") or throws
  // tuttiSystemError naming `variable` (the setting that sizes it); nothing is reserved then.
  void reserve(size_t bytes, const std::string& what, const char* variable);

 private:
  bootstrap::Store* store_;
  std::string key_;
  MemoryRoom room_;
};

}  // namespace tutti::transport::shm
