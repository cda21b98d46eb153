// The line all-reduce (line_allreduce.h).
#include "exec/line_allreduce.h"

#include <cstring>
#include <string>

#include "common/calls_in_flight.h"
#include "common/dtype.h"
#include "reduce/reduce.h"
#include "window_call.h"

namespace tutti::exec {

namespace {

using Tag = transport::Window::Tag;

// What a rank writes before its input: its window tag slots (options.windowTags: this call's
// tag and its recent calls', as the window programs compare them), or this call's tag alone.
void tagsOf(const ExecOptions& options, Tag (&tags)[kLineTagSlots]) {
  for (int s = 0; s < kLineTagSlots; ++s)
    tags[s] = options.windowTags ? options.windowTags[s] : (s == 0 ? options.callTag : Tag{});
}

// The peer's tags against this rank's: the slot of this call must hold the same call (an
// all-reduce of the same shape and number), and a slot of a recent call holding the same call
// number the same call too (a mismatch that an earlier call let pass, as checkPeerCall).
void checkPeerTags(const Tag (&mine)[kLineTagSlots], const std::byte* line, int peer,
                   const ExecOptions& options) {
  Tag theirs[kLineTagSlots];
  std::memcpy(theirs, line, sizeof(theirs));
  for (int s = 0; s < kLineTagSlots; ++s) {
    const bool current = mine[s] == options.callTag;
    if (theirs[s] == mine[s]) continue;
    if (!current && (!options.sameCallNumber || !options.sameCallNumber(mine[s], theirs[s])))
      continue;
    if (options.describeCall) detail::reportMismatch(mine[s], theirs[s], peer, options);
    throw CallMismatch(tuttiInvalidUsage, "rank " + std::to_string(options.rank) + ": rank " +
                                              std::to_string(peer) +
                                              " made another call (line all-reduce)");
  }
}

}  // namespace

bool lineAllReduceFits(const transport::Window* window, size_t bytes) {
  return window != nullptr && bytes <= kLineMaxBytes && window->linePayload(0, 0) != nullptr;
}

void runLineAllReduce(const LineAllReduce& call, const ExecOptions& options) {
  transport::Window& window = *options.window;
  const CallsInFlight counted;
  const size_t bytes = call.count * dtypeSize(call.dtype);
  TUTTI_ASSERT(lineAllReduceFits(&window, bytes) && options.windowState != nullptr);
  const uint32_t seq = options.windowState->nextLineSeq();
  const int slot = static_cast<int>(seq % transport::Window::kLineSlots);
  const int me = options.rank;

  Tag tags[kLineTagSlots];
  tagsOf(options, tags);
  std::byte* mine = window.linePayload(me, slot);
  std::memcpy(mine, tags, kLineTagBytes);
  std::memcpy(mine + kLineTagBytes, call.send, bytes);
  window.postLine(slot, seq);

  const transport::WaitPolicy policy{options.spinUs, options.spinYield, options.timeoutSec,
                                     &options.onStall, options.yieldAboveCalls};
  for (int p = 0; p < call.nranks; ++p) {
    if (p == me) continue;
    blamingPeer(p, [&] { window.waitLine(p, slot, seq, policy); });
    checkPeerTags(tags, window.linePayload(p, slot), p, options);
  }
  // Every input is in a slot (this rank's too: recv may be send), reduced in rank order.
  auto input = [&](int r) { return window.linePayload(r, slot) + kLineTagBytes; };
  if (call.nranks == 1) {
    std::memcpy(call.recv, input(0), bytes);
  } else {
    const reduce::Kernel kernel = reduce::kernelFor(call.dtype, call.op);
    kernel(call.recv, input(0), input(1), call.count);
    for (int r = 2; r < call.nranks; ++r) kernel(call.recv, call.recv, input(r), call.count);
  }
  window.flushPosts();  // no peer may sleep on this call's post after it returns
}

}  // namespace tutti::exec
