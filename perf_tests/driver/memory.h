// Where the perf test buffers live: host memory (always) or CUDA device memory (when the perf
// tests were built with the CUDA runtime: TUTTI_PERF_CUDA). Inputs are prepared and results
// checked in host staging buffers; these helpers move bytes between the two.
#pragma once

#include <cstddef>
#include <memory>
#include <string>

#include "tutti/tutti.h"

namespace tutti_perf {

class Memory {
 public:
  // kind: "host" or "cuda". Fails (returns nullptr, message in *error) when unavailable.
  static std::unique_ptr<Memory> create(const std::string& kind, int localRank, std::string* error);
  virtual ~Memory() = default;

  virtual const char* name() const = 0;
  virtual void* alloc(size_t bytes) = 0;  // zero-filled, 4096-byte aligned
  virtual void free(void* p) = 0;
  virtual void toDevice(void* dst, const void* hostSrc, size_t bytes) = 0;
  virtual void toHost(void* hostDst, const void* src, size_t bytes) = 0;
  virtual void zero(void* p, size_t bytes) = 0;
  virtual tuttiStream_t stream() = 0;
  virtual void synchronize() = 0;                     // waits for the work queued on stream()
  virtual std::string deviceDescription() const = 0;  // for the "#  Rank" lines
  virtual int deviceIndex() const = 0;
};

// One-thread memcpy bandwidth of this machine in GB/s (1e9 B/s), best of a few copies of
// `bytes` (large enough to leave the caches).
double measureMemcpyGBps(size_t bytes = 256u << 20);

}  // namespace tutti_perf
