// Reduction kernel throughput: sum of every dtype at 4 KiB, 1 MiB and 64 MiB per buffer, for
// every ISA variant this CPU can run, next to memcpy of the same size.
// bytes_per_second counts the buffer size once per call (payload bytes); memory traffic is
// 3x that for reduce (2 reads + 1 write) and 2x for memcpy (1 read + 1 write).
#include <benchmark/benchmark.h>

#include <cstring>
#include <string>
#include <vector>

#include "common/dtype.h"
#include "reduce/reduce.h"
#include "reduce/reduce_testing.h"

namespace {

constexpr size_t kSizes[] = {4 << 10, 1 << 20, 64 << 20};
constexpr tuttiDataType_t kTypes[] = {tuttiInt8,    tuttiUint8,  tuttiInt32,   tuttiUint32,
                                      tuttiInt64,   tuttiUint64, tuttiFloat16, tuttiBfloat16,
                                      tuttiFloat32, tuttiFloat64};

std::string sizeName(size_t bytes) {
  return bytes >= (1 << 20) ? std::to_string(bytes >> 20) + "MiB"
                            : std::to_string(bytes >> 10) + "KiB";
}

void benchReduce(benchmark::State& state, std::string isa, tuttiDataType_t t, size_t bytes) {
  tutti::reduce::detail::setIsaForTesting(isa.c_str());
  const size_t n = bytes / tutti::dtypeSize(t);
  std::vector<uint8_t> a(bytes, 1), b(bytes, 2), d(bytes, 0);
  for (auto _ : state) {
    tutti::reduce::reduce(d.data(), a.data(), b.data(), n, t, tuttiSum);
    benchmark::DoNotOptimize(d.data());
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) * bytes);
  tutti::reduce::detail::setIsaForTesting("auto");
}

void benchMemcpy(benchmark::State& state, size_t bytes) {
  std::vector<uint8_t> a(bytes, 1), d(bytes, 0);
  for (auto _ : state) {
    std::memcpy(d.data(), a.data(), bytes);
    benchmark::DoNotOptimize(d.data());
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) * bytes);
}

}  // namespace

int main(int argc, char** argv) {
  for (size_t bytes : kSizes) {
    benchmark::RegisterBenchmark(("memcpy/" + sizeName(bytes)).c_str(), benchMemcpy, bytes);
    for (const char* isa : {"scalar", "avx2", "avx512"}) {
      if (!tutti::reduce::detail::isaSupported(isa)) continue;
      for (tuttiDataType_t t : kTypes) {
        std::string name =
            std::string("reduce_sum/") + tutti::dtypeName(t) + "/" + isa + "/" + sizeName(bytes);
        benchmark::RegisterBenchmark(name.c_str(), benchReduce, std::string(isa), t, bytes);
      }
    }
  }
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
