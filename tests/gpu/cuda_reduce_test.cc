// Device reduction kernels against the host kernels: every dtype x op x odd lengths, aligned
// and misaligned, in place; divideCuda; the probe; float32 sum bandwidth vs cudaMemcpy D2D.
#include "reduce/cuda/cuda_reduce.h"

#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "common/dtype.h"
#include "common/error.h"
#include "reduce/cuda/cuda_probe.h"
#include "reduce/reduce.h"

namespace tutti::reduce {
namespace {

#define CUDA_OK(call)                                                      \
  do {                                                                     \
    cudaError_t e_ = (call);                                               \
    ASSERT_EQ(e_, cudaSuccess) << #call << ": " << cudaGetErrorString(e_); \
  } while (0)

constexpr tuttiDataType_t kTypes[] = {tuttiInt8,    tuttiUint8,    tuttiInt16,   tuttiUint16,
                                      tuttiInt32,   tuttiUint32,   tuttiInt64,   tuttiUint64,
                                      tuttiFloat16, tuttiBfloat16, tuttiFloat32, tuttiFloat64};
// The bitwise ops run on the integer types only (opAppliesTo).
constexpr tuttiRedOp_t kOps[] = {tuttiSum,  tuttiProd, tuttiMax, tuttiMin,
                                 tuttiBand, tuttiBor,  tuttiBxor};

struct DevBuf {
  void* p = nullptr;
  explicit DevBuf(size_t bytes) {
    if (cudaMalloc(&p, bytes) != cudaSuccess) p = nullptr;
  }
  ~DevBuf() { cudaFree(p); }
  DevBuf(const DevBuf&) = delete;
  DevBuf& operator=(const DevBuf&) = delete;
  char* c() const { return static_cast<char*>(p); }
};

// Random elements; floats are finite, in [-3, 3] (prod stays representable for most lanes).
std::vector<char> randomData(tuttiDataType_t t, size_t n, std::mt19937_64& rng) {
  const size_t es = dtypeSize(t);
  std::vector<char> v(n * es);
  std::uniform_real_distribution<double> u(-3.0, 3.0);
  for (size_t i = 0; i < n; ++i) {
    char* p = v.data() + i * es;
    if (t == tuttiFloat16) {
      uint16_t h = floatToHalf(static_cast<float>(u(rng)));
      std::memcpy(p, &h, 2);
    } else if (t == tuttiBfloat16) {
      uint16_t h = floatToBf16(static_cast<float>(u(rng)));
      std::memcpy(p, &h, 2);
    } else if (t == tuttiFloat32) {
      float f = static_cast<float>(u(rng));
      std::memcpy(p, &f, 4);
    } else if (t == tuttiFloat64) {
      double d = u(rng);
      std::memcpy(p, &d, 8);
    } else {
      uint64_t r = rng();
      std::memcpy(p, &r, es);
    }
  }
  return v;
}

bool isNan(tuttiDataType_t t, const char* p) {
  switch (t) {
    case tuttiFloat16: {
      uint16_t h;
      std::memcpy(&h, p, 2);
      return (h & 0x7c00u) == 0x7c00u && (h & 0x3ffu) != 0;
    }
    case tuttiBfloat16: {
      uint16_t h;
      std::memcpy(&h, p, 2);
      return (h & 0x7f80u) == 0x7f80u && (h & 0x7fu) != 0;
    }
    case tuttiFloat32: {
      float f;
      std::memcpy(&f, p, 4);
      return std::isnan(f);
    }
    case tuttiFloat64: {
      double d;
      std::memcpy(&d, p, 8);
      return std::isnan(d);
    }
    default:
      return false;
  }
}

// Bitwise equality, except that any NaN equals any NaN (GPU NaN payloads are canonical).
size_t firstMismatch(tuttiDataType_t t, const std::vector<char>& x, const std::vector<char>& y) {
  const size_t es = dtypeSize(t);
  for (size_t i = 0; i < x.size() / es; ++i) {
    const char* a = x.data() + i * es;
    const char* b = y.data() + i * es;
    if (std::memcmp(a, b, es) != 0 && !(isNan(t, a) && isNan(t, b))) return i;
  }
  return SIZE_MAX;
}

class CudaReduceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string why;
    if (!cudaAvailable(&why)) GTEST_SKIP() << "no usable GPU, skipping: " << why;
    CUDA_OK(cudaStreamCreate(&stream_));
  }
  void TearDown() override {
    if (stream_) cudaStreamDestroy(stream_);
  }
  cudaStream_t stream_ = nullptr;
};

