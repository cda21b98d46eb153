#include "ib_device.h"

#include <arpa/inet.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <fstream>
#include <sstream>

#include "common/error.h"
#include "common/log.h"

namespace tutti::transport::ib {

bool HcaFilter::accepts(const std::string& device, int port) const {
  if (items.empty()) return true;
  bool hit = false;
  for (const Item& it : items) {
    bool nameOk = exact ? device == it.name : device.rfind(it.name, 0) == 0;
    if (nameOk && (it.port < 0 || it.port == port)) hit = true;
  }
  return exclude ? !hit : hit;
}

HcaFilter parseHcaFilter(const std::string& specIn) {
  HcaFilter f;
  std::string spec = specIn;
  for (int k = 0; k < 2 && !spec.empty(); ++k) {
    if (spec[0] == '^') {
      f.exclude = true;
      spec.erase(0, 1);
    } else if (spec[0] == '=') {
      f.exact = true;
      spec.erase(0, 1);
    }
  }
  std::stringstream ss(spec);
  std::string tok;
  while (std::getline(ss, tok, ',')) {
    if (tok.empty()) continue;
    HcaFilter::Item it;
    auto colon = tok.find(':');
    it.name = tok.substr(0, colon);
    if (colon != std::string::npos) {
      try {
        it.port = std::stoi(tok.substr(colon + 1));
      } catch (const std::exception&) {
        fail(tuttiInvalidArgument, "TUTTI_IB_HCA='", specIn, "': bad port in '", tok,
             "' (use device[:port])");
      }
    }
    f.items.push_back(it);
  }
  return f;
}

std::string gidToString(const ibv_gid& gid) {
  char buf[INET6_ADDRSTRLEN] = {};
  inet_ntop(AF_INET6, gid.raw, buf, sizeof buf);
  return buf;
}

bool gidIsIpv4Mapped(const ibv_gid& gid) {
  for (int i = 0; i < 10; ++i)
    if (gid.raw[i] != 0) return false;
  return gid.raw[10] == 0xff && gid.raw[11] == 0xff;
}

int chooseGidIndex(const std::vector<GidEntry>& table, bool ethernet) {
  if (table.empty()) return -1;
  if (!ethernet) return table.front().index;
  for (const auto& e : table)
    if (e.type == "RoCE v2" && gidIsIpv4Mapped(e.gid)) return e.index;
  for (const auto& e : table)
    if (e.type == "RoCE v2") return e.index;
  return table.front().index;
}

int mtuBytes(ibv_mtu mtu) { return 128 << static_cast<int>(mtu); }

double portGbps(const ibv_port_attr& a) {
  double lane = 0;
  switch (a.active_speed) {
    case 1:
      lane = 2.5;
      break;  // SDR
    case 2:
      lane = 5;
      break;  // DDR
    case 4:
    case 8:
      lane = 10;
      break;  // QDR, FDR10
    case 16:
      lane = 14.0625;
      break;  // FDR
    case 32:
      lane = 25.78125;
      break;  // EDR
    case 64:
      lane = 53.125;
      break;  // HDR
    case 128:
      lane = 106.25;
      break;  // NDR
    default:
      lane = 0;
  }
  int width = a.active_width == 1    ? 1
              : a.active_width == 2  ? 4
              : a.active_width == 4  ? 8
              : a.active_width == 8  ? 12
              : a.active_width == 16 ? 2
                                     : 0;
  return lane * width;
}

namespace {

const char* stateName(ibv_port_state s) {
  switch (s) {
    case IBV_PORT_DOWN:
      return "DOWN";
    case IBV_PORT_INIT:
      return "INIT";
    case IBV_PORT_ARMED:
      return "ARMED";
    case IBV_PORT_ACTIVE:
      return "ACTIVE";
    case IBV_PORT_ACTIVE_DEFER:
      return "ACTIVE_DEFER";
    default:
      return "NOP";
  }
}

std::string sysfsGidType(const std::string& dev, int port, int index) {
  std::ifstream in("/sys/class/infiniband/" + dev + "/ports/" + std::to_string(port) +
                   "/gid_attrs/types/" + std::to_string(index));
  std::string line;
  std::getline(in, line);
  return line;
}

std::vector<GidEntry> readGidTable(const IbvApi& api, ibv_context* ctx, const std::string& dev,
                                   int port, int len) {
  std::vector<GidEntry> out;
  for (int i = 0; i < std::min(len, 1024); ++i) {
    GidEntry e;
    e.index = i;
    if (api.queryGid(ctx, static_cast<uint8_t>(port), i, &e.gid) != 0) continue;
    bool zero = true;
    for (uint8_t b : e.gid.raw) zero = zero && b == 0;
    if (zero) continue;
    e.type = sysfsGidType(dev, port, i);
    out.push_back(e);
  }
  return out;
}

std::string describeGids(const std::vector<GidEntry>& t) {
  std::string s;
  for (const auto& e : t)
    s += (s.empty() ? "" : ", ") + std::to_string(e.index) + "=" + gidToString(e.gid) +
         (e.type.empty() ? "" : " (" + e.type + ")");
  return s.empty() ? "none" : s;
}

struct Candidate {
  std::string name;
  ibv_device* dev;
  int port;
  int numa = -1;
};

// The NUMA node of an RDMA device's PCI function (sysfs; -1 when unknown or not PCI, e.g. rxe).
int deviceNuma(const std::string& name) {
  std::ifstream f("/sys/class/infiniband/" + name + "/device/numa_node");
  int node = -1;
  if (!(f >> node)) return -1;
  return node;
}

// The NUMA node of the CPU this thread runs on (-1 unknown).
int currentNuma() {
  unsigned cpu = 0, node = 0;
  if (::syscall(SYS_getcpu, &cpu, &node, nullptr) != 0) return -1;
  return static_cast<int>(node);
}

}  // namespace

std::string IbDevice::describe() const {
  std::ostringstream os;
  os << name << ":" << port << " " << (ethernet ? "RoCE" : "InfiniBand");
  if (ethernet)
    os << " GID " << gidIndex << " " << gidToString(gid) << " (" << gidType << ")";
  else
    os << " LID " << portAttr.lid;
  os << " MTU " << mtuBytes(portAttr.active_mtu) << " " << portGbps(portAttr) << " Gb/s";
  return os.str();
}

int chooseNearestPort(const std::vector<int>& candidateNuma, int myNuma, int localIndex) {
  if (candidateNuma.empty()) return -1;
  std::vector<int> near;
  for (size_t i = 0; i < candidateNuma.size(); ++i)
    if (myNuma >= 0 && candidateNuma[i] == myNuma) near.push_back(static_cast<int>(i));
  size_t k = static_cast<size_t>(std::max(0, localIndex));
  if (near.empty()) return static_cast<int>(k % candidateNuma.size());
  return near[k % near.size()];
}

IbDevice::~IbDevice() {
  if (pd) api->deallocPd(pd);
  if (ctx) api->closeDevice(ctx);
}

std::shared_ptr<IbDevice> openIbDevice(const std::string& hcaSpec, int64_t gidIndex, int localIndex,
                                       std::string* why,
                                       const std::vector<std::string>& preferred) {
  const IbvApi* api = loadIbvApi(why);
  if (!api) return nullptr;
  int n = 0;
  ibv_device** list = api->getDeviceList(&n);
  if (!list || n == 0) {
    int err = errno;
    if (list) api->freeDeviceList(list);
    *why = "no RDMA device (ibv_get_device_list: " +
           std::string(n == 0 && list ? "empty" : std::strerror(err)) +
           "; is the kernel module loaded, e.g. rdma_rxe for Soft-RoCE?)";
    return nullptr;
  }
  struct Freer {
    const IbvApi* api;
    ibv_device** l;
    ~Freer() { api->freeDeviceList(l); }
  } freer{api, list};

  HcaFilter filter = parseHcaFilter(hcaSpec);
  std::vector<Candidate> cands;
  std::string seen;  // every port, for messages
  for (int d = 0; d < n; ++d) {
    std::string name = api->getDeviceName(list[d]);
    ibv_context* ctx = api->openDevice(list[d]);
    if (!ctx) {
      seen += (seen.empty() ? "" : ", ") + name + " (cannot open: " + std::strerror(errno) + ")";
      continue;
    }
    ibv_device_attr da{};
    if (api->queryDevice(ctx, &da) == 0) {
      for (int p = 1; p <= da.phys_port_cnt; ++p) {
        ibv_port_attr pa;
        if (api->queryPort(ctx, static_cast<uint8_t>(p), &pa) != 0) continue;
        seen += (seen.empty() ? "" : ", ") + name + ":" + std::to_string(p) + " " +
                stateName(pa.state) + " " +
                (pa.link_layer == IBV_LINK_LAYER_ETHERNET ? "Ethernet" : "InfiniBand");
        if (pa.state == IBV_PORT_ACTIVE && filter.accepts(name, p))
          cands.push_back({name, list[d], p, deviceNuma(name)});
      }
    }
    api->closeDevice(ctx);
  }
  if (cands.empty()) {
    if (!hcaSpec.empty())
      fail(tuttiInvalidArgument, "ibverbs: TUTTI_IB_HCA='", hcaSpec,
           "' matches no active port; ports found: ", seen.empty() ? "none" : seen);
    *why = "no active RDMA port (ports found: " + seen + ")";
    return nullptr;
  }
  if (hcaSpec.empty()) {
    std::vector<Candidate> near;
    for (const Candidate& x : cands)
      if (std::find(preferred.begin(), preferred.end(), x.name) != preferred.end())
        near.push_back(x);
    if (!near.empty()) cands = std::move(near);
  }
  std::vector<int> numa;
  for (const Candidate& x : cands) numa.push_back(x.numa);
  const Candidate& c =
      cands[static_cast<size_t>(chooseNearestPort(numa, currentNuma(), localIndex))];
  auto dev = std::make_shared<IbDevice>();
  dev->api = api;
  dev->name = c.name;
  dev->port = c.port;
  dev->ctx = api->openDevice(c.dev);
  if (!dev->ctx) throwSystemError("ibverbs: ibv_open_device(" + c.name + ")");
  if (api->queryDevice(dev->ctx, &dev->devAttr) != 0)
    throwSystemError("ibverbs: ibv_query_device(" + c.name + ")");
  if (api->queryPort(dev->ctx, static_cast<uint8_t>(c.port), &dev->portAttr) != 0)
    throwSystemError("ibverbs: ibv_query_port(" + c.name + ")");
  dev->ethernet = dev->portAttr.link_layer == IBV_LINK_LAYER_ETHERNET;
  auto table = readGidTable(*api, dev->ctx, c.name, c.port, dev->portAttr.gid_tbl_len);
  if (gidIndex >= 0) {
    const GidEntry* hit = nullptr;
    for (const auto& e : table)
      if (e.index == gidIndex) hit = &e;
    if (!hit)
      fail(tuttiInvalidArgument, "ibverbs: TUTTI_IB_GID_INDEX=", gidIndex,
           " is not a valid GID on ", c.name, ":", c.port, " (table length ",
           dev->portAttr.gid_tbl_len, "); GIDs present: ", describeGids(table));
    dev->gidIndex = hit->index;
    dev->gid = hit->gid;
    dev->gidType = hit->type;
  } else {
    int idx = chooseGidIndex(table, dev->ethernet);
    if (idx < 0) {
      if (dev->ethernet) {
        *why = c.name + ":" + std::to_string(c.port) +
               " is RoCE but has no GID (no IP address on its netdev?)";
        return nullptr;
      }
      idx = 0;
    }
    dev->gidIndex = idx;
    for (const auto& e : table)
      if (e.index == idx) {
        dev->gid = e.gid;
        dev->gidType = e.type;
      }
  }
  dev->pd = api->allocPd(dev->ctx);
  if (!dev->pd) throwSystemError("ibverbs: ibv_alloc_pd(" + c.name + ")");
  TUTTI_INFO(kTransport, "ibverbs: using " << dev->describe() << "; candidates " << cands.size()
                                           << "; GIDs " << describeGids(table));
  return dev;
}

}  // namespace tutti::transport::ib
