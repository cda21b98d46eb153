// Steps shared by all loaders once the raw model is filled: sort GPUs and NICs by bus id
// (the order nvidia-smi and CUDA_DEVICE_ORDER=PCI_BUS_ID use), derive NVLink generations,
// link counts / bandwidths, NIC kinds and NUMA affinities.
#include <algorithm>
#include <numeric>

#include "common/error.h"
#include "topology/binding.h"
#include "topology/loaders.h"

namespace tutti::topo::detail {
namespace {

NicKind guessNicKind(const Topology& t, const Nic& n) {
  int cls = n.pci >= 0 ? t.pci[n.pci].classId : -1;
  int vendor = n.pci >= 0 ? t.pci[n.pci].vendorId : -1;
  int device = n.pci >= 0 ? t.pci[n.pci].deviceId : -1;
  bool efaName = false, mlxName = false;
  for (const auto& name : n.names) {
    if (name.rfind("rdmap", 0) == 0 || name.rfind("efa", 0) == 0) efaName = true;
    if (name.rfind("mlx", 0) == 0) mlxName = true;
  }
  if ((vendor == 0x1d0f && (device & 0xfff0) == 0xefa0) || efaName) return NicKind::kEfa;
  if (cls == 0x0207 || cls == 0x0c06) return NicKind::kInfiniBand;
  if (cls == 0x0280) return NicKind::kWireless;
  if (cls == 0x0200)
    return (vendor == 0x15b3 || mlxName || n.rdma) ? NicKind::kRoCE : NicKind::kEthernet;
  if (cls >= 0 && (cls >> 8) == 0x02) return NicKind::kOther;
  if (mlxName) return NicKind::kInfiniBand;  // NCCL <nic> without a <pci> parent
  return NicKind::kOther;
}

}  // namespace

void finalise(Topology& t) {
  // NUMA cpusets are parsed again when ranks are bound: a set the binding code cannot read is
  // the file's error, named now.
  for (const NumaNode& n : t.numaNodes) {
    try {
      (void)parseCpuset(n.cpuset);
    } catch (const Error& e) {
      fail(tuttiInvalidArgument, "topology file ", t.origin, ": NUMA node ", n.osIndex, ": ",
           std::string(e.what()));
    }
  }
  // Sort GPUs by bus id and remap NVLink indices.
  std::vector<int> order(t.gpus.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) {
    return t.pci[t.gpus[a].pci].busId < t.pci[t.gpus[b].pci].busId;
  });
  std::vector<int> newIndex(t.gpus.size());
  std::vector<Gpu> gpus;
  for (size_t i = 0; i < order.size(); ++i) {
    newIndex[order[i]] = static_cast<int>(i);
    gpus.push_back(std::move(t.gpus[order[i]]));
  }
  t.gpus = std::move(gpus);
  for (auto& l : t.nvlinks) {
    l.gpu = newIndex[l.gpu];
    if (l.peerKind == LinkPeer::kGpu) l.peer = newIndex[l.peer];
  }
  std::stable_sort(t.nics.begin(), t.nics.end(), [&](const Nic& a, const Nic& b) {
    if ((a.pci < 0) != (b.pci < 0)) return a.pci >= 0;
    if (a.pci < 0) return false;
    return t.pci[a.pci].busId < t.pci[b.pci].busId;
  });
  // NVSwitches by bus id too; NVLink peers follow.
  std::vector<int> sw(t.nvSwitches.size());
  std::iota(sw.begin(), sw.end(), 0);
  std::stable_sort(sw.begin(), sw.end(),
                   [&](int a, int b) { return t.nvSwitches[a].busId < t.nvSwitches[b].busId; });
  std::vector<int> swIndex(sw.size());
  std::vector<NvSwitch> switches;
  for (size_t i = 0; i < sw.size(); ++i) {
    swIndex[sw[i]] = static_cast<int>(i);
    switches.push_back(std::move(t.nvSwitches[sw[i]]));
  }
  t.nvSwitches = std::move(switches);
  for (auto& l : t.nvlinks) {
    if (l.peerKind == LinkPeer::kNvSwitch) l.peer = swIndex[l.peer];
  }

  for (auto& g : t.gpus) {
    int dev = t.pci[g.pci].deviceId;
    g.nvlinkGen = g.sm ? nvlinkGenFromSm(g.sm) : 0;
    if (!g.nvlinkGen && g.vendor == GpuVendor::kNvidia) g.nvlinkGen = nvlinkGenFromDeviceId(dev);
  }
  for (auto& n : t.nics) {
    if (n.pci >= 0) n.numa = t.numaOfPci(n.pci);
    if (n.kind == NicKind::kOther) n.kind = guessNicKind(t, n);
    if (n.kind == NicKind::kInfiniBand || n.kind == NicKind::kRoCE || n.kind == NicKind::kEfa) {
      n.rdma = true;
    }
  }
  for (auto& l : t.nvlinks) {
    int gen = t.gpus[l.gpu].nvlinkGen;
    if (gen == 0) continue;
    int64_t per = nvlinkPerLinkMBps(gen);
    if (l.links > 0 && l.bandwidthMBps < 0) l.bandwidthMBps = l.links * per;
    if (l.links < 0 && l.bandwidthMBps > 0 && l.bandwidthMBps % per == 0) {
      l.links = static_cast<int>(l.bandwidthMBps / per);
    }
  }
}

}  // namespace tutti::topo::detail
