// Helpers for the shm transport tests: ranks exchange PeerInfo through the store (as the
// communicator does), then set up the shm transport and connect to every other rank.
#pragma once

#include <dirent.h>
#include <sys/resource.h>
#include <unistd.h>

#include <memory>
#include <set>
#include <string>
#include <vector>

#include "bootstrap/store.h"
#include "harness/scoped_env.h"
#include "transport_conformance.h"
#include "transports/shm/shm_transport.h"

namespace tutti::transport::shmtest {

struct ShmRank {
  std::vector<PeerInfo> peers;
  std::unique_ptr<Transport> transport;
  std::vector<std::unique_ptr<Connection>> conns;
  conformance::RankConns rc;
};

inline std::unique_ptr<ShmRank> connectShm(int rank, int nranks, bootstrap::Store& store,
                                           double timeoutSec = 30) {
  auto r = std::make_unique<ShmRank>();
  Deadline deadline(timeoutSec);
  store.setString("pid/" + std::to_string(rank), std::to_string(::getpid()));
  for (int i = 0; i < nranks; ++i) {
    PeerInfo pi;
    pi.rank = i;
    pi.hostId = "test-host";
    pi.hostname = "localhost";
    pi.pid = static_cast<pid_t>(std::stol(store.getString("pid/" + std::to_string(i), deadline)));
    r->peers.push_back(pi);
  }
  r->transport = makeShmTransport();
  r->transport->setup(conformance::contextOf(rank, nranks, r->peers, &store));
  std::vector<int> others;
  for (int i = 0; i < nranks; ++i)
    if (i != rank) others.push_back(i);
  r->conns = r->transport->connect(others, deadline);
  r->rc.rank = rank;
  r->rc.nranks = nranks;
  r->rc.byPeer.assign(nranks, nullptr);
  for (auto& c : r->conns) r->rc.byPeer[c->peer()] = c.get();
  return r;
}

inline std::set<std::string> listDir(const std::string& dir) {
  std::set<std::string> names;
  if (DIR* d = ::opendir(dir.c_str())) {
    while (dirent* e = ::readdir(d)) {
      std::string n = e->d_name;
      if (n != "." && n != "..") names.insert(n);
    }
    ::closedir(d);
  }
  return names;
}

inline size_t countOpenFds() { return listDir("/proc/self/fd").size(); }

inline double cpuSeconds(int who) {
  rusage ru{};
  ::getrusage(who, &ru);
  return ru.ru_utime.tv_sec + ru.ru_stime.tv_sec +
         1e-6 * (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec);
}

using tutti::test::ScopedEnv;  // harness/scoped_env.h

}  // namespace tutti::transport::shmtest
