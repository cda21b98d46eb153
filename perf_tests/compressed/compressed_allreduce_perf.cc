// compressed_allreduce_perf: dense tuttiAllReduce next to tuttiAllReduceCompressed with several
// codecs on the same float32 tensor, in one job (run under tuttirun, e.g. by
// tools/compressed-netns-bench.sh across network namespaces).
//   compressed_allreduce_perf [-b BYTES (64M)] [-n ITERS (5)] [-w WARMUP (1)]
//                             [-c dense,topk:ratio=0.01+ef,qsgd:s=4,b=512]
// A variant is "dense" (tuttiAllReduce) or a compressor spec, with "+ef" for error feedback.
// Per variant and iteration: barrier, then the call; the time of an iteration is the slowest
// rank's. Prints the median and min over the iterations, the payload bytes per rank, and the
// bytes this rank's network namespace sent (non-loopback interfaces of /proc/self/net/dev,
// i.e. TCP/IP on the wire, headers included) per call, averaged over ranks.
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "tutti/tutti.h"

namespace {

void check(tuttiResult_t r, tuttiComm_t comm, const char* what) {
  if (r != tuttiSuccess) {
    std::fprintf(stderr, "%s: %s: %s\n", what, tuttiGetErrorString(r), tuttiGetLastError(comm));
    std::exit(1);
  }
}

// Bytes sent by the non-loopback interfaces of this process's network namespace.
uint64_t txBytes() {
  std::ifstream f("/proc/self/net/dev");
  std::string line;
  uint64_t total = 0;
  for (int i = 0; std::getline(f, line); ++i) {
    if (i < 2) continue;  // two header lines
    const size_t colon = line.find(':');
    if (colon == std::string::npos) continue;
    std::string name = line.substr(0, colon);
    name.erase(0, name.find_first_not_of(' '));
    if (name == "lo") continue;
    std::istringstream in(line.substr(colon + 1));
    uint64_t v[9] = {};
    for (auto& x : v) in >> x;  // rx: bytes packets errs drop fifo frame compressed multicast
    total += v[8];              // tx bytes
  }
  return total;
}

size_t parseSize(const std::string& s) {
  size_t pos = 0;
  double v = std::stod(s, &pos);
  const char u = pos < s.size() ? s[pos] : '\0';
  const double m = u == 'K' || u == 'k' ? 1024.0
                   : u == 'M'           ? 1048576.0
                   : u == 'G'           ? 1073741824.0
                                        : 1;
  return static_cast<size_t>(v * m);
}

std::vector<std::string> splitList(const std::string& s) {
  std::vector<std::string> out;
  size_t a = 0;
  while (a <= s.size()) {
    // Codec specs contain commas ("qsgd:s=4,b=512"): a new item starts at a name.
    size_t b = a;
    for (;;) {
      b = s.find(',', b);
      if (b == std::string::npos) break;
      const std::string next = s.substr(b + 1);
      if (next.rfind("dense", 0) == 0 || next.rfind("none", 0) == 0 || next.rfind("topk", 0) == 0 ||
          next.rfind("qsgd", 0) == 0)
        break;
      ++b;
    }
    out.push_back(s.substr(a, b == std::string::npos ? std::string::npos : b - a));
    if (b == std::string::npos) break;
    a = b + 1;
  }
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  size_t bytes = size_t{64} << 20;
  int iters = 5, warmup = 1;
  std::string list = "dense,topk:ratio=0.01+ef,topk:ratio=0.01,approx+ef,qsgd:s=4,b=512";
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string a = argv[i], v = argv[i + 1];
    if (a == "-b")
      bytes = parseSize(v);
    else if (a == "-n")
      iters = std::max(1, std::stoi(v));
    else if (a == "-w")
      warmup = std::max(0, std::stoi(v));
    else if (a == "-c")
      list = v;
    else {
      std::fprintf(stderr, "usage: %s [-b BYTES] [-n ITERS] [-w WARMUP] [-c dense,SPEC,..]\n",
                   argv[0]);
      return 2;
    }
  }
  tuttiComm_t comm = nullptr;
  check(tuttiCommInitFromEnv(&comm, nullptr), nullptr, "tuttiCommInitFromEnv");
  int rank = 0, nranks = 1;
  check(tuttiCommUserRank(comm, &rank), comm, "tuttiCommUserRank");
  check(tuttiCommCount(comm, &nranks), comm, "tuttiCommCount");
  const size_t count = bytes / 4;
  std::vector<float> grad(count), out(count);
  std::mt19937_64 rng(1234 + rank);
  std::normal_distribution<float> gauss;
  for (auto& g : grad) g = gauss(rng);

