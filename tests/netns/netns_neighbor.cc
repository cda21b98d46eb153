// One rank of neighbor_netns_test (run under `tuttirun --hosts ...`), public API only.
//   netns_neighbor check PER_HOST: every built-in graph (flat) at every step of its period,
//     float32 / float64 / bfloat16, in place and not, against the reference of
//     harness/mixing_reference.h; then the hierarchical one-peer graph over the hosts (ranks
//     r*PER_HOST.. on host r: exact host averages mixed over W of the hosts) against float64.
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

#include "harness/mixing_reference.h"
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

double valueOf(int r, size_t e, uint64_t call) {
  uint64_t h = (r + 3) * 0x9e3779b97f4a7c15ull ^ (e + 1) * 0xbf58476d1ce4e5b9ull ^
               (call + 9) * 0x94d049bb133111ebull;
  h ^= h >> 31;
  h *= 0x94d049bb133111ebull;
  h ^= h >> 29;
  return static_cast<double>(static_cast<int>(h % 2001) - 1000) / 64.0;
}

// bfloat16 by truncation-free rounding: the test values (k/64, |k| <= 1000) are chosen so the
// check works on float32/float64 exactly and bfloat16 within its rounding.
uint16_t toBf16(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  x += 0x7fff + ((x >> 16) & 1);
  return static_cast<uint16_t>(x >> 16);
}
float fromBf16(uint16_t b) {
  uint32_t x = static_cast<uint32_t>(b) << 16;
  float f;
  std::memcpy(&f, &x, 4);
  return f;
}

struct Kind {
  tuttiGraphKind_t kind;
  tutti::test::RefGraph ref;
};

int checkFlat() {
  const Kind kinds[] = {{tuttiGraphRing, tutti::test::RefGraph::kRing},
                        {tuttiGraphTorus2D, tutti::test::RefGraph::kTorus},
                        {tuttiGraphGrid2D, tutti::test::RefGraph::kGrid},
                        {tuttiGraphHypercube, tutti::test::RefGraph::kHypercube},
                        {tuttiGraphExponential, tutti::test::RefGraph::kExponential},
                        {tuttiGraphOnePeerExponential, tutti::test::RefGraph::kOnePeer}};
  int bad = 0;
  uint64_t call = 0;
  for (const Kind& k : kinds) {
    if (k.kind == tuttiGraphHypercube && (n & (n - 1)) != 0) continue;
    tuttiGraph_t g = nullptr;
    check(tuttiGraphCreate(comm, k.kind, 0, 0, &g), "tuttiGraphCreate");
    const int period = k.kind == tuttiGraphOnePeerExponential ? tutti::test::refPeriod(n) : 1;
    for (int step = 0; step <= period; ++step, ++call) {
      const size_t count = call % 3 == 0 ? 100003 : 17 + call;
      const bool inPlace = call % 2 == 0;
      const std::vector<double> w = tutti::test::refMatrix(k.ref, n, step);
      const int type = static_cast<int>(call % 3);  // float32, float64, bfloat16
      std::vector<float> f(count), fo(count);
      std::vector<double> d(count), dout(count);
      std::vector<uint16_t> b(count), bo(count);
      for (size_t e = 0; e < count; ++e) {
        double v = valueOf(rank, e, call);
        f[e] = static_cast<float>(v);
        d[e] = v;
        b[e] = toBf16(static_cast<float>(v));
      }
      if (type == 0)
        check(tuttiNeighborAllReduce(f.data(), inPlace ? f.data() : fo.data(), count, tuttiFloat32,
                                     g, comm, nullptr),
              "tuttiNeighborAllReduce");
      else if (type == 1)
        check(tuttiNeighborAllReduce(d.data(), inPlace ? d.data() : dout.data(), count,
                                     tuttiFloat64, g, comm, nullptr),
              "tuttiNeighborAllReduce");
      else
        check(tuttiNeighborAllReduce(b.data(), inPlace ? b.data() : bo.data(), count, tuttiBfloat16,
                                     g, comm, nullptr),
              "tuttiNeighborAllReduce");
      for (size_t e = 0; e < count && !bad; ++e) {
        bool ok;
        double got, want;
        if (type == 1) {
          std::vector<double> x(n);
          for (int j = 0; j < n; ++j) x[j] = valueOf(j, e, call);
          want = tutti::test::refMixElement<double>(w, n, rank, x);
          got = inPlace ? d[e] : dout[e];
          ok = got == want;
        } else {
          std::vector<float> x(n);
          for (int j = 0; j < n; ++j) {
            float v = static_cast<float>(valueOf(j, e, call));
            x[j] = type == 0 ? v : fromBf16(toBf16(v));
          }
          float fw = tutti::test::refMixElement<float>(w, n, rank, x);
          if (type == 0) {
            want = fw;
            got = inPlace ? f[e] : fo[e];
          } else {
            want = fromBf16(toBf16(fw));
            got = fromBf16(inPlace ? b[e] : bo[e]);
          }
          ok = got == want;
        }
        if (!ok) {
          std::fprintf(stderr, "rank %d: graph %d step %d type %d element %zu = %.9g, want %.9g\n",
                       rank, k.kind, step, type, e, got, want);
          bad = 1;
        }
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
    for (size_t e = 0; e < count; ++e) x[e] = valueOf(rank, e, 1000 + step);
    check(tuttiNeighborAllReduce(x.data(), x.data(), count, tuttiFloat64, g, comm, nullptr),
          "tuttiNeighborAllReduce hier");
    const std::vector<double> w =
        tutti::test::refMatrix(tutti::test::RefGraph::kOnePeer, hosts, step);
    const int h = rank / perHost;
    for (size_t e = 0; e < count && !bad; ++e) {
      double want = 0;
      for (int k = 0; k < hosts; ++k) {
        double avg = 0;
        for (int m = 0; m < perHost; ++m) avg += valueOf(k * perHost + m, e, 1000 + step);
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
