#include "driver/memory.h"

#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <memory>
#include <vector>

#if TUTTI_PERF_CUDA
#include <cuda_runtime.h>
#endif

namespace tutti_perf {

namespace {

std::string cpuModel() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("model name", 0) == 0) {
      const auto colon = line.find(':');
      if (colon != std::string::npos) return line.substr(colon + 2);
    }
  }
  return "cpu";
}

class HostMemory : public Memory {
 public:
  explicit HostMemory(int localRank) : localRank_(localRank) {}
  const char* name() const override { return "host"; }
  void* alloc(size_t bytes) override {
    const size_t rounded = ((bytes ? bytes : 1) + 4095) / 4096 * 4096;
    void* p = std::aligned_alloc(4096, rounded);
    if (p) std::memset(p, 0, rounded);
    return p;
  }
  void free(void* p) override { std::free(p); }
  void toDevice(void* dst, const void* src, size_t bytes) override {
    if (bytes) std::memcpy(dst, src, bytes);
  }
  void toHost(void* dst, const void* src, size_t bytes) override {
    if (bytes) std::memcpy(dst, src, bytes);
  }
  void zero(void* p, size_t bytes) override {
    if (bytes) std::memset(p, 0, bytes);
  }
  tuttiStream_t stream() override { return nullptr; }
  void synchronize() override {}
  std::string deviceDescription() const override {
    return cpuModel() + " (" + std::to_string(sysconf(_SC_NPROCESSORS_ONLN)) + " cpus)";
  }
  int deviceIndex() const override { return localRank_; }

 private:
  int localRank_;
};

// Host buffers, every collective through a tutti host stream (tuttiStreamCreate): a call
// enqueues and returns; synchronize() waits for the stream and reports its first failure.
class HostStreamMemory : public HostMemory {
 public:
  HostStreamMemory(int localRank, tuttiStream_t s) : HostMemory(localRank), stream_(s) {}
  ~HostStreamMemory() override { tuttiStreamDestroy(stream_); }
  const char* name() const override { return "host-stream"; }
  tuttiStream_t stream() override { return stream_; }
  void synchronize() override {
    const tuttiResult_t r = tuttiStreamSynchronize(stream_);
    if (r != tuttiSuccess) {
      const char* why = tuttiGetLastError(nullptr);
      fprintf(stderr, "host stream: %s: %s\n", tuttiGetErrorString(r), why ? why : "");
      _exit(EXIT_FAILURE);
    }
  }

 private:
  tuttiStream_t stream_;
};

std::unique_ptr<Memory> createHostStream(int localRank, std::string* error) {
  tuttiStream_t s = nullptr;
  const tuttiResult_t r = tuttiStreamCreate(&s);
  if (r != tuttiSuccess) {
    *error = std::string("--memory host-stream: tuttiStreamCreate: ") + tuttiGetErrorString(r);
    return nullptr;
  }
  return std::make_unique<HostStreamMemory>(localRank, s);
}

#if TUTTI_PERF_CUDA
class CudaMemory : public Memory {
 public:
  CudaMemory(int device, cudaStream_t s) : device_(device), stream_(s) {}
  ~CudaMemory() override { cudaStreamDestroy(stream_); }
  const char* name() const override { return "cuda"; }
  // Every copy and fill goes through stream_ and waits for it: the collectives run on the
  // non-blocking stream_, which the legacy default stream would not order against.
  void* alloc(size_t bytes) override {
    void* p = nullptr;
    if (cudaMalloc(&p, bytes ? bytes : 1) != cudaSuccess) return nullptr;
    cudaMemsetAsync(p, 0, bytes ? bytes : 1, stream_);
    cudaStreamSynchronize(stream_);
    return p;
  }
  void free(void* p) override {
    cudaStreamSynchronize(stream_);
    cudaFree(p);
  }
  void toDevice(void* dst, const void* src, size_t bytes) override {
    if (bytes) cudaMemcpyAsync(dst, src, bytes, cudaMemcpyHostToDevice, stream_);
    cudaStreamSynchronize(stream_);
  }
  void toHost(void* dst, const void* src, size_t bytes) override {
    if (bytes) cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToHost, stream_);
    cudaStreamSynchronize(stream_);
  }
  void zero(void* p, size_t bytes) override {
    if (bytes) cudaMemsetAsync(p, 0, bytes, stream_);
    cudaStreamSynchronize(stream_);
  }
  tuttiStream_t stream() override { return stream_; }
  void synchronize() override { cudaStreamSynchronize(stream_); }
  std::string deviceDescription() const override {
    cudaDeviceProp prop;
    if (cudaGetDeviceProperties(&prop, device_) != cudaSuccess) return "cuda device";
    char buf[64];
    snprintf(buf, sizeof(buf), "%04x:%02x:%02x", prop.pciDomainID, prop.pciBusID, prop.pciDeviceID);
    return std::string(prop.name) + " [" + buf + "]";
  }
  int deviceIndex() const override { return device_; }

 private:
  int device_;
  cudaStream_t stream_;
};
#endif

}  // namespace

std::unique_ptr<Memory> Memory::create(const std::string& kind, int localRank, std::string* error) {
  if (kind == "host") return std::make_unique<HostMemory>(localRank);
  if (kind == "host-stream") return createHostStream(localRank, error);
#if TUTTI_PERF_CUDA
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess || n == 0) {
    *error = "--memory cuda: no CUDA device visible (cudaGetDeviceCount found none)";
    return nullptr;
  }
  const int device = localRank % n;
  cudaSetDevice(device);
  cudaStream_t s;
  if (cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking) != cudaSuccess) {
    *error = "--memory cuda: cudaStreamCreateWithFlags failed";
    return nullptr;
  }
  return std::make_unique<CudaMemory>(device, s);
#else
  *error = std::string("--memory ") + kind + ": " + tuttiGetErrorString(tuttiUnsupported) +
           " (these perf tests were built without the CUDA runtime)";
  return nullptr;
#endif
}

double measureMemcpyGBps(size_t bytes) {
  std::vector<char> a(bytes, 1), b(bytes, 0);
  std::memcpy(b.data(), a.data(), bytes);  // fault the pages in
  double best = 0;
  for (int rep = 0; rep < 5; ++rep) {
    const auto t0 = std::chrono::steady_clock::now();
    std::memcpy(b.data(), a.data(), bytes);
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (s > 0) best = std::max(best, static_cast<double>(bytes) / 1e9 / s);
    a[rep] = b[bytes - 1 - rep];  // keep the copies observable
  }
  return best;
}

}  // namespace tutti_perf
