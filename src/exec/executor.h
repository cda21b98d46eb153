// The schedule executor: runs one rank's Schedule over the communicator's connections.
// Transfers of a round progress concurrently; receives reduce while bytes arrive (the
// transport hands over views of its staging memory), which is NCCL's fused recv+reduce;
// idle ranks spin briefly (TUTTI_SPIN_US) and then sleep on the transports' wait fds.
#pragma once

#include <atomic>
#include <cstddef>
#include <deque>
#include <functional>
#include <span>
#include <vector>

#include "exec/schedule.h"
#include "exec/window_state.h"
#include "interfaces/transport.h"

namespace tutti::exec {

// Ranks made different collective calls (seen through a window tag or a message tag): the
// communicator cannot be trusted any more (streams and windows are out of step).
class CallMismatch : public Error {
 public:
  using Error::Error;
};

// A peer this rank needed died, closed its connections or its window (it failed or was
// aborted): tuttiRemoteError, with the peer's rank so the communicator can ask why.
class PeerFailure : public Error {
 public:
  // closedOnPurpose: the peer closed its connections or window itself (transport::PeerClosed)
  // after a failure of its own, rather than dying.
  PeerFailure(int peer, std::string message, bool closedOnPurpose = false)
      : Error(tuttiRemoteError, std::move(message)),
        peer_(peer),
        closedOnPurpose_(closedOnPurpose) {}
  int peer() const { return peer_; }
  bool closedOnPurpose() const { return closedOnPurpose_; }

 private:
  int peer_;
  bool closedOnPurpose_;
};

// Runs f; a tuttiRemoteError it throws (other than a mismatch) becomes PeerFailure(peer).
template <typename F>
void blamingPeer(int peer, F&& f) {
  try {
    f();
  } catch (const PeerFailure&) {
    throw;
  } catch (const CallMismatch&) {
    throw;
  } catch (const transport::PeerClosed& e) {
    throw PeerFailure(peer, e.what(), true);
  } catch (const Error& e) {
    if (e.code() == tuttiRemoteError) throw PeerFailure(peer, e.what());
    throw;
  }
}

struct ExecOptions {
  int rank = 0;
  double timeoutSec = 60.0;  // no progress for this long -> tuttiTimeout naming the peers
  double spinUs = 50.0;
  bool spinYield = false;  // sched_yield while polling (more ranks than cores), else pause
  // Also yield while the process has more calls in flight than this (cores per rank of the
  // host, TUTTI_SPIN_YIELD=auto; 0: never): common/calls_in_flight.h.
  int yieldAboveCalls = 0;
  const std::atomic<bool>* aborted = nullptr;
  int abortFd = -1;  // readable when the communicator is aborted (woken from sleep)
  // Describes a peer for error messages ("rank 3 (host h, pid 42)").
  std::function<std::string(int peer)> describePeer;
  // Called with each peer a call waits for, and the step awaited ("receive 0/1328 B", "window
  // phase 12, it reached 11"), once it has made no progress for WaitPolicy::kStallReportSec,
  // about once a second (window waits and transfers alike); may throw CallMismatch. Empty: not
  // called.
  std::function<void(int peer, const std::string& step)> onStall;
  // The communicator's shared window (schedules with Buf::kWindow slices, kPost, kWait) and
  // the bookkeeping of its calls (set together; both outlive the call).
  transport::Window* window = nullptr;
  WindowState* windowState = nullptr;
  // Describes this call on every message sent over connections (checked by the transports
  // that frame messages); describeCall turns a tag into words for the error message. An
  // all-zero tag is never checked.
  transport::Window::Tag callTag{};
  std::function<std::string(const transport::Window::Tag&)> describeCall;
  // What this rank wrote in its window's tag slots (Window::kTagSlots of them: the owner
  // writes every collective call's tag at the call's start), compared with a peer's after
  // every wait for it at phase 1 or later; sameCallNumber tells whether two tags are the same
  // call of the sequence (then they must be equal). Null: no check.
  const transport::Window::Tag* windowTags = nullptr;
  bool (*sameCallNumber)(const transport::Window::Tag&, const transport::Window::Tag&) = nullptr;
};

// buffers[b] is the base address of buffer index b (Buf::kInput, kOutput, kScratch, then
// extra user buffers used by grouped point-to-point operations).
// connections[peer] must be non-null for every peer the schedule uses.
void execute(const Schedule& schedule, std::span<std::byte* const> buffers,
             std::span<transport::Connection* const> connections, const ExecOptions& options);

// An open round: sends and receives (kSend, kRecv only) that may grow while they run. The
// source is asked for more between progress passes (and once more when everything has
// completed); it may append ops to `ops` and buffers to `buffers` (which the ops' slices index)
// and returns whether it appended any. The round ends when every op has completed and the
// source adds none. Transfers to one peer in one direction run in the order of `ops`. Used
// for point-to-point operations posted on host streams while earlier ones wait for peers.
// wakeFd (-1: none) is readable when the source may have more: a sleeping round wakes for it
// (its owner drains it).
using OpenRoundSource = std::function<bool(std::deque<Op>& ops, std::vector<std::byte*>& buffers)>;
void executeOpenRound(std::deque<Op>& ops, std::vector<std::byte*>& buffers,
                      std::span<transport::Connection* const> connections,
                      const ExecOptions& options, const OpenRoundSource& more, int wakeFd);

}  // namespace tutti::exec
