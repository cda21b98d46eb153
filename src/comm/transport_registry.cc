#include "comm/transport_registry.h"

#include "common/env.h"
#include "common/error.h"
#include "transports/shm/shm_transport.h"
#include "transports/tcp/tcp_transport.h"
#include "tutti/config.h"
#if TUTTI_HAVE_TRANSPORT_IBVERBS
#include "transports/ibverbs/ib_transport.h"
#endif
#if TUTTI_HAVE_TRANSPORT_CUDA_IPC
#include "transports/cuda_ipc/cuda_ipc_transport.h"
#endif

namespace tutti {

namespace {
struct Entry {
  const char* name;
  const char* disableVar;
  std::unique_ptr<transport::Transport> (*make)();
};
#if TUTTI_HAVE_TRANSPORT_CUDA_IPC
// Only for same-host peers that both have a GPU, and only when TUTTI_CUDA_IPC_ENABLE=1 or
// TUTTI_TRANSPORT=cuda_ipc: the executor passes host buffers today (device buffers are
// staged by the C API), which shm moves faster than a device FIFO would.
std::unique_ptr<transport::Transport> makeCudaIpc() { return transport::makeCudaIpcTransport(); }
#endif
std::unique_ptr<transport::Transport> makeShm() { return transport::makeShmTransport(); }
std::unique_ptr<transport::Transport> makeTcp() { return transport::makeTcpTransport(); }
#if TUTTI_HAVE_TRANSPORT_IBVERBS
// Used only between ranks that both have an active RDMA port (canConnect), else tcp follows.
std::unique_ptr<transport::Transport> makeIb() { return transport::makeIbTransport(); }
#endif
const Entry kEntries[] = {
#if TUTTI_HAVE_TRANSPORT_CUDA_IPC
    {"cuda_ipc", "TUTTI_CUDA_IPC_DISABLE", &makeCudaIpc},
#endif
    {"shm", "TUTTI_SHM_DISABLE", &makeShm},
#if TUTTI_HAVE_TRANSPORT_IBVERBS
    {"ibverbs", "TUTTI_IB_DISABLE", &makeIb},
#endif
    {"tcp", "TUTTI_TCP_DISABLE", &makeTcp},
};
}  // namespace

std::vector<std::string> compiledTransports() {
  std::vector<std::string> out;
  for (const Entry& e : kEntries) out.push_back(e.name);
  return out;
}

std::vector<std::unique_ptr<transport::Transport>> makeTransports(const std::string& forced) {
  std::vector<std::unique_ptr<transport::Transport>> out;
  for (const Entry& e : kEntries) {
    if (!forced.empty() && forced != e.name) continue;
    if (forced.empty() && env::getBool(e.disableVar)) continue;
    out.push_back(e.make());
  }
  if (out.empty()) {
    std::string names;
    for (const Entry& e : kEntries) names += std::string(names.empty() ? "" : ", ") + e.name;
    fail(tuttiInvalidArgument, "no transport available: TUTTI_TRANSPORT='", forced,
         "' (compiled in: ", names, ") or every transport disabled");
  }
  return out;
}

}  // namespace tutti
