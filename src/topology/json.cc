#include "topology/json.h"

#include <cstdio>
#include <sstream>
#include <string>
#include <vector>

#include "topology/paths.h"
#include "topology/rings.h"

namespace tutti::topo {
namespace {

std::string quote(std::string_view s) {
  std::string r = "\"";
  for (char c : s) {
    switch (c) {
      case '"':
        r += "\\\"";
        break;
      case '\\':
        r += "\\\\";
        break;
      case '\n':
        r += "\\n";
        break;
      case '\t':
        r += "\\t";
        break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          char buf[16];
          std::snprintf(buf, sizeof buf, "\\u%04x", static_cast<unsigned>(c));
          r += buf;
        } else {
          r += c;
        }
    }
  }
  return r + "\"";
}

std::string hex4(int v) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "%04x", static_cast<unsigned>(v) & 0xffffu);
  return buf;
}

std::string numaJson(const Topology& t, int numaIndex) {
  return numaIndex >= 0 ? std::to_string(t.numaNodes[numaIndex].osIndex) : "null";
}

std::string deviceKey(const Topology& t, DeviceRef d) {
  if (d.kind == DevKind::kGpu) return t.gpuBusId(d.index);
  const Nic& n = t.nics[d.index];
  if (n.pci >= 0) return t.pci[n.pci].busId;
  return n.names.empty() ? "nic" + std::to_string(d.index) : n.names[0];
}

void writeHeader(std::ostream& o, const Topology& t) {
  const char* source = t.source == Source::kNcclXml    ? "nccl-xml"
                       : t.source == Source::kHwlocXml ? "hwloc-xml"
                                                       : "hwloc-live";
  o << "{\n  \"source\": " << quote(source) << ",\n  \"origin\": " << quote(t.origin)
    << ",\n  \"hostname\": " << quote(t.hostName) << ",\n  \"arch\": " << quote(t.arch) << ",\n";
}

// "packages", "numa_nodes", "numa" and "total_cores".
void writeCpus(std::ostream& o, const Topology& t) {
  o << "  \"packages\": [";
  for (size_t i = 0; i < t.packages.size(); ++i) {
    const auto& p = t.packages[i];
    o << (i ? ", " : "") << "{\"os_index\": " << p.osIndex << ", \"vendor\": " << quote(p.vendor)
      << ", \"model\": " << quote(p.model) << ", \"cores\": " << p.cores << "}";
  }
  o << "],\n  \"numa_nodes\": [";
  for (size_t i = 0; i < t.numaNodes.size(); ++i) o << (i ? ", " : "") << t.numaNodes[i].osIndex;
  o << "],\n  \"numa\": [";
  for (size_t i = 0; i < t.numaNodes.size(); ++i) {
    const auto& n = t.numaNodes[i];
    o << (i ? ", " : "") << "{\"os_index\": " << n.osIndex << ", \"package\": "
      << (n.package >= 0 ? std::to_string(t.packages[n.package].osIndex) : "null")
      << ", \"cores\": " << n.cores << ", \"pus\": " << n.pus
      << ", \"memory_bytes\": " << n.memoryBytes << ", \"cpuset\": " << quote(n.cpuset) << "}";
  }
  o << "],\n  \"total_cores\": " << t.totalCores() << ",\n";
}

void writeGpus(std::ostream& o, const Topology& t) {
  o << "  \"gpus\": [";
  for (size_t i = 0; i < t.gpus.size(); ++i) {
    const Gpu& g = t.gpus[i];
    const PciNode& p = t.pci[g.pci];
    int nic = nearestNic(t, static_cast<int>(i));
    o << (i ? "," : "") << "\n    {\"busid\": " << quote(p.busId)
      << ", \"vendor\": " << quote(g.vendor == GpuVendor::kAmd ? "amd" : "nvidia")
      << ", \"vendor_assumed\": " << (g.vendorAssumed ? "true" : "false") << ", \"pci_id\": "
      << (p.vendorId >= 0 ? quote(hex4(p.vendorId) + ":" + hex4(p.deviceId)) : "null")
      << ", \"class\": " << (p.classId >= 0 ? quote(hex4(p.classId)) : "null")
      << ", \"model\": " << quote(g.model) << ", \"numa\": " << numaJson(t, t.numaOfPci(g.pci))
      << ", \"sm\": " << g.sm << ", \"nvlink_gen\": " << g.nvlinkGen
      << ", \"nearest_nic\": " << (nic >= 0 ? quote(deviceKey(t, {0, DevKind::kNic, nic})) : "null")
      << ", \"os_devices\": [";
    for (size_t k = 0; k < g.osDevices.size(); ++k) o << (k ? ", " : "") << quote(g.osDevices[k]);
    o << "]}";
  }
  o << "\n  ],\n";
}

