// The flow control of one cuda_ipc direction (sender -> receiver): a ring of `slots` slots of
// `slotBytes` each (device memory of the receiver, or host memory of the control segment in
// the host-staging fallback) and a control block in shared host memory.
//
//   tail  = chunks the sender has published (written by the sender only)
//   head  = chunks the receiver has released (written by the receiver only)
//   chunk seq lives in slot seq mod slots; the sender may fill it while tail - head < slots.
//   sizes[seq mod slots] = chunk bytes | kLastChunk when it ends a message.
//
// Pure functions and a plain layout: testable on host memory, no CUDA.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

#include "transports/cuda_ipc/ipc_desc.h"

namespace tutti::transport::cudaipc {

struct FifoControl {
  alignas(64) std::atomic<uint64_t> tail{0};
  alignas(64) std::atomic<uint64_t> head{0};
  alignas(64) std::atomic<uint64_t> sizes[kMaxSlots];
};
static_assert(std::atomic<uint64_t>::is_always_lock_free, "flags must be lock-free to be shared");

constexpr uint64_t kLastChunk = uint64_t{1} << 63;

struct FifoGeometry {
  uint32_t slots = 4;
  uint64_t slotBytes = 1 << 20;

  // Offset of the slot holding chunk `seq` from the start of the slot area.
  uint64_t slotOffset(uint64_t seq) const { return (seq % slots) * slotBytes; }
  uint64_t slotAreaBytes() const { return uint64_t{slots} * slotBytes; }
  // Chunks of a message of `bytes` (an empty message still takes one empty chunk).
  uint64_t chunksFor(uint64_t bytes) const {
    return bytes == 0 ? 1 : (bytes + slotBytes - 1) / slotBytes;
  }
  // Bytes of chunk `i` (0-based) of a message of `bytes`.
  uint64_t chunkBytes(uint64_t bytes, uint64_t i) const {
    uint64_t off = i * slotBytes;
    return off >= bytes ? 0 : (bytes - off < slotBytes ? bytes - off : slotBytes);
  }
};

// True when the sender may fill chunk `tail` (a free slot exists).
inline bool hasCredit(uint64_t tail, uint64_t head, uint32_t slots) { return tail - head < slots; }
// True when chunk `head` has been published and may be read.
inline bool hasData(uint64_t tail, uint64_t head) { return tail > head; }

inline uint64_t encodeSize(uint64_t bytes, bool last) { return bytes | (last ? kLastChunk : 0); }
inline uint64_t decodeBytes(uint64_t word) { return word & ~kLastChunk; }
inline bool decodeLast(uint64_t word) { return (word & kLastChunk) != 0; }

// Where the host slots start inside the control segment, and its total size.
inline uint64_t hostSlotsOffset() { return (sizeof(FifoControl) + 4095) / 4096 * 4096; }
inline uint64_t controlSegmentBytes(const FifoGeometry& g) {
  return hostSlotsOffset() + g.slotAreaBytes();
}

}  // namespace tutti::transport::cudaipc
