// Fused groups (issue 32): 64 all-reduces of one size, called one by one against the same 64
// inside one group (packed into one all-reduce: src/api/group_fusion.h), and a mixed group
// (8 x all-reduce + all-gather + reduce-scatter on buffers of their own, fused into one
// schedule) against its parts in a row, at 1-64 KiB per call.
// Median batch time over --reps repetitions, the slowest rank's; every result checked.
//   tuttirun -np 4 build/tools/overlap-bench/tutti-group-bench [--reps 50] [--calls 64]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "bench_util.h"
#include "tutti/tutti.hpp"

namespace {

using tutti::bench::median;
using tutti::bench::now;
using tutti::bench::slowest;

// Element i of call k, rep r on rank q: small integers (float sums exact).
float value(int q, int k, int r, size_t i) {
  return static_cast<float>((q + 1) * 3 + k % 11 + r % 5 + static_cast<int>(i % 17));
}

struct Batch {
  std::vector<std::vector<float>> bufs;
  void fill(int rank, int rep) {
    for (size_t k = 0; k < bufs.size(); ++k)
      for (size_t i = 0; i < bufs[k].size(); ++i)
        bufs[k][i] = value(rank, static_cast<int>(k), rep, i);
  }
  long wrong(int n, int rep) const {
    long bad = 0;
    for (size_t k = 0; k < bufs.size(); ++k)
      for (size_t i = 0; i < bufs[k].size(); ++i) {
        float want = 0;
        for (int q = 0; q < n; ++q) want += value(q, static_cast<int>(k), rep, i);
        bad += bufs[k][i] != want;
      }
    return bad;
  }
};

// A mixed group: 8 x (all-reduce, all-gather, reduce-scatter) of `count` floats per rank, each
// call on buffers of its own (a training step's parameters and gradients, so the group fuses:
// src/api/group_fusion.h), against the same calls in a row. Returns the wrong elements.
long mixedGroup(const tutti::Comm& comm, size_t count, int reps) {
  constexpr int kSets = 8;
  const int rank = comm.rank(), n = comm.size();
  struct Set {
    std::vector<float> ar, ag, agOut, rs, rsOut;
  };
  std::vector<Set> sets(kSets);
  for (Set& s : sets) {
    s.ar.resize(count);
    s.ag.resize(count);
    s.agOut.resize(count * n);
    s.rs.resize(count * n);
    s.rsOut.resize(count);
  }
  long wrong = 0;
  std::vector<double> parts, group;
  for (int rep = 0; rep < reps + 3; ++rep) {
    for (int grouped = 0; grouped < 2; ++grouped) {
      const int call = 2 * rep + grouped;  // inputs differ per call, set and element
      for (int k = 0; k < kSets; ++k) {
        Set& s = sets[k];
        for (size_t i = 0; i < count; ++i) {
          s.ar[i] = value(rank, 3 * k, call, i);
          s.ag[i] = value(rank, 3 * k + 1, call, i);
        }
        for (size_t i = 0; i < s.rs.size(); ++i) s.rs[i] = value(rank, 3 * k + 2, call, i);
      }
      comm.barrier();
      const double t0 = now();
      if (grouped) tuttiGroupStart();
      for (Set& s : sets) {
        comm.allReduce(s.ar.data(), s.ar.data(), count, tuttiFloat32, tuttiMax);
        comm.allGather(s.ag.data(), s.agOut.data(), count, tuttiFloat32);
        comm.reduceScatter(s.rs.data(), s.rsOut.data(), count, tuttiFloat32, tuttiMax);
      }
      if (grouped) tutti::check(tuttiGroupEnd());
      const double t = slowest(comm, now() - t0);
      for (int k = 0; k < kSets; ++k) {
        const Set& s = sets[k];
        for (size_t i = 0; i < count; ++i) {
          wrong += s.ar[i] != value(n - 1, 3 * k, call, i);
          wrong += s.rsOut[i] != value(n - 1, 3 * k + 2, call, rank * count + i);
        }
        for (size_t i = 0; i < s.agOut.size(); ++i)
          wrong += s.agOut[i] != value(static_cast<int>(i / count), 3 * k + 1, call, i % count);
      }
      if (rep >= 3) (grouped ? group : parts).push_back(t);
    }
  }
  if (rank == 0)
    std::printf("%-10zu %14.1f %14.1f %8.2f\n", count * sizeof(float), median(parts) * 1e6,
                median(group) * 1e6, median(parts) / median(group));
  return wrong;
}

}  // namespace

int main(int argc, char** argv) {
  int reps = 50, calls = 64;
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string a = argv[i];
    if (a == "--reps") reps = std::atoi(argv[i + 1]);
    if (a == "--calls") calls = std::atoi(argv[i + 1]);
  }
  tutti::Comm comm = tutti::Comm::fromEnv();
  const int rank = comm.rank(), n = comm.size();
  long wrong = 0;
  if (rank == 0)
    std::printf(
        "# tutti-group-bench: %d ranks, %d all-reduces (float32 sum) per batch, median "
        "of %d\n%-10s %14s %14s %8s\n",
        n, calls, reps, "# bytes", "one_by_one_us", "grouped_us", "speedup");
  for (size_t bytes : {size_t{256}, size_t{4096}, size_t{8192}, size_t{16384}}) {
    Batch b;
    b.bufs.assign(static_cast<size_t>(calls), std::vector<float>(bytes / sizeof(float)));
    std::vector<double> single, grouped;
    for (int rep = 0; rep < reps + 3; ++rep) {
      b.fill(rank, rep);
      comm.barrier();
      double t0 = now();
      for (auto& v : b.bufs) comm.allReduce(v.data(), v.data(), v.size(), tuttiFloat32, tuttiSum);
      const double s = slowest(comm, now() - t0);
      wrong += b.wrong(n, rep);
      b.fill(rank, rep + 1000);
      comm.barrier();
      t0 = now();
      {
        tutti::Group g;
        for (auto& v : b.bufs) comm.allReduce(v.data(), v.data(), v.size(), tuttiFloat32, tuttiSum);
        g.end();
      }
      const double gr = slowest(comm, now() - t0);
      wrong += b.wrong(n, rep + 1000);
      if (rep >= 3) single.push_back(s), grouped.push_back(gr);
    }
    if (rank == 0)
      std::printf("%-10zu %14.1f %14.1f %8.2f\n", bytes, median(single) * 1e6,
                  median(grouped) * 1e6, median(single) / median(grouped));
  }
  if (rank == 0)
    std::printf(
        "# mixed group: 8 x (all-reduce max + all-gather + reduce-scatter max), float32\n"
        "%-10s %14s %14s %8s\n",
        "# bytes", "in_a_row_us", "grouped_us", "speedup");
  for (size_t bytes : {size_t{1024}, size_t{4096}, size_t{16384}, size_t{65536}})
    wrong += mixedGroup(comm, bytes / sizeof(float), reps);
  double all = 0, mine = static_cast<double>(wrong);
  comm.allReduce(&mine, &all, 1, tuttiFloat64, tuttiSum);
  if (rank == 0) std::printf("# wrong elements: %.0f\n", all);
  comm.destroy();
  return all == 0 ? 0 : 1;
}
