// bootstrap-ring-bench: the bootstrap ring's own cost at many thread ranks in one process
// (docs/bootstrap.md): setup (every level's connections), an all-gather of small entries and a
// barrier, each the slowest rank's time, median over --reps calls.
//   bootstrap-ring-bench [--ranks 64,256,512] [--bytes 128] [--reps 5]
// Each rank holds 2 ceil(log2 n) + 2 descriptors: the process's descriptor limit bounds n.
#include <sys/resource.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "bootstrap/memory_store.h"
#include "bootstrap/ring.h"

using namespace tutti;
using namespace tutti::bootstrap;
using Clock = std::chrono::steady_clock;

namespace {

std::vector<int> parseList(const char* s) {
  std::vector<int> v;
  for (const char* p = s; *p;) {
    v.push_back(std::atoi(p));
    p = std::strchr(p, ',');
    if (!p) break;
    ++p;
  }
  return v;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

void runOne(int n, size_t bytes, int reps) {
  MemoryStore store;
  std::vector<double> agTimes, barTimes;
  double setup = 0;
  std::vector<std::thread> threads;
  std::atomic<int> arrived{0};
  std::atomic<int64_t> lastNs{0};
  std::atomic<int> failures{0};
  std::atomic<int> generation{0};
  std::atomic<int> levels{0};  // rank 0's ring's
  Clock::time_point t0;
  // Every rank waits at a gate (a futex: no polling) between phases; the main thread times.
  auto gate = [&](int phase) {
    if (arrived.fetch_add(1) + 1 == n) arrived.notify_one();
    for (int g = generation.load(); g < phase; g = generation.load()) generation.wait(g);
  };
  auto done = [&] {
    int64_t ns = std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - t0).count();
    int64_t prev = lastNs.load();
    while (ns > prev && !lastNs.compare_exchange_weak(prev, ns)) {
    }
  };
  const int phases = 1 + 2 * reps;
  for (int r = 0; r < n; ++r) {
    threads.emplace_back([&, r] {
      try {
        BootstrapRing ring("bench", r, n);
        std::vector<std::byte> mine(bytes, std::byte(r));
        gate(1);
        ring.connect(store, "r/" + std::to_string(r), "r/" + std::to_string((r + 1) % n),
                     "127.0.0.1", Deadline(120));
        if (r == 0) levels.store(ring.levels());
        done();
        for (int i = 0; i < reps; ++i) {
          gate(2 + 2 * i);
          auto all = ring.allGather(mine, Deadline(120), "allGather");
          if (all[(r + 1) % n].size() != bytes) failures.fetch_add(1);
          done();
          gate(3 + 2 * i);
          ring.barrier(Deadline(120), "barrier");
          done();
        }
        gate(phases + 1);
      } catch (const std::exception& e) {
        std::fprintf(stderr, "rank %d: %s\n", r, e.what());
        failures.fetch_add(1);
        std::_Exit(1);
      }
    });
  }
  for (int phase = 1; phase <= phases + 1; ++phase) {
    for (int a = arrived.load(); a < n; a = arrived.load()) arrived.wait(a);
    if (phase > 1) {
      double s = static_cast<double>(lastNs.load()) * 1e-9;
      if (phase == 2)
        setup = s;
      else if (phase % 2 == 1)
        agTimes.push_back(s);
      else
        barTimes.push_back(s);
    }
    if (phase <= phases) {
      arrived.store(0);
      lastNs.store(0);
      t0 = Clock::now();
    }
    generation.store(phase);
    generation.notify_all();
  }
  for (auto& t : threads) t.join();
  std::printf("| %d | %d | %.1f | %.2f | %.2f | %s |\n", n, levels.load(), setup * 1e3,
              median(agTimes) * 1e3, median(barTimes) * 1e3, failures.load() ? "FAILED" : "ok");
  std::fflush(stdout);
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<int> ranks = {64, 256, 512};
  size_t bytes = 128;
  int reps = 5;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--ranks" && i + 1 < argc)
      ranks = parseList(argv[++i]);
    else if (a == "--bytes" && i + 1 < argc)
      bytes = std::strtoul(argv[++i], nullptr, 10);
    else if (a == "--reps" && i + 1 < argc)
      reps = std::atoi(argv[++i]);
    else {
      std::fprintf(stderr,
                   "usage: bootstrap-ring-bench [--ranks 64,256,512] [--bytes B] [--reps N]\n");
      return 2;
    }
  }
  rlimit lim{};
  if (::getrlimit(RLIMIT_NOFILE, &lim) == 0 && lim.rlim_cur < lim.rlim_max) {
    lim.rlim_cur = lim.rlim_max;
    ::setrlimit(RLIMIT_NOFILE, &lim);
  }
  std::printf("| ranks | levels | setup ms | all-gather ms (%zu B) | barrier ms | check |\n",
              bytes);
  std::printf("|---|---|---|---|---|---|\n");
  for (int n : ranks) runOne(n, bytes, reps);
  return 0;
}
