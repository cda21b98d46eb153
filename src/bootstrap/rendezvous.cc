#include "bootstrap/rendezvous.h"

#include <unistd.h>

#include <cstdlib>
#include <map>
#include <mutex>

#include "bootstrap/file_store.h"
#include "bootstrap/pmi_simple.h"
#include "bootstrap/pmix_launch.h"
#include "bootstrap/unique_id.h"
#include "common/env.h"
#include "common/error.h"
#include "common/log.h"

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
// Under PMIx or PMI-1 (Hydra): rank 0 serves on the advertised interface (an ephemeral port)
// with a random secret and broadcasts "<addr>|<secret hex>" through the launcher, once per
// process (the fence or barrier is collective over the job; later inits from the environment
// reuse the answer).
std::mutex pmixMu;
std::string pmixRendezvous;  // "<addr>|<secret hex>", empty before the first exchange
SockAddr pmixBind;           // rank 0: where its server listens
Secret pmixSecret{};

// Fills info.addr and info.secretHex; on rank 0 also returns the (process-wide) server.
LaunchInfo withPmixAddress(LaunchInfo info, const Deadline& deadline,
                           std::shared_ptr<TcpStoreServer>* server) {
  std::lock_guard lock(pmixMu);
  if (pmixRendezvous.empty()) {
    std::string mine;
    if (info.rank == 0) {
      pmixSecret = randomSecret();
      pmixBind = advertisedAddress();
      *server = launchServer("pmix", pmixBind, pmixSecret);
      mine = (*server)->address() + "|" + secretToHex(pmixSecret);
    }
    pmixRendezvous = info.source == "hydra"
                         ? pmiSimpleBroadcastFromRank0(info.rank, "rendezvous", mine, deadline)
                         : pmixBroadcastFromRank0("rendezvous", mine, deadline);
  } else if (info.rank == 0) {
    *server = launchServer("pmix", pmixBind, pmixSecret);
  }
  size_t bar = pmixRendezvous.find('|');
  if (bar == std::string::npos)
    fail(tuttiSystemError, info.source, " launch: rank 0's rendezvous '", pmixRendezvous,
         "' is not <addr>|<secret>");
  info.addr = pmixRendezvous.substr(0, bar);
  info.secretHex = pmixRendezvous.substr(bar + 1);
  return info;
}
}  // namespace

Rendezvous rendezvousFromLaunchInfo(const LaunchInfo& launch, const Deadline& deadline) {
  if (launch.viaLauncher) {
    Rendezvous r;
    LaunchInfo info = withPmixAddress(launch, deadline, &r.server);
    Secret secret = secretFromHex(info.secretHex, "launcher rendezvous secret");
    SockAddr addr = SockAddr::parse(info.addr, "launcher rendezvous address");
    TUTTI_INFO(kBootstrap, "launch from " << info.source << ": rank " << info.rank << " of "
                                          << info.nranks << ", rank 0's store at " << info.addr);
    r.store = std::make_shared<TcpStore>(addr, secret, deadline);
    return r;
  }
  const LaunchInfo& info = launch;
  Rendezvous r;
  if (auto dir = env::raw("TUTTI_STORE_FILE")) {
    r.store = std::make_shared<FileStore>(*dir);
    return r;
  }
  TUTTI_CHECK_ARG(!info.addr.empty(), "rendezvous: no address");
  Secret secret = secretFromHex(info.secretHex, "TUTTI_SECRET");
  SockAddr addr = SockAddr::parse(info.addr, "rendezvous address (TUTTI_ADDR or MASTER_ADDR)");
  TUTTI_INFO(kBootstrap, "launch from " << info.source << ": rank " << info.rank << " of "
                                        << info.nranks << ", rank 0's store at " << info.addr);
  if (info.rank == 0) {
    SockAddr bind = info.bindAddr.empty() ? addr : SockAddr::parse(info.bindAddr, "bind address");
    r.server = launchServer(info.addr, bind, secret);
  }
  r.store = std::make_shared<TcpStore>(addr, secret, deadline);
  return r;
}

}  // namespace tutti::bootstrap