  check(tuttiAllReduce(grad.data(), out.data(), 1024, tuttiFloat32, tuttiSum, comm, nullptr), comm,
        "tuttiAllReduce");  // connect first, so that the transports are known
  if (rank == 0)
    std::printf("# %d ranks, %zu float32 (%.1f MiB), %d iterations (+%d warm-up), %s\n", nranks,
                count, bytes / 1048576.0, iters, warmup, tuttiCommTransports(comm));
  if (rank == 0)
    std::printf("| %-26s | %9s | %9s | %8s | %14s | %14s | %7s |\n", "all-reduce", "median ms",
                "min ms", "speedup", "payload B/rank", "wire tx B/rank", "ratio");
  double denseMedian = 0;
  uint64_t denseWire = 0;
  for (const std::string& variant : splitList(list)) {
    const bool dense = variant == "dense";
    const bool ef = variant.size() > 3 && variant.ends_with("+ef");
    const std::string spec = ef ? variant.substr(0, variant.size() - 3) : variant;
    std::vector<double> times;
    uint64_t tx = 0, payload = 0;
    for (int it = 0; it < warmup + iters; ++it) {
      check(tuttiBarrier(comm, nullptr), comm, "tuttiBarrier");
      const uint64_t tx0 = txBytes();
      const auto t0 = std::chrono::steady_clock::now();
      if (dense) {
        check(tuttiAllReduce(grad.data(), out.data(), count, tuttiFloat32, tuttiSum, comm, nullptr),
              comm, "tuttiAllReduce");
      } else {
        check(tuttiAllReduceCompressed(grad.data(), out.data(), count, tuttiFloat32, spec.c_str(),
                                       77, ef ? 1 : 0, comm, nullptr),
              comm, "tuttiAllReduceCompressed");
      }
      double sec = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      const uint64_t sent = txBytes() - tx0;
      double slowest = 0;
      check(tuttiAllReduce(&sec, &slowest, 1, tuttiFloat64, tuttiMax, comm, nullptr), comm,
            "tuttiAllReduce(max)");
      if (it < warmup) continue;
      times.push_back(slowest);
      tx += sent;
      if (dense) {
        payload = 2 * (nranks - 1) * (bytes / nranks);  // ring: reduce-scatter + all-gather
      } else {
        tuttiCompressionStats_t st{};
        check(tuttiCompressionStats(comm, &st), comm, "tuttiCompressionStats");
        payload = st.wireBytesLastCall * (nranks - 1);  // all-gather: to every other rank
      }
    }
    double txPerCall = static_cast<double>(tx) / iters, txMean = 0;
    check(tuttiAllReduce(&txPerCall, &txMean, 1, tuttiFloat64, tuttiSum, comm, nullptr), comm,
          "tuttiAllReduce(sum)");
    txMean /= nranks;
    std::sort(times.begin(), times.end());
    const double median = times[times.size() / 2] * 1e3;
    if (dense) denseMedian = median, denseWire = payload;
    if (rank == 0)
      std::printf("| %-26s | %9.1f | %9.1f | %7.2fx | %14llu | %14.0f | %6.1fx |\n",
                  variant.c_str(), median, times.front() * 1e3,
                  denseMedian > 0 ? denseMedian / median : 0.0,
                  static_cast<unsigned long long>(payload), txMean,
                  denseWire > 0 ? static_cast<double>(denseWire) / payload : 0.0);
    std::fflush(stdout);
  }
  check(tuttiCommDestroy(comm), comm, "tuttiCommDestroy");
  return 0;
}
