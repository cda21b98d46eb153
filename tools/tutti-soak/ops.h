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
  kSendRecv,
  kBarrier,
  kCount
};
const char* kindText(Kind k);

// One communicator of a worker; the same index names the same communicator on every rank.
struct Comm {
  tuttiComm_t handle = nullptr;
  int rank = 0;
  int size = 1;
  std::string name;
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
  // V variants: per-peer counts and displacements (elements).
  std::vector<size_t> sendCounts, sendDispls, recvCounts, recvDispls;
  std::vector<std::byte> send, recv;

  std::string describe(const std::vector<Comm>& comms) const;
};

// Draws an op on one of `comms` (the same draws on every rank) and fills its buffers for this
// rank. maxBytes bounds each buffer.
Op drawOp(std::mt19937_64& rng, uint64_t call, const std::vector<Comm>& comms, size_t maxBytes,
          bool allowP2p);
// Issues op (inside or outside a group). Returns the API's result.
tuttiResult_t issueOp(Op& op, const std::vector<Comm>& comms);
// Checks op's result; "" when right, else the first wrong element described.
std::string verifyOp(const Op& op, const std::vector<Comm>& comms);
// Bytes op delivered to this rank (its verified output).
size_t outputBytes(const Op& op, const std::vector<Comm>& comms);

}  // namespace tutti::soak
