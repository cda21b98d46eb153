// The topology model: one host's packages, NUMA nodes, PCI tree, GPUs, NICs, NVSwitches and
// NVLink links. Filled by the hwloc loader (live or XML v1/v2) or the NCCL XML loader; every
// other part of the module (paths, rings, tutti-topo) reads only this model.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace tutti::topo {

// "dddd:bb:dd.f" lowercase, or nullopt when `text` is not a PCI bus id. Accepts "bb:dd.f"
// (domain 0), upper case and a 32-bit domain written with more digits.
std::optional<std::string> normaliseBusId(std::string_view text);

struct Package {
  int osIndex = -1;
  std::string vendor;  // "GenuineIntel", "AuthenticAMD", "IBM", ... ("" unknown)
  std::string model;   // CPU model string or "family F model M"
  int cores = 0;       // cores (or PUs where cores are unknown) in this package
};

struct NumaNode {
  int osIndex = -1;
  int package = -1;          // index into Topology::packages, -1 unknown
  int cores = 0;             // cores whose cpuset lies in this node
  int pus = 0;               // hardware threads
  uint64_t memoryBytes = 0;  // 0: no memory or unknown
  std::string cpuset;        // hex cpuset as written by hwloc/NCCL ("" unknown)
};

enum class PciKind { kHostBridge, kBridge, kDevice };

struct PciNode {
  PciKind kind = PciKind::kDevice;
  std::string busId;  // normalised; host bridges: "" (see `name`)
  int parent = -1;    // index into Topology::pci, -1: attached to the CPU side
  int numa = -1;      // index into Topology::numaNodes of the CPU-side parent
  int classId = -1;   // 16-bit PCI class (0x0302), -1 unknown
  int vendorId = -1;  // -1 unknown
  int deviceId = -1;
  double linkGBps = 0;  // PCIe link bandwidth per direction in GB/s, 0 unknown
  std::string name;     // model string when known
  std::string subtype;  // hwloc subtype ("NVSwitch") when known
  std::vector<int> children;
};

enum class GpuVendor { kNvidia, kAmd };

struct Gpu {
  int pci = -1;  // index into Topology::pci
  GpuVendor vendor = GpuVendor::kNvidia;
  bool vendorAssumed = false;  // NCCL file without vendor attribute
  int sm = 0;                  // compute capability * 10 when known (NCCL <gpu sm=>)
  int nvlinkGen = 0;           // 1..5 when known (from sm or PCI device id), 0 unknown
  std::string model;
  std::vector<std::string> osDevices;  // cuda0, nvml0, rsmi0, ...
};

enum class NicKind { kInfiniBand, kRoCE, kEfa, kEthernet, kWireless, kOther };
const char* nicKindName(NicKind kind);

struct Nic {
  int pci = -1;  // index into Topology::pci, -1 for a NIC with no PCI node
  NicKind kind = NicKind::kOther;
  std::vector<std::string> names;    // OS device names: mlx5_0, ib0, eth0, rdmap197s0, ...
  std::optional<int64_t> speedMbps;  // per port, Mb/s
  int ports = 0;                     // NCCL <net> elements (0 unknown)
  bool rdma = false;                 // has an OpenFabrics device or is IB/RoCE/EFA
  int numa = -1;                     // index into Topology::numaNodes
};

struct NvSwitch {
  std::string busId;  // normalised, "" unknown
  int pci = -1;       // index into Topology::pci when the file has the device
};

enum class LinkPeer { kGpu, kNvSwitch, kCpu };

struct NvLink {
  int gpu = -1;  // index into Topology::gpus
  LinkPeer peerKind = LinkPeer::kGpu;
  int peer = -1;               // gpus / nvSwitches / packages index
  int links = -1;              // number of NVLink links, -1 unknown
  int64_t bandwidthMBps = -1;  // sum over the links, MB/s per direction, -1 unknown
};

enum class Source { kHwlocLive, kHwlocXml, kNcclXml };

struct Topology {
  Source source = Source::kHwlocLive;
  std::string origin;    // file name or "hwloc live discovery"
  std::string hostName;  // "" unknown
  std::string arch;      // "x86_64", "ppc64le", ... ("" unknown)
  std::vector<Package> packages;
  std::vector<NumaNode> numaNodes;
  std::vector<PciNode> pci;
  std::vector<Gpu> gpus;
  std::vector<Nic> nics;
  std::vector<NvSwitch> nvSwitches;
  std::vector<NvLink> nvlinks;
  std::vector<std::string> loadWarnings;

  int totalCores() const;
  // NUMA index (into numaNodes) of a PCI node, -1 unknown.
  int numaOfPci(int pciIndex) const;
  // Package index of a NUMA index, falling back to the NUMA index itself.
  int socketOfNuma(int numaIndex) const;
  const std::string& gpuBusId(int gpu) const { return pci[gpus[gpu].pci].busId; }
  int findGpu(std::string_view busId) const;  // -1 when absent
  int findNic(std::string_view busId) const;  // -1 when absent
};

// Classification helpers shared by the loaders.
bool isGpuPci(int classId, int vendorId, int deviceId);
bool isNvSwitchPci(int classId, int vendorId, std::string_view subtype);
bool isNicClass(int classId);
// NVLink generation from a PCI device id (NVIDIA) or an SM version; 0 unknown.
int nvlinkGenFromDeviceId(int deviceId);
int nvlinkGenFromSm(int sm);
// Per-link NVLink bandwidth in MB/s per direction for a generation (unknown: 20000).
int64_t nvlinkPerLinkMBps(int gen);
// PCIe bandwidth per direction in GB/s from "16 GT/s" / "8.0 GT/s PCIe" and a width.
double pcieGBps(double gtPerSecond, int width);

}  // namespace tutti::topo
