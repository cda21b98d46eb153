// The line all-reduce's exchange alone (exec/line_allreduce.h): two ranks as threads on a real
// shm window, 8 B to the largest line payload, float32 sum. The C API's path adds the
// argument checks, call order, call tag and flight recorder to this (all_reduce_perf shows the
// whole call); docs/perf/ compares them.
#include <benchmark/benchmark.h>

#include <atomic>
#include <thread>
#include <vector>

#include "bootstrap/memory_store.h"
#include "exec/line_allreduce.h"
#include "interfaces/transport.h"
#include "transports/shm/shm_transport.h"

namespace {

using namespace tutti;

struct Rank {
  std::unique_ptr<transport::Transport> transport;
  std::unique_ptr<transport::Window> window;
  exec::WindowState state;
  exec::ExecOptions options;
};

void setUp(Rank& r, int rank, bootstrap::Store& store) {
  std::vector<transport::PeerInfo> peers;
  for (int i = 0; i < 2; ++i) peers.push_back({i, "bench-host", "localhost", ::getpid()});
  r.transport = transport::makeShmTransport();
  transport::Context ctx;
  ctx.rank = rank;
  ctx.nranks = 2;
  ctx.peers = peers;
  ctx.store = &store;
  r.transport->setup(ctx);
  r.window = r.transport->createWindow(4096, Deadline(30));
  r.options.rank = rank;
  r.options.window = r.window.get();
  r.options.windowState = &r.state;
  r.options.callTag = {1, 1};
}

void BM_LineAllReduce(benchmark::State& state) {
  const size_t count = static_cast<size_t>(state.range(0));
  bootstrap::MemoryStore store;
  Rank ranks[2];
  std::thread peerSetUp([&] { setUp(ranks[1], 1, store); });
  setUp(ranks[0], 0, store);
  peerSetUp.join();
  // The peer answers every call until rank 0 sends a negative value.
  std::thread peer([&] {
    std::vector<float> in(count, 1.0f), out(count);
    do {
      exec::runLineAllReduce({in.data(), out.data(), count, tuttiFloat32, tuttiSum, 2},
                             ranks[1].options);
    } while (out[0] > 0);
  });
  std::vector<float> in(count, 1.0f), out(count);
  for (auto _ : state)
    exec::runLineAllReduce({in.data(), out.data(), count, tuttiFloat32, tuttiSum, 2},
                           ranks[0].options);
  in[0] = -10.0f;
  exec::runLineAllReduce({in.data(), out.data(), count, tuttiFloat32, tuttiSum, 2},
                         ranks[0].options);
  peer.join();
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * count * sizeof(float)));
}
BENCHMARK(BM_LineAllReduce)->Arg(2)->Arg(10)->Arg(32)->Arg(50)->UseRealTime();

}  // namespace

BENCHMARK_MAIN();
