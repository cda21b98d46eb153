// Fused groups (issue 32): 64 all-reduces of one size, called one by one against the same 64
// inside one group (packed into one all-reduce: src/api/group_fusion.h), and a mixed group
// (all-reduce + all-gather + reduce-scatter, which are not packed) against its parts in a row.
// Median batch time over --reps repetitions, the slowest rank's; every result checked.
//   tuttirun -np 4 build/tools/overlap-bench/tutti-group-bench [--reps 50] [--calls 64]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "tutti/tutti.hpp"

namespace {

double now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

double slowest(const tutti::Comm& comm, double mine) {
  double out = 0;
  comm.allReduce(&mine, &out, 1, tuttiFloat64, tuttiMax);
  return out;
}

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
  // A mixed group: all-reduce, all-gather and reduce-scatter of 4 KiB per rank, 8 rounds.
  {
    const size_t count = 1024;
    std::vector<float> ar(count), ag(count), agOut(count * n), rs(count * n), rsOut(count);
    std::vector<double> parts, group;
    for (int rep = 0; rep < reps + 3; ++rep) {
      for (size_t i = 0; i < count; ++i) ar[i] = ag[i] = value(rank, 0, rep, i);
      for (size_t i = 0; i < rs.size(); ++i) rs[i] = value(rank, 1, rep, i);
      for (int grouped = 0; grouped < 2; ++grouped) {
        comm.barrier();
        const double t0 = now();
        if (grouped) tuttiGroupStart();
        for (int k = 0; k < 8; ++k) {
          comm.allReduce(ar.data(), ar.data(), count, tuttiFloat32, tuttiMax);
          comm.allGather(ag.data(), agOut.data(), count, tuttiFloat32);
          comm.reduceScatter(rs.data(), rsOut.data(), count, tuttiFloat32, tuttiMax);
        }
        if (grouped) tutti::check(tuttiGroupEnd());
        const double t = slowest(comm, now() - t0);
        for (size_t i = 0; i < count; ++i) {
          wrong += ar[i] != value(n - 1, 0, rep, i);
          wrong += rsOut[i] != value(n - 1, 1, rep, rank * count + i);
        }
        for (size_t i = 0; i < agOut.size(); ++i)
          wrong += agOut[i] != value(static_cast<int>(i / count), 0, rep, i % count);
        if (rep >= 3) (grouped ? group : parts).push_back(t);
      }
    }
    if (rank == 0)
      std::printf(
          "# mixed group (8 x all-reduce + all-gather + reduce-scatter, 4 KiB): in a "
          "row %.1f us, grouped %.1f us, speedup %.2f\n",
          median(parts) * 1e6, median(group) * 1e6, median(parts) / median(group));
  }
  double all = 0, mine = static_cast<double>(wrong);
  comm.allReduce(&mine, &all, 1, tuttiFloat64, tuttiSum);
  if (rank == 0) std::printf("# wrong elements: %.0f\n", all);
  comm.destroy();
  return all == 0 ? 0 : 1;
}
