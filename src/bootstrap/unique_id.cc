#include "bootstrap/unique_id.h"

#include <arpa/inet.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <map>
#include <mutex>
#include <optional>

#include "bootstrap/tcp_store.h"
#include "common/env.h"
#include "common/error.h"
#include "common/log.h"

namespace tutti::bootstrap {

namespace {

constexpr char kMagic[4] = {'T', 'U', 'I', 'D'};
constexpr uint16_t kVersion = 1;

std::mutex& registryMutex() {
  static std::mutex mu;
  return mu;
}
struct Registered {
  pid_t owner;  // the process whose thread serves it
  std::shared_ptr<TcpStoreServer> server;
};
std::map<std::string, Registered>& registry() {
  static auto* r = new std::map<std::string, Registered>;  // never freed: servers of unused
  return *r;  // ids live until exit, and fork copies are never destroyed (no thread to join)
}

SockAddr fromIfaddr(const sockaddr* sa) {
  SockAddr a;
  a.len = sa->sa_family == AF_INET ? sizeof(sockaddr_in) : sizeof(sockaddr_in6);
  std::memcpy(&a.storage, sa, a.len);
  a.setPort(0);
  return a;
}

std::string join(const std::vector<std::string>& v) {
  std::string s;
  for (const auto& x : v) s += (s.empty() ? "" : ", ") + x;
  return s;
}

}  // namespace

tuttiUniqueId encodeUniqueId(const UniqueIdInfo& info) {
  tuttiUniqueId id;
  std::memset(&id, 0, sizeof(id));
  auto* p = reinterpret_cast<uint8_t*>(id.internal);
  std::memcpy(p, kMagic, 4);
  p[4] = kVersion & 0xff;
  p[5] = kVersion >> 8;
  uint16_t port = htons(info.addr.port());
  std::memcpy(p + 8, &port, 2);
  if (info.addr.family() == AF_INET) {
    p[6] = 4;
    std::memcpy(p + 12, &reinterpret_cast<const sockaddr_in*>(&info.addr.storage)->sin_addr, 4);
  } else if (info.addr.family() == AF_INET6) {
    p[6] = 6;
    const auto* s6 = reinterpret_cast<const sockaddr_in6*>(&info.addr.storage);
    std::memcpy(p + 12, &s6->sin6_addr, 16);
    for (int i = 0; i < 4; ++i) p[44 + i] = static_cast<uint8_t>(s6->sin6_scope_id >> (8 * i));
  } else {
    fail(tuttiInternalError, "unique id: unsupported address family ", info.addr.family());
  }
  std::memcpy(p + 28, info.secret.data(), 16);
  return id;
}

UniqueIdInfo decodeUniqueId(const tuttiUniqueId& id) {
  const auto* p = reinterpret_cast<const uint8_t*>(id.internal);
  if (std::memcmp(p, kMagic, 4) != 0)
    fail(tuttiInvalidArgument,
         "unique id: bad magic (not made by tuttiGetUniqueId, or corrupted in transit)");
  uint16_t version = p[4] | p[5] << 8;
  if (version != kVersion)
    fail(tuttiInvalidArgument, "unique id: version ", version, " is not supported (this is ",
         kVersion, ")");
  UniqueIdInfo info;
  uint16_t port;
  std::memcpy(&port, p + 8, 2);
  if (p[6] == 4) {
    auto* s4 = reinterpret_cast<sockaddr_in*>(&info.addr.storage);
    s4->sin_family = AF_INET;
    std::memcpy(&s4->sin_addr, p + 12, 4);
    s4->sin_port = port;
    info.addr.len = sizeof(sockaddr_in);
  } else if (p[6] == 6) {
    auto* s6 = reinterpret_cast<sockaddr_in6*>(&info.addr.storage);
    s6->sin6_family = AF_INET6;
    std::memcpy(&s6->sin6_addr, p + 12, 16);
    s6->sin6_port = port;
    s6->sin6_scope_id = p[44] | p[45] << 8 | p[46] << 16 | uint32_t(p[47]) << 24;
    info.addr.len = sizeof(sockaddr_in6);
  } else {
    fail(tuttiInvalidArgument, "unique id: bad address family ", int(p[6]));
  }
  if (ntohs(port) == 0) fail(tuttiInvalidArgument, "unique id: port 0");
  std::memcpy(info.secret.data(), p + 28, 16);
  return info;
}

SockAddr advertisedAddress() {
  std::string want = env::getString("TUTTI_BOOTSTRAP_IFNAME");
  ifaddrs* list = nullptr;
  if (::getifaddrs(&list) != 0) throwSystemError("getifaddrs");
  std::unique_ptr<ifaddrs, void (*)(ifaddrs*)> guard(list, ::freeifaddrs);
  std::optional<SockAddr> v4, v6, firstUp;
  std::vector<std::string> names;
  for (ifaddrs* i = list; i; i = i->ifa_next) {
    if (!i->ifa_addr) continue;
    int fam = i->ifa_addr->sa_family;
    if (fam != AF_INET && fam != AF_INET6) continue;
    if (std::find(names.begin(), names.end(), i->ifa_name) == names.end())
      names.push_back(i->ifa_name);
    if (!want.empty()) {
      if (want != i->ifa_name) continue;
      if (fam == AF_INET && !v4) v4 = fromIfaddr(i->ifa_addr);
      if (fam == AF_INET6 && !v6) v6 = fromIfaddr(i->ifa_addr);
      continue;
    }
    if ((i->ifa_flags & IFF_UP) && !(i->ifa_flags & IFF_LOOPBACK) && fam == AF_INET && !firstUp)
      firstUp = fromIfaddr(i->ifa_addr);
  }
  if (!want.empty()) {
    if (v4) return *v4;
    if (v6) return *v6;
    fail(tuttiInvalidArgument, "TUTTI_BOOTSTRAP_IFNAME=", want,
         ": no interface of that name with an IP address (have: ", join(names), ")");
  }
  if (firstUp) return *firstUp;
  return SockAddr::resolve("127.0.0.1", 0, "loopback");
}

tuttiUniqueId makeUniqueId() {
  UniqueIdInfo info;
  info.secret = randomSecret();
  auto server = std::make_shared<TcpStoreServer>(advertisedAddress(), info.secret);
  info.addr = server->sockAddr();
  {
    std::lock_guard lock(registryMutex());
    registry()[secretToHex(info.secret)] = Registered{::getpid(), std::move(server)};
  }
  TUTTI_INFO(kBootstrap, "unique id: store server at " << info.addr.toString());
  return encodeUniqueId(info);
}

std::shared_ptr<TcpStoreServer> takeServer(const UniqueIdInfo& info) {
  std::lock_guard lock(registryMutex());
  auto it = registry().find(secretToHex(info.secret));
  if (it == registry().end()) return nullptr;
  // After fork(2) the registry is a copy whose server threads do not exist in this
  // process: never hand those out (the server keeps running in the parent).
  if (it->second.owner != ::getpid()) return nullptr;
  auto server = std::move(it->second.server);
  registry().erase(it);
  return server;
}

}  // namespace tutti::bootstrap
