// What a perf test binary knows about its collective (one small descriptor per binary in
// perf_tests/collectives/); the shared driver (driver.cc) does everything else.
#pragma once

#include <cstddef>
#include <vector>

#include "driver/verify.h"
#include "tutti/tutti.h"

namespace tutti_perf {

// Element counts for one size, as nccl-tests' getCollByteCount: `count` = size / sizeof(type).
struct Layout {
  size_t sendCount = 0;          // elements in the send buffer
  size_t recvCount = 0;          // elements in the receive buffer (and the expected buffer)
  size_t paramCount = 0;         // the count argument passed to the call
  size_t sendInplaceOffset = 0;  // in-place: send = recv + rank * sendInplaceOffset
  size_t recvInplaceOffset = 0;  // in-place: recv = recv + rank * recvInplaceOffset
};

struct Collective {
  const char* program;  // "all_reduce_perf"
  const char* algoKey;  // the TUTTI_ALGO key: "allreduce", "allgather", ... (-A all sweeps
                        // tuttiAlgorithms(algoKey))
  bool hasOp;           // reduction: -o applies, redop column shows the op
  bool hasRoot;         // rooted: -r applies, root column shows the root
  bool inPlaceChecked;  // false: in-place results are not checked (#wrong N/A), as nccl-tests
  Layout (*layout)(size_t count, int nranks);
  // algbw = paramCount * typeSize * algFactor(n) / time;  busbw = algbw * busFactor(n).
  double (*algFactor)(int nranks);
  double (*busFactor)(int nranks);
  // Writes this rank's input (layout.sendCount elements) to `input`; may do nothing (broadcast
  // on a non-root rank).
  void (*fillInput)(const Pattern& p, int rank, int root, const Layout& l, void* input);
  // Writes the expected result (layout.recvCount elements); false: nothing to check here.
  bool (*fillExpected)(const Pattern& p, int rank, int root, const Layout& l, void* expected);
  tuttiResult_t (*run)(const void* send, void* recv, size_t count, tuttiDataType_t type,
                       tuttiRedOp_t op, int root, tuttiComm_t comm, tuttiStream_t stream);
};

// The whole program: parse flags, init from the environment, sweep, print, exit status.
int perfMain(const Collective& coll, int argc, char** argv);

}  // namespace tutti_perf