// Runs without a GPU too: the probe explains itself and argument errors come before CUDA.
TEST(CudaProbeTest, ReportsWhyAndRejectsBadArguments) {
  std::string why;
  const bool ok = cudaAvailable(&why);
  if (ok) {
    EXPECT_TRUE(why.empty()) << why;
  } else {
    EXPECT_TRUE(why.rfind("no CUDA driver", 0) == 0 || why.rfind("no device visible", 0) == 0 ||
                why.rfind("CUDA driver unusable", 0) == 0)
        << why;
    std::printf("cudaAvailable: false (%s)\n", why.c_str());
  }
  int host = 0;
  EXPECT_FALSE(isDevicePointer(&host));
  EXPECT_FALSE(isDevicePointer(nullptr));
  if (!ok) {
    // A process without a driver drives no GPU, and says why.
    std::string busWhy;
    EXPECT_EQ(drivenGpuBusId(&busWhy), "");
    EXPECT_FALSE(busWhy.empty());
  }
  char dummy[16];
  try {
    reduceCuda(dummy, dummy, dummy, 1, tuttiFloat32, tuttiAvg, nullptr);
    ADD_FAILURE() << "tuttiAvg accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), tuttiInvalidArgument);
    EXPECT_NE(std::string(e.what()).find("divideCuda"), std::string::npos) << e.what();
  }
  EXPECT_THROW(
      reduceCuda(dummy, dummy, dummy, 1, static_cast<tuttiDataType_t>(42), tuttiSum, nullptr),
      Error);
  EXPECT_THROW(reduceCuda(nullptr, dummy, dummy, 1, tuttiInt8, tuttiSum, nullptr), Error);
  for (tuttiRedOp_t op : {tuttiBand, tuttiBor, tuttiBxor}) {
    try {
      reduceCuda(dummy, dummy, dummy, 1, tuttiFloat32, op, nullptr);
      ADD_FAILURE() << "float " << opName(op) << " accepted";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), tuttiInvalidArgument);
      EXPECT_NE(std::string(e.what()).find(opName(op)), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find("float"), std::string::npos) << e.what();
    }
    const void* srcs[1] = {dummy};
    EXPECT_THROW(reduceManyCuda(dummy, srcs, 1, tuttiBfloat16, op, 1, nullptr, nullptr), Error);
  }
  EXPECT_THROW(divideCuda(dummy, 1, tuttiFloat32, 0, nullptr), Error);
  reduceCuda(nullptr, nullptr, nullptr, 0, tuttiInt8, tuttiSum, nullptr);  // count 0: no-op
}

// The GPU a process drives is found by its context, as the communicator's placement uses it:
// the current device's bus id, also from a thread without a current context (the one active
// primary context).
TEST_F(CudaReduceTest, DrivenGpuIsTheCurrentDevice) {
  int dev = -1;
  ASSERT_EQ(cudaGetDevice(&dev), cudaSuccess);
  ASSERT_EQ(cudaFree(nullptr), cudaSuccess);  // makes the primary context active
  char expected[32] = {};
  ASSERT_EQ(cudaDeviceGetPCIBusId(expected, sizeof expected, dev), cudaSuccess);
  auto lower = [](std::string s) {
    for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return s;
  };
  std::string why;
  EXPECT_EQ(lower(drivenGpuBusId(&why)), lower(expected)) << why;
  std::string fromThread;
  std::thread([&] { fromThread = drivenGpuBusId(&why); }).join();
  EXPECT_EQ(lower(fromThread), lower(expected)) << why;
}

TEST_F(CudaReduceTest, DevicePointerDetection) {
  DevBuf d(64);
  ASSERT_NE(d.p, nullptr);
  EXPECT_TRUE(isDevicePointer(d.p));
  std::vector<char> h(64);
  EXPECT_FALSE(isDevicePointer(h.data()));
}

