// From a unique id or a launcher's environment to a connected Store (what a communicator's
// init calls first). Keep `server` alive as long as any rank may still use the store.
#pragma once

#include <memory>

#include "bootstrap/env_init.h"
#include "bootstrap/store.h"
#include "bootstrap/tcp_store.h"
#include "tutti/tutti.h"

namespace tutti::bootstrap {

struct Rendezvous {
  std::shared_ptr<TcpStoreServer> server;  // non-null on the rank that owns the server
  std::shared_ptr<Store> store;            // a TcpStore client (or a FileStore)
};

// Rank 0 takes over the id's server when it lives in this process (see unique_id.h);
// every rank connects a TcpStore client, retrying until the deadline.
Rendezvous rendezvousFromUniqueId(const tuttiUniqueId& id, int rank, const Deadline& deadline);

// TUTTI_STORE_FILE set: a FileStore in that directory. Otherwise rank 0 starts a
// TcpStoreServer on info.addr (a taken port throws tuttiSystemError naming it) and every
// rank connects with info.secretHex.
Rendezvous rendezvousFromLaunchInfo(const LaunchInfo& info, const Deadline& deadline);

}  // namespace tutti::bootstrap
