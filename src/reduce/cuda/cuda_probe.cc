// dlopen-based CUDA probe (see cuda_probe.h). Only CUDA header types are used; every CUDA
// function is reached through dlsym, never linked.
#include "reduce/cuda/cuda_probe.h"

#include <cuda_runtime_api.h>
#include <dlfcn.h>

#include <cstdint>

#ifndef TUTTI_CUDART_SONAME
#define TUTTI_CUDART_SONAME "libcudart.so"
#endif

namespace tutti {
namespace {

// Driver API values (cuda.h), stable since CUDA 4.
constexpr int kCuSuccess = 0;
constexpr int kCuErrorNoDevice = 100;
constexpr int kCuPointerAttributeMemoryType = 2;
constexpr unsigned kCuMemoryTypeDevice = 2;

using CuInitFn = int (*)(unsigned);
using CuDeviceGetCountFn = int (*)(int*);
using CuGetErrorNameFn = int (*)(int, const char**);
using CuPointerGetAttributeFn = int (*)(void*, int, unsigned long long);
using CudaPointerGetAttributesFn = cudaError_t (*)(cudaPointerAttributes*, const void*);

struct Probe {
  bool ok = false;
  std::string why;
  CuPointerGetAttributeFn cuPointerGetAttribute = nullptr;
  CudaPointerGetAttributesFn cudaPointerGetAttributes = nullptr;

  static std::string cuName(CuGetErrorNameFn f, int code) {
    const char* n = nullptr;
    if (f && f(code, &n) == kCuSuccess && n) return n;
    return "CUresult " + std::to_string(code);
  }

  Probe() {
    void* cu = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!cu) {
      const char* e = dlerror();
      why = std::string("no CUDA driver: cannot load libcuda.so.1 (") + (e ? e : "?") + ")";
      return;
    }
    auto cuInit = reinterpret_cast<CuInitFn>(dlsym(cu, "cuInit"));
    auto cuDeviceGetCount = reinterpret_cast<CuDeviceGetCountFn>(dlsym(cu, "cuDeviceGetCount"));
    auto cuGetErrorName = reinterpret_cast<CuGetErrorNameFn>(dlsym(cu, "cuGetErrorName"));
    cuPointerGetAttribute =
        reinterpret_cast<CuPointerGetAttributeFn>(dlsym(cu, "cuPointerGetAttribute"));
    if (!cuInit || !cuDeviceGetCount) {
      why = "no CUDA driver: libcuda.so.1 lacks cuInit/cuDeviceGetCount";
      return;
    }
    int rc = cuInit(0);
    if (rc == kCuErrorNoDevice) {
      why = "no device visible: cuInit returned CUDA_ERROR_NO_DEVICE (check CUDA_VISIBLE_DEVICES)";
      return;
    }
    if (rc != kCuSuccess) {
      why = "CUDA driver unusable: cuInit returned " + cuName(cuGetErrorName, rc);
      return;
    }
    int n = 0;
    rc = cuDeviceGetCount(&n);
    if (rc != kCuSuccess || n <= 0) {
      why = "no device visible: cuDeviceGetCount returned " + cuName(cuGetErrorName, rc) +
            ", count " + std::to_string(n);
      return;
    }
    void* rt = dlopen(TUTTI_CUDART_SONAME, RTLD_NOW | RTLD_LOCAL);
    if (!rt) rt = dlopen("libcudart.so", RTLD_NOW | RTLD_LOCAL);
    if (rt) {
      cudaPointerGetAttributes =
          reinterpret_cast<CudaPointerGetAttributesFn>(dlsym(rt, "cudaPointerGetAttributes"));
    }
    ok = true;
  }
};

const Probe& probe() {
  static const Probe p;  // libraries stay loaded for the life of the process
  return p;
}

}  // namespace

bool cudaAvailable(std::string* why) {
  const Probe& p = probe();
  if (why) *why = p.why;
  return p.ok;
}