// Every dtype x op x odd length, on aligned (vector path) and element-offset (scalar path)
// buffers, out of place and in place (dst == a), against reduce::reduce.
TEST_F(CudaReduceTest, MatchesHostKernels) {
  const size_t lengths[] = {1, 3, 7, 15, 17, 33, 255, 1001, 4099, 65537, 1000003};
  std::mt19937_64 rng(1234);
  const size_t maxN = 1000003 + 1;
  DevBuf da(maxN * 8), db(maxN * 8), dd(maxN * 8);
  ASSERT_TRUE(da.p && db.p && dd.p);
  size_t cases = 0;
  for (tuttiDataType_t t : kTypes) {
    const size_t es = dtypeSize(t);
    for (size_t n : lengths) {
      std::vector<char> a = randomData(t, n, rng);
      std::vector<char> b = randomData(t, n, rng);
      for (tuttiRedOp_t op : kOps) {
        if (!opAppliesTo(t, op)) continue;
        std::vector<char> ref(n * es);
        reduce(ref.data(), a.data(), b.data(), n, t, op);
        for (size_t off : {size_t{0}, size_t{1}}) {
          for (bool inPlace : {false, true}) {
            char* pa = da.c() + off * es;
            char* pb = db.c() + off * es;
            char* pd = inPlace ? pa : dd.c() + off * es;
            CUDA_OK(cudaMemcpyAsync(pa, a.data(), n * es, cudaMemcpyHostToDevice, stream_));
            CUDA_OK(cudaMemcpyAsync(pb, b.data(), n * es, cudaMemcpyHostToDevice, stream_));
            reduceCuda(pd, pa, pb, n, t, op, stream_);
            std::vector<char> got(n * es);
            CUDA_OK(cudaMemcpyAsync(got.data(), pd, n * es, cudaMemcpyDeviceToHost, stream_));
            CUDA_OK(cudaStreamSynchronize(stream_));
            const size_t bad = firstMismatch(t, ref, got);
            ASSERT_EQ(bad, SIZE_MAX)
                << dtypeName(t) << " " << opName(op) << " n=" << n << " offset=" << off
                << " inPlace=" << inPlace << ": first mismatch at element " << bad;
            ++cases;
          }
        }
      }
    }
  }
  size_t pairs = 0;
  for (tuttiDataType_t t : kTypes)
    for (tuttiRedOp_t op : kOps) pairs += opAppliesTo(t, op);
  EXPECT_EQ(pairs, 12u * 7u - 4u * 3u);
  EXPECT_EQ(cases, pairs * 11u * 4u);
}

TEST_F(CudaReduceTest, DivideMatchesHost) {
  std::mt19937_64 rng(99);
  for (tuttiDataType_t t : kTypes) {
    const size_t n = 4099;
    const size_t es = dtypeSize(t);
    std::vector<char> v = randomData(t, n, rng);
    std::vector<char> ref = v;
    divide(ref.data(), n, t, 3);
    DevBuf d(n * es);
    ASSERT_NE(d.p, nullptr);
    CUDA_OK(cudaMemcpyAsync(d.p, v.data(), n * es, cudaMemcpyHostToDevice, stream_));
    divideCuda(d.p, n, t, 3, stream_);
    std::vector<char> got(n * es);
    CUDA_OK(cudaMemcpyAsync(got.data(), d.p, n * es, cudaMemcpyDeviceToHost, stream_));
    CUDA_OK(cudaStreamSynchronize(stream_));
    EXPECT_EQ(firstMismatch(t, ref, got), SIZE_MAX) << dtypeName(t);
  }
}

