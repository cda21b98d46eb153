// Helper rank for multiproc tests: rendezvous from the launcher's environment, all-gather
// every rank's pid and host id, check them, barrier. Exit 0 on success.
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <exception>

#include "bootstrap/bootstrap.h"
#include "bootstrap/host_id.h"
#include "bootstrap/rendezvous.h"

using namespace tutti::bootstrap;

int main() {
  try {
    LaunchInfo info = launchInfoFromEnv();
    tutti::Deadline deadline(20);
    Rendezvous rv = rendezvousFromLaunchInfo(info, deadline);
    Bootstrap b(rv.store, info.rank, info.nranks, "world");
    std::string mine = std::to_string(info.rank) + "|" + localHostId();
    auto all = b.allGather("ids", std::as_bytes(std::span(mine.data(), mine.size())), deadline);
    for (int r = 0; r < info.nranks; ++r) {
      std::string s(reinterpret_cast<const char*>(all[r].data()), all[r].size());
      if (s != std::to_string(r) + "|" + localHostId()) {
        std::fprintf(stderr, "rank %d: bad entry from %d: %s\n", info.rank, r, s.c_str());
        return 3;
      }
    }
    b.barrier("done", deadline);
    b.leave(deadline);  // rank 0 then stops the server safely
    std::printf("rank %d of %d ok (%s)\n", info.rank, info.nranks, info.source.c_str());
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "env_rank: %s\n", e.what());
    return 2;
  }
}
