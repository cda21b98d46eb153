// What the topology fuzz targets do with a file that loaded: check that every index in the
// model points inside its table, then run what a communicator and tutti-topo run on a loaded
// topology (paths, rings, trees, CPU binding plan, JSON). A dangling index aborts.
#pragma once

#include <string>

#include "fuzz_util.h"
#include "topology/binding.h"
#include "topology/json.h"
#include "topology/model.h"
#include "topology/paths.h"
#include "topology/rings.h"

namespace tutti::fuzz {

inline void checkIndex(int index, size_t size, bool optional, const char* what) {
  if ((optional && index == -1) || (index >= 0 && static_cast<size_t>(index) < size)) return;
  bug(std::string("loaded topology: ") + what + " index " + std::to_string(index) +
      " outside its table of " + std::to_string(size));
}

inline void checkModel(const topo::Topology& t) {
  for (const auto& n : t.numaNodes) checkIndex(n.package, t.packages.size(), true, "NUMA package");
  for (size_t i = 0; i < t.pci.size(); ++i) {
    const auto& p = t.pci[i];
    checkIndex(p.parent, t.pci.size(), true, "PCI parent");
    if (p.parent >= static_cast<int>(i)) bug("loaded topology: PCI parent after its child");
    checkIndex(p.numa, t.numaNodes.size(), true, "PCI NUMA");
    for (int c : p.children) checkIndex(c, t.pci.size(), false, "PCI child");
  }
  for (const auto& g : t.gpus) checkIndex(g.pci, t.pci.size(), false, "GPU PCI");
  for (const auto& n : t.nics) {
    checkIndex(n.pci, t.pci.size(), true, "NIC PCI");
    checkIndex(n.numa, t.numaNodes.size(), true, "NIC NUMA");
  }
  for (const auto& s : t.nvSwitches) checkIndex(s.pci, t.pci.size(), true, "NVSwitch PCI");
  for (const auto& l : t.nvlinks) {
    checkIndex(l.gpu, t.gpus.size(), false, "NVLink GPU");
    size_t peers = l.peerKind == topo::LinkPeer::kGpu        ? t.gpus.size()
                   : l.peerKind == topo::LinkPeer::kNvSwitch ? t.nvSwitches.size()
                                                             : t.packages.size();
    checkIndex(l.peer, peers, false, "NVLink peer");
  }
}

// The consumers are bounded to small device counts: the exact ring search is exponential by
// design (it runs up to 8 devices) and a fuzzed file may list thousands of GPUs.
inline void exerciseTopology(const topo::Topology& t) {
  checkModel(t);
  (void)topo::topologyWarnings(t);
  (void)topo::interSocketGBps(t);
  const int gpus = static_cast<int>(t.gpus.size());
  const int numas = static_cast<int>(t.numaNodes.size());
  if (gpus <= 16 && numas <= 16 && t.nics.size() <= 32) {
    (void)topo::topologyJson(t, 8);
    for (int g = 0; g < gpus; ++g) {
      (void)topo::nearestNic(t, g);
      for (int h = 0; h < gpus; ++h)
        (void)topo::pathBetween(t, {0, topo::DevKind::kGpu, g}, {0, topo::DevKind::kGpu, h});
    }
    for (int n = 0; n < static_cast<int>(t.nics.size()); ++n)
      (void)topo::pathBetween(t, {0, topo::DevKind::kCpu, 0}, {0, topo::DevKind::kNic, n});
    (void)topo::devicePositions(t, topo::DevKind::kGpu);
    (void)topo::devicePositions(t, topo::DevKind::kCpu);
  }
  topo::CpuLayout layout = topo::cpuLayoutOf(t);
  if (layout.cpuCount() <= 4096) (void)topo::planBinding(layout, 3, topo::BindMode::kCore);
}

}  // namespace tutti::fuzz
