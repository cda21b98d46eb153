// Compute/communication overlap through a host stream (issue 32): a training-like loop whose
// step computes a gradient (a CPU-bound loop, then filling the gradient), then all-reduces it.
// Measured in one run, each per step over --steps steps, the slowest rank's:
//   comm alone      the all-reduce of --bytes, blocking, each call timed after a barrier; its
//                   CPU blocking (comm_cpu) and on a host stream while the caller sleeps
//                   (stream_cpu: what it takes from a compute it overlaps)
//   compute alone   the compute (by default as long as the all-reduce alone), and its CPU
//   blocking        compute, then the blocking all-reduce: about their sum
//   overlapped      compute step k while step k-1's all-reduce runs on a host stream (two
//                   gradient buffers; an event per buffer keeps step k+1 from overwriting
//                   a gradient still in flight): the steady state, the longer of the mean
//                   intervals between the enqueues and between the all-reduces' ends (a host
//                   function stamps each), first to last; beside it the loop's mean with the
//                   pipeline's fill (a first step with nothing to overlap) and drain (the last
//                   all-reduce), and the loop's CPU
// and overlapped / max(compute alone, comm alone) (1.0 = perfect overlap), and against the
// bound of ranks that share this machine's cores: (compute CPU + stream CPU per step) x
// ranks / cores (CPU as getrusage charges it to the process). Every all-reduced
// gradient is checked against its closed form. Launch with tuttirun (or any launcher
// tuttiCommInitFromEnv reads):
//   tuttirun -np 2 --hosts tutti-h0:1,tutti-h1:1 build/tools/overlap-bench/tutti-overlap-bench
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "bench_util.h"
#include "tutti/tutti.hpp"

namespace {

using tutti::bench::now;
using tutti::bench::parseBytes;
using tutti::bench::slowest;

// CPU seconds this process has spent (user + system, every thread).
double cpuSeconds() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return static_cast<double>(u.ru_utime.tv_sec + u.ru_stime.tv_sec) +
         1e-6 * static_cast<double>(u.ru_utime.tv_usec + u.ru_stime.tv_usec);
}

struct Options {
  size_t bytes = 16u << 20;
  int steps = 8;
  double computeMs = 0;  // 0: as long as the all-reduce alone
};

Options parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto next = [&]() -> std::string {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "%s needs a value\n", a.c_str());
        std::exit(2);
      }
      return argv[++i];
    };
    if (a == "--bytes")
      o.bytes = parseBytes(next());
    else if (a == "--steps")
      o.steps = std::atoi(next().c_str());
    else if (a == "--compute-ms")
      o.computeMs = std::atof(next().c_str());
    else {
      std::fprintf(stderr, "usage: %s [--bytes 16M] [--steps 8] [--compute-ms MS]\n", argv[0]);
      std::exit(2);
    }
  }
  if (o.steps < 3) {
    std::fprintf(stderr, "--steps must be at least 3\n");
    std::exit(2);
  }
  return o;
}

// CPU-bound work on a small buffer of its own (stays in cache: no memory traffic competes
// with the all-reduce): `units` passes.
float computeUnits(long units) {
  static std::vector<float> scratch(16384, 1.0f);
  float acc = 0;
  for (long u = 0; u < units; ++u) {
    for (float& x : scratch) x = x * 0.999f + 0.001f;
    acc += scratch[static_cast<size_t>(u) % scratch.size()];
  }
  return acc;
}

// Gradient element i of step k on rank r: small integers, so float sums are exact.
float gradient(int r, int k, size_t i) {
  return static_cast<float>((r + 1) * (k % 5 + 1) + static_cast<int>(i % 7));
}

void fillGradient(std::vector<float>& g, int rank, int step) {
  for (size_t i = 0; i < g.size(); ++i) g[i] = gradient(rank, step, i);
}

// Returns the number of wrong elements (every 4093rd checked, and the last).
size_t wrongElements(const std::vector<float>& g, int n, int step) {
  size_t wrong = 0;
  auto expect = [&](size_t i) {
    float sum = 0;
    for (int r = 0; r < n; ++r) sum += gradient(r, step, i);
    return sum;
  };
  for (size_t i = 0; i < g.size(); i += 4093) wrong += g[i] != expect(i);
  wrong += g.back() != expect(g.size() - 1);
  return wrong;
}

