// Device, port and GID selection for the verbs transport.
//
// TUTTI_IB_HCA: comma list of "device[:port]" entries; names match as prefixes unless the
// list starts with "=" (exact names); a leading "^" excludes the listed entries instead
// ("^=mlx5_1", "^mlx5_1:2"). Only ACTIVE ports are candidates. A rank prefers the candidates
// closest to it: those on the NUMA node of the CPU it runs on (the HCA's PCI numa_node in
// sysfs, the value hwloc puts in the topology model); among those (or all candidates when none
// is local or the NUMA nodes are unknown) it takes the one at (its index among the ranks of
// its host) modulo the count, so ranks of one host spread over their nearest NICs.
// GID (RoCE): TUTTI_IB_GID_INDEX >= 0 forces an index; otherwise the first RoCE v2 GID that
// is an IPv4-mapped address (::ffff:a.b.c.d), else the first RoCE v2 GID, else index 0.
#pragma once

#include <infiniband/verbs.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "ibv_api.h"

namespace tutti::transport::ib {

struct HcaFilter {
  bool exclude = false;
  bool exact = false;
  struct Item {
    std::string name;
    int port = -1;  // -1: any port
  };
  std::vector<Item> items;
  // True when (device, port) passes the filter; an empty filter passes everything.
  bool accepts(const std::string& device, int port) const;
};
HcaFilter parseHcaFilter(const std::string& spec);

struct GidEntry {
  int index = 0;
  ibv_gid gid{};
  std::string type;  // "RoCE v2", "IB/RoCE v1", or "" when sysfs does not say
};
std::string gidToString(const ibv_gid& gid);
bool gidIsIpv4Mapped(const ibv_gid& gid);
// The automatic choice (see above); -1 when the table is empty.
int chooseGidIndex(const std::vector<GidEntry>& table, bool ethernet);

// The port choice above as a pure function: index into candidateNuma (the NUMA node of each
// candidate port, -1 unknown) for a rank on NUMA node myNuma (-1 unknown) with host index
// localIndex; -1 when there are no candidates.
int chooseNearestPort(const std::vector<int>& candidateNuma, int myNuma, int localIndex);

// An opened device port with its protection domain; shared by the transport's connections.
struct IbDevice {
  const IbvApi* api = nullptr;
  ibv_context* ctx = nullptr;
  ibv_pd* pd = nullptr;
  std::string name;
  int port = 1;
  ibv_port_attr portAttr{};
  ibv_device_attr devAttr{};
  bool ethernet = false;  // RoCE: addressing through the GID (GRH), LID is 0
  int gidIndex = 0;
  ibv_gid gid{};
  std::string gidType;
  std::string describe() const;  // "rxe0:1 RoCE v2 GID 1 ::ffff:10.77.0.1 MTU 1024 ..."
  ~IbDevice();
};

// Opens the port this rank should use. Returns nullptr with *why when the machine has no
// usable device (no libibverbs, no device, no active port). Throws tuttiInvalidArgument
// when TUTTI_IB_HCA matches no active port or TUTTI_IB_GID_INDEX is not a valid entry,
// listing what exists.
// Without TUTTI_IB_HCA, the active ports of a device named in `preferred` (the topology's
// NIC nearest this rank) are chosen before the others.
std::shared_ptr<IbDevice> openIbDevice(const std::string& hcaSpec, int64_t gidIndex, int localIndex,
                                       std::string* why,
                                       const std::vector<std::string>& preferred = {});

int mtuBytes(ibv_mtu mtu);
double portGbps(const ibv_port_attr& a);

}  // namespace tutti::transport::ib
