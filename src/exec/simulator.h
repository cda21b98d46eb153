// In-process simulator: runs the schedules of all n ranks of one collective against
// in-memory buffers, exactly as the executor would (round by round per rank; a transfer
// completes when the peer has posted the matching op in its current round; sends/receives
// matched per (src, dst) pair in order). It checks the schedules (matching counts and sizes,
// slice bounds, within-round overlap rules, deadlock) and throws tutti::Error with a precise
// message on the first problem. It also counts bytes/messages and predicts time with an
// alpha-beta model (used by the tuner and tutti-sim).
#pragma once

#include <cstddef>
#include <functional>
#include <span>
#include <vector>

#include "exec/schedule.h"

namespace tutti::exec {

// Cost of one message of b bytes from src to dst: alpha + beta * b seconds.
struct LinkCost {
  double alpha = 0.0;  // seconds per message
  double beta = 0.0;   // seconds per byte
};
using LinkCostFn = std::function<LinkCost(int src, int dst)>;

// One rank's user buffers. input and output may alias (in-place collectives); both may be
// null when SimOptions::moveData is false (cost-only simulation, sizes still checked).
struct SimRankBuffers {
  std::byte* input = nullptr;
  size_t inputBytes = 0;
  std::byte* output = nullptr;
  size_t outputBytes = 0;
};

struct SimOptions {
  bool moveData = true;               // false: no copies/reductions, only checks and statistics
  LinkCostFn cost;                    // empty: predictedSeconds stays 0
  double reduceSecondsPerByte = 0.0;  // local reduction cost (reduce + recv-reduce bytes)
  double copySecondsPerByte = 0.0;    // local copy cost
};

struct SimRankStats {
  size_t bytesSent = 0;
  size_t bytesRecv = 0;
  size_t messagesSent = 0;
  size_t messagesRecv = 0;
  size_t rounds = 0;
  size_t reducedBytes = 0;  // bytes written by kReduce / kRecvReduce
  size_t copiedBytes = 0;
  double busySeconds = 0.0;  // sum over rounds of this rank's own round time
};

struct SimResult {
  std::vector<SimRankStats> ranks;
  size_t totalBytes = 0;             // sum of bytes sent by all ranks
  std::vector<double> roundSeconds;  // per round index: max over ranks
  double predictedSeconds = 0.0;     // sum of roundSeconds
  size_t maxBytesSent() const;       // max over ranks
};

// schedules[r] and buffers[r] belong to rank r; all schedules must have the same dtype/op.
SimResult simulate(std::span<const Schedule> schedules, std::span<const SimRankBuffers> buffers,
                   const SimOptions& options = {});

}  // namespace tutti::exec