// A host function: the time it ran.
tuttiResult_t stamp(void* at) {
  *static_cast<double*>(at) = now();
  return tuttiSuccess;
}

}  // namespace

int main(int argc, char** argv) {
  const Options o = parse(argc, argv);
  tutti::Comm comm = tutti::Comm::fromEnv();
  const int rank = comm.rank(), n = comm.size();
  const size_t count = o.bytes / sizeof(float);
  std::vector<float> grads[2] = {std::vector<float>(count), std::vector<float>(count)};
  size_t wrong = 0;
  volatile float sink = 0;

  // Comm alone (after two warm-up calls).
  for (int k = 0; k < 2; ++k) {
    fillGradient(grads[0], rank, k);
    comm.allReduce(grads[0].data(), grads[0].data(), count, tuttiFloat32, tuttiSum);
  }
  // The all-reduce alone, each call timed on its own after a barrier (filling the gradient is
  // the compute's part of a step, timed there): blocking, and on a host stream while the caller
  // does something else (here: sleeps, looking every millisecond), whose CPU is what the
  // all-reduce takes from a compute it overlaps. Per call, the slowest rank's: {time, CPU}.
  auto alone = [&](const tutti::Stream* stream) {
    double time = 0, cpu = 0;
    for (int k = 0; k < o.steps; ++k) {
      fillGradient(grads[0], rank, k);
      comm.barrier();
      const double t = now(), c = cpuSeconds();
      comm.allReduce(grads[0].data(), grads[0].data(), count, tuttiFloat32, tuttiSum,
                     stream != nullptr ? stream->get() : nullptr);
      while (stream != nullptr && !stream->done()) usleep(1000);
      cpu += cpuSeconds() - c;
      time += now() - t;
      wrong += wrongElements(grads[0], n, k);
    }
    return std::pair{slowest(comm, time / o.steps), slowest(comm, cpu / o.steps)};
  };
  const auto [commAlone, commCpu] = alone(nullptr);
  double streamCpu = 0;
  {
    tutti::Stream stream;
    streamCpu = alone(&stream).second;
  }

  // The compute's length: rank 0 calibrates units per second, every rank uses its figure.
  double unitsPerSec = 0;
  if (rank == 0) {
    double c0 = now();
    long units = 64;
    while (now() - c0 < 0.2) sink = sink + computeUnits(units), units *= 2;
    unitsPerSec = static_cast<double>(units - 64) / (now() - c0);
  }
  comm.broadcast(&unitsPerSec, &unitsPerSec, 1, tuttiFloat64, 0);
  // A step's compute is the loop and filling the gradient it produces; the loop gets what
  // the fill leaves of the step's length.
  comm.barrier();
  double f0 = now();
  for (int k = 0; k < 2; ++k) fillGradient(grads[1], rank, k);
  const double fillSec = slowest(comm, (now() - f0) / 2);
  const double computeSec = o.computeMs > 0 ? o.computeMs / 1000 : commAlone;
  const double loopSec = std::max(computeSec - fillSec, 1e-3);
  long units = std::max(1L, static_cast<long>(unitsPerSec * loopSec));
  // Rescaled twice with every rank computing at once (as in the measured phases, where the
  // ranks share cores and caches): the slowest rank's step then lasts about computeSec.
  for (int round = 0; round < 2; ++round) {
    comm.barrier();
    const double c0 = now();
    for (int k = 0; k < 2; ++k) sink = sink + computeUnits(units), fillGradient(grads[1], rank, k);
    const double took = std::max(slowest(comm, (now() - c0) / 2) - fillSec, 1e-4);
    units = std::max(1L, static_cast<long>(static_cast<double>(units) * loopSec / took));
  }

  comm.barrier();
  double t0 = now();
  const double cpu0 = cpuSeconds();
  for (int k = 0; k < o.steps; ++k)
    sink = sink + computeUnits(units), fillGradient(grads[1], rank, k);
  const double computeCpu = slowest(comm, (cpuSeconds() - cpu0) / o.steps);
  const double computeAlone = slowest(comm, (now() - t0) / o.steps);

  // Blocking: compute, then all-reduce.
  comm.barrier();
  t0 = now();
  for (int k = 0; k < o.steps; ++k) {
    sink = sink + computeUnits(units);
    fillGradient(grads[0], rank, k);
    comm.allReduce(grads[0].data(), grads[0].data(), count, tuttiFloat32, tuttiSum);
    wrong += wrongElements(grads[0], n, k);
  }
  const double blocking = slowest(comm, (now() - t0) / o.steps);

  // Overlapped: step k's all-reduce on the stream while step k+1 computes.
  tutti::Stream stream;
  tutti::Event inFlight[2];
  comm.barrier();
  t0 = now();
  const double cpuOverlapped0 = cpuSeconds();
  std::vector<double> enqueuedAt(o.steps), doneAt(o.steps);
  for (int k = 0; k < o.steps; ++k) {
    std::vector<float>& g = grads[k % 2];
    sink = sink + computeUnits(units);
    if (k >= 2) {
      inFlight[k % 2].synchronize();  // step k-2's all-reduce of this buffer
      wrong += wrongElements(g, n, k - 2);
    }
    fillGradient(g, rank, k);
    comm.allReduce(g.data(), g.data(), count, tuttiFloat32, tuttiSum, stream);
    inFlight[k % 2].record(stream);
    enqueuedAt[k] = now();
    stream.launchHostFunc(stamp, &doneAt[k]);
  }
  stream.synchronize();
  const double overlappedLoop = slowest(comm, (now() - t0) / o.steps);
  // The steady state: the pipeline's step, the longer of the intervals between enqueues (the
  // compute's pace) and between the all-reduces' ends (the communication's), first to last (the
  // first step has nothing to overlap, and the last all-reduce finishes after the loop's
  // compute: the pipeline's fill and drain, counted in the loop's mean).
  const double steps = o.steps - 1;
  const double overlapped = slowest(
      comm,
      std::max(enqueuedAt[o.steps - 1] - enqueuedAt[0], doneAt[o.steps - 1] - doneAt[0]) / steps);
  const double overlappedCpu = slowest(comm, (cpuSeconds() - cpuOverlapped0) / o.steps);
  for (int k = std::max(0, o.steps - 2); k < o.steps; ++k)
    wrong += wrongElements(grads[k % 2], n, k);

  double wrongAll = 0, wrongMine = static_cast<double>(wrong);
  comm.allReduce(&wrongMine, &wrongAll, 1, tuttiFloat64, tuttiSum);
  if (rank == 0) {
    const double bound = std::max(computeAlone, commAlone);
    // When the ranks share the machine's cores, each step needs the compute's CPU and the
    // all-reduce's (copies, reductions, system calls) of every rank on those cores.
    const long cores = sysconf(_SC_NPROCESSORS_ONLN);
    const double cpuBound = (computeCpu + streamCpu) * n / static_cast<double>(cores);
    std::printf("# tutti-overlap-bench: %d ranks, all-reduce of %zu B (float32 sum), %d steps\n", n,
                o.bytes, o.steps);
    std::printf("%-14s %10s\n", "# measurement", "step_ms");
    std::printf("%-14s %10.2f\n", "comm_alone", commAlone * 1e3);
    std::printf("%-14s %10.2f\n", "comm_cpu", commCpu * 1e3);
    std::printf("%-14s %10.2f\n", "stream_cpu", streamCpu * 1e3);
    std::printf("%-14s %10.2f\n", "compute_alone", computeAlone * 1e3);
    std::printf("%-14s %10.2f\n", "compute_cpu", computeCpu * 1e3);
    std::printf("%-14s %10.2f\n", "of_which_fill", fillSec * 1e3);
    std::printf("%-14s %10.2f\n", "blocking", blocking * 1e3);
    std::printf("%-14s %10.2f\n", "overlapped", overlapped * 1e3);
    std::printf("%-14s %10.2f\n", "overlap_loop", overlappedLoop * 1e3);
    std::printf("%-14s %10.2f\n", "overlapped_cpu", overlappedCpu * 1e3);
    std::printf(
        "# overlapped / max(compute, comm) = %.3f (target <= 1.25); blocking / max = %.3f; the "
        "loop's mean with the pipeline's fill and drain / max = %.3f\n",
        overlapped / bound, blocking / bound, overlappedLoop / bound);
    std::printf(
        "# cores' bound (compute_cpu + stream_cpu) x %d ranks / %ld cores = %.2f ms: "
        "overlapped / max(that, comm) = %.3f\n",
        n, cores, cpuBound * 1e3, overlapped / std::max(cpuBound, commAlone));
    std::printf("# wrong elements: %.0f\n", wrongAll);
  }
  comm.destroy();
  return wrongAll == 0 ? 0 : 1;
}
