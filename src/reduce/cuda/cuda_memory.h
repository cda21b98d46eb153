// Host-side CUDA memory helpers (plain C++, no CUDA syntax): async copies on a caller's stream,
// stream/event waits, and owned pinned-host / device allocations. Used by the C API to stage
// device buffers through host memory and by the cuda_ipc transport. Streams are cudaStream_t
// passed as void* (nullptr = the legacy default stream). Failures throw tutti::Error
// (tuttiSystemError naming the CUDA call and error).
#pragma once

#include <cstddef>

namespace tutti::cuda {

// Throws tuttiSystemError "<what>: <call> failed: <name> (<text>)" unless err (a cudaError_t)
// is cudaSuccess.
void checkCall(int err, const char* call, const char* what);

// Enqueues a copy of `bytes` from src to dst on `stream` (cudaMemcpyDefault: either side may
// be host or device memory, UVA decides). Returns without waiting.
void copyAsync(void* dst, const void* src, size_t bytes, void* stream, const char* what);
// Waits for everything queued on `stream` so far.
void streamSynchronize(void* stream, const char* what);

// An event recorded on a stream; wait() blocks the host until the recorded work is done.
class Event {
 public:
  Event();
  ~Event();
  Event(const Event&) = delete;
  Event& operator=(const Event&) = delete;
  void record(void* stream);
  void wait();

 private:
  void* ev_ = nullptr;
  bool recorded_ = false;
};

// Page-locked host memory (cudaMallocHost), grown on demand, contents not preserved.
class PinnedBuffer {
 public:
  PinnedBuffer() = default;
  ~PinnedBuffer();
  PinnedBuffer(const PinnedBuffer&) = delete;
  PinnedBuffer& operator=(const PinnedBuffer&) = delete;
  // Returns at least `bytes` of pinned memory (reallocates when smaller).
  std::byte* reserve(size_t bytes);
  size_t size() const { return bytes_; }

 private:
  std::byte* p_ = nullptr;
  size_t bytes_ = 0;
};

// Device memory (cudaMalloc) on the current device.
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  explicit DeviceBuffer(size_t bytes);
  ~DeviceBuffer();
  DeviceBuffer(DeviceBuffer&& o) noexcept : p_(o.p_), bytes_(o.bytes_) {
    o.p_ = nullptr;
    o.bytes_ = 0;
  }
  DeviceBuffer& operator=(DeviceBuffer&& o) noexcept;
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  std::byte* data() const { return p_; }
  size_t size() const { return bytes_; }

 private:
  std::byte* p_ = nullptr;
  size_t bytes_ = 0;
};

}  // namespace tutti::cuda
