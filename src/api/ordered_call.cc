#include "ordered_call.h"

#include <mutex>
#include <utility>
#include <vector>

#include "api_guard.h"
#include "common/clock.h"
#include "common/error.h"
#include "common/log.h"

namespace tutti::api {

namespace {

// Taking a call's ticket and enqueueing it happen as one step, process-wide: then the order of
// every stream's tasks agrees with the order of every communicator's tickets, and no two
// streams can wait on each other's later calls.
std::mutex& issueMutex() {
  static std::mutex m;
  return m;
}

}  // namespace

void runInOrder(tuttiComm_t comm, const char* fn, const std::shared_ptr<HostStream>& stream,
                std::function<void()> run, int lane) {
  // A call of every lane runs on lane 0 (tuttiCommLastAlgorithm asks the last call's lane).
  const bool onLaneZero = lane == CallOrder::kEveryLane;
  if (!stream) {
    BlockingTurn turn(comm);
    if (onLaneZero) comm->lastLane.store(0, std::memory_order_relaxed);
    run();
    return;
  }
  stream->checkUsableHere();
  std::lock_guard<std::mutex> lock(issueMutex());
  comm->order.markQueued();
  // One lane: the communicator's only lane is every lane.
  auto ticket = comm->order.take(comm->lanes.count() > 1 ? lane : CallOrder::kEveryLane);
  stream->enqueue(
      [comm, fn, onLaneZero, ticket = std::move(ticket), run = std::move(run)]() mutable {
        ticket->waitTurn();
        tuttiResult_t r = guarded(comm, fn, [&] {
          log::setThreadRank(ready(comm).rank());
          if (onLaneZero) comm->lastLane.store(0, std::memory_order_relaxed);
          run();
          return tuttiSuccess;
        });
        ticket.reset();  // the communicator's next call may start
        return r;
      });
}

namespace {

// Runs f; when `after` is set, tells it how long f took (the clock is read only then).
template <typename F>
void timed(const std::function<void(double)>& after, F&& f) {
  if (!after) return f();
  const double t0 = nowSeconds();
  f();
  after(nowSeconds() - t0);
}

// The turn of a send or receive that waited in P2pPosts: its operation ran with an earlier
// call's (reports that run's outcome), or it runs now with the calls waiting after it.
void runP2pTurn(tuttiComm_t comm, uint64_t ticket, const std::shared_ptr<P2pPosts::Post>& post,
                const std::function<void(double)>& after) {
  P2pPosts& posts = comm->p2pPosts;
  if (!posts.claim(ticket)) {
    if (post->result != tuttiSuccess) fail(post->result, post->error);
    if (after) after(0);
    return;
  }
  Communicator& c = ready(comm);
  log::setThreadRank(c.rank());
  comm->lastLane.store(0, std::memory_order_relaxed);
  std::vector<std::shared_ptr<P2pPosts::Post>> absorbed;
  uint64_t last = ticket;
  // Appends the operations of the calls waiting right after the last one taken in.
  auto takeIn = [&](std::vector<P2pOp>& ops) {
    const size_t before = absorbed.size();
    if (!posts.absorbFollowing(last, absorbed)) return false;
    for (size_t i = before; i < absorbed.size(); ++i) ops.push_back(absorbed[i]->op);
    return true;
  };
  try {
    // The calls waiting already start with this one (their peers are connected together).
    std::vector<P2pOp> first{post->op};
    takeIn(first);
    timed(after, [&] { c.runP2pOpen(first, takeIn, posts.wakeFd()); });
  } catch (const Error& e) {
    for (auto& p : absorbed) p->result = e.code(), p->error = e.what();
    throw;
  }
}

}  // namespace

void runP2pInOrder(tuttiComm_t comm, const char* fn, const std::shared_ptr<HostStream>& stream,
                   const P2pOp& op, std::function<void(double)> after) {
  if (op.peer == ready(comm).rank()) {  // to or from self: a copy, matched inside one call
    runInOrder(comm, fn, stream, [comm, op, after = std::move(after)] {
      timed(after, [&] { ready(comm).runP2p({&op, 1}); });
    });
    return;
  }
  if (!stream && !comm->order.everQueued()) {  // no stream call yet: nothing waits before it
    comm->lastLane.store(0, std::memory_order_relaxed);
    timed(after, [&] { ready(comm).runP2p({&op, 1}); });
    return;
  }
  auto post = std::make_shared<P2pPosts::Post>();
  post->op = op;
  if (!stream) {
    auto ticket = comm->order.take();
    comm->p2pPosts.add(ticket->number(), post);
    ticket->waitTurn();
    runP2pTurn(comm, ticket->number(), post, after);
    return;
  }
  stream->checkUsableHere();
  std::lock_guard<std::mutex> lock(issueMutex());
  comm->order.markQueued();
  auto ticket = comm->order.take();
  comm->p2pPosts.add(ticket->number(), post);
  stream->enqueue([comm, fn, ticket = std::move(ticket), post, after = std::move(after)]() mutable {
    ticket->waitTurn();
    tuttiResult_t r = guarded(comm, fn, [&] {
      runP2pTurn(comm, ticket->number(), post, after);
      return tuttiSuccess;
    });
    ticket.reset();  // the communicator's next call may start
    return r;
  });
}

BlockingTurn::BlockingTurn(tuttiComm_t comm) {
  if (!comm->order.everQueued()) return;
  ticket_ = comm->order.take();
  ticket_->waitTurn();
}

}  // namespace tutti::api
