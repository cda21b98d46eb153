// Runs one call of a communicator in the communicator's call order (call_order.h): now on this
// thread, or, given a host stream, enqueued there (returns at once; the stream reports a
// failure, and the communicator records it as a call on this thread would).
#pragma once

#include <functional>
#include <memory>
#include <utility>

#include "comm_handle.h"
#include "host_stream.h"

namespace tutti::api {

// fn names the call in the error text; run throws tutti::Error on failure. Without a stream,
// run's exceptions reach the caller, and the call waits for every earlier call. On a stream, a
// call of one lane (a collective: comm_lanes.h) waits for the earlier calls of its lane
// and those of every lane (CallOrder::kEveryLane, the default: all other calls).
void runInOrder(tuttiComm_t comm, const char* fn, const std::shared_ptr<HostStream>& stream,
                std::function<void()> run, int lane = CallOrder::kEveryLane);

// runInOrder without a stream, for a call that runs now: no std::function around `run` (its
// captures would be allocated on the heap, on every call).
template <typename F>
void runNowInOrder(tuttiComm_t comm, F&& run, int lane = CallOrder::kEveryLane);

// A send or receive in the communicator's call order, now or on a host stream, as runInOrder
// runs a call (one to or from this rank itself is a copy, run by runInOrder); once the
// communicator has had a stream call it waits for its turn in P2pPosts (p2p_posts.h), where
// the point-to-point call before it may absorb it, and when its turn comes it runs with the
// calls that wait after it. after (may be empty) is called with the time it ran (0 when
// absorbed) when it succeeds.
void runP2pInOrder(tuttiComm_t comm, const char* fn, const std::shared_ptr<HostStream>& stream,
                   const P2pOp& op, std::function<void(double)> after);

// Waits until the communicator's calls issued so far have finished, and holds its turn while
// alive (nothing to wait for, and no ticket, until its first stream call: the blocking path
// stays one atomic load longer): for a blocking call of runInOrder and the blocking calls that
// do not go through it (split, shrink, the algorithm and timeout settings, the compressed
// all-reduce), so they see the calls before them done.
class BlockingTurn {
 public:
  explicit BlockingTurn(tuttiComm_t comm);

 private:
  std::shared_ptr<CallOrder::Ticket> ticket_;
};

template <typename F>
void runNowInOrder(tuttiComm_t comm, F&& run, int lane) {
  BlockingTurn turn(comm);  // as runInOrder's blocking path
  if (lane == CallOrder::kEveryLane) comm->lastLane.store(0, std::memory_order_relaxed);
  std::forward<F>(run)();
}

}  // namespace tutti::api
