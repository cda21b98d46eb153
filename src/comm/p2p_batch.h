// A group's point-to-point operations (or a single send / recv) as one schedule: one round
// whose op i moves user buffer kFirstUserBuf + i, all posted at once, so any order of sends and
// receives across ranks completes. Sends to self are not messages: they are matched in order
// with the receives from self and copied. It knows nothing of the communicator.
#pragma once

#include <cstddef>
#include <span>
#include <utility>
#include <vector>

#include "exec/schedule.h"

namespace tutti {

// One point-to-point operation recorded in a group.
struct P2pOp {
  bool isSend;
  int peer;
  std::byte* buffer;
  size_t bytes;
};

struct P2pBatch {
  exec::Schedule schedule;          // one round; no ops when all are to or from self
  std::vector<std::byte*> buffers;  // indexed as the schedule's buffers
  // Each send to self with the receive from self it pairs with (same size), in call order.
  std::vector<std::pair<const P2pOp*, const P2pOp*>> selfPairs;
};

// Throws tuttiInvalidArgument past 65535 - kFirstUserBuf operations, tuttiInvalidUsage when
// the sends to self and the receives from self do not pair up (count or sizes).
P2pBatch makeP2pBatch(std::span<const P2pOp> ops, int rank);
// Copies each send to self into the receive from self it pairs with.
void copySelfSends(const P2pBatch& batch);

}  // namespace tutti
