// CUDA runtime calls behind cuda_memory.h (the runtime is linked statically and loads the
// driver lazily, so these fail cleanly with cudaErrorInsufficientDriver/NoDevice without a GPU).
#include "reduce/cuda/cuda_memory.h"

#include <cuda_runtime_api.h>

#include <utility>

#include "common/error.h"

namespace tutti::cuda {

void checkCall(int err, const char* call, const char* what) {
  if (err == cudaSuccess) return;
  cudaGetLastError();  // clear the sticky-free error state of this thread
  const auto e = static_cast<cudaError_t>(err);
  fail(tuttiSystemError, what, ": ", call, " failed: ", cudaGetErrorName(e), " (",
       cudaGetErrorString(e), ")");
}

namespace {

void check(cudaError_t err, const char* call, const char* what) { checkCall(err, call, what); }

cudaStream_t asStream(void* s) { return static_cast<cudaStream_t>(s); }

}  // namespace

void copyAsync(void* dst, const void* src, size_t bytes, void* stream, const char* what) {
  if (bytes == 0) return;
  check(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDefault, asStream(stream)), "cudaMemcpyAsync",
        what);
}

void streamSynchronize(void* stream, const char* what) {
  check(cudaStreamSynchronize(asStream(stream)), "cudaStreamSynchronize", what);
}

Event::Event() {
  cudaEvent_t e = nullptr;
  check(cudaEventCreateWithFlags(&e, cudaEventDisableTiming), "cudaEventCreateWithFlags",
        "CUDA event");
  ev_ = e;
}

Event::~Event() {
  if (ev_) cudaEventDestroy(static_cast<cudaEvent_t>(ev_));
}

void Event::record(void* stream) {
  check(cudaEventRecord(static_cast<cudaEvent_t>(ev_), asStream(stream)), "cudaEventRecord",
        "CUDA event");
  recorded_ = true;
}

void Event::wait() {
  if (!recorded_) return;
  check(cudaEventSynchronize(static_cast<cudaEvent_t>(ev_)), "cudaEventSynchronize", "CUDA event");
}

PinnedBuffer::~PinnedBuffer() {
  if (p_) cudaFreeHost(p_);
}

std::byte* PinnedBuffer::reserve(size_t bytes) {
  if (bytes <= bytes_ && p_) return p_;
  if (p_) cudaFreeHost(p_);
  p_ = nullptr;
  bytes_ = 0;
  void* p = nullptr;
  check(cudaHostAlloc(&p, bytes ? bytes : 1, cudaHostAllocPortable), "cudaHostAlloc",
        "pinned staging buffer");
  p_ = static_cast<std::byte*>(p);
  bytes_ = bytes;
  return p_;
}

DeviceBuffer::DeviceBuffer(size_t bytes) {
  void* p = nullptr;
  check(cudaMalloc(&p, bytes ? bytes : 1), "cudaMalloc", "device buffer");
  p_ = static_cast<std::byte*>(p);
  bytes_ = bytes;
}

DeviceBuffer::~DeviceBuffer() {
  if (p_) cudaFree(p_);
}

DeviceBuffer& DeviceBuffer::operator=(DeviceBuffer&& o) noexcept {
  if (this != &o) {
    if (p_) cudaFree(p_);
    p_ = std::exchange(o.p_, nullptr);
    bytes_ = std::exchange(o.bytes_, 0);
  }
  return *this;
}

}  // namespace tutti::cuda
