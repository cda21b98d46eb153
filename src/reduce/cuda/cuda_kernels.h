// Internal: the launchers defined in cuda_kernels.cu (kept free of C++20 headers and of CUDA
// syntax). They return a cudaError_t as int (0 = success); arguments are already validated.
#pragma once

#include <cstddef>
#include <cstdint>

namespace tutti::reduce::cudadetail {

int launchReduce(void* dst, const void* a, const void* b, size_t count, int dtype, int op,
                 void* stream);
// Up to kMaxSources source pointers, passed to the kernel by value.
constexpr int kMaxSources = 16;
struct ManySources {
  const void* p[kMaxSources];
};
int launchReduceMany(void* dst, const ManySources& src, int n, size_t count, int dtype, int op,
                     int64_t divisor, const uint32_t* abortFlag, void* stream);
int launchWaitFlag(const uint32_t* flag, uint32_t value, void* stream);
int launchWriteFlag(uint32_t* flag, uint32_t value, void* stream);
int launchDivide(void* dst, size_t count, int dtype, int64_t divisor, void* stream);
const char* errorName(int err);
const char* errorString(int err);

}  // namespace tutti::reduce::cudadetail
