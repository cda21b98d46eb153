// copyBytes (common/copy_bytes.h) against memcpy at 4 KiB - 4 MiB, with the destination 0, 16
// and 64 bytes past the source modulo 4 KiB: 16 is a malloc'd buffer (page + 16) receiving from
// a page-aligned shared window or FIFO slot, where glibc 2.36's `rep movsb` is slow on AMD Zen.
// bytes_per_second counts the bytes copied once per call.
#include <benchmark/benchmark.h>

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "common/copy_bytes.h"

namespace {

constexpr size_t kSizes[] = {4 << 10, 64 << 10, 256 << 10, 1 << 20, 4 << 20};
constexpr size_t kPast[] = {0, 16, 64};

std::string sizeName(size_t bytes) {
  return bytes >= (1 << 20) ? std::to_string(bytes >> 20) + "MiB"
                            : std::to_string(bytes >> 10) + "KiB";
}

uint8_t* pageAligned(std::vector<uint8_t>& v) {
  return reinterpret_cast<uint8_t*>((reinterpret_cast<uintptr_t>(v.data()) + 4095) &
                                    ~uintptr_t{4095});
}

template <bool kCopyBytes>
void benchCopy(benchmark::State& state, size_t bytes, size_t past) {
  std::vector<uint8_t> a(bytes + 4096, 1), d(bytes + 8192, 0);
  const uint8_t* src = pageAligned(a);
  uint8_t* dst = pageAligned(d) + past;
  for (auto _ : state) {
    if constexpr (kCopyBytes)
      tutti::copyBytes(dst, src, bytes);
    else
      std::memcpy(dst, src, bytes);
    benchmark::DoNotOptimize(dst);
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) * bytes);
}

}  // namespace

int main(int argc, char** argv) {
  for (size_t bytes : kSizes)
    for (size_t past : kPast) {
      const std::string tail = "/" + sizeName(bytes) + "/past" + std::to_string(past);
      benchmark::RegisterBenchmark(("memcpy" + tail).c_str(), benchCopy<false>, bytes, past);
      benchmark::RegisterBenchmark(("copyBytes" + tail).c_str(), benchCopy<true>, bytes, past);
    }
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
