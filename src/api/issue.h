// How a collective-shaped call runs once its arguments are checked: now, enqueued on a host
// stream (tuttiStreamCreate; returns at once), or recorded when a group is open, always in the
// communicator's call order (ordered_call.h); body(c, send, recv) gets the user's buffers, or host
// copies of them when they are device memory (memory_space.h), staged on `stream` when it is a
// cudaStream_t, unless a device body given for the call (all-reduce: the direct device path)
// takes them first. Shared by collectives.cc and uneven_collectives.cc.
// Logs the call's COLL line and counts it for PERF (call_log.h) when those log at INFO.
#pragma once

#include <algorithm>
#include <optional>
#include <string_view>
#include <type_traits>
#include <utility>

#include "call_log.h"
#include "comm_handle.h"
#include "common/clock.h"
#include "group.h"
#include "memory_space.h"
#include "ordered_call.h"
#include "tutti/tutti.h"

namespace tutti::api {

// The collective a group may fuse (group_fusion.h) that entry point fn makes, if any.
inline std::optional<algo::Coll> fusibleCollOf(std::string_view fn) {
  if (fn == "tuttiAllReduce") return algo::Coll::kAllReduce;
  if (fn == "tuttiAllGather") return algo::Coll::kAllGather;
  if (fn == "tuttiReduceScatter") return algo::Coll::kReduceScatter;
  if (fn == "tuttiAllToAll") return algo::Coll::kAllToAll;
  return std::nullopt;
}

// body(c, send, recv) runs the call on c: the communicator's lane for this call
// (comm_lanes.h; the communicator itself with one lane, or inside a group). For device
// buffers, deviceBody(c, send, recv, cudaStream), when given, may run the call on the device
// and return true; false (or none given) stages the call through host memory.
template <typename F, typename D = std::nullptr_t>
tuttiResult_t issue(tuttiComm_t comm, const char* fn, const CallInfo& info, const CallBuffers& b,
                    tuttiStream_t stream, F&& body, D&& deviceBody = nullptr) {
  const bool device = buffersOnDevice(fn, b);
  std::shared_ptr<HostStream> host = hostStreamOf(stream);
  const tuttiStream_t cudaStream = host ? nullptr : stream;
  const bool grouped = groupDepth() > 0;
  const uint64_t opCount = comm->opCount++;
  // Every rank numbers its collectives alike, so every rank gives this one the same lane.
  const int lane = grouped ? 0 : comm->lanes.laneOf(comm->collectives++);
  PerfStats* perf = nullptr;
  if (log::enabledAny(log::Level::kInfo, kCollOrPerf)) [[unlikely]]
    perf = logCollective(comm, fn, info, b, stream, device, grouped, opCount);
  auto run = [comm, lane, fn, b, cudaStream, device, perf, body = std::forward<F>(body),
              deviceBody = std::forward<D>(deviceBody)]() {
    const double t0 = perf != nullptr ? nowSeconds() : 0;
    Communicator& c = comm->lanes.at(ready(comm), lane);
    comm->lastLane.store(lane, std::memory_order_relaxed);
    bool onDevice = false;  // run on the device, without staging
    if constexpr (!std::is_same_v<std::decay_t<D>, std::nullptr_t>)
      if (device) onDevice = deviceBody(c, b.send, b.recv, cudaStream);
    if (!device)
      body(c, b.send, b.recv);
    else if (!onDevice)
      runStaged(fn, b, cudaStream, [&](const void* send, void* recv) { body(c, send, recv); });
    if (perf != nullptr)
      perf->add(callName(fn), std::max(b.sendBytes, b.recvBytes), nowSeconds() - t0, true);
  };
  if (grouped) {
    std::optional<FusibleCall> fusible;
    // All-reduce, all-gather, reduce-scatter and all-to-all may fuse (group_fusion.h).
    const std::optional<algo::Coll> coll = fusibleCollOf(fn);
    if (!device && coll && std::max(b.sendBytes, b.recvBytes) <= fuseLimit(*coll))
      fusible = FusibleCall{*coll,      b.send,     b.sendBytes, b.recv, b.recvBytes,
                            info.count, info.dtype, info.op,     perf,   callName(fn)};
    deferCollective(comm, std::move(run), std::move(host), fusible, estimateOf(fn, info));
    return tuttiSuccess;
  }
  if (host)
    runInOrder(comm, fn, host, std::move(run), lane);
  else
    runNowInOrder(comm, run, lane);
  return tuttiSuccess;
}

}  // namespace tutti::api
