// One rank of neighbor_netns_test (run under `tuttirun --hosts ...`), public API only.
//   netns_neighbor check PER_HOST: every built-in graph (flat) at every step of its period,
//     float32 / float64 / bfloat16, in place and not, against the reference of
//     harness/mixing_data.h (verifiable inputs, bit for bit); then the hierarchical one-peer
//     graph over the hosts (ranks r*PER_HOST.. on host r: exact host averages mixed over W of
//     the hosts) against float64.
//     Prints "rank R transports T" and "rank R OK"; exits 1 on a mismatch.
//   netns_neighbor bench BYTES ITERS: time per call (median over ITERS after one warm-up) of
//     the one-peer exponential neighbour all-reduce and of tuttiAllReduce with each of ring,
//     rabenseifner, tree and the automatic choice, float32; rank 0 prints one line each.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "harness/mixing_data.h"
#include "tutti/tutti.h"

namespace {

int rank = -1, n = 0;
tuttiComm_t comm = nullptr;

void check(tuttiResult_t r, const char* what) {
  if (r != tuttiSuccess) {
    std::fprintf(stderr, "rank %d: %s failed: %s (%s)\n", rank, what, tuttiGetErrorString(r),
                 tuttiGetLastError(comm));
    std::exit(1);
  }
}

int checkFlat() {
  using tutti::test::kMixGraphs;
  int bad = 0;
  uint64_t call = 0;
  for (const tutti::test::MixGraph& k : kMixGraphs) {
    if (!tutti::test::mixGraphApplies(k, n)) continue;
    tuttiGraph_t g = nullptr;
    check(tuttiGraphCreate(comm, k.kind, 0, 0, &g), "tuttiGraphCreate");
    const int period = k.kind == tuttiGraphOnePeerExponential ? tutti::test::refPeriod(n) : 1;
    for (int step = 0; step <= period && !bad; ++step, ++call) {
      const size_t count = call % 3 == 0 ? 100003 : 17 + call;
      const bool inPlace = call % 2 == 0;
      const tuttiDataType_t types[] = {tuttiFloat32, tuttiFloat64, tuttiBfloat16};
      const tuttiDataType_t t = types[call % 3];
      std::vector<std::byte> in = tutti::test::mixInput(rank, call, count, t);
      std::vector<std::byte> out(in.size());
      check(tuttiNeighborAllReduce(in.data(), inPlace ? in.data() : out.data(), count, t, g, comm,
                                   nullptr),
            "tuttiNeighborAllReduce");
      const std::vector<double> w = tutti::test::refMatrix(k.ref, n, step);
      std::string diff = tutti::test::mixFirstDiff(
          inPlace ? in : out, tutti::test::mixExpected(w, n, rank, call, count, t), t);
      if (!diff.empty()) {
        std::fprintf(stderr, "rank %d: graph %s step %d type %d%s: %s\n", rank, k.name, step,
                     static_cast<int>(t), inPlace ? " in place" : "", diff.c_str());
        bad = 1;
      }
    }
    check(tuttiGraphDestroy(g), "tuttiGraphDestroy");
  }
  return bad;
}

int checkHier(int perHost) {
  const int hosts = n / perHost;
  tuttiGraph_t g = nullptr;
  check(tuttiGraphCreate(comm, tuttiGraphOnePeerExponential, 0, 1, &g), "tuttiGraphCreate hier");
  int bad = 0;
  for (int step = 0; step < tutti::test::refPeriod(hosts) + 1 && !bad; ++step) {
    const size_t count = 5000 + step;
    std::vector<double> x(count);
    for (size_t e = 0; e < count; ++e)
      x[e] = tutti::test::mixValue(rank, e, 1000 + step, tuttiBfloat16);
    check(tuttiNeighborAllReduce(x.data(), x.data(), count, tuttiFloat64, g, comm, nullptr),
          "tuttiNeighborAllReduce hier");
    const std::vector<double> w =
        tutti::test::refMatrix(tutti::test::RefGraph::kOnePeer, hosts, step);
    const int h = rank / perHost;
    for (size_t e = 0; e < count && !bad; ++e) {
      double want = 0;
      for (int k = 0; k < hosts; ++k) {
        double avg = 0;
        for (int m = 0; m < perHost; ++m)
          avg += tutti::test::mixValue(k * perHost + m, e, 1000 + step, tuttiBfloat16);
        want += w[h * hosts + k] * avg / perHost;
      }
      if (std::fabs(x[e] - want) > 1e-12) {
        std::fprintf(stderr, "rank %d: hier step %d element %zu = %.17g, want %.17g\n", rank, step,
                     e, x[e], want);
        bad = 1;
      }
    }
  }
  if (std::strcmp(tuttiCommLastAlgorithm(comm), "neighbor_hier") != 0) bad = 1;
  check(tuttiGraphDestroy(g), "tuttiGraphDestroy");
  return bad;
}

double medianMs(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2] * 1e3;
}

void bench(size_t bytes, int iters) {
  const size_t count = bytes / 4;
  std::vector<float> x(count, 1.0f + rank);
  auto timeIt = [&](auto&& call) {
    call();  // warm-up (connections)
    std::vector<double> t;
    for (int i = 0; i < iters; ++i) {
      check(tuttiBarrier(comm, nullptr), "tuttiBarrier");
      auto t0 = std::chrono::steady_clock::now();
      call();
      t.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    }
    return medianMs(t);
  };
  tuttiGraph_t g = nullptr;
  check(tuttiGraphCreate(comm, tuttiGraphOnePeerExponential, 0, 0, &g), "tuttiGraphCreate");
  double nb = timeIt([&] {
    check(tuttiNeighborAllReduce(x.data(), x.data(), count, tuttiFloat32, g, comm, nullptr),
          "tuttiNeighborAllReduce");
  });
  if (rank == 0) std::printf("bench %zu B: neighbor one-peer %.1f ms\n", bytes, nb);
  for (const char* algo : {"allreduce:ring", "allreduce:rabenseifner", "allreduce:tree", ""}) {
    check(tuttiCommSetAlgorithm(comm, algo), "tuttiCommSetAlgorithm");
    double t = timeIt([&] {
      check(tuttiAllReduce(x.data(), x.data(), count, tuttiFloat32, tuttiAvg, comm, nullptr),
            "tuttiAllReduce");
    });
    if (rank == 0)
      std::printf("bench %zu B: allreduce %s (%s) %.1f ms, / neighbor %.2f\n", bytes,
                  *algo ? algo + 10 : "auto", tuttiCommLastAlgorithm(comm), t, t / nb);
  }
  check(tuttiGraphDestroy(g), "tuttiGraphDestroy");
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: netns_neighbor check PER_HOST | bench BYTES ITERS\n");
    return 2;
  }
  check(tuttiCommInitFromEnv(&comm, nullptr), "tuttiCommInitFromEnv");
  check(tuttiCommUserRank(comm, &rank), "tuttiCommUserRank");
  check(tuttiCommCount(comm, &n), "tuttiCommCount");
  int bad = 0;
  if (std::string(argv[1]) == "check") {
    bad = checkFlat();
    if (!bad) bad = checkHier(std::atoi(argv[2]));
    std::printf("rank %d transports %s\n", rank, tuttiCommTransports(comm));
    if (!bad) std::printf("rank %d OK\n", rank);
  } else {
    bench(static_cast<size_t>(std::atoll(argv[2])), argc > 3 ? std::atoi(argv[3]) : 5);
  }
  check(tuttiCommDestroy(comm), "tuttiCommDestroy");
  return bad;
}
