// Faults for the mutation run (mutation_test.cc): schedule transforms that each model one kind
// of bug in an algorithm or in the executor. The test applies one to every schedule the
// communicator builds (through the test-only tuttiTestMutateSchedule hook of
// src/comm/communicator.cc) and shows that the correctness matrix then fails.
#pragma once

#include <string>
#include <vector>

#include "exec/schedule.h"
#include "interfaces/algorithm.h"

namespace tutti::mutation {

enum class Fault {
  kNone,
  kSwapAllGatherBlocks,       // all-gather output blocks 0 and min(3, n-1) exchanged
  kShiftReduceScatterBlock,   // reduce-scatter result moved up by one element
  kWrongRoot,                 // broadcast / reduce built for root + 1
  kSkipChunkBoundaryElement,  // first transfer per pair split in two, the element between lost
  kInPlaceOffsetOffByOne,     // all-gather input read at output + (rank + 1) blocks
  kWrongReductionOrder,       // deterministic mode: x0 + x2 + x1 instead of x0 + x1 + x2
  kStaleBuffer,               // a receive into scratch lands elsewhere: the last call's data used
  kDropPeer,                  // one peer's contribution received (or read) but not reduced
  kSwapRootedBlocks,          // gather: root's blocks 0 and min(3, n-1) exchanged; scatter: the
                              // root's first two sends of one size exchange their blocks
};

struct FaultInfo {
  Fault fault;
  const char* name;
  const char* what;
  std::vector<algo::Coll> colls;  // the collectives whose schedules it changes
  bool deterministic = false;     // needs TUTTI_DETERMINISTIC=1 and rank-order data
};

// kNone first, then every fault.
const std::vector<FaultInfo>& faults();

// Applies f to one rank's schedule built for args (no change where the pattern is absent).
void apply(Fault f, exec::Schedule& s, const algo::CollArgs& args);

}  // namespace tutti::mutation
