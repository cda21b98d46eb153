// Link classes between devices (the nvidia-smi topo -m vocabulary) with bandwidth and latency,
// each GPU's nearest NIC, and topology warnings. Numbers are documented in docs/topology.md.
#pragma once

#include <string>
#include <vector>

#include "topology/model.h"

namespace tutti::topo {

// Best to worst. LOC: two CPU ranks on the same NUMA node (shared memory).
enum class LinkClass { kLOC, kNV, kPIX, kPXB, kPHB, kNODE, kSYS, kNET };
const char* linkClassName(LinkClass c);

enum class DevKind { kGpu, kNic, kCpu };

// A device on host `host` (hosts of one job are assumed to share this topology).
// kGpu/kNic: index into Topology::gpus / nics; kCpu: index into Topology::numaNodes.
struct DeviceRef {
  int host = 0;
  DevKind kind = DevKind::kGpu;
  int index = 0;
};

struct Path {
  LinkClass cls = LinkClass::kSYS;
  int nvlinks = 0;           // NV: number of links (0 unknown)
  double bandwidthGBps = 0;  // per direction
  double latencyUs = 0;
  std::string label() const;  // "NV12", "PIX", ...
};

Path pathBetween(const Topology& t, DeviceRef a, DeviceRef b);

// PCI relation of two PCI nodes: lowest common ancestor (-1: none) and the number of PCIe
// switches on the path (1: a single switch = PIX).
struct PciRelation {
  int lca = -1;
  int switches = 0;
};
PciRelation pciRelation(const Topology& t, int pciA, int pciB);

// Nearest NIC of a GPU: RDMA NICs first, then the best class, then the fastest; -1 if none.
int nearestNic(const Topology& t, int gpu);

// Inter-socket bandwidth (GB/s per direction) from the CPU vendor / architecture.
double interSocketGBps(const Topology& t);

// Load warnings plus checks on the model (flat PCI tree typical of VMs, missing NVLink data,
// unknown NUMA affinity, no RDMA NIC).
std::vector<std::string> topologyWarnings(const Topology& t);

}  // namespace tutti::topo
