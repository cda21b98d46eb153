#include "topology/paths.h"

#include <algorithm>
#include <cmath>
#include <tuple>

namespace tutti::topo {
namespace {

// Defaults when the file does not tell (GB/s per direction, microseconds).
constexpr double kDefaultPcieGBps = 12.0;  // effective PCIe Gen3 x16
constexpr double kLocGBps = 20.0;          // memcpy through shared memory on one NUMA node
constexpr double kLatLoc = 0.3, kLatNv = 0.8, kLatNvSwitch = 1.0, kLatPix = 1.0, kLatPxb = 1.5,
                 kLatPhb = 2.0, kLatNode = 2.5, kLatSys = 4.0;

int pciOf(const Topology& t, DeviceRef d) {
  if (d.kind == DevKind::kGpu) return t.gpus[d.index].pci;
  if (d.kind == DevKind::kNic) return t.nics[d.index].pci;
  return -1;
}

int numaOf(const Topology& t, DeviceRef d) {
  if (d.kind == DevKind::kCpu) return d.index;
  if (d.kind == DevKind::kNic) return t.nics[d.index].numa;
  return t.numaOfPci(t.gpus[d.index].pci);
}

double linkOf(const Topology& t, int pci) {
  if (pci < 0) return kDefaultPcieGBps;
  double v = t.pci[pci].linkGBps;
  return v > 0 ? v : kDefaultPcieGBps;
}

double nicGBps(const Topology& t, int nic) {
  const Nic& n = t.nics[nic];
  if (n.speedMbps && *n.speedMbps > 0) return static_cast<double>(*n.speedMbps) / 8000.0;
  switch (n.kind) {
    case NicKind::kInfiniBand:
    case NicKind::kRoCE:
    case NicKind::kEfa:
      return 12.5;  // 100 Gb/s
    case NicKind::kEthernet:
      return 1.25;
    default:
      return 0.125;
  }
}

double nicLatency(NicKind k) {
  switch (k) {
    case NicKind::kInfiniBand:
      return 2.0;
    case NicKind::kRoCE:
      return 3.0;
    case NicKind::kEfa:
      return 12.0;
    case NicKind::kEthernet:
      return 25.0;
    default:
      return 50.0;
  }
}

// Switch group of a bridge: (top of its chain of same-id bridges, depth / 2). A PCIe switch
// shows up as an upstream port and its downstream ports, which carry the same vendor:device.
std::pair<int, int> switchGroup(const Topology& t, int b) {
  auto sameId = [&](int x, int y) {
    const PciNode& a = t.pci[x];
    const PciNode& c = t.pci[y];
    return a.vendorId >= 0 && a.vendorId != 0xffff && a.vendorId == c.vendorId &&
           a.deviceId == c.deviceId;
  };
  int depth = 0;
  int cur = b;
  while (t.pci[cur].parent >= 0 && t.pci[t.pci[cur].parent].kind == PciKind::kBridge &&
         sameId(cur, t.pci[cur].parent)) {
    cur = t.pci[cur].parent;
    ++depth;
  }
  return {cur, depth / 2};
}

struct NvInfo {
  int links = 0;
  int64_t mbps = 0;
  bool viaSwitch = false;
};

NvInfo nvBetween(const Topology& t, int ga, int gb) {
  NvInfo r;
  // Direct links.
  for (const auto& l : t.nvlinks) {
    if (l.peerKind != LinkPeer::kGpu) continue;
    if ((l.gpu == ga && l.peer == gb) || (l.gpu == gb && l.peer == ga)) {
      r.links += std::max(l.links, 0);
      r.mbps += std::max<int64_t>(l.bandwidthMBps, 0);
    }
  }
  // Through NVSwitches both GPUs reach: per switch min of the two sides.
  for (size_t s = 0; s < t.nvSwitches.size(); ++s) {
    int la = 0, lb = 0;
    int64_t ba = 0, bb = 0;
    bool ha = false, hb = false;
    for (const auto& l : t.nvlinks) {
      if (l.peerKind != LinkPeer::kNvSwitch || l.peer != static_cast<int>(s)) continue;
      if (l.gpu == ga) {
        ha = true;
        la += std::max(l.links, 0);
        ba += std::max<int64_t>(l.bandwidthMBps, 0);
      }
      if (l.gpu == gb) {
        hb = true;
        lb += std::max(l.links, 0);
        bb += std::max<int64_t>(l.bandwidthMBps, 0);
      }
    }
    if (ha && hb) {
      r.links += std::min(la, lb);
      r.mbps += std::min(ba, bb);
      r.viaSwitch = true;
    }
  }
  return r;
}

}  // namespace

const char* linkClassName(LinkClass c) {
  switch (c) {
    case LinkClass::kLOC:
      return "LOC";
    case LinkClass::kNV:
      return "NV";
    case LinkClass::kPIX:
      return "PIX";
    case LinkClass::kPXB:
      return "PXB";
    case LinkClass::kPHB:
      return "PHB";
    case LinkClass::kNODE:
      return "NODE";
    case LinkClass::kSYS:
      return "SYS";
    case LinkClass::kNET:
      return "NET";
  }
  return "?";
}

std::string Path::label() const {
  if (cls == LinkClass::kNV) return nvlinks > 0 ? "NV" + std::to_string(nvlinks) : "NV#";
  return linkClassName(cls);
}

PciRelation pciRelation(const Topology& t, int a, int b) {
  PciRelation r;
  if (a < 0 || b < 0) return r;
  std::vector<int> up;
  for (int x = a; x >= 0; x = t.pci[x].parent) up.push_back(x);
  int lca = -1;
  for (int y = b; y >= 0 && lca < 0; y = t.pci[y].parent) {
    if (std::find(up.begin(), up.end(), y) != up.end()) lca = y;
  }
  r.lca = lca;
  if (lca < 0 || t.pci[lca].kind == PciKind::kHostBridge) return r;
  if (lca == a || lca == b) {
    r.switches = 1;
    return r;
  }
  std::vector<std::pair<int, int>> groups;
  auto collect = [&](int from) {
    for (int x = t.pci[from].parent; x >= 0; x = t.pci[x].parent) {
      if (t.pci[x].kind == PciKind::kBridge || x == lca) {
        auto g = switchGroup(t, x);
        if (std::find(groups.begin(), groups.end(), g) == groups.end()) groups.push_back(g);
      }
      if (x == lca) break;
    }
  };
  collect(a);
  collect(b);
  r.switches = static_cast<int>(groups.size());
  return r;
}

double interSocketGBps(const Topology& t) {
  std::string vendor = t.packages.empty() ? "" : t.packages[0].vendor;
  const std::string& arch = t.arch;
  if (arch.rfind("ppc64", 0) == 0 || vendor == "IBM") return 32.0;  // POWER X-bus
  if (vendor == "AuthenticAMD") return 32.0;                        // xGMI
  if (vendor == "GenuineIntel") return 20.0;                        // UPI
  if (arch == "aarch64") return 10.0;
  return 10.0;
}

Path pathBetween(const Topology& t, DeviceRef a, DeviceRef b) {
  Path p;
  if (a.host != b.host) {
    // Across hosts: through each side's best NIC (nearest to a GPU, else the fastest).
    auto nicFor = [&](DeviceRef d) {
      if (d.kind == DevKind::kNic) return d.index;
      if (d.kind == DevKind::kGpu) return nearestNic(t, d.index);
      int best = -1;
      for (size_t i = 0; i < t.nics.size(); ++i) {
        if (best < 0 || nicGBps(t, static_cast<int>(i)) > nicGBps(t, best))
          best = static_cast<int>(i);
      }
      return best;
    };
    int na = nicFor(a), nb = nicFor(b);
    p.cls = LinkClass::kNET;
    double ba = na >= 0 ? nicGBps(t, na) : 1.25, bb = nb >= 0 ? nicGBps(t, nb) : 1.25;
    p.bandwidthGBps = std::min(ba, bb);
    p.latencyUs = std::max(na >= 0 ? nicLatency(t.nics[na].kind) : 25.0,
                           nb >= 0 ? nicLatency(t.nics[nb].kind) : 25.0);
    return p;
  }
  if (a.kind == DevKind::kGpu && b.kind == DevKind::kGpu && a.index != b.index) {
    NvInfo nv = nvBetween(t, a.index, b.index);
    if (nv.links > 0 || nv.mbps > 0) {
      p.cls = LinkClass::kNV;
      int gen = t.gpus[a.index].nvlinkGen;
      p.nvlinks = nv.links;
      if (p.nvlinks == 0 && gen > 0) {
        p.nvlinks = static_cast<int>(std::lround(double(nv.mbps) / nvlinkPerLinkMBps(gen)));
      }
      p.bandwidthGBps = nv.mbps > 0 ? nv.mbps / 1000.0 : nv.links * nvlinkPerLinkMBps(gen) / 1000.0;
      p.latencyUs = nv.viaSwitch ? kLatNvSwitch : kLatNv;
      return p;
    }
  }
  int pa = pciOf(t, a), pb = pciOf(t, b);
  int numaA = numaOf(t, a), numaB = numaOf(t, b);
  double pcie = std::min(linkOf(t, pa), linkOf(t, pb));
  if (a.kind == DevKind::kCpu && b.kind == DevKind::kCpu) {
    pcie = kLocGBps;  // memory, not PCIe
  } else if (a.kind == DevKind::kCpu) {
    pcie = linkOf(t, pb);
  } else if (b.kind == DevKind::kCpu) {
    pcie = linkOf(t, pa);
  }
  if (a.kind == b.kind && a.index == b.index) {
    p.cls = LinkClass::kLOC;
    p.bandwidthGBps = a.kind == DevKind::kCpu ? kLocGBps : pcie;
    p.latencyUs = kLatLoc;
    return p;
  }
  if (pa >= 0 && pb >= 0) {
    PciRelation r = pciRelation(t, pa, pb);
    if (r.lca >= 0) {
      if (t.pci[r.lca].kind == PciKind::kHostBridge) {
        p.cls = LinkClass::kPHB;
        p.latencyUs = kLatPhb;
      } else if (r.switches <= 1) {
        p.cls = LinkClass::kPIX;
        p.latencyUs = kLatPix;
      } else {
        p.cls = LinkClass::kPXB;
        p.latencyUs = kLatPxb;
      }
      p.bandwidthGBps = pcie;
      return p;
    }
  }
  if (numaA >= 0 && numaA == numaB) {
    if (a.kind == DevKind::kCpu && b.kind == DevKind::kCpu) {
      p.cls = LinkClass::kLOC;
      p.latencyUs = kLatLoc;
    } else if (t.source == Source::kNcclXml || a.kind == DevKind::kCpu || b.kind == DevKind::kCpu) {
      // NCCL files have no host bridges: devices under one <cpu> meet at its root complex.
      p.cls = LinkClass::kPHB;
      p.latencyUs = kLatPhb;
    } else {
      p.cls = LinkClass::kNODE;
      p.latencyUs = kLatNode;
    }
    p.bandwidthGBps = pcie;
    return p;
  }
  p.cls = LinkClass::kSYS;
  p.latencyUs = kLatSys;
  p.bandwidthGBps = std::min(pcie, interSocketGBps(t));
  return p;
}

int nearestNic(const Topology& t, int gpu) {
  int best = -1;
  std::tuple<int, int, double, int> bestKey{};
  for (size_t i = 0; i < t.nics.size(); ++i) {
    const Nic& n = t.nics[i];
    int kindRank = n.rdma ? 0 : (n.kind == NicKind::kEthernet ? 1 : 2);
    Path p = pathBetween(t, {0, DevKind::kGpu, gpu}, {0, DevKind::kNic, static_cast<int>(i)});
    auto key = std::make_tuple(kindRank, static_cast<int>(p.cls), -nicGBps(t, static_cast<int>(i)),
                               static_cast<int>(i));
    if (best < 0 || key < bestKey) {
      best = static_cast<int>(i);
      bestKey = key;
    }
  }
  return best;
}

std::vector<std::string> topologyWarnings(const Topology& t) {
  std::vector<std::string> w = t.loadWarnings;
  if (t.gpus.size() >= 2) {
    bool anyBridge = false;
    bool virtualSwitch = false;
    for (const auto& g : t.gpus) {
      for (int x = t.pci[g.pci].parent; x >= 0; x = t.pci[x].parent) {
        if (t.pci[x].kind == PciKind::kBridge) anyBridge = true;
        if (t.pci[x].busId.rfind("ffff:", 0) == 0) virtualSwitch = true;
      }
    }
    if (!anyBridge) {
      w.push_back(
          "flat PCI tree: no GPU sits below a PCIe switch or bridge (typical of virtual "
          "machines, which hide the real PCIe hierarchy); PIX/PXB locality is unknown and "
          "GPU-GPU / GPU-NIC classes are pessimistic. Provide the provider's topology file "
          "with TUTTI_TOPO_FILE.");
    } else if (virtualSwitch) {
      w.push_back(
          "virtual PCIe switches (bus ids ffff:ff:xx.x): this is a hand-made or VM topology, "
          "locality is as the file states it");
    }
  }
  bool sxm = false;
  for (const auto& g : t.gpus) {
    if (g.model.find("SXM") != std::string::npos) sxm = true;
  }
  if (sxm && t.nvlinks.empty()) {
    w.push_back(
        "SXM GPUs but no NVLink information in the topology: GPU-GPU classes fall back "
        "to PCIe (the real machine very likely has NVLink)");
  }
  for (size_t i = 0; i < t.gpus.size(); ++i) {
    if (t.numaOfPci(t.gpus[i].pci) < 0) {
      w.push_back("GPU " + t.gpuBusId(static_cast<int>(i)) + " has no known NUMA affinity");
    }
  }
  if (!t.gpus.empty()) {
    bool rdma = false;
    for (const auto& n : t.nics) rdma = rdma || n.rdma;
    if (!rdma) w.push_back("no RDMA NIC (InfiniBand/RoCE/EFA): traffic between hosts uses TCP");
  }
  return w;
}

}  // namespace tutti::topo
