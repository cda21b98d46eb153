// DeviceAllReduce: all-reduce of CUDA device buffers between the ranks of one host, run on
// the device on the caller's stream, with no host synchronisation and no staging. Each rank
// holds a device scratch that every peer maps (CUDA IPC); 32-bit counters in host memory
// shared by the host's ranks (a memfd of rank 0, registered with CUDA) order the steps:
//   piece s: wait until every rank's `done` >= s-1; copy the input piece into my scratch;
//   ready[me] = s; wait for every ready >= s; then
//     one-shot: output = fold of all scratches (rank order), done[me] = s;
//     two-shot: my 1/n of my scratch = fold of that part of all scratches; reduced[me] = s;
//               wait for every reduced >= s; copy each rank's part to the output; done[me] = s.
// The streams wait on the counters with the driver's stream memory operations (or one-thread
// kernels), so every step is stream-ordered and the call returns as soon as it is enqueued.
// Every rank folds in the same order, so all ranks get identical bits.
// Where all ranks drive one GPU, its processes time-slice it and every cross-rank step costs a
// context switch: the automatic settings then stage small calls and never go two-shot
// (docs/cuda.md has the measurements behind both).
// A watchdog thread turns a peer's death, a stall past the timeout, or an abort into a
// failure (reported through the callback) and unblocks the streams: it raises an abort word
// the kernels check and lifts every counter past any wait. It knows nothing of its owner.
#pragma once

#include <sys/types.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "tutti/tutti.h"

namespace tutti {

struct DeviceAllReduceSettings {
  int64_t scratchBytes = 32 << 20;  // TUTTI_CUDA_DIRECT_BYTES: per rank; larger calls go in pieces
  int64_t minBytes = -1;      // TUTTI_CUDA_DIRECT_MIN_BYTES: smaller calls are staged (-1: auto)
  int64_t twoShotBytes = -1;  // TUTTI_CUDA_TWO_SHOT_BYTES: pieces this large go two-shot (-1: auto)
  bool memOps = true;         // TUTTI_CUDA_STREAM_MEMOPS
  double timeoutSec = 60;     // a stall this long fails the communicator
};

class DeviceAllReduce {
 public:
  // The same byte count from every rank, gathered in rank order into `all` (collective).
  using AllGather = std::function<void(const void* mine, void* all, size_t bytesEach)>;
  // A failure found by the watchdog (any thread): code, text, the rank held responsible.
  using OnFailure = std::function<void(tuttiResult_t, const std::string&, int)>;
  struct Peers {
    int rank = 0;
    int nranks = 1;
    std::vector<pid_t> pids;                   // each rank's pid seen from here, 0 if not visible
    std::function<std::string(int)> describe;  // "rank R (host H, pid P)"
  };
  // Collective over all ranks. Serves the CUDA device that holds `buffer` (a device pointer of
  // the first call). Returns the path, or null on every rank alike with *why (the first rank's
  // reason that could not take part: not on this host, no CUDA, disabled, more than 16 ranks,
  // an IPC handle that does not open). `enabled` false takes part and declines.
  static std::unique_ptr<DeviceAllReduce> setup(const Peers& peers, const void* buffer,
                                                bool enabled,
                                                const DeviceAllReduceSettings& settings,
                                                const AllGather& allGather, OnFailure onFailure,
                                                const std::atomic<bool>* abortFlag,
                                                std::string* why);
  // Waits (bounded by the timeout) until every rank's work on the scratches is done, then
  // frees them.
  ~DeviceAllReduce();
  DeviceAllReduce(const DeviceAllReduce&) = delete;
  DeviceAllReduce& operator=(const DeviceAllReduce&) = delete;

  int device() const;
  // Calls of fewer bytes are better staged (the same on every rank): TUTTI_CUDA_DIRECT_MIN_BYTES,
  // or when it is -1, n x 512 KiB where every rank drives one GPU, else 0.
  size_t minBytes() const;
  // "cuda_oneshot" or "cuda_twoshot": what a call of `bytes` runs (the same on every rank).
  const char* algorithmFor(size_t bytes) const;
  // Enqueues the all-reduce on `stream` (a cudaStream_t; the buffers on device()) and returns.
  void run(const void* send, void* recv, size_t count, tuttiDataType_t dtype, tuttiRedOp_t op,
           void* stream);
  // How the streams are ordered and the scratch size, for INFO logs.
  std::string describe() const;

  struct State;

 private:
  explicit DeviceAllReduce(std::unique_ptr<State> s);
  std::unique_ptr<State> s_;
};

}  // namespace tutti
