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
// Buffers: kInput is the user's send buffer, kOutput the receive buffer, kScratch a
// temporary of scratchBytes owned by the executor. For in-place calls kInput and kOutput
// alias as NCCL defines it (all-reduce/broadcast/reduce: same pointer; all-gather: input =
// output + rank*sendbytes; reduce-scatter: output = input + rank*recvbytes), and every
// builder's schedule must be correct both aliased and not.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "tutti/tutti.h"

namespace tutti::exec {

enum class Buf : uint8_t { kInput = 0, kOutput = 1, kScratch = 2 };

struct Slice {
  Buf buf = Buf::kOutput;
  size_t offset = 0;  // bytes
  size_t bytes = 0;
};

enum class OpType : uint8_t {
  kSend,        // send src to peer
  kRecv,        // receive dst.bytes from peer into dst
  kRecvReduce,  // receive dst.bytes from peer; dst = src (op) received (src may equal dst)
  kCopy,        // local: dst = src
  kReduce,      // local: dst = src (op) src2 (either may equal dst)
};

struct Op {
  OpType type;
  int peer = -1;  // transfers only
  Slice src;      // kSend, kRecvReduce, kCopy, kReduce
  Slice src2;     // kReduce
  Slice dst;      // kRecv, kRecvReduce, kCopy, kReduce
};

struct Round {
  std::vector<Op> ops;
};

struct Schedule {
  std::string algorithm;  // name shown by tuttiCommLastAlgorithm and the perf tests
  tuttiDataType_t dtype = tuttiFloat32;
  tuttiRedOp_t op = tuttiSum;  // never tuttiAvg: the communicator turns avg into sum + divide
  size_t scratchBytes = 0;
  std::vector<Round> rounds;

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
};

// Sorted, de-duplicated list of peers the schedule talks to (what must be connected).
std::vector<int> peersOf(const Schedule& s);
// Human-readable dump for debugging and test failure messages.
std::string toString(const Schedule& s);

}  // namespace tutti::exec
