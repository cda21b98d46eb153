// Layout of one shm FIFO segment (one direction of one peer pair, created by the sender).
//
//   [0, 4096)            Ctrl: counters and flags, each on its own cache line
//   [4096, 4096 + F)     the ring of F bytes (F a multiple of 4096)
//
// head and tail count bytes ever written / consumed (never wrap). A message is a 64-byte
// MsgHeader at a 64-byte aligned position, then (kInline) its payload; the next header
// starts at the payload end rounded up to 64 (both sides skip the padding lazily).
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

namespace tutti::transport::shm {

inline constexpr uint64_t kSegmentMagic = 0x316d737474747574ull;  // "tuttsm1"
inline constexpr size_t kCtrlBytes = 4096;
inline constexpr size_t kRecord = 64;

static_assert(std::atomic<uint64_t>::is_always_lock_free);
static_assert(std::atomic<uint32_t>::is_always_lock_free);

struct Ctrl {
  uint64_t magic;
  uint64_t fifoBytes;
  int32_t fromRank;
  int32_t toRank;
  alignas(64) std::atomic<uint64_t> head;  // written by the sender (creator)
  alignas(64) std::atomic<uint64_t> tail;  // written by the receiver
  // The creator's "I am about to sleep" flag (one per connection endpoint: it covers the
  // creator's send on this segment and its receive on the peer's segment).
  alignas(64) std::atomic<uint32_t> ownerSleeping;
  // Receiver -> sender for single-copy messages: (seq << 1) | refused.
  alignas(64) std::atomic<uint64_t> cmaAck;
  // Set when that side closed the connection (its communicator failed or was destroyed):
  // the other side's send or receive that cannot complete fails at once instead of waiting
  // for the process to exit or the timeout.
  alignas(64) std::atomic<uint32_t> senderClosed;
  std::atomic<uint32_t> receiverClosed;
};
static_assert(sizeof(Ctrl) <= kCtrlBytes);

// kRestart: the sender found the FIFO empty past its cache-hot start and continues at the
// start of the next lap (both sides skip to the next multiple of fifoBytes), so a stream of
// small messages keeps reusing the same few cache lines instead of walking the whole FIFO.
enum class MsgKind : uint32_t { kInline = 1, kCma = 2, kRestart = 3 };

// Offset into the FIFO past which an empty FIFO restarts at its start.
inline constexpr uint64_t kFifoHotBytes = 64u << 10;

struct MsgHeader {
  uint64_t bytes;
  uint64_t cmaAddr;  // kCma: the sender's buffer in its address space
  uint32_t kind;
  uint32_t seq;    // messages sent on this FIFO, from 1
  int32_t cmaPid;  // kCma: the sender's pid
  uint32_t reserved[5];
  uint64_t tag[2];  // the message's tag (transport.h)
};
static_assert(sizeof(MsgHeader) == kRecord);

inline constexpr uint64_t roundUpRecord(uint64_t x) { return (x + kRecord - 1) & ~(kRecord - 1); }

}  // namespace tutti::transport::shm
