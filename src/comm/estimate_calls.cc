// The Communicator's time estimates (tuttiGroupSimulateEnd): what the cost model predicts for a
// call, planned as the call itself would be, without running it or talking to any rank.
#include "comm/communicator.h"
#include "comm/membership.h"
#include "comm/planner.h"
#include "common/dtype.h"
#include "tuning/timed_sim.h"

namespace tutti {

size_t Communicator::estimatedWindowChunk() const {
  if (window_.tried()) return window_.chunkBytes();
  // Not made yet: the window the first collective would make (ensureWindow) when the shm
  // transport may serve these ranks.
  const bool shmAllowed =
      options_.transport.empty() || options_.transport.find("shm") != std::string::npos;
  if (!windowWanted() || !shmAllowed) return 0;
  return window_.chunkBytesOf(static_cast<size_t>(options_.shmWindowBytes));
}

double Communicator::estimateCollective(algo::Coll coll, size_t count, tuttiDataType_t dtype,
                                        tuttiRedOp_t op, int root) {
  algo::CollArgs args = baseArgs(coll, count, dtype);
  args.op = op == tuttiAvg ? tuttiSum : op;
  args.root = root;
  args.windowBytes = estimatedWindowChunk();
  return planner_->estimate(args, options_.algo).predictedSec;
}

double Communicator::estimateP2p(std::span<const P2pOp> ops) {
  const P2pBatch batch = makeP2pBatch(ops, rank_);
  algo::CollArgs args = baseArgs(algo::Coll::kAllToAll, 0, tuttiUint8);
  return tuning::predictRank(batch.schedule, args, planner_->model(args));
}

}  // namespace tutti
