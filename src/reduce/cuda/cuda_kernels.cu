// Device reduction and divide kernels for every datatype and op (the bitwise ops for the
// integer types only): one grid-stride kernel per (type, op) template instance. When dst, a and b
// are all 16-byte aligned the body moves 16 bytes per load/store (uint4) and a short scalar tail
// finishes the last count % (16/size) elements; otherwise every element goes through the scalar
// loop. The n-source kernel folds its sources in order (src[0] op src[1] op ...), one binary step
// at a time as the host does, and may divide (average); the flag kernels wait for and write 32-bit
// counters.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <type_traits>

#include "reduce/cuda/cuda_kernels.h"

namespace tutti::reduce::cudadetail {
namespace {

// Values of tuttiRedOp_t (include/tutti/tutti.h).
constexpr int kSum = 0;
constexpr int kProd = 1;
constexpr int kMax = 2;
constexpr int kMin = 3;
constexpr int kBand = 5;
constexpr int kBor = 6;
constexpr int kBxor = 7;

constexpr int kThreads = 256;
constexpr size_t kMaxBlocks = 8192;

template <int kOp, typename T>
__device__ __forceinline__ T applyOp(T a, T b) {
  if constexpr (std::is_integral_v<T>) {
    // Integer sum/prod wrap modulo 2^bits: compute in an unsigned type at least int wide.
    using U = std::make_unsigned_t<T>;
    using W = std::conditional_t<(sizeof(U) < sizeof(unsigned)), unsigned, U>;
    if constexpr (kOp == kSum) return static_cast<T>(static_cast<U>(W(U(a)) + W(U(b))));
    if constexpr (kOp == kProd) return static_cast<T>(static_cast<U>(W(U(a)) * W(U(b))));
    if constexpr (kOp == kMax) return a > b ? a : b;
    if constexpr (kOp == kMin) return a < b ? a : b;
    if constexpr (kOp == kBand) return static_cast<T>(a & b);
    if constexpr (kOp == kBor) return static_cast<T>(a | b);
    if constexpr (kOp == kBxor) return static_cast<T>(a ^ b);
  } else {
    // Floating: min/max propagate a NaN (a's first), else the x86 vmaxps/vminps choice.
    if constexpr (kOp == kSum) return a + b;
    if constexpr (kOp == kProd) return a * b;
    if constexpr (kOp == kMax) return isnan(a) ? a : isnan(b) ? b : (a > b ? a : b);
    if constexpr (kOp == kMin) return isnan(a) ? a : isnan(b) ? b : (a < b ? a : b);
  }
}

template <int kOp>
__device__ __forceinline__ __half applyOp(__half a, __half b) {
  return __float2half_rn(applyOp<kOp>(__half2float(a), __half2float(b)));
}

template <int kOp>
__device__ __forceinline__ __nv_bfloat16 applyOp(__nv_bfloat16 a, __nv_bfloat16 b) {
  return __float2bfloat16_rn(applyOp<kOp>(__bfloat162float(a), __bfloat162float(b)));
}

template <typename T, int kOp>
__global__ void __launch_bounds__(kThreads)
    reduceKernel(T* dst, const T* a, const T* b, size_t nvec, size_t count) {
  constexpr int kPer = 16 / sizeof(T);
  const size_t tid = static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  const size_t stride = static_cast<size_t>(gridDim.x) * blockDim.x;
  const uint4* va = reinterpret_cast<const uint4*>(a);
  const uint4* vb = reinterpret_cast<const uint4*>(b);
  uint4* vd = reinterpret_cast<uint4*>(dst);
  for (size_t i = tid; i < nvec; i += stride) {
    uint4 x = va[i];
    uint4 y = vb[i];
    uint4 r;
    const T* xe = reinterpret_cast<const T*>(&x);
    const T* ye = reinterpret_cast<const T*>(&y);
    T* re = reinterpret_cast<T*>(&r);
#pragma unroll
    for (int k = 0; k < kPer; ++k) re[k] = applyOp<kOp>(xe[k], ye[k]);
    vd[i] = r;
  }
  for (size_t i = nvec * kPer + tid; i < count; i += stride) dst[i] = applyOp<kOp>(a[i], b[i]);
}

template <typename T>
__device__ __forceinline__ T divideOne(T v, int64_t divisor) {
  if constexpr (std::is_integral_v<T> && std::is_signed_v<T>) {
    return static_cast<T>(static_cast<int64_t>(v) / divisor);
  } else if constexpr (std::is_integral_v<T>) {
    return static_cast<T>(static_cast<uint64_t>(v) / static_cast<uint64_t>(divisor));
  } else {
    return v / static_cast<T>(divisor);
  }
}
template <>
__device__ __forceinline__ __half divideOne(__half v, int64_t divisor) {
  return __float2half_rn(__half2float(v) / static_cast<float>(divisor));
}
template <>
__device__ __forceinline__ __nv_bfloat16 divideOne(__nv_bfloat16 v, int64_t divisor) {
  return __float2bfloat16_rn(__bfloat162float(v) / static_cast<float>(divisor));
}

// dst[i] = src[0][i] op src[1][i] op ... op src[n-1][i], then / divisor when divisor > 1.
// Returns at once when *abortFlag is set (the sources may belong to a failed peer).
template <typename T, int kOp>
__global__ void __launch_bounds__(kThreads)
    reduceManyKernel(T* dst, ManySources src, int n, size_t nvec, size_t count, int64_t divisor,
                     const volatile uint32_t* abortFlag) {
  // One read per block (a read per thread would cost as much as the fold).
  __shared__ uint32_t stop;
  if (threadIdx.x == 0) stop = abortFlag != nullptr ? *abortFlag : 0u;
  __syncthreads();
  if (stop != 0) return;
  constexpr int kPer = 16 / sizeof(T);
  const size_t tid = static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  const size_t stride = static_cast<size_t>(gridDim.x) * blockDim.x;
  uint4* vd = reinterpret_cast<uint4*>(dst);
  for (size_t i = tid; i < nvec; i += stride) {
    uint4 acc = reinterpret_cast<const uint4*>(src.p[0])[i];
    T* ae = reinterpret_cast<T*>(&acc);
    for (int s = 1; s < n; ++s) {
      uint4 y = reinterpret_cast<const uint4*>(src.p[s])[i];
      const T* ye = reinterpret_cast<const T*>(&y);
#pragma unroll
      for (int k = 0; k < kPer; ++k) ae[k] = applyOp<kOp>(ae[k], ye[k]);
    }
    if (divisor > 1) {
#pragma unroll
      for (int k = 0; k < kPer; ++k) ae[k] = divideOne(ae[k], divisor);
    }
    vd[i] = acc;
  }
  for (size_t i = nvec * kPer + tid; i < count; i += stride) {
    T acc = static_cast<const T*>(src.p[0])[i];
    for (int s = 1; s < n; ++s) acc = applyOp<kOp>(acc, static_cast<const T*>(src.p[s])[i]);
    dst[i] = divisor > 1 ? divideOne(acc, divisor) : acc;
  }
}

__global__ void waitFlagKernel(const volatile uint32_t* flag, uint32_t value) {
  while (static_cast<int32_t>(*flag - value) < 0) __nanosleep(256);
}

__global__ void writeFlagKernel(volatile uint32_t* flag, uint32_t value) {
  __threadfence_system();  // what the stream wrote before is visible before the flag
  *flag = value;
}

template <typename T>
__global__ void __launch_bounds__(kThreads) divideKernel(T* dst, size_t count, int64_t divisor) {
  const size_t stride = static_cast<size_t>(gridDim.x) * blockDim.x;
  for (size_t i = static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < count;
       i += stride) {
    dst[i] = divideOne(dst[i], divisor);
  }
}

unsigned blocksFor(size_t work) {
  size_t blocks = (work + kThreads - 1) / kThreads;
  if (blocks < 1) blocks = 1;
  return static_cast<unsigned>(blocks < kMaxBlocks ? blocks : kMaxBlocks);
}

template <typename T, int kOp>
int launchTyped(void* dst, const void* a, const void* b, size_t count, cudaStream_t s) {
  const bool aligned = ((reinterpret_cast<uintptr_t>(dst) | reinterpret_cast<uintptr_t>(a) |
                         reinterpret_cast<uintptr_t>(b)) &
                        15u) == 0;
  const size_t nvec = aligned ? count / (16 / sizeof(T)) : 0;
  reduceKernel<T, kOp><<<blocksFor(aligned ? nvec : count), kThreads, 0, s>>>(
      static_cast<T*>(dst), static_cast<const T*>(a), static_cast<const T*>(b), nvec, count);
  return static_cast<int>(cudaGetLastError());
}

template <typename T>
int launchOp(void* dst, const void* a, const void* b, size_t count, int op, cudaStream_t s) {
  switch (op) {
    case kSum:
      return launchTyped<T, kSum>(dst, a, b, count, s);
    case kProd:
      return launchTyped<T, kProd>(dst, a, b, count, s);
    case kMax:
      return launchTyped<T, kMax>(dst, a, b, count, s);
    case kMin:
      return launchTyped<T, kMin>(dst, a, b, count, s);
    default:
      break;
  }
  if constexpr (std::is_integral_v<T>) {  // bitwise ops: integer types only
    switch (op) {
      case kBand:
        return launchTyped<T, kBand>(dst, a, b, count, s);
      case kBor:
        return launchTyped<T, kBor>(dst, a, b, count, s);
      case kBxor:
        return launchTyped<T, kBxor>(dst, a, b, count, s);
      default:
        break;
    }
  }
  return static_cast<int>(cudaErrorInvalidValue);
}

// The n-source launch of one (type, op), its grid sized for the vector or the scalar loop.
template <typename T, int kOp>
int launchManyTyped(void* dst, const ManySources& src, int n, size_t count, int64_t divisor,
                    const uint32_t* abortFlag, cudaStream_t s) {
  uintptr_t bits = reinterpret_cast<uintptr_t>(dst);
  for (int k = 0; k < n; ++k) bits |= reinterpret_cast<uintptr_t>(src.p[k]);
  const size_t nvec = (bits & 15u) == 0 ? count / (16 / sizeof(T)) : 0;
  reduceManyKernel<T, kOp><<<blocksFor(nvec > 0 ? nvec : count), kThreads, 0, s>>>(
      static_cast<T*>(dst), src, n, nvec, count, divisor, abortFlag);
  return static_cast<int>(cudaGetLastError());
}

template <typename T>
int launchMany(void* dst, const ManySources& src, int n, size_t count, int op, int64_t divisor,
               const uint32_t* abortFlag, cudaStream_t s) {
  switch (op) {
    case kSum:
      return launchManyTyped<T, kSum>(dst, src, n, count, divisor, abortFlag, s);
    case kProd:
      return launchManyTyped<T, kProd>(dst, src, n, count, divisor, abortFlag, s);
    case kMax:
      return launchManyTyped<T, kMax>(dst, src, n, count, divisor, abortFlag, s);
    case kMin:
      return launchManyTyped<T, kMin>(dst, src, n, count, divisor, abortFlag, s);
    default:
      break;
  }
  if constexpr (std::is_integral_v<T>) {  // bitwise ops: integer types only
    switch (op) {
      case kBand:
        return launchManyTyped<T, kBand>(dst, src, n, count, divisor, abortFlag, s);
      case kBor:
        return launchManyTyped<T, kBor>(dst, src, n, count, divisor, abortFlag, s);
      case kBxor:
        return launchManyTyped<T, kBxor>(dst, src, n, count, divisor, abortFlag, s);
      default:
        break;
    }
  }
  return static_cast<int>(cudaErrorInvalidValue);
}

template <typename T>
int launchDiv(void* dst, size_t count, int64_t divisor, cudaStream_t s) {
  divideKernel<T><<<blocksFor(count), kThreads, 0, s>>>(static_cast<T*>(dst), count, divisor);
  return static_cast<int>(cudaGetLastError());
}

// Calls f.template run<T>() for the C++ type of a tuttiDataType_t value.
template <typename F>
int withType(int dtype, const F& f) {
  switch (dtype) {
    case 0:
      return f.template run<int8_t>();
    case 1:
      return f.template run<uint8_t>();
    case 2:
      return f.template run<int32_t>();
    case 3:
      return f.template run<uint32_t>();
    case 4:
      return f.template run<int64_t>();
    case 5:
      return f.template run<uint64_t>();
    case 6:
      return f.template run<__half>();
    case 7:
      return f.template run<float>();
    case 8:
      return f.template run<double>();
    case 9:
      return f.template run<__nv_bfloat16>();
    case 10:
      return f.template run<int16_t>();
    case 11:
      return f.template run<uint16_t>();
    default:
      return static_cast<int>(cudaErrorInvalidValue);
  }
}

struct ReduceLauncher {
  void* dst;
  const void* a;
  const void* b;
  size_t count;
  int op;
  cudaStream_t s;
  template <typename T>
  int run() const {
    return launchOp<T>(dst, a, b, count, op, s);
  }
};

struct ManyLauncher {
  void* dst;
  ManySources src;
  int n;
  size_t count;
  int op;
  int64_t divisor;
  const uint32_t* abortFlag;
  cudaStream_t s;
  template <typename T>
  int run() const {
    return launchMany<T>(dst, src, n, count, op, divisor, abortFlag, s);
  }
};

struct DivideLauncher {
  void* dst;
  size_t count;
  int64_t divisor;
  cudaStream_t s;
  template <typename T>
  int run() const {
    return launchDiv<T>(dst, count, divisor, s);
  }
};

}  // namespace

int launchReduce(void* dst, const void* a, const void* b, size_t count, int dtype, int op,
                 void* stream) {
  return withType(dtype, ReduceLauncher{dst, a, b, count, op, static_cast<cudaStream_t>(stream)});
}

int launchReduceMany(void* dst, const ManySources& src, int n, size_t count, int dtype, int op,
                     int64_t divisor, const uint32_t* abortFlag, void* stream) {
  return withType(dtype, ManyLauncher{dst, src, n, count, op, divisor, abortFlag,
                                      static_cast<cudaStream_t>(stream)});
}

int launchWaitFlag(const uint32_t* flag, uint32_t value, void* stream) {
  waitFlagKernel<<<1, 1, 0, static_cast<cudaStream_t>(stream)>>>(flag, value);
  return static_cast<int>(cudaGetLastError());
}

int launchWriteFlag(uint32_t* flag, uint32_t value, void* stream) {
  writeFlagKernel<<<1, 1, 0, static_cast<cudaStream_t>(stream)>>>(flag, value);
  return static_cast<int>(cudaGetLastError());
}

int launchDivide(void* dst, size_t count, int dtype, int64_t divisor, void* stream) {
  return withType(dtype, DivideLauncher{dst, count, divisor, static_cast<cudaStream_t>(stream)});
}

const char* errorName(int err) { return cudaGetErrorName(static_cast<cudaError_t>(err)); }
const char* errorString(int err) { return cudaGetErrorString(static_cast<cudaError_t>(err)); }

}  // namespace tutti::reduce::cudadetail
