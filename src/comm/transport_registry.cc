#include "comm/transport_registry.h"

#include "common/env.h"
#include "common/error.h"
#include "transports/shm/shm_transport.h"
#include "transports/tcp/tcp_transport.h"
#include "tutti/config.h"

namespace tutti {

namespace {
struct Entry {
  const char* name;
  const char* disableVar;
  std::unique_ptr<transport::Transport> (*make)();
};
std::unique_ptr<transport::Transport> makeShm() { return transport::makeShmTransport(); }
std::unique_ptr<transport::Transport> makeTcp() { return transport::makeTcpTransport(); }
const Entry kEntries[] = {
    {"shm", "TUTTI_SHM_DISABLE", &makeShm},
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
