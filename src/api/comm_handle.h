// What a tuttiComm_t points to: the communicator (once initialised), the rendezvous store
// it was made from, the asynchronous-init thread, and the last error.
#pragma once

#include <unistd.h>

#include <atomic>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "bootstrap/store.h"
#include "call_log.h"
#include "call_order.h"
#include "comm_lanes.h"
#include "comm/communicator.h"
#include "compress/compressed_allreduce.h"
#include "fork_guard.h"
#include "p2p_posts.h"
#include "tutti/tutti.h"

namespace tutti::api {
// Every handle has a serial, live from construction to destruction (group.cc): a group that
// recorded calls on a handle destroyed before tuttiGroupEnd drops them instead of touching
// freed memory, whichever thread destroyed it, and a new handle at the same address is not
// taken for the old one.
uint64_t registerComm();
void unregisterComm(uint64_t serial);
}  // namespace tutti::api

struct tuttiComm {
  tuttiComm() = default;
  ~tuttiComm() { tutti::api::unregisterComm(serial); }
  tuttiComm(const tuttiComm&) = delete;
  tuttiComm& operator=(const tuttiComm&) = delete;
  const uint64_t serial = tutti::api::registerComm();
  // The process that made the handle, and its fork count then (fork_guard.h): a forked
  // child's calls on it are refused.
  const uint64_t forkGeneration = tutti::api::forkGeneration();
  const pid_t creatorPid = ::getpid();
  std::unique_ptr<tutti::Communicator> impl;
  std::shared_ptr<tutti::bootstrap::Store> store;
  std::shared_ptr<void> storeServer;  // keeps rank 0's TCP store server alive
  // False for a split child: it shares its parent's store, which tuttiCommAbort of the
  // child must leave usable (the child's own waits end through its PrefixStore).
  bool ownsStore = true;
  std::thread initThread;
  std::atomic<tuttiResult_t> asyncError{tuttiSuccess};
  std::atomic<bool> abortRequested{false};
  // Guards store/impl while a non-blocking init publishes them and tuttiCommAbort reads them.
  std::mutex initMutex;
  std::mutex errorMutex;
  std::string lastError;
  // The first failure of the communicator (a peer died or did not answer: tuttiRemoteError,
  // tuttiTimeout) and its text (under errorMutex). Once set, tuttiCommGetAsyncError reports
  // it and tuttiCommDestroy releases everything at once without waiting for the other ranks.
  std::atomic<tuttiResult_t> failure{tuttiSuccess};
  std::string failureText;
  std::string transportsText;  // storage for tuttiCommTransports
  // tuttiAllReduceCompressed's state (made at the first call, under errorMutex); declared
  // after impl, so it goes (joining its helper thread) before the communicator does.
  std::unique_ptr<tutti::compress::CompressedAllReduce> compressed;
  // Calls made on this communicator (collectives and sends/receives): the opCount of the COLL
  // and P2P log lines.
  uint64_t opCount = 0;
  // PERF counters (call_log.h), made under errorMutex at the first call PERF logs.
  std::unique_ptr<tutti::api::PerfStats> perf;
  // Its lanes (comm_lanes.h; TUTTI_STREAM_LANES), made with impl; the number of
  // collectives issued on it, which picks each one's lane; the lane of the last one run.
  tutti::api::CommLanes lanes;
  uint64_t collectives = 0;
  std::atomic<int> lastLane{0};
  // The order its calls run in, on the caller's thread or on host streams (call_order.h);
  // tuttiCommDestroy waits for every call issued before it.
  tutti::api::CallOrder order;
  // Its point-to-point calls waiting for their turn in that order (p2p_posts.h).
  tutti::api::P2pPosts p2pPosts;
};

namespace tutti::api {
// The ready communicator of a handle; throws when null, still initialising, failed to
// initialise, or failed since (a peer died or timed out, or the ranks' calls differed): then
// with the failure's code and cause, at once.
Communicator& ready(tuttiComm_t comm);
// The same without the failure check (rank and size stay readable after a failure).
Communicator& initialised(tuttiComm_t comm);
}  // namespace tutti::api
