// tutti-soak's operations: one random call drawn from a random stream that every rank draws
// identically (same seed), its buffers filled with values.h's inputs, issued through the
// public API, and its result checked element by element against values.h's expectations.
#pragma once

#include <cstddef>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "tutti/tutti.h"

namespace tutti::soak {

enum class Kind {
  kAllReduce,
  kBroadcast,
  kReduce,
  kAllGather,
  kReduceScatter,
  kAllToAll,
  kGather,
  kScatter,
  kAllGatherV,
  kAllToAllV,
  kReduceScatterV,
  kGatherV,
  kScatterV,
  kSendRecv,
  kBarrier,
  kCount
};
const char* kindText(Kind k);
// The V collectives (per-rank counts and displacements, gaps between the blocks).
bool isV(Kind k);

// One communicator of a worker; the same index names the same communicator on every rank.
struct Comm {
  tuttiComm_t handle = nullptr;
  int rank = 0;
  int size = 1;
  std::string name;
  tuttiStream_t stream = nullptr;  // the worker's host stream for this communicator
};

struct Op {
  Kind kind = Kind::kBarrier;
  int comm = 0;
  uint64_t call = 0;  // the op's number in the worker's stream (the same on every rank)
  tuttiDataType_t dtype = tuttiFloat32;
  tuttiRedOp_t op = tuttiSum;
  size_t count = 0;
  int root = 0;
  int shift = 1;  // send/recv: to rank + shift, from rank - shift
  bool inPlace = false;
  bool rootOnlyBuffer = false;  // gather-v: a non-root passes a receive buffer (to stay untouched)
  bool onStream = false;        // issued on the communicator's host stream
  int fusedMember = -1;         // a fused group's member: its index, of fusedSize
  int fusedSize = 0;
  // V variants: per-peer counts and displacements (elements).
  std::vector<size_t> sendCounts, sendDispls, recvCounts, recvDispls;
  // Reduce-scatter-v and scatter-v out of place: the output's element offset in recv, whose
  // elements before and after it must stay untouched.
  size_t recvAt = 0;
  std::vector<std::byte> send, recv;

  std::string describe(const std::vector<Comm>& comms) const;
};

// Draws an op on one of `comms` (the same draws on every rank) and fills its buffers for this
// rank. maxBytes bounds each buffer.
Op drawOp(std::mt19937_64& rng, uint64_t call, const std::vector<Comm>& comms, size_t maxBytes,
          bool allowP2p);
// Draws a group for tutti to fuse (src/api/group_fusion.cc): 2-6 small all-reduces (sometimes
// one all-gather among them) on one communicator, counts of their own (0 to a few thousand
// elements, most within the fusion limits), one datatype and op or mixed ones. Takes a fixed
// number of draws; the members get the call numbers from `call` on (advanced past them).
std::vector<Op> drawFusedGroup(std::mt19937_64& rng, uint64_t& call,
                               const std::vector<Comm>& comms);
// Issues op (inside or outside a group) on `stream` (NULL: blocking). Returns the API's result.
tuttiResult_t issueOp(Op& op, const std::vector<Comm>& comms, tuttiStream_t stream);
// Checks op's result; "" when right, else the first wrong element described.
std::string verifyOp(const Op& op, const std::vector<Comm>& comms);
// Bytes op delivered to this rank (its verified output).
size_t outputBytes(const Op& op, const std::vector<Comm>& comms);

}  // namespace tutti::soak
