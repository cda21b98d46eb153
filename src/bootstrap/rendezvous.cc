#include "bootstrap/rendezvous.h"

#include <unistd.h>

#include <cstdlib>
#include <map>
#include <mutex>

#include "bootstrap/file_store.h"
#include "bootstrap/unique_id.h"
#include "common/env.h"
#include "common/error.h"

namespace tutti::bootstrap {

Rendezvous rendezvousFromUniqueId(const tuttiUniqueId& id, int rank, const Deadline& deadline) {
  UniqueIdInfo info = decodeUniqueId(id);
  Rendezvous r;
  if (rank == 0) r.server = takeServer(info);
  r.store = std::make_shared<TcpStore>(info.addr, info.secret, deadline);
  return r;
}

namespace {
// Rank 0 serves the launch address once per process: a job may init several communicators
// from the environment (each under its own key prefix), and destroying one must not take
// the store away from the others. Kept until the process exits, then stopped properly (an
// atexit handler joins the server thread, which first sends the replies it has queued):
// rank 0 may leave the moment it has seen the last rank's leave key, while that rank still
// waits for the OK of its SET.
std::mutex launchMu;
std::map<std::string, std::shared_ptr<TcpStoreServer>>* launchServers = nullptr;
pid_t launchOwner = 0;

void stopLaunchServersAtExit() {
  std::map<std::string, std::shared_ptr<TcpStoreServer>> servers;
  {
    std::lock_guard lock(launchMu);
    // A forked child shares the eventfd but not the thread: it must not stop the parent's.
    if (launchServers == nullptr || ::getpid() != launchOwner) return;
    servers.swap(*launchServers);
  }
  servers.clear();
}

std::shared_ptr<TcpStoreServer> launchServer(const std::string& key, const SockAddr& addr,
                                             const Secret& secret) {
  std::lock_guard lock(launchMu);
  if (launchServers == nullptr) {
    launchServers = new std::map<std::string, std::shared_ptr<TcpStoreServer>>;
    launchOwner = ::getpid();
    std::atexit(stopLaunchServersAtExit);
  }
  auto& slot = (*launchServers)[key + "/" + secretToHex(secret)];
  if (!slot) slot = std::make_shared<TcpStoreServer>(addr, secret);
  return slot;
}
}  // namespace

Rendezvous rendezvousFromLaunchInfo(const LaunchInfo& info, const Deadline& deadline) {
  Rendezvous r;
  if (auto dir = env::raw("TUTTI_STORE_FILE")) {
    r.store = std::make_shared<FileStore>(*dir);
    return r;
  }
  TUTTI_CHECK_ARG(!info.addr.empty(), "rendezvous: no address");
  Secret secret = secretFromHex(info.secretHex, "TUTTI_SECRET");
  SockAddr addr = SockAddr::parse(info.addr, "rendezvous address (TUTTI_ADDR or MASTER_ADDR)");
  if (info.rank == 0) r.server = launchServer(info.addr, addr, secret);
  r.store = std::make_shared<TcpStore>(addr, secret, deadline);
  return r;
}

}  // namespace tutti::bootstrap