void writeNics(std::ostream& o, const Topology& t) {
  o << "  \"nics\": [";
  for (size_t i = 0; i < t.nics.size(); ++i) {
    const Nic& n = t.nics[i];
    o << (i ? "," : "") << "\n    {\"busid\": " << (n.pci >= 0 ? quote(t.pci[n.pci].busId) : "null")
      << ", \"names\": [";
    for (size_t k = 0; k < n.names.size(); ++k) o << (k ? ", " : "") << quote(n.names[k]);
    o << "], \"kind\": " << quote(nicKindName(n.kind))
      << ", \"speed_mbps\": " << (n.speedMbps ? std::to_string(*n.speedMbps) : "null")
      << ", \"ports\": " << n.ports << ", \"rdma\": " << (n.rdma ? "true" : "false")
      << ", \"numa\": " << numaJson(t, n.numa) << "}";
  }
  o << "\n  ],\n";
}

// "nvswitches" and "nvlink".
void writeNvlinks(std::ostream& o, const Topology& t) {
  o << "  \"nvswitches\": [";
  for (size_t i = 0; i < t.nvSwitches.size(); ++i) {
    o << (i ? ", " : "") << quote(t.nvSwitches[i].busId);
  }
  o << "],\n  \"nvlink\": [";
  for (size_t i = 0; i < t.nvlinks.size(); ++i) {
    const NvLink& l = t.nvlinks[i];
    std::string b, type;
    if (l.peerKind == LinkPeer::kGpu) {
      b = t.gpuBusId(l.peer);
      type = "gpu";
    } else if (l.peerKind == LinkPeer::kNvSwitch) {
      b = t.nvSwitches[l.peer].busId.empty() ? "nvswitch" : t.nvSwitches[l.peer].busId;
      type = "nvswitch";
    } else {
      b = "cpu" + std::to_string(l.peer >= 0 ? t.packages[l.peer].osIndex : -1);
      type = "cpu";
    }
    o << (i ? "," : "") << "\n    {\"a\": " << quote(t.gpuBusId(l.gpu)) << ", \"b\": " << quote(b)
      << ", \"b_type\": " << quote(type)
      << ", \"links\": " << (l.links > 0 ? std::to_string(l.links) : "null")
      << ", \"bandwidth_MBps\": "
      << (l.bandwidthMBps > 0 ? std::to_string(l.bandwidthMBps) : "null")
      << ", \"bandwidth_mbps\": "
      << (l.bandwidthMBps > 0 ? std::to_string(l.bandwidthMBps * 8) : "null") << "}";
  }
  o << "\n  ],\n";
}

// The path label between every pair of GPUs and PCI NICs.
void writePaths(std::ostream& o, const Topology& t) {
  o << "  \"paths\": {";
  std::vector<DeviceRef> devs;
  for (size_t i = 0; i < t.gpus.size(); ++i) devs.push_back({0, DevKind::kGpu, int(i)});
  for (size_t i = 0; i < t.nics.size(); ++i) {
    if (t.nics[i].pci >= 0) devs.push_back({0, DevKind::kNic, int(i)});
  }
  for (size_t i = 0; i < devs.size(); ++i) {
    o << (i ? "," : "") << "\n    " << quote(deviceKey(t, devs[i])) << ": {";
    bool first = true;
    for (size_t j = 0; j < devs.size(); ++j) {
      if (i == j) continue;
      Path p = pathBetween(t, devs[i], devs[j]);
      o << (first ? "" : ", ") << quote(deviceKey(t, devs[j])) << ": " << quote(p.label());
      first = false;
    }
    o << "}";
  }
  o << "\n  },\n";
}

void writeWarnings(std::ostream& o, const Topology& t) {
  o << "  \"warnings\": [";
  auto warnings = topologyWarnings(t);
  for (size_t i = 0; i < warnings.size(); ++i) {
    o << (i ? "," : "") << "\n    " << quote(warnings[i]);
  }
  o << "\n  ]";
}

// The ring and binary tree over `ringRanks` ranks placed on the topology's devices.
void writeRingAndTree(std::ostream& o, const Topology& t, int ringRanks) {
  auto rdevs = devicesForRanks(t, ringRanks);
  auto ring = bestRing(t, rdevs);
  RingScore s = scoreRing(t, rdevs, ring);
  Tree tree = binaryTree(ring);
  o << ",\n  \"ring\": {\"ranks\": [";
  for (size_t i = 0; i < ring.size(); ++i) o << (i ? ", " : "") << ring[i];
  o << "], \"bottleneck_GBps\": " << s.bottleneckMBps / 1000.0
    << ", \"slow_edges\": " << s.slowEdges << ", \"socket_changes\": " << s.socketChanges
    << ", \"total_GBps\": " << s.totalMBps / 1000.0 << "},\n  \"tree\": {\"root\": " << tree.root
    << ", \"depth\": " << tree.depth << ", \"parent\": [";
  for (size_t i = 0; i < tree.parent.size(); ++i) o << (i ? ", " : "") << tree.parent[i];
  o << "]}";
}

}  // namespace

std::string topologyJson(const Topology& t, int ringRanks) {
  std::ostringstream o;
  writeHeader(o, t);
  writeCpus(o, t);
  writeGpus(o, t);
  writeNics(o, t);
  writeNvlinks(o, t);
  writePaths(o, t);
  writeWarnings(o, t);
  if (ringRanks > 0) writeRingAndTree(o, t, ringRanks);
  o << "\n}\n";
  return o.str();
}

}  // namespace tutti::topo
