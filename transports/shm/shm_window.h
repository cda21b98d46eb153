// The shm transport's shared window: one segment per rank (a 4 KiB control page with the
// rank's phase counter, then the region), mapped by every rank of the communicator. Waits
// spin, then sleep on a futex on the peer's phase word (shared between processes), waking
// every few milliseconds to check the peer process, its failed flag, the abort flag and the
// deadline.
#pragma once

#include <atomic>
#include <memory>
#include <string>
#include <vector>

#include "host_budget.h"
#include "interfaces/transport.h"
#include "interfaces/window.h"
#include "shm_os.h"

namespace tutti::transport::shm {

// A line slot (Window::linePayload): written only by its owner, read by every peer.
struct alignas(64) LineSlot {
  std::atomic<uint32_t> seq;  // the futex word of waitLine
  uint32_t pad;
  std::byte payload[Window::kLinePayloadBytes];
};
static_assert(sizeof(LineSlot) == Window::kLineSlotBytes);

struct WindowCtrl {
  uint64_t magic;
  uint64_t bytes;
  int32_t rank;
  // Written only by the owner; the tags share the phase's cache line, so a peer that saw
  // the phase has the tags too (one line transfer, not two). A peer may read a tag slot
  // while its owner rewrites it: each slot has a sequence number, odd during a write.
  alignas(64) std::atomic<uint32_t> phase;    // the futex word
  std::atomic<uint32_t> tagSeq[3];            // per slot: even when stable
  std::atomic<uint64_t> tag[3][2];            // Window::setTag, per slot
  alignas(64) std::atomic<uint32_t> waiters;  // peers sleeping (or about to) on phase
  // Set once by the owner when its communicator failed (Window::markFailed): its phase will
  // not move again, and a peer waiting on it fails at once instead of at the timeout.
  alignas(64) std::atomic<uint32_t> failed;
  LineSlot lines[Window::kLineSlots];
};

struct WindowConfig {
  SegmentMode mode = SegmentMode::kMemfd;
  std::string dir;
  size_t bytes = 0;
  HostBudget* budget = nullptr;  // the segment reserves its bytes there first (may be null)
};

// Collective over all ranks of ctx (each calls it once, same bytes). Returns nullptr on
// every rank when any rank could not create or map (logged at INFO with the reason).
std::unique_ptr<Window> createShmWindow(const Context& ctx, const WindowConfig& cfg,
                                        const Deadline& deadline);

}  // namespace tutti::transport::shm
