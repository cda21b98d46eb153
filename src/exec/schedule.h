// The schedule IR: what an algorithm emits and the executor (or the simulator) runs.
//
// A Schedule is one rank's ordered list of Rounds. In each round the executor first runs the
// round's local ops (kCopy, kReduce) in order, then runs all of the round's transfer ops
// (kSend, kRecv, kRecvReduce) concurrently, pipelined in chunks, and the round ends when all
// of them are complete. Transfers to/from the same peer in the same direction are matched
// in order (the n-th send from A to B meets the n-th receive on B from A, counted across the
// whole schedule). Within one round, a send must not read bytes that a receive of the same
// round writes, and receives must write disjoint bytes.
//
// Shared windows (algorithms such as `direct`, when the communicator has a transport::Window):
// a slice in Buf::kWindow addresses the window of rank `Slice::rank`, which every rank maps.
// kPost publishes this rank's window phase; kWait waits until `peer` posted a phase. A round
// runs its kWait ops first (all of them), then its local ops in order (kCopy, kReduce,
// kPost), then its transfers. Phases are relative to the call (1..windowPhases; 0 means
// "the peer is done with the part of the window this call uses"), so a rank must only
// overwrite its window after waiting for phase 0 (or a later phase that implies the peers are
// done with it). Window slices are relative too: a schedule whose windowBytes fit in half the
// region runs in the half the previous call did not use (transport::Window::nextHalf), and
// its phase 0 then means "the peer finished the last call in that half", usually long ago.
//
// Weighted mixes (neighbour all-reduce): kMix is a local op, dst = sum_k w_k * src_k over the
// sources and weights of Schedule::mixes[Op::mix], summed in that order element by element
// (float16 / bfloat16 / float32 in float32, float64 in float64; rounded to dst's type once).
// dst may be identical to any source (never partially overlapping).
//
// Buffers: kInput is the user's send buffer, kOutput the receive buffer, kScratch a
// temporary of scratchBytes owned by the executor. For in-place calls kInput and kOutput
// alias as NCCL defines it (all-reduce/broadcast/reduce: same pointer; all-gather: input =
// output + rank*sendbytes; reduce-scatter: output = input + rank*recvbytes), and every
// builder's schedule must be correct both aliased and not.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "tutti/tutti.h"

namespace tutti::exec {

enum class Buf : uint16_t { kInput = 0, kOutput = 1, kScratch = 2, kWindow = 3 };
// Buffer indices from here on are extra user buffers (grouped point-to-point operations).
inline constexpr int kFirstUserBuf = 4;

struct Slice {
  Buf buf = Buf::kOutput;
  size_t offset = 0;  // bytes
  size_t bytes = 0;
  int rank = -1;  // Buf::kWindow: whose window
};

enum class OpType : uint8_t {
  kSend,        // send src to peer
  kRecv,        // receive dst.bytes from peer into dst
  kRecvReduce,  // receive dst.bytes from peer; dst = src (op) received (src may equal dst)
  kCopy,        // local: dst = src
  kReduce,      // local: dst = src (op) src2 (either may equal dst)
  kPost,        // local: publish this rank's window phase `phase`
  kWait,        // wait until `peer` posted window phase `phase` (runs before local ops)
  kMix,         // local: dst = weighted sum of Schedule::mixes[mix] (see above)
};

struct Op {
  OpType type;
  int peer = -1;       // transfers only
  Slice src;           // kSend, kRecvReduce, kCopy, kReduce
  Slice src2;          // kReduce
  Slice dst;           // kRecv, kRecvReduce, kCopy, kReduce
  uint32_t phase = 0;  // kPost, kWait
  uint32_t mix = 0;    // kMix: index into Schedule::mixes
};

// The sources and weights of one kMix op (same length; sources as long as its dst).
struct Mix {
  std::vector<Slice> srcs;
  std::vector<double> weights;
};

struct Round {
  std::vector<Op> ops;
};

struct Schedule {
  std::string algorithm;  // name shown by tuttiCommLastAlgorithm and the perf tests
  tuttiDataType_t dtype = tuttiFloat32;
  tuttiRedOp_t op = tuttiSum;  // never tuttiAvg: the communicator turns avg into sum + divide
  size_t scratchBytes = 0;
  size_t windowBytes = 0;     // bytes of each rank's shared window the schedule uses
  uint32_t windowPhases = 0;  // highest phase posted (the executor's epoch advances by it)
  // The last op posts windowPhases and nothing in the schedule waits for it: only the next
  // call's phase-0 waits do. In a stream of half-window calls the next call's phase-1 post
  // implies it, so the executor skips it (one store + fence per call).
  bool finalPostOnlyForNextCall = false;
  // A one-shot all-reduce of at most kLineMaxBytes that the executor runs over the window's
  // line slots when the window has them (exec/line_allreduce.h); the ops are the same call
  // as a direct one-shot (what the simulator and windows without line slots run).
  bool lineProtocol = false;
  static constexpr size_t kLineMaxBytes = 200;  // a line slot's payload less the call tags
  std::vector<Round> rounds;
  std::vector<Mix> mixes;  // of the kMix ops

  // Builder helpers.
  Round& newRound() { return rounds.emplace_back(); }
  static Op send(int peer, Slice src) { return Op{OpType::kSend, peer, src, {}, {}}; }
  static Op recv(int peer, Slice dst) { return Op{OpType::kRecv, peer, {}, {}, dst}; }
  static Op recvReduce(int peer, Slice src, Slice dst) {
    return Op{OpType::kRecvReduce, peer, src, {}, dst};
  }
  static Op copy(Slice src, Slice dst) { return Op{OpType::kCopy, -1, src, {}, dst}; }
  static Op reduce(Slice src, Slice src2, Slice dst) {
    return Op{OpType::kReduce, -1, src, src2, dst};
  }
  static Op post(uint32_t phase) { return Op{OpType::kPost, -1, {}, {}, {}, phase}; }
  static Op wait(int peer, uint32_t phase) { return Op{OpType::kWait, peer, {}, {}, {}, phase}; }
  // Appends the mix to mixes and returns its op.
  Op mixOp(Slice dst, Mix m) {
    mixes.push_back(std::move(m));
    Op op{OpType::kMix, -1, {}, {}, dst};
    op.mix = static_cast<uint32_t>(mixes.size() - 1);
    return op;
  }
  static Slice window(int rank, size_t offset, size_t bytes) {
    return Slice{Buf::kWindow, offset, bytes, rank};
  }
};

// Sorted, de-duplicated list of peers the schedule talks to (what must be connected).
std::vector<int> peersOf(const Schedule& s);
// Human-readable forms for debugging and error messages ("send(to 3, out[0+64])").
const char* bufName(Buf b);
std::string toString(const Slice& s);
std::string toString(const Op& op);
std::string toString(const Schedule& s);

}  // namespace tutti::exec
