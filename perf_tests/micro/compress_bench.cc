// Codec throughput at d = 16 Mi float32 (64 MiB): encode and decodeAccumulate of every codec,
// next to memcpy of the same 64 MiB. bytes_per_second counts the 4d input bytes per call.
#include <benchmark/benchmark.h>

#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "compress/codec.h"

namespace {

// TUTTI_BENCH_ELEMS shrinks d for the ctest smoke run; the figures in docs/ use 16 Mi.
size_t benchElems() {
  const char* v = std::getenv("TUTTI_BENCH_ELEMS");
  return v && std::strtoull(v, nullptr, 10) > 0 ? std::strtoull(v, nullptr, 10) : size_t{16} << 20;
}
const size_t kD = benchElems();
const char* const kSpecs[] = {
    "none",           "topk:ratio=0.01", "topk:ratio=0.01,approx", "topk:ratio=0.001",
    "qsgd:s=4,b=512", "qsgd:s=1,b=512",  "qsgd:s=16,b=128",        "qsgd:s=4,b=512,gamma"};

const std::vector<float>& input() {
  static const std::vector<float> v = [] {
    std::vector<float> x(kD);
    std::mt19937_64 rng(1);
    std::normal_distribution<float> g;
    for (auto& f : x) f = g(rng);
    return x;
  }();
  return v;
}

void benchEncode(benchmark::State& state, std::string spec) {
  auto codec = tutti::compress::makeCodec(spec);
  std::vector<std::byte> out(codec->maxEncodedBytes(kD));
  size_t bytes = 0;
  uint64_t step = 0;
  for (auto _ : state) {
    bytes = codec->encode(input(), out, {.seed = 1, .step = step++});
    benchmark::DoNotOptimize(out.data());
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) * kD * 4);
  state.counters["wire_bytes"] = static_cast<double>(bytes);
  state.counters["ratio"] = static_cast<double>(kD * 4) / static_cast<double>(bytes);
}

void benchDecode(benchmark::State& state, std::string spec) {
  auto codec = tutti::compress::makeCodec(spec);
  std::vector<std::byte> out(codec->maxEncodedBytes(kD));
  const size_t bytes = codec->encode(input(), out, {.seed = 1});
  std::vector<float> acc(kD, 0.0f);
  for (auto _ : state) {
    codec->decodeAccumulate(std::span(out).first(bytes), acc);
    benchmark::DoNotOptimize(acc.data());
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) * kD * 4);
}

// What the compressed all-reduce does with 4 ranks: out = sum of 4 decoded payloads (decodeSum).
void benchDecodeSum4(benchmark::State& state, std::string spec) {
  auto codec = tutti::compress::makeCodec(spec);
  std::vector<std::vector<std::byte>> bufs(4);
  std::vector<std::span<const std::byte>> wires;
  for (uint32_t r = 0; r < 4; ++r) {
    bufs[r].resize(codec->maxEncodedBytes(kD));
    const size_t n = codec->encode(input(), bufs[r], {.seed = 1, .rank = r});
    wires.emplace_back(bufs[r].data(), n);
  }
  std::vector<float> out(kD, 0.0f);
  for (auto _ : state) {
    codec->decodeSum(wires, out);
    benchmark::DoNotOptimize(out.data());
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) * kD * 4 * 4);
}

void benchMemcpy(benchmark::State& state) {
  std::vector<float> dst(kD, 0.0f);
  for (auto _ : state) {
    std::memcpy(dst.data(), input().data(), kD * 4);
    benchmark::DoNotOptimize(dst.data());
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) * kD * 4);
}

}  // namespace

int main(int argc, char** argv) {
  input();  // generate the 64 MiB input before any timing
  benchmark::RegisterBenchmark("memcpy/16Mi", benchMemcpy)->Unit(benchmark::kMillisecond);
  for (const char* spec : kSpecs) {
    benchmark::RegisterBenchmark((std::string("encode/") + spec).c_str(), benchEncode,
                                 std::string(spec))
        ->Unit(benchmark::kMillisecond);
    benchmark::RegisterBenchmark((std::string("decode/") + spec).c_str(), benchDecode,
                                 std::string(spec))
        ->Unit(benchmark::kMillisecond);
    benchmark::RegisterBenchmark((std::string("decodeSum4/") + spec).c_str(), benchDecodeSum4,
                                 std::string(spec))
        ->Unit(benchmark::kMillisecond);
  }
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
