// Network interface discovery and selection for the tcp transport (TUTTI_SOCKET_IFNAME).
#pragma once

#include <string>
#include <vector>

#include "socket_util.h"

namespace tutti::transport::tcp {

struct Interface {
  std::string name;
  SockAddr addr;  // port 0
  bool loopback = false;
};

// Up interfaces with an IPv4 or global/site IPv6 address (link-local IPv6 is skipped),
// IPv4 first, otherwise in the kernel's order.
std::vector<Interface> listInterfaces();

// A parsed TUTTI_SOCKET_IFNAME: "eth,ib" (name prefixes), "^docker,lo" (exclude prefixes),
// "=eth0,eth1" (exact names), "^=eth0" (exclude exact names).
class InterfaceFilter {
 public:
  explicit InterfaceFilter(const std::string& spec);
  bool matches(const std::string& name) const;
  bool empty() const { return names_.empty(); }

 private:
  std::vector<std::string> names_;
  bool exclude_ = false;
  bool exact_ = false;
};

// The interfaces the transport may listen on, best first. `spec` is TUTTI_SOCKET_IFNAME
// ("" = default: every up non-loopback interface except docker*, or loopback when
// singleHost). Loopback is never chosen when !singleHost. Throws tuttiSystemError when none
// qualifies, listing what exists. Without spec, on several hosts, an interface named in
// `preferred` (the topology's nearest NIC) comes first.
std::vector<Interface> selectInterfaces(const std::vector<Interface>& all, const std::string& spec,
                                        bool singleHost,
                                        const std::vector<std::string>& preferred = {});

}  // namespace tutti::transport::tcp
