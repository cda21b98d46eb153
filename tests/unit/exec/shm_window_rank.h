// One rank of a real shm window for executor tests that run ranks as threads: its transport,
// its window (kWindowBytes per rank) and the executor's bookkeeping of the window's calls.
#pragma once

#include <unistd.h>

#include <memory>
#include <string>
#include <vector>

#include "bootstrap/store.h"
#include "exec/executor.h"
#include "exec/window_state.h"
#include "interfaces/transport.h"
#include "transports/shm/shm_transport.h"

namespace tutti::test {

constexpr size_t kWindowBytes = 1 << 20;

struct WindowRank {
  std::unique_ptr<transport::Transport> transport;
  std::unique_ptr<transport::Window> window;
  exec::WindowState windowState;  // across every call on the window
};

// Every rank of the threads calls it once with the same store.
inline WindowRank makeWindowRank(int rank, int nranks, bootstrap::Store& store) {
  Deadline deadline(30);
  store.setString("pid/" + std::to_string(rank), std::to_string(::getpid()));
  std::vector<transport::PeerInfo> peers;
  for (int i = 0; i < nranks; ++i)
    peers.push_back(
        {i, "test-host", "localhost",
         static_cast<pid_t>(std::stol(store.getString("pid/" + std::to_string(i), deadline)))});
  WindowRank r;
  r.transport = transport::makeShmTransport();
  transport::Context ctx;
  ctx.rank = rank;
  ctx.nranks = nranks;
  ctx.peers = peers;
  ctx.store = &store;
  r.transport->setup(ctx);
  r.window = r.transport->createWindow(kWindowBytes, deadline);
  return r;
}

// The executor's options for a call of rank `rank` on r's window with tag `tag` (errors
// describe a call as "call <tag word 0>").
inline exec::ExecOptions windowCallOptions(WindowRank& r, int rank,
                                           const transport::Window::Tag& tag) {
  exec::ExecOptions o;
  o.rank = rank;
  o.timeoutSec = 30;
  o.spinUs = 20;
  o.window = r.window.get();
  o.windowState = &r.windowState;
  o.callTag = tag;
  o.describeCall = [](const transport::Window::Tag& t) { return "call " + std::to_string(t[0]); };
  return o;
}

}  // namespace tutti::test
