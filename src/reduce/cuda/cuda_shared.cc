// CUDA runtime and driver calls behind cuda_shared.h. The driver's stream memory operations
// come through cudaGetDriverEntryPointByVersion (the runtime is linked statically and the
// driver loaded lazily, so nothing links libcuda).
#include "reduce/cuda/cuda_shared.h"

#include <cuda.h>
#include <cuda_runtime_api.h>

#include <cstring>

#include "common/error.h"
#include "reduce/cuda/cuda_kernels.h"
#include "reduce/cuda/cuda_memory.h"

namespace tutti::cuda {
namespace {

void check(cudaError_t err, const char* call, const char* what) { checkCall(err, call, what); }

void checkLaunch(int err, const char* what) { checkCall(err, "kernel launch", what); }

using WaitFn = CUresult (*)(CUstream, CUdeviceptr, cuuint32_t, unsigned int);
using WriteFn = CUresult (*)(CUstream, CUdeviceptr, cuuint32_t, unsigned int);

void* entryPoint(const char* name, std::string* why) {
  void* fn = nullptr;
  cudaDriverEntryPointQueryResult q{};
  cudaError_t e = cudaGetDriverEntryPointByVersion(name, &fn, 12000, cudaEnableDefault, &q);
  if (e != cudaSuccess || q != cudaDriverEntryPointSuccess || fn == nullptr) {
    cudaGetLastError();
    *why = std::string(name) + " not found (" + cudaGetErrorName(e) + ")";
    return nullptr;
  }
  return fn;
}

}  // namespace

int currentDevice() {
  int d = -1;
  check(cudaGetDevice(&d), "cudaGetDevice", "current device");
  return d;
}

int deviceOf(const void* p) {
  cudaPointerAttributes a{};
  check(cudaPointerGetAttributes(&a, p), "cudaPointerGetAttributes", "buffer's device");
  return a.type == cudaMemoryTypeDevice || a.type == cudaMemoryTypeManaged ? a.device : -1;
}

std::string pciBusId(int device) {
  char buf[32] = {};
  check(cudaDeviceGetPCIBusId(buf, sizeof(buf), device), "cudaDeviceGetPCIBusId", "device id");
  return buf;
}

DeviceGuard::DeviceGuard(int device) {
  previous_ = currentDevice();
  if (device != previous_) check(cudaSetDevice(device), "cudaSetDevice", "device guard");
}

DeviceGuard::~DeviceGuard() {
  int now = -1;
  if (cudaGetDevice(&now) == cudaSuccess && now != previous_) cudaSetDevice(previous_);
}

void synchronizeDeviceQuietly(int device) {
  int previous = -1;
  if (cudaGetDevice(&previous) != cudaSuccess) return;
  if (previous != device) cudaSetDevice(device);
  cudaDeviceSynchronize();
  cudaGetLastError();
  if (previous != device) cudaSetDevice(previous);
}

HostRegistration::HostRegistration(void* p, size_t bytes) : host_(p) {
  check(cudaHostRegister(p, bytes, cudaHostRegisterMapped | cudaHostRegisterPortable),
        "cudaHostRegister", "shared flags");
  try {
    check(cudaHostGetDevicePointer(&device_, p, 0), "cudaHostGetDevicePointer", "shared flags");
  } catch (...) {
    cudaHostUnregister(p);
    throw;
  }
}

HostRegistration::~HostRegistration() { cudaHostUnregister(host_); }

void* HostRegistration::device(void* q) const {
  return static_cast<std::byte*>(device_) +
         (static_cast<std::byte*>(q) - static_cast<std::byte*>(host_));
}

IpcHandle exportIpc(void* deviceBase) {
  cudaIpcMemHandle_t h{};
  check(cudaIpcGetMemHandle(&h, deviceBase), "cudaIpcGetMemHandle", "device scratch");
  static_assert(sizeof(h) == kIpcHandleBytes);
  IpcHandle out{};
  std::memcpy(out.data(), &h, sizeof(h));
  return out;
}

IpcMapping::IpcMapping(const IpcHandle& handle) {
  cudaIpcMemHandle_t h{};
  std::memcpy(&h, handle.data(), sizeof(h));
  void* p = nullptr;
  check(cudaIpcOpenMemHandle(&p, h, cudaIpcMemLazyEnablePeerAccess), "cudaIpcOpenMemHandle",
        "a peer's device scratch");
  p_ = static_cast<std::byte*>(p);
}

IpcMapping::~IpcMapping() {
  if (p_) cudaIpcCloseMemHandle(p_);
}

StreamSignals::StreamSignals(bool allowMemOps) {
  if (!allowMemOps) {
    how_ = "kernels (TUTTI_CUDA_STREAM_MEMOPS=0)";
    return;
  }
  std::string why;
  void* wait = entryPoint("cuStreamWaitValue32", &why);
  void* write = wait ? entryPoint("cuStreamWriteValue32", &why) : nullptr;
  if (wait && write) {
    // Try both on a private flag: a driver or device without memory operations refuses.
    uint32_t* flag = nullptr;
    CUresult r1 = CUDA_SUCCESS, r2 = CUDA_SUCCESS;
    cudaError_t e = cudaHostAlloc(reinterpret_cast<void**>(&flag), 64, cudaHostAllocMapped);
    if (e == cudaSuccess) {
      void* dflag = nullptr;
      e = cudaHostGetDevicePointer(&dflag, flag, 0);
      if (e == cudaSuccess) {
        *flag = 0;
        auto d = reinterpret_cast<CUdeviceptr>(dflag);
        r1 = reinterpret_cast<WriteFn>(write)(nullptr, d, 7, CU_STREAM_WRITE_VALUE_DEFAULT);
        if (r1 == CUDA_SUCCESS)
          r2 = reinterpret_cast<WaitFn>(wait)(nullptr, d, 7, CU_STREAM_WAIT_VALUE_GEQ);
        if (r1 == CUDA_SUCCESS && r2 == CUDA_SUCCESS) e = cudaStreamSynchronize(nullptr);
        if (e == cudaSuccess && r1 == CUDA_SUCCESS && r2 == CUDA_SUCCESS && *flag != 7)
          why = "a stream write was not seen";
      }
      cudaFreeHost(flag);
    }
    if (e != cudaSuccess) {
      cudaGetLastError();
      why = std::string("self-test: ") + cudaGetErrorName(e);
    } else if (r1 != CUDA_SUCCESS || r2 != CUDA_SUCCESS) {
      why = "self-test: CUresult " + std::to_string(r1 != CUDA_SUCCESS ? r1 : r2);
    } else if (why.empty()) {
      wait_ = wait;
      write_ = write;
      how_ = "stream memory operations";
      return;
    }
  }
  how_ = "kernels (" + why + ")";
}

void StreamSignals::waitGeq(void* stream, uint32_t* deviceFlag, uint32_t value) const {
  if (wait_) {
    CUresult r = reinterpret_cast<WaitFn>(wait_)(static_cast<CUstream>(stream),
                                                 reinterpret_cast<CUdeviceptr>(deviceFlag), value,
                                                 CU_STREAM_WAIT_VALUE_GEQ);
    if (r != CUDA_SUCCESS)
      fail(tuttiSystemError, "cuStreamWaitValue32 failed: CUresult ", static_cast<int>(r));
    return;
  }
  checkLaunch(reduce::cudadetail::launchWaitFlag(deviceFlag, value, stream), "flag wait");
}

void StreamSignals::write(void* stream, uint32_t* deviceFlag, uint32_t value) const {
  if (write_) {
    CUresult r = reinterpret_cast<WriteFn>(write_)(static_cast<CUstream>(stream),
                                                   reinterpret_cast<CUdeviceptr>(deviceFlag), value,
                                                   CU_STREAM_WRITE_VALUE_DEFAULT);
    if (r != CUDA_SUCCESS)
      fail(tuttiSystemError, "cuStreamWriteValue32 failed: CUresult ", static_cast<int>(r));
    return;
  }
  checkLaunch(reduce::cudadetail::launchWriteFlag(deviceFlag, value, stream), "flag write");
}

SideStream::SideStream() {
  cudaStream_t s = nullptr;
  check(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), "cudaStreamCreateWithFlags",
        "side stream");
  stream_ = s;
}

SideStream::~SideStream() {
  if (stream_) cudaStreamDestroy(static_cast<cudaStream_t>(stream_));
}

void SideStream::setAsync(void* p, int value, size_t bytes) {
  check(cudaMemsetAsync(p, value, bytes, static_cast<cudaStream_t>(stream_)), "cudaMemsetAsync",
        "side stream");
}

void SideStream::synchronize() {
  check(cudaStreamSynchronize(static_cast<cudaStream_t>(stream_)), "cudaStreamSynchronize",
        "side stream");
}

}  // namespace tutti::cuda
