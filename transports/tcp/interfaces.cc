#include "interfaces.h"

#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>

#include <algorithm>
#include <cstring>

#include "common/error.h"

namespace tutti::transport::tcp {

std::vector<Interface> listInterfaces() {
  ifaddrs* list = nullptr;
  if (getifaddrs(&list) != 0) throwSystemError("tcp: getifaddrs()");
  std::vector<Interface> v4;
  std::vector<Interface> v6;
  for (ifaddrs* it = list; it; it = it->ifa_next) {
    if (!it->ifa_addr || !(it->ifa_flags & IFF_UP)) continue;
    int family = it->ifa_addr->sa_family;
    if (family != AF_INET && family != AF_INET6) continue;
    Interface ifc;
    ifc.name = it->ifa_name;
    ifc.loopback = (it->ifa_flags & IFF_LOOPBACK) != 0;
    if (family == AF_INET) {
      std::memcpy(&ifc.addr.storage, it->ifa_addr, sizeof(sockaddr_in));
      ifc.addr.len = sizeof(sockaddr_in);
      v4.push_back(std::move(ifc));
    } else {
      auto* in6 = reinterpret_cast<const sockaddr_in6*>(it->ifa_addr);
      if (IN6_IS_ADDR_LINKLOCAL(&in6->sin6_addr)) continue;
      std::memcpy(&ifc.addr.storage, it->ifa_addr, sizeof(sockaddr_in6));
      ifc.addr.len = sizeof(sockaddr_in6);
      v6.push_back(std::move(ifc));
    }
  }
  freeifaddrs(list);
  v4.insert(v4.end(), v6.begin(), v6.end());
  return v4;
}

InterfaceFilter::InterfaceFilter(const std::string& spec) {
  std::string s = spec;
  if (!s.empty() && s[0] == '^') {
    exclude_ = true;
    s.erase(0, 1);
  }
  if (!s.empty() && s[0] == '=') {
    exact_ = true;
    s.erase(0, 1);
  }
  size_t start = 0;
  while (start <= s.size()) {
    size_t comma = s.find(',', start);
    if (comma == std::string::npos) comma = s.size();
    std::string name = s.substr(start, comma - start);
    if (!name.empty()) names_.push_back(name);
    start = comma + 1;
  }
}

bool InterfaceFilter::matches(const std::string& name) const {
  bool hit = std::any_of(names_.begin(), names_.end(), [&](const std::string& n) {
    return exact_ ? name == n : name.compare(0, n.size(), n) == 0;
  });
  return exclude_ ? !hit : hit;
}

namespace {
std::string describe(const std::vector<Interface>& all) {
  std::string s;
  for (const auto& i : all) {
    if (!s.empty()) s += ", ";
    s += i.name + " " + i.addr.host() + (i.loopback ? " (loopback)" : "");
  }
  return s.empty() ? "none" : s;
}
}  // namespace

std::vector<Interface> selectInterfaces(const std::vector<Interface>& all, const std::string& spec,
                                        bool singleHost,
                                        const std::vector<std::string>& preferred) {
  std::vector<Interface> out;
  if (spec.empty()) {
    if (singleHost) {
      for (const auto& i : all) {
        if (i.loopback) out.push_back(i);
      }
    }
    if (out.empty()) {
      for (const auto& i : all) {
        if (!i.loopback && i.name.compare(0, 6, "docker") != 0) out.push_back(i);
      }
    }
    if (out.empty()) {
      fail(tuttiSystemError, "tcp: no usable network interface (",
           singleHost ? "" : "the job spans hosts, so loopback is excluded; ",
           "up interfaces: ", describe(all), "); set TUTTI_SOCKET_IFNAME");
    }
    if (!out.front().loopback) {
      std::stable_partition(out.begin(), out.end(), [&](const Interface& i) {
        return std::find(preferred.begin(), preferred.end(), i.name) != preferred.end();
      });
    }
    return out;
  }
  InterfaceFilter filter(spec);
  bool droppedLoopback = false;
  for (const auto& i : all) {
    if (!filter.matches(i.name)) continue;
    if (i.loopback && !singleHost) {
      droppedLoopback = true;
      continue;
    }
    out.push_back(i);
  }
  if (out.empty()) {
    fail(tuttiSystemError, "tcp: TUTTI_SOCKET_IFNAME='", spec, "' matches no usable interface",
         droppedLoopback ? " (loopback matched but the job spans hosts)" : "",
         "; up interfaces: ", describe(all));
  }
  return out;
}

}  // namespace tutti::transport::tcp
