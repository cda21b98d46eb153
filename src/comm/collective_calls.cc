// The Communicator's collective entry points: each call's arguments as the CollArgs every
// schedule is built from, and Communicator::collective, which plans and runs them. Average is a sum
// divided afterwards on the ranks that receive a reduced result.
#include <algorithm>
#include <chrono>

#include "comm/communicator.h"
#include "comm/device_allreduce.h"
#include "comm/failure_monitor.h"
#include "comm/membership.h"
#include "comm/planner.h"
#include "common/dtype.h"
#include "common/log.h"
#include "exec/executor.h"
#include "exec/line_allreduce.h"
#include "reduce/reduce.h"
#include "tuning/tuner.h"

namespace tutti {

namespace {
tuttiRedOp_t baseOp(tuttiRedOp_t op) { return op == tuttiAvg ? tuttiSum : op; }
}  // namespace

void Communicator::collective(algo::CollArgs args, const void* send, void* recv, size_t avgElems,
                              size_t avgOffsetElems, bool applyAvg) {
  log::setThreadRank(rank_);
  ensureWindow();
  args.windowBytes = window_.chunkBytes();  // 0 without a window
  if (args.coll == algo::Coll::kAllReduce && lineAllReduceAuto_ &&
      exec::lineAllReduceFits(window_.get(), args.count * dtypeSize(args.dtype))) {
    // The automatic choice for small all-reduces on one host, without planning.
    runLineCall(args, send, recv, applyAvg ? tuttiAvg : args.op);
  } else {
    plannedCollective(args, send, recv, applyAvg ? tuttiAvg : args.op);
  }
  if (applyAvg && avgElems > 0) {
    size_t es = dtypeSize(args.dtype);
    reduce::divide(static_cast<std::byte*>(recv) + avgOffsetElems * es, avgElems, args.dtype,
                   nranks_);
  }
}

void Communicator::runLineCall(const algo::CollArgs& args, const void* send, void* recv,
                               tuttiRedOp_t userOp) {
  if (log::enabled(log::Level::kInfo, log::Subsys::kTuning) &&
      lineLogged_.insert(args.count).second)
    TUTTI_INFO(kTuning, "allreduce count " << args.count << " -> line (the automatic choice up to "
                                           << exec::kLineMaxBytes << " bytes on one host)");
  CallTag tag = calls_.next(args, userOp);
  const bool calibrating = collectiveCallNumber(tag) == 1 && planner_->selfTuning() != nullptr;
  calls_.setLastAlgorithm("line");
  runTaggedCall(tag, "line", [&] {
    if (calibrating) calibrate();
    runLine(args, send, recv);
  });
}

void Communicator::runLine(const algo::CollArgs& args, const void* send, void* recv) {
  exec::runLineAllReduce({send, recv, args.count, args.dtype, args.op, nranks_}, callOptions());
}

void Communicator::plannedCollective(algo::CollArgs& args, const void* send, void* recv,
                                     tuttiRedOp_t userOp) {
  // The forced algorithms are the communicator's (config, TUTTI_ALGO at init, or
  // tuttiCommSetAlgorithm): no environment lookup per call (getenv scans the whole
  // environment, ~500 instructions, a tenth of a small call). An all-to-all-v across hosts
  // may first need its host's send counts: then it is planned inside the call.
  const algo::AlgorithmInfo* exchanging = planner_->needsHostSendCounts(args, options_.algo);
  const Planner::CallPlan* plan = exchanging ? nullptr : &planner_->plan(args, options_.algo);
  const algo::AlgorithmInfo& info = exchanging ? *exchanging : *plan->info;
  CallTag tag = calls_.next(args, userOp);
  const bool calibrating = collectiveCallNumber(tag) == 1 && planner_->selfTuning() != nullptr;
  calls_.setLastAlgorithm(info.name);
  runTaggedCall(tag, info.name, [&] {
    if (calibrating) calibrate();
    if (exchanging) {
      args.hostSendCounts = hostSendCounts(args);
      try {
        plan = &planner_->plan(args, options_.algo);
      } catch (const Error& e) {
        // This rank's own arguments were checked before the call: what fails now are counts
        // that disagree across the host's ranks, which leaves the ranks out of step.
        throw exec::CallMismatch(
            tuttiInvalidUsage,
            std::string(e.what()) + " (ranks called tuttiAllToAllV with counts that disagree)");
      }
    }
    const bool refining = plan->refining;
    std::byte* buffers[3] = {const_cast<std::byte*>(static_cast<const std::byte*>(send)),
                             static_cast<std::byte*>(recv),
                             calls_.scratch(plan->planned->schedule.scratchBytes)};
    const auto t0 =
        refining ? std::chrono::steady_clock::now() : std::chrono::steady_clock::time_point{};
    const Planner::Planned& planned = *plan->planned;
    if (planned.schedule.lineProtocol &&
        exec::lineAllReduceFits(window_.get(), args.count * dtypeSize(args.dtype)))
      runLine(args, send, recv);  // forced (allreduce:line), or a tuner's pick
    else
      execute(planned.schedule, planned.peers, planned.program.get(), buffers);
    if (refining)
      refine(plan->key, plan->sample,
             std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  });
}

bool Communicator::allReduceDevice(const void* send, void* recv, size_t count,
                                   tuttiDataType_t dtype, tuttiRedOp_t op, void* stream) {
  log::setThreadRank(rank_);
  if (deviceTried_ && !device_) return false;
  monitor_->throwIfFailed();  // host collectives check this when they take their options
  algo::CollArgs args = baseArgs(algo::Coll::kAllReduce, count, dtype);
  args.op = baseOp(op);
  if (!deviceTried_) {
    // A call of its own: every rank takes part, and all decline or all go direct.
    CallTag tag = calls_.next(args, op);
    const bool calibrating = collectiveCallNumber(tag) == 1 && planner_->selfTuning() != nullptr;
    calls_.setLastAlgorithm("cuda_setup");
    runTaggedCall(tag, "cuda_setup", [&] {
      if (calibrating) calibrate();
      DeviceAllReduce::Peers peers{rank_, nranks_, membership_->visiblePids(),
                                   [m = membership_](int r) { return m->describeRank(r); }};
      const DeviceAllReduceSettings settings{options_.cudaDirectBytes, options_.cudaDirectMinBytes,
                                             options_.cudaTwoShotBytes, options_.cudaStreamMemOps,
                                             options_.timeoutSec};
      std::string why;
      device_ = DeviceAllReduce::setup(
          peers, recv, options_.cudaDirect, settings,
          [this](const void* mine, void* all, size_t bytes) {
            allGatherInCall(mine, all, bytes, tuttiUint8);
          },
          [monitor = monitor_.get()](tuttiResult_t code, const std::string& text, int first) {
            monitor->record(code, text, first);
            monitor->revoke();
          },
          monitor_->abortFlag(), &why);
      deviceTried_ = true;
      if (device_)
        TUTTI_INFO(kInit, device_->describe());
      else
        TUTTI_INFO(kInit, "direct device all-reduce declined (device buffers are staged): " << why);
    });
    if (!device_) return false;
  }
  const size_t bytes = count * dtypeSize(dtype);
  if (bytes < device_->minBytes()) return false;  // staged: faster here
  CallTag tag = calls_.next(args, op);
  const char* name = device_->algorithmFor(bytes);
  calls_.setLastAlgorithm(name);
  runTaggedCall(tag, name, [&] { device_->run(send, recv, count, dtype, op, stream); });
  return true;
}

std::vector<size_t> Communicator::hostSendCounts(const algo::CollArgs& args) {
  static_assert(sizeof(size_t) == sizeof(uint64_t), "send counts travel as uint64");
  const exec::Schedule s = algo::hostSendCountsExchange(args);
  const size_t perHost = static_cast<size_t>(
      std::count(args.hostOf.begin(), args.hostOf.end(), args.hostOf[static_cast<size_t>(rank_)]));
  std::vector<size_t> all(perHost * static_cast<size_t>(nranks_));
  std::byte* buffers[3] = {
      const_cast<std::byte*>(reinterpret_cast<const std::byte*>(args.sendCounts.data())),
      reinterpret_cast<std::byte*>(all.data()), nullptr};
  execute(s, buffers);
  return all;
}

void Communicator::allReduce(const void* send, void* recv, size_t count, tuttiDataType_t dtype,
                             tuttiRedOp_t op) {
  algo::CollArgs a = baseArgs(algo::Coll::kAllReduce, count, dtype);
  a.op = baseOp(op);
  collective(std::move(a), send, recv, count, 0, op == tuttiAvg);
}

void Communicator::packedAllReduce(const void* send, void* recv, size_t count,
                                   tuttiDataType_t dtype, tuttiRedOp_t op, size_t members,
                                   uint64_t membersDigest) {
  calls_.asPacked(members, membersDigest, [&] { allReduce(send, recv, count, dtype, op); });
}

void Communicator::broadcast(const void* send, void* recv, size_t count, tuttiDataType_t dtype,
                             int root) {
  algo::CollArgs a = baseArgs(algo::Coll::kBroadcast, count, dtype);
  a.root = root;
  collective(std::move(a), send, recv, 0, 0, false);
}

void Communicator::reduce(const void* send, void* recv, size_t count, tuttiDataType_t dtype,
                          tuttiRedOp_t op, int root) {
  algo::CollArgs a = baseArgs(algo::Coll::kReduce, count, dtype);
  a.op = baseOp(op);
  a.root = root;
  collective(std::move(a), send, recv, rank_ == root ? count : 0, 0, op == tuttiAvg);
}

void Communicator::allGather(const void* send, void* recv, size_t sendcount,
                             tuttiDataType_t dtype) {
  collective(baseArgs(algo::Coll::kAllGather, sendcount, dtype), send, recv, 0, 0, false);
}

void Communicator::reduceScatter(const void* send, void* recv, size_t recvcount,
                                 tuttiDataType_t dtype, tuttiRedOp_t op) {
  algo::CollArgs a = baseArgs(algo::Coll::kReduceScatter, recvcount, dtype);
  a.op = baseOp(op);
  collective(std::move(a), send, recv, recvcount, 0, op == tuttiAvg);
}

void Communicator::allToAll(const void* send, void* recv, size_t count, tuttiDataType_t dtype) {
  algo::CollArgs args = baseArgs(algo::Coll::kAllToAll, count, dtype);
  args.inPlace = send == recv;
  collective(std::move(args), send, recv, 0, 0, false);
}

void Communicator::gather(const void* send, void* recv, size_t count, tuttiDataType_t dtype,
                          int root) {
  algo::CollArgs a = baseArgs(algo::Coll::kGather, count, dtype);
  a.root = root;
  collective(std::move(a), send, recv, 0, 0, false);
}

void Communicator::scatter(const void* send, void* recv, size_t count, tuttiDataType_t dtype,
                           int root) {
  algo::CollArgs a = baseArgs(algo::Coll::kScatter, count, dtype);
  a.root = root;
  collective(std::move(a), send, recv, 0, 0, false);
}

namespace {
size_t total(std::span<const size_t> counts) {
  size_t sum = 0;
  for (size_t c : counts) sum += c;
  return sum;
}

// The V-collectives' per-rank counts and displacements (CollArgs::counts says which buffer).
algo::CollArgs withBlocks(algo::CollArgs a, std::span<const size_t> counts,
                          std::span<const size_t> displs) {
  a.counts.assign(counts.begin(), counts.end());
  a.displs.assign(displs.begin(), displs.end());
  return a;
}
}  // namespace

void Communicator::allGatherV(const void* send, void* recv, std::span<const size_t> counts,
                              std::span<const size_t> displs, tuttiDataType_t dtype) {
  algo::CollArgs a =
      withBlocks(baseArgs(algo::Coll::kAllGatherV, total(counts), dtype), counts, displs);
  collective(std::move(a), send, recv, 0, 0, false);
}

void Communicator::reduceScatterV(const void* send, void* recv, std::span<const size_t> counts,
                                  std::span<const size_t> displs, tuttiDataType_t dtype,
                                  tuttiRedOp_t op) {
  algo::CollArgs a =
      withBlocks(baseArgs(algo::Coll::kReduceScatterV, total(counts), dtype), counts, displs);
  a.op = baseOp(op);
  collective(std::move(a), send, recv, counts[rank_], 0, op == tuttiAvg);
}

void Communicator::gatherV(const void* send, void* recv, std::span<const size_t> counts,
                           std::span<const size_t> displs, tuttiDataType_t dtype, int root) {
  algo::CollArgs a =
      withBlocks(baseArgs(algo::Coll::kGatherV, total(counts), dtype), counts, displs);
  a.root = root;
  collective(std::move(a), send, recv, 0, 0, false);
}

void Communicator::scatterV(const void* send, void* recv, std::span<const size_t> counts,
                            std::span<const size_t> displs, tuttiDataType_t dtype, int root) {
  algo::CollArgs a =
      withBlocks(baseArgs(algo::Coll::kScatterV, total(counts), dtype), counts, displs);
  a.root = root;
  collective(std::move(a), send, recv, 0, 0, false);
}

void Communicator::allToAllV(const void* send, std::span<const size_t> sendCounts,
                             std::span<const size_t> sendDispls, void* recv,
                             std::span<const size_t> recvCounts, std::span<const size_t> recvDispls,
                             tuttiDataType_t dtype) {
  // count 0 in the call tag: the counts differ between ranks.
  algo::CollArgs a = withBlocks(baseArgs(algo::Coll::kAllToAllV, 0, dtype), recvCounts, recvDispls);
  a.sendCounts.assign(sendCounts.begin(), sendCounts.end());
  a.sendDispls.assign(sendDispls.begin(), sendDispls.end());
  collective(std::move(a), send, recv, 0, 0, false);
}

void Communicator::barrier() {
  // A one-byte all-reduce: every rank hears (indirectly) from every other.
  uint8_t in = 0, out = 0;
  algo::CollArgs a = baseArgs(algo::Coll::kAllReduce, 1, tuttiUint8);
  a.op = tuttiMax;
  calls_.asBarrier([&] { collective(std::move(a), &in, &out, 0, 0, false); });
}

}  // namespace tutti