bool isDevicePointer(const void* ptr) {
  if (ptr == nullptr) return false;
  const Probe& p = probe();
  if (!p.ok) return false;
  if (p.cudaPointerGetAttributes) {
    cudaPointerAttributes attr{};
    if (p.cudaPointerGetAttributes(&attr, ptr) != cudaSuccess) return false;
    return attr.type == cudaMemoryTypeDevice || attr.type == cudaMemoryTypeManaged;
  }
  if (p.cuPointerGetAttribute) {
    unsigned type = 0;
    if (p.cuPointerGetAttribute(&type, kCuPointerAttributeMemoryType,
                                reinterpret_cast<uintptr_t>(ptr)) != kCuSuccess) {
      return false;  // CUDA_ERROR_INVALID_VALUE: not memory the driver knows
    }
    return type == kCuMemoryTypeDevice;
  }
  return false;
}

std::string drivenGpuBusId(std::string* why) {
  auto say = [&](const std::string& text) {
    if (why) *why = text;
    return std::string();
  };
  // Only a process that loaded the driver itself can drive a GPU; never load it here.
  void* cu = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL | RTLD_NOLOAD);
  if (!cu) return say("the process has not loaded the CUDA driver");
  struct Close {
    void* h;
    ~Close() { dlclose(h); }
  } close{cu};
  using CtxGetCurrentFn = int (*)(void**);
  using CtxGetDeviceFn = int (*)(int*);
  using DeviceGetCountFn = int (*)(int*);
  using DeviceGetFn = int (*)(int*, int);
  using PrimaryCtxGetStateFn = int (*)(int, unsigned*, int*);
  using DeviceGetPciBusIdFn = int (*)(char*, int, int);
  auto ctxGetCurrent = reinterpret_cast<CtxGetCurrentFn>(dlsym(cu, "cuCtxGetCurrent"));
  auto ctxGetDevice = reinterpret_cast<CtxGetDeviceFn>(dlsym(cu, "cuCtxGetDevice"));
  auto deviceGetCount = reinterpret_cast<DeviceGetCountFn>(dlsym(cu, "cuDeviceGetCount"));
  auto deviceGet = reinterpret_cast<DeviceGetFn>(dlsym(cu, "cuDeviceGet"));
  auto primaryState =
      reinterpret_cast<PrimaryCtxGetStateFn>(dlsym(cu, "cuDevicePrimaryCtxGetState"));
  auto busIdOf = reinterpret_cast<DeviceGetPciBusIdFn>(dlsym(cu, "cuDeviceGetPCIBusId"));
  if (!ctxGetCurrent || !ctxGetDevice || !deviceGetCount || !deviceGet || !primaryState || !busIdOf)
    return say("the CUDA driver lacks the context or PCI bus id calls");
  int device = -1;
  void* ctx = nullptr;
  if (ctxGetCurrent(&ctx) == kCuSuccess && ctx != nullptr && ctxGetDevice(&device) == kCuSuccess) {
    // the calling thread's device
  } else {
    int n = 0;
    if (deviceGetCount(&n) != kCuSuccess) return say("CUDA is not initialised in this process");
    int active = 0;
    for (int i = 0; i < n; ++i) {
      int dev = -1;
      unsigned flags = 0;
      int on = 0;
      if (deviceGet(&dev, i) == kCuSuccess && primaryState(dev, &flags, &on) == kCuSuccess && on) {
        ++active;
        device = dev;
      }
    }
    if (active == 0) return say("no CUDA context is active in this process");
    if (active > 1)
      return say(std::to_string(active) +
                 " devices have active contexts and this thread has no current one");
  }
  char bus[32] = {};
  if (busIdOf(bus, sizeof bus, device) != kCuSuccess) return say("cuDeviceGetPCIBusId failed");
  if (why) why->clear();
  return bus;
}

}  // namespace tutti
