#include "comm/membership.h"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <map>
#include <span>
#include <utility>

#include "bootstrap/host_id.h"
#include "comm/ring_order.h"
#include "common/error.h"
#include "common/host_name.h"

namespace tutti {
namespace {

// A rank's record: host id, host name, pid, pid namespace, its process's tutti-inspect
// responder (empty: none), its standby store's address (bootstrap/standby.h; empty when it has
// none) and its place (rank_place.h), one per line.
std::vector<std::byte> encodePeer(const transport::PeerInfo& p, const std::string& standby,
                                  const RankPlace& place) {
  std::string s = p.hostId + '\n' + p.hostname + '\n' + std::to_string(p.pid) + '\n' +
                  std::to_string(p.pidNs) + '\n' + p.inspect + '\n' + standby + '\n' +
                  encodePlace(place);
  auto bytes = std::as_bytes(std::span<const char>(s.data(), s.size()));
  return {bytes.begin(), bytes.end()};
}

transport::PeerInfo decodePeer(int rank, const std::vector<std::byte>& v, std::string* standby,
                               RankPlace* place) {
  std::string s(reinterpret_cast<const char*>(v.data()), v.size());
  transport::PeerInfo p;
  p.rank = rank;
  size_t a = s.find('\n');
  size_t b = a == std::string::npos ? a : s.find('\n', a + 1);
  size_t c = b == std::string::npos ? b : s.find('\n', b + 1);
  size_t d = c == std::string::npos ? c : s.find('\n', c + 1);
  size_t i = d == std::string::npos ? d : s.find('\n', d + 1);
  size_t e = i == std::string::npos ? i : s.find('\n', i + 1);
  if (e == std::string::npos) fail(tuttiInternalError, "malformed peer record from rank ", rank);
  p.hostId = s.substr(0, a);
  p.hostname = s.substr(a + 1, b - a - 1);
  p.pid = static_cast<pid_t>(std::stol(s.substr(b + 1, c - b - 1)));
  p.pidNs = std::stoull(s.substr(c + 1, d - c - 1));
  p.inspect = s.substr(d + 1, i - d - 1);
  *standby = s.substr(i + 1, e - i - 1);
  *place = decodePlace(s.substr(e + 1), rank);
  return p;
}

uint64_t pidNamespace() {
  struct stat st {};
  return ::stat("/proc/self/ns/pid", &st) == 0 ? static_cast<uint64_t>(st.st_ino) : 0;
}

}  // namespace

int Membership::ranksOnHostOf(int r) const {
  return static_cast<int>(std::count(hostOf.begin(), hostOf.end(), hostOf[r]));
}

std::string Membership::describe(int r) const {
  return "host " + peers[r].hostname + ", pid " + std::to_string(peers[r].pid);
}

std::string Membership::describeRank(int r) const {
  std::string s = "rank " + std::to_string(r);
  if (r >= 0 && r < size()) s += " (" + describe(r) + ")";
  return s;
}

std::vector<pid_t> Membership::visiblePids() const {
  std::vector<pid_t> pids(peers.size(), 0);
  const transport::PeerInfo& me = peers[rank];
  for (size_t r = 0; r < peers.size(); ++r) {
    const transport::PeerInfo& p = peers[r];
    if (p.hostId == me.hostId && p.pidNs == me.pidNs && p.pidNs != 0) pids[r] = p.pid;
  }
  return pids;
}

int Membership::rankOfProcess(const std::string& hostId, pid_t pid) const {
  for (size_t r = 0; r < peers.size(); ++r)
    if (peers[r].pid == pid && peers[r].hostId == hostId) return static_cast<int>(r);
  return -1;
}

transport::PeerInfo localPeerInfo(int rank) {
  return transport::PeerInfo{rank, bootstrap::localHostId(), hostName(), getpid(), pidNamespace()};
}

Membership exchangeMembership(bootstrap::Bootstrap& bootstrap, const transport::PeerInfo& me,
                              const std::string& myStandby, const RankPlace& myPlace, bool reorder,
                              const Deadline& deadline) {
  auto all = bootstrap.allGather("peers", encodePeer(me, myStandby, myPlace), deadline);
  const size_t n = all.size();
  std::vector<transport::PeerInfo> peers(n);
  std::vector<RankPlace> places(n);
  std::vector<bootstrap::StandbyAddress> standbyOf(n);
  for (size_t r = 0; r < n; ++r) {
    std::string standby;
    peers[r] = decodePeer(static_cast<int>(r), all[r], &standby, &places[r]);
    standbyOf[r] = bootstrap::StandbyAddress::parse(standby);
  }
  return membershipFromRecords(me.rank, std::move(peers), std::move(places), std::move(standbyOf),
                               reorder);
}

Membership membershipFromRecords(int rank, std::vector<transport::PeerInfo> peers,
                                 std::vector<RankPlace> places,
                                 std::vector<bootstrap::StandbyAddress> standbyOf, bool reorder) {
  Membership m;
  m.rank = rank;
  m.peers = std::move(peers);
  m.places = std::move(places);
  m.standbyOf = std::move(standbyOf);
  const int n = m.size();
  TUTTI_ASSERT(static_cast<int>(m.places.size()) == n && static_cast<int>(m.standbyOf.size()) == n);
  std::map<std::string, int> hostIndex;
  m.hostOf.resize(n);
  for (int r = 0; r < n; ++r)
    m.hostOf[r] =
        hostIndex.emplace(m.peers[r].hostId, static_cast<int>(hostIndex.size())).first->second;
  m.hosts = static_cast<int>(hostIndex.size());
  if (reorder) {
    m.ringOrder = ringOrderFromPlaces(m.hostOf, m.places);
    bool identity = true;
    for (int i = 0; i < n; ++i) identity = identity && m.ringOrder[i] == i;
    if (identity) m.ringOrder.clear();
  }
  return m;
}

}  // namespace tutti
