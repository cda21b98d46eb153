#include "ordered_call.h"

#include <mutex>
#include <utility>

#include "api_guard.h"
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
                std::function<void()> run) {
  if (!stream) {
    BlockingTurn turn(comm);
    run();
    return;
  }
  stream->checkUsableHere();
  std::lock_guard<std::mutex> lock(issueMutex());
  comm->order.markQueued();
  auto ticket = comm->order.take();
  stream->enqueue([comm, fn, ticket = std::move(ticket), run = std::move(run)]() mutable {
    ticket->waitTurn();
    tuttiResult_t r = guarded(comm, fn, [&] {
      log::setThreadRank(ready(comm).rank());
      run();
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
