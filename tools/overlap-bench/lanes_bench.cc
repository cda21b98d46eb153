// Collectives on two host streams of one communicator (issue 32): a large all-reduce on stream A
// and, issued right after it, a small all-reduce on stream B (a loss or a metric beside a
// gradient), on a communicator of one lane (TUTTI_STREAM_LANES=1: one communicator's calls run
// in issue order, as NCCL's do) and on one of two lanes (the two calls run at the same time:
// src/api/comm_lanes.h), both made in this run. Per repetition, after a barrier: the time until
// stream B's small call has completed, and until stream A's large one has. Also each call alone
// (blocking), and each communicator's init. Medians over --reps, the slowest rank's; every
// result checked (exit 1 if wrong).
//   tuttirun -np 2 build/tools/overlap-bench/tutti-lanes-bench [--bytes 16M] [--small 8]
//            [--reps 10]
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "bench_util.h"
#include "tutti/tutti.hpp"

namespace {

using tutti::bench::median;
using tutti::bench::now;
using tutti::bench::parseBytes;
using tutti::bench::slowest;

struct Options {
  size_t bytes = 16u << 20;
  size_t smallBytes = 8;
  int reps = 10;
};

Options parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string a = argv[i], v = argv[i + 1];
    if (a == "--bytes")
      o.bytes = parseBytes(v);
    else if (a == "--small")
      o.smallBytes = parseBytes(v);
    else if (a == "--reps")
      o.reps = std::atoi(v.c_str());
    else
      argc = 0;  // unknown: usage below
  }
  if (argc % 2 == 0 || o.reps < 1 || o.bytes < 8 || o.smallBytes < 8) {
    std::fprintf(stderr, "usage: %s [--bytes 16M] [--small 8] [--reps 10]\n", argv[0]);
    std::exit(2);
  }
  return o;
}

// Element i of call k on rank r (int64: sums exact).
int64_t value(int r, int k, size_t i) {
  return (r + 1) * 1000003LL + k * 7919LL + static_cast<int64_t>(i % 65521);
}

struct Call {
  std::vector<int64_t> buf;
  void fill(int rank, int k) {
    for (size_t i = 0; i < buf.size(); ++i) buf[i] = value(rank, k, i);
  }
  // Wrong elements (every 1021st checked, and the last).
  size_t wrong(int n, int k) const {
    size_t bad = 0;
    auto check = [&](size_t i) {
      int64_t want = 0;
      for (int r = 0; r < n; ++r) want += value(r, k, i);
      bad += buf[i] != want;
    };
    for (size_t i = 0; i < buf.size(); i += 1021) check(i);
    check(buf.size() - 1);
    return bad;
  }
};

struct Figures {
  double smallDone = 0, largeDone = 0;  // medians, seconds from the enqueue
  size_t wrong = 0;
};

// Both calls enqueued back to back on two streams; the times until each has completed.
Figures measure(const tutti::Comm& comm, const Options& o, int tag) {
  const int rank = comm.rank(), n = comm.size();
  Call large{std::vector<int64_t>(o.bytes / 8)}, small{std::vector<int64_t>(o.smallBytes / 8)};
  tutti::Stream a, b;
  std::vector<double> smallT, largeT;
  Figures f;
  for (int rep = -1; rep < o.reps; ++rep) {  // rep -1: warm-up, not timed
    const int k = tag * 100000 + rep * 2 + 2;
    large.fill(rank, k);
    small.fill(rank, k + 1);
    comm.barrier();
    const double t0 = now();
    comm.allReduce(large.buf.data(), large.buf.data(), large.buf.size(), tuttiInt64, tuttiSum, a);
    comm.allReduce(small.buf.data(), small.buf.data(), small.buf.size(), tuttiInt64, tuttiSum, b);
    b.synchronize();
    const double ts = now() - t0;
    a.synchronize();
    const double tl = now() - t0;
    f.wrong += large.wrong(n, k) + small.wrong(n, k + 1);
    if (rep < 0) continue;
    smallT.push_back(slowest(comm, ts));
    largeT.push_back(slowest(comm, tl));
  }
  f.smallDone = median(smallT);
  f.largeDone = median(largeT);
  return f;
}

// One call alone, blocking: the median of the slowest rank's time.
double alone(const tutti::Comm& comm, size_t bytes, int reps, size_t& wrong) {
  Call c{std::vector<int64_t>(bytes / 8)};
  std::vector<double> t;
  for (int rep = -1; rep < reps; ++rep) {
    c.fill(comm.rank(), rep + 7);
    comm.barrier();
    const double t0 = now();
    comm.allReduce(c.buf.data(), c.buf.data(), c.buf.size(), tuttiInt64, tuttiSum);
    const double dt = now() - t0;
    wrong += c.wrong(comm.size(), rep + 7);
    if (rep >= 0) t.push_back(slowest(comm, dt));
  }
  return median(t);
}

}  // namespace

int main(int argc, char** argv) {
  const Options o = parse(argc, argv);
  try {
    // Every rank alike: the lane count must agree. The job's first init pays its first
    // contacts; the next two are timed.
    setenv("TUTTI_STREAM_LANES", "1", 1);
    tutti::Comm one = tutti::Comm::fromEnv();
    double t0 = now();
    const tutti::Comm spare = tutti::Comm::fromEnv();
    const double initOne = slowest(spare, now() - t0);
    setenv("TUTTI_STREAM_LANES", "2", 1);
    t0 = now();
    tutti::Comm two = tutti::Comm::fromEnv();
    const double initTwo = slowest(two, now() - t0);
    size_t wrong = 0;
    const double largeAlone = alone(one, o.bytes, o.reps, wrong);
    const double smallAlone = alone(one, o.smallBytes, o.reps, wrong);
    const double largeAlone2 = alone(two, o.bytes, o.reps, wrong);
    const Figures f1 = measure(one, o, 1);
    const Figures f2 = measure(two, o, 2);
    wrong += f1.wrong + f2.wrong;
    if (one.rank() == 0) {
      std::printf(
          "# tutti-lanes-bench: %d ranks, large %zu B on stream A, then small %zu B on "
          "stream B, %d reps (medians, slowest rank)\n",
          one.size(), o.bytes, o.smallBytes, o.reps);
      std::printf("init (after the job's first): 1 lane %.1f ms, 2 lanes %.1f ms\n", initOne * 1e3,
                  initTwo * 1e3);
      std::printf("alone (blocking): large %.3f ms (2-lane communicator: %.3f ms), small %.1f us\n",
                  largeAlone * 1e3, largeAlone2 * 1e3, smallAlone * 1e6);
      std::printf("%-6s %14s %14s\n", "lanes", "small_done_ms", "large_done_ms");
      std::printf("%-6d %14.3f %14.3f\n", 1, f1.smallDone * 1e3, f1.largeDone * 1e3);
      std::printf("%-6d %14.3f %14.3f\n", 2, f2.smallDone * 1e3, f2.largeDone * 1e3);
      std::printf(
          "small call done: 1 lane / 2 lanes = %.1fx; large call done: 2 lanes / 1 lane "
          "= %.2fx\n",
          f1.smallDone / f2.smallDone, f2.largeDone / f1.largeDone);
      std::printf("wrong elements: %zu\n", wrong);
    }
    return wrong == 0 ? 0 : 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "tutti-lanes-bench: %s\n", e.what());
    return 1;
  }
}
