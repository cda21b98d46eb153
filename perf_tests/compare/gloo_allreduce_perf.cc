// gloo_allreduce_perf: Gloo allreduce (float32 sum) over its tcp transport on loopback, with
// all_reduce_perf's sweep, timing and table, for side-by-side comparison. Start it N times:
//   gloo_allreduce_perf -R <rank> -S <N> -F <shared store dir> [-A ring|bcube|hd] -b .. -e ..
// Algorithms: ring and bcube through gloo::allreduce(AllreduceOptions), hd through the
// gloo::AllreduceHalvingDoubling algorithm (in place only: out-of-place copies send to recv
// first, and that copy is inside the timed region).
#include <gloo/allreduce.h>
#include <gloo/allreduce_halving_doubling.h>
#include <gloo/barrier.h>
#include <gloo/math.h>
#include <gloo/rendezvous/context.h>
#include <gloo/rendezvous/file_store.h>
#include <gloo/rendezvous/prefix_store.h>
#include <gloo/transport/tcp/device.h>

#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "compare_table.h"

namespace {

struct Gloo {
  std::shared_ptr<gloo::rendezvous::Context> ctx;
  std::string algo;
  uint32_t tag = 0;
};

void barrier(Gloo& g) {
  gloo::BarrierOptions opts(g.ctx);
  opts.setTag(g.tag++);
  gloo::barrier(opts);
}

// Small exchange of one double (rank 0's value, sum, min or max) through allreduce.
double reduceTime(Gloo& g, double sec, int average, int nranks) {
  std::vector<double> v = {average == 0 && g.ctx->rank != 0 ? 0.0 : sec};
  gloo::AllreduceOptions opts(g.ctx);
  opts.setOutput(v.data(), 1);
  using Fn = void (*)(void*, const void*, const void*, size_t);
  opts.setReduceFunction(average == 2   ? static_cast<Fn>(&gloo::min<double>)
                         : average == 3 ? static_cast<Fn>(&gloo::max<double>)
                                        : static_cast<Fn>(&gloo::sum<double>));
  opts.setTag(g.tag++);
  gloo::allreduce(opts);
  return average == 1 ? v[0] / nranks : v[0];
}

// Runs `iters` allreduces of count floats; in-place when send == nullptr.
void allreduce(Gloo& g, float* send, float* recv, size_t count, int iters) {
  if (count == 0) return;
  if (g.algo == "hd") {
    gloo::AllreduceHalvingDoubling<float> hd(g.ctx, std::vector<float*>{recv},
                                             static_cast<int>(count));
    for (int i = 0; i < iters; ++i) {
      if (send) std::memcpy(recv, send, count * sizeof(float));
      hd.run();
    }
    return;
  }
  for (int i = 0; i < iters; ++i) {
    gloo::AllreduceOptions opts(g.ctx);
    opts.setAlgorithm(g.algo == "bcube" ? gloo::AllreduceOptions::Algorithm::BCUBE
                                        : gloo::AllreduceOptions::Algorithm::RING);
    if (send) opts.setInput(send, count);
    opts.setOutput(recv, count);
    opts.setReduceFunction(
        static_cast<void (*)(void*, const void*, const void*, size_t)>(&gloo::sum<float>));
    opts.setTag(g.tag++);
    gloo::allreduce(opts);
  }
}

double bench(Gloo& g, const cmp_opts& o, float* send, float* recv, size_t count, bool inPlace,
             int* errors, uint64_t* seed) {
  const int rank = g.ctx->rank, n = g.ctx->size;
  barrier(g);
  const double t0 = cmp_now();
  allreduce(g, inPlace ? nullptr : send, recv, count, o.iters);
  const double sec = reduceTime(g, (cmp_now() - t0) / o.iters, o.average, n);
  long wrong = 0;
  if (o.check) {
    ++*seed;
    cmp_fill_n(inPlace ? recv : send, count, rank, *seed, n);
    allreduce(g, inPlace ? nullptr : send, recv, count, 1);
    const long mine = cmp_wrong(recv, count, *seed, n);
    if (mine) ++*errors;
    wrong = static_cast<long>(reduceTime(g, static_cast<double>(mine), 1, 1));
  }
  return rank == 0 ? cmp_result(sec, count, n, wrong, o.check) : 0.0;
}

}  // namespace

int main(int argc, char** argv) {
  cmp_opts o;
  if (cmp_parse(argc, argv, &o) || o.rank < 0 || o.size < 1 || !o.store) {
    if (o.rank < 0 || o.size < 1 || !o.store) {
      fprintf(stderr, "gloo_allreduce_perf: -R rank -S size -F storedir are required\n");
    }
    return 1;
  }
  const std::string algo = o.algo;
  if (algo != "ring" && algo != "bcube" && algo != "hd") {
    fprintf(stderr, "gloo_allreduce_perf: -A must be ring, bcube or hd\n");
    return 1;
  }
  setvbuf(stdout, nullptr, _IOLBF, 0);
  gloo::transport::tcp::attr attr;
  attr.hostname = "127.0.0.1";
  auto dev = gloo::transport::tcp::CreateDevice(attr);
  gloo::rendezvous::FileStore store(o.store);
  Gloo g;
  g.algo = algo;
  g.ctx = std::make_shared<gloo::rendezvous::Context>(o.rank, o.size);
  g.ctx->connectFullMesh(store, dev);

  std::vector<float> send(o.maxBytes / sizeof(float) + 1), recv(o.maxBytes / sizeof(float) + 1);
  if (o.rank == 0) {
    cmp_header("gloo_allreduce_perf", ("gloo tcp loopback, algorithm " + algo).c_str(), &o, o.size);
  }
  for (int w = 0; w < o.warmup; ++w) {
    allreduce(g, send.data(), recv.data(), o.maxBytes / sizeof(float), 1);
  }
  int errors = 0, nbw = 0;
  double bwsum = 0;
  uint64_t seed = 0;
  for (size_t size = o.minBytes; size <= o.maxBytes; size = cmp_next(&o, size)) {
    const size_t count = size / sizeof(float);
    if (o.rank == 0) cmp_line_start(count);
    cmp_fill_n(send.data(), count, o.rank, 99, o.size);
    bwsum += bench(g, o, send.data(), recv.data(), count, false, &errors, &seed);
    bwsum += bench(g, o, send.data(), recv.data(), count, true, &errors, &seed);
    nbw += 2;
    if (o.rank == 0) printf("\n");
    if (size == 0 && o.stepFactor > 1) break;
  }
  const int total = static_cast<int>(reduceTime(g, static_cast<double>(errors), 1, 1));
  if (o.rank == 0) cmp_footer("gloo_allreduce_perf", total, nbw ? bwsum / nbw : 0);
  barrier(g);
  return total ? 1 : 0;
}
