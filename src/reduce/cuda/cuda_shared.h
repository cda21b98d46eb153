// CUDA memory shared between processes of one host, and stream-ordered signals on it (plain
// C++, no CUDA syntax; streams are cudaStream_t passed as void*). Used by the direct device
// all-reduce (src/comm/device_allreduce.h). Failures throw tutti::Error (tuttiSystemError
// naming the CUDA call and error).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>

namespace tutti::cuda {

constexpr size_t kIpcHandleBytes = 64;  // sizeof(cudaIpcMemHandle_t)
using IpcHandle = std::array<uint8_t, kIpcHandleBytes>;

// The device this thread's CUDA calls go to (cudaGetDevice), and the device that owns a
// device pointer (-1 for host memory).
int currentDevice();
int deviceOf(const void* p);
// The PCI bus id of `device` ("0000:3b:00.0"), which names one GPU across processes.
std::string pciBusId(int device);
// Makes `device` current for this thread for the guard's lifetime.
class DeviceGuard {
 public:
  explicit DeviceGuard(int device);
  ~DeviceGuard();
  DeviceGuard(const DeviceGuard&) = delete;
  DeviceGuard& operator=(const DeviceGuard&) = delete;

 private:
  int previous_ = -1;
};

// cudaDeviceSynchronize on `device`, ignoring errors (for destructors).
void synchronizeDeviceQuietly(int device);

// Host memory [p, p + bytes) (page aligned, e.g. a shared mapping) registered with CUDA and
// mapped into the device address space; unregistered on destruction.
class HostRegistration {
 public:
  HostRegistration(void* p, size_t bytes);
  ~HostRegistration();
  HostRegistration(const HostRegistration&) = delete;
  HostRegistration& operator=(const HostRegistration&) = delete;
  // The device address of host address q inside the registered range.
  void* device(void* q) const;

 private:
  void* host_;
  void* device_ = nullptr;
};

// The IPC handle of a cudaMalloc'd allocation (base pointer).
IpcHandle exportIpc(void* deviceBase);

// A peer process's allocation opened from its IPC handle; closed on destruction.
class IpcMapping {
 public:
  explicit IpcMapping(const IpcHandle& h);
  ~IpcMapping();
  IpcMapping(const IpcMapping&) = delete;
  IpcMapping& operator=(const IpcMapping&) = delete;
  std::byte* data() const { return p_; }

 private:
  std::byte* p_ = nullptr;
};

// 32-bit counters that a stream waits on (until (int32_t)(*flag - value) >= 0, wrap-safe)
// and writes (after everything the stream did before it is visible). Through the driver's
// stream memory operations (cuStreamWaitValue32 / cuStreamWriteValue32) when the device
// supports them and allowMemOps, else through one-thread kernels (a spinning wait).
class StreamSignals {
 public:
  explicit StreamSignals(bool allowMemOps);
  void waitGeq(void* stream, uint32_t* deviceFlag, uint32_t value) const;
  void write(void* stream, uint32_t* deviceFlag, uint32_t value) const;
  bool memOps() const { return wait_ != nullptr; }
  // "stream memory operations", or "kernels (<why not memory operations>)".
  const std::string& how() const { return how_; }

 private:
  void* wait_ = nullptr;   // PFN cuStreamWaitValue32
  void* write_ = nullptr;  // PFN cuStreamWriteValue32
  std::string how_;
};

// A non-blocking stream of the current device (not ordered after the legacy default stream),
// for small writes that must land while the user's streams wait.
class SideStream {
 public:
  SideStream();
  ~SideStream();
  SideStream(const SideStream&) = delete;
  SideStream& operator=(const SideStream&) = delete;
  // cudaMemsetAsync(p, value, bytes) on this stream; returns without waiting.
  void setAsync(void* p, int value, size_t bytes);
  void synchronize();

 private:
  void* stream_ = nullptr;
};

}  // namespace tutti::cuda