// The n-source fold of the direct device all-reduce against the host's left-to-right fold of
// binary reduce() (then divide() when averaging): every dtype and op, 1 to 16 sources (rotated
// over the cases), aligned and offset by one element, into a separate buffer or in place over
// source 0; and nothing is touched while the abort word is raised.
TEST_F(CudaReduceTest, ReduceManyMatchesHostFold) {
  const size_t lengths[] = {1, 17, 4099, 65537};
  const int sourceCounts[] = {1, 2, 3, 5, 8, 16};
  std::mt19937_64 rng(4321);
  const size_t maxN = 65537 + 1;
  std::vector<std::unique_ptr<DevBuf>> src;
  for (int k = 0; k < 16; ++k) src.push_back(std::make_unique<DevBuf>(maxN * 8));
  DevBuf dd(maxN * 8);
  size_t cases = 0, rotate = 0;
  for (tuttiDataType_t t : kTypes) {
    const size_t es = dtypeSize(t);
    for (tuttiRedOp_t op : kOps)
      for (size_t n : lengths) {
        if (!opAppliesTo(t, op)) continue;
        const int k = sourceCounts[rotate++ % 6];
        const int64_t divisor = op == tuttiSum && rotate % 2 == 0 ? k : 1;
        std::vector<std::vector<char>> in;
        for (int j = 0; j < k; ++j) in.push_back(randomData(t, n, rng));
        std::vector<char> ref = in[0];
        for (int j = 1; j < k; ++j) reduce(ref.data(), ref.data(), in[j].data(), n, t, op);
        if (divisor > 1) divide(ref.data(), n, t, divisor);
        for (size_t off : {size_t{0}, size_t{1}})
          for (bool inPlace : {false, true}) {
            std::vector<const void*> ptrs;
            for (int j = 0; j < k; ++j) {
              char* p = src[j]->c() + off * es;
              CUDA_OK(cudaMemcpyAsync(p, in[j].data(), n * es, cudaMemcpyHostToDevice, stream_));
              ptrs.push_back(p);
            }
            char* pd = inPlace ? src[0]->c() + off * es : dd.c() + off * es;
            reduceManyCuda(pd, ptrs, n, t, op, divisor, nullptr, stream_);
            std::vector<char> got(n * es);
            CUDA_OK(cudaMemcpyAsync(got.data(), pd, n * es, cudaMemcpyDeviceToHost, stream_));
            CUDA_OK(cudaStreamSynchronize(stream_));
            const size_t bad = firstMismatch(t, ref, got);
            ASSERT_EQ(bad, SIZE_MAX)
                << dtypeName(t) << " " << opName(op) << " n=" << n << " sources=" << k
                << " divisor=" << divisor << " offset=" << off << " inPlace=" << inPlace
                << ": first mismatch at element " << bad;
            ++cases;
          }
      }
  }
  EXPECT_EQ(cases, (12u * 7u - 4u * 3u) * 4u * 4u);
  // A raised abort word (mapped host memory): the kernel returns before touching dst.
  uint32_t* word = nullptr;
  CUDA_OK(cudaHostAlloc(reinterpret_cast<void**>(&word), 64, cudaHostAllocMapped));
  *word = 1;
  void* dword = nullptr;
  CUDA_OK(cudaHostGetDevicePointer(&dword, word, 0));
  CUDA_OK(cudaMemsetAsync(dd.p, 0x5a, 4096, stream_));
  const void* one[] = {src[0]->p};
  reduceManyCuda(dd.p, one, 1024, tuttiFloat32, tuttiSum, 1, static_cast<uint32_t*>(dword),
                 stream_);
  std::vector<unsigned char> after(4096);
  CUDA_OK(cudaMemcpyAsync(after.data(), dd.p, 4096, cudaMemcpyDeviceToHost, stream_));
  CUDA_OK(cudaStreamSynchronize(stream_));
  EXPECT_EQ(std::count(after.begin(), after.end(), 0x5a), 4096);
  cudaFreeHost(word);
}

// float32 sum over 256 MiB buffers vs cudaMemcpy D2D of 256 MiB, in the same run. Bandwidth
// counts bytes moved: reduce reads a and b and writes dst (3 x size), memcpy reads and
// writes (2 x size).
TEST_F(CudaReduceTest, Float32SumBandwidth) {
  const size_t bytes = size_t{256} << 20;
  const size_t n = bytes / sizeof(float);
  DevBuf a(bytes), b(bytes), d(bytes);
  ASSERT_TRUE(a.p && b.p && d.p) << "cannot allocate 3 x 256 MiB on the device";
  CUDA_OK(cudaMemsetAsync(a.p, 0, bytes, stream_));
  CUDA_OK(cudaMemsetAsync(b.p, 0, bytes, stream_));
  cudaEvent_t e0, e1;
  CUDA_OK(cudaEventCreate(&e0));
  CUDA_OK(cudaEventCreate(&e1));
  const int iters = 20;
  auto timeMs = [&](auto&& body) {
    body();  // warm-up
    cudaEventRecord(e0, stream_);
    for (int i = 0; i < iters; ++i) body();
    cudaEventRecord(e1, stream_);
    cudaEventSynchronize(e1);
    float ms = 0;
    cudaEventElapsedTime(&ms, e0, e1);
    return ms / iters;
  };
  const float reduceMs =
      timeMs([&] { reduceCuda(d.p, a.p, b.p, n, tuttiFloat32, tuttiSum, stream_); });
  const float copyMs =
      timeMs([&] { cudaMemcpyAsync(d.p, a.p, bytes, cudaMemcpyDeviceToDevice, stream_); });
  CUDA_OK(cudaGetLastError());
  cudaEventDestroy(e0);
  cudaEventDestroy(e1);
  const double reduceGBs = 3.0 * bytes / (reduceMs * 1e-3) / 1e9;
  const double copyGBs = 2.0 * bytes / (copyMs * 1e-3) / 1e9;
  cudaDeviceProp prop{};
  cudaGetDeviceProperties(&prop, 0);
  std::printf(
      "[bandwidth] %s: float32 sum 256 MiB: %.3f ms, %.1f GB/s (3 x size moved); "
      "cudaMemcpy D2D 256 MiB: %.3f ms, %.1f GB/s (2 x size); ratio %.2f\n",
      prop.name, reduceMs, reduceGBs, copyMs, copyGBs, reduceGBs / copyGBs);
  EXPECT_GT(reduceGBs, 0.3 * copyGBs) << "reduction far below copy bandwidth";
}

}  // namespace
}  // namespace tutti::reduce
