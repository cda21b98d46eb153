// Schedule builders and the tuner: time to build one rank's schedule for every algorithm of
// every collective at 8, 64 and 1024 ranks (1 Mi float32 elements, windowBytes 256 KiB so the
// direct algorithms apply), and time for the tuner to rank every all-reduce candidate (it
// builds and times every rank's schedule up to 16 ranks, a symmetric sample above).
// The communicator caches both per (collective, count, dtype, op, root), so these costs are
// paid once per distinct call shape; the benchmark shows what a first call costs.
#include <benchmark/benchmark.h>

#include <string>

#include "interfaces/algorithm.h"
#include "tuning/cost_model.h"
#include "tuning/tuner.h"

namespace {

namespace algo = tutti::algo;

algo::CollArgs argsFor(algo::Coll coll, int nranks) {
  algo::CollArgs a;
  a.coll = coll;
  a.count = size_t{1} << 20;
  if (coll == algo::Coll::kAllGather || coll == algo::Coll::kReduceScatter ||
      coll == algo::Coll::kAllToAll || coll == algo::Coll::kGather || coll == algo::Coll::kScatter)
    a.count = std::max<size_t>(1, a.count / static_cast<size_t>(nranks));
  a.dtype = tuttiFloat32;
  a.nranks = nranks;
  a.rank = nranks / 3;
  a.windowBytes = size_t{256} << 10;
  return a;
}

void benchBuild(benchmark::State& state, const algo::AlgorithmInfo* info, algo::CollArgs a) {
  size_t ops = 0, rounds = 0;
  for (auto _ : state) {
    auto s = info->build(a);
    rounds = s.rounds.size();
    ops = 0;
    for (const auto& r : s.rounds) ops += r.ops.size();
    benchmark::DoNotOptimize(s.rounds.data());
  }
  state.counters["rounds"] = static_cast<double>(rounds);
  state.counters["ops"] = static_cast<double>(ops);
}

void benchTuner(benchmark::State& state, algo::CollArgs a) {
  tutti::tuning::CostModel m;
  m.coresPerHost = 2;
  size_t n = 0;
  for (auto _ : state) {
    auto c = tutti::tuning::rankCandidates(a, m);
    n = c.size();
    benchmark::DoNotOptimize(c.data());
  }
  state.counters["candidates"] = static_cast<double>(n);
}

}  // namespace

int main(int argc, char** argv) {
  for (int n : {8, 64, 1024}) {
    for (const algo::AlgorithmInfo& info : algo::registry()) {
      algo::CollArgs a = argsFor(info.coll, n);
      if (!info.applicable(a)) continue;
      std::string name = std::string("build/") + algo::collName(info.coll) + "/" + info.name + "/" +
                         std::to_string(n) + "ranks";
      benchmark::RegisterBenchmark(name.c_str(), benchBuild, &info, a);
    }
    benchmark::RegisterBenchmark(("tuner/allreduce/" + std::to_string(n) + "ranks").c_str(),
                                 benchTuner, argsFor(algo::Coll::kAllReduce, n))
        ->Unit(benchmark::kMicrosecond);
  }
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
