#include "window_call.h"

#include <string>

#include "common/error.h"

namespace tutti::exec::detail {

namespace {

bool sameSlice(const Slice& a, const Slice& b) {
  return a.buf == b.buf && a.offset == b.offset && a.bytes == b.bytes && a.rank == b.rank;
}

bool overlaps(const Slice& a, const Slice& b) {
  return a.buf == b.buf && a.rank == b.rank && a.offset < b.offset + b.bytes &&
         b.offset < a.offset + a.bytes;
}

}  // namespace

size_t reduceChainLength(const std::vector<Op>& ops, size_t first) {
  const Op& head = ops[first];
  size_t n = 1;
  while (first + n < ops.size()) {
    const Op& o = ops[first + n];
    if (o.type != OpType::kReduce || !sameSlice(o.dst, head.dst) || !sameSlice(o.src, head.dst) ||
        overlaps(o.src2, head.dst))
      break;
    ++n;
  }
  return n;
}

WindowUse beginWindowCall(transport::Window* window, WindowState* state, const WindowNeeds& needs) {
  if (needs.bytes > 0 || needs.phases > 0) {
    if (window == nullptr || window->bytes() < needs.bytes)
      fail(tuttiInternalError, "schedule '", needs.algorithm, "' needs a shared window of ",
           needs.bytes, " bytes but the communicator has ",
           window ? std::to_string(window->bytes()) + " bytes" : std::string("none"));
  }
  WindowUse use;
  use.window = window;
  use.state = state;
  if (window == nullptr) return use;
  TUTTI_ASSERT(state != nullptr);
  use.epoch = use.zeroTarget = state->epoch();
  // A schedule that fits in half the region runs in the half not used by the previous call,
  // so its phase-0 waits only wait for the call before that (done, in a steady stream).
  const size_t halfBytes = WindowState::halfBytes(window->bytes());
  if (needs.phases > 0 && needs.bytes <= halfBytes) {
    use.half = state->nextHalf();
    use.base = static_cast<size_t>(use.half) * halfBytes;
    use.zeroTarget = state->halfFree(use.half);
    // Every rank makes the same half/whole decision for the same call, so when the next
    // call needs the skipped post (a whole-window call waits for it at phase 0) every rank
    // posts it first, below.
    use.skipFinalPost = needs.finalPostOnlyForNextCall;
  } else if (needs.phases > 0) {
    state->postSkippedFinal(*window);
  }
  return use;
}

void checkPeerCall(const WindowUse& use, int peer, const ExecOptions& options) {
  for (int slot = 0; slot < transport::Window::kTagSlots; ++slot) {
    transport::Window::Tag theirs;
    if (!use.window->tag(peer, slot, &theirs)) continue;  // being rewritten: a later call
    const transport::Window::Tag& mine = options.windowTags[slot];
    if (theirs == mine || !options.sameCallNumber(mine, theirs)) continue;
    reportMismatch(mine, theirs, peer, options);
  }
}

void reportMismatch(const transport::Window::Tag& mine, const transport::Window::Tag& theirs,
                    int peer, const ExecOptions& options) {
  std::string peerText =
      options.describePeer ? options.describePeer(peer) : "rank " + std::to_string(peer);
  throw CallMismatch(tuttiInvalidUsage, "rank " + std::to_string(options.rank) +
                                            ": mismatched collective calls: this rank called " +
                                            options.describeCall(mine) + " but " + peerText +
                                            " called " + options.describeCall(theirs));
}

void endWindowCall(const WindowUse& use, const WindowNeeds& needs) {
  if (use.window == nullptr || needs.phases == 0) return;
  use.state->finishCall(needs.phases, use.half, use.skipFinalPost);
  use.window->flushPosts();  // no peer may sleep on this call's posts after it returns
}

}  // namespace tutti::exec::detail
