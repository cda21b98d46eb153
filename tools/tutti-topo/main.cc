// tutti-topo: prints the topology tutti detects (or loads with --file): a GPU/NIC matrix in
// the style of `nvidia-smi topo -m`, NUMA affinities, each GPU's nearest NIC, the ring built
// for --ranks N with the trees the tree algorithms build over it (patterns::treesForOrder, as the
// communicator logs them), and warnings. --json prints a JSON document (its "tree" is the
// topology's recursive-bisection tree, topo::binaryTree).
#include <cstdio>
#include <cstring>
#include <iomanip>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "algorithms/patterns/patterns.h"
#include "common/error.h"
#include "topology/binding.h"
#include "topology/json.h"
#include "topology/load.h"
#include "topology/paths.h"
#include "topology/rings.h"

namespace topo = tutti::topo;

namespace {

void usage(std::ostream& os) {
  os << "usage: tutti-topo [--file FILE] [--json] [--ranks N]\n"
        "  --file FILE  load an hwloc XML (v1/v2) or NCCL topology XML file instead of\n"
        "               probing this machine (TUTTI_TOPO_FILE does the same)\n"
        "  --json       print a JSON document (gpus, nics, nvlink, paths, numa_nodes, ...)\n"
        "  --ranks N    show the ring and the algorithms' trees for N ranks (default: one per\n"
        "               GPU)\n"
        "  --bind N     print the CPU binding (TUTTI_BIND) of N host-memory ranks on this\n"
        "               machine (cores from hwloc) or on --file's NUMA cpusets\n"
        "  --bind-mode M  numa (default) or core\n";
}

std::string nicLabel(const topo::Topology& t, int i) {
  const auto& n = t.nics[i];
  std::string s = n.names.empty() ? "?" : n.names[0];
  for (size_t k = 1; k < n.names.size(); ++k) s += "," + n.names[k];
  return s;
}

void printText(const topo::Topology& t, int ranks) {
  std::cout << "Topology: " << t.origin;
  if (!t.hostName.empty()) std::cout << " (host " << t.hostName << ")";
  if (!t.arch.empty()) std::cout << " [" << t.arch << "]";
  std::cout << "\nPackages: " << t.packages.size() << ", NUMA nodes: " << t.numaNodes.size()
            << ", cores: " << t.totalCores() << "\n";
  for (const auto& n : t.numaNodes) {
    std::cout << "  NUMA " << n.osIndex << ": package "
              << (n.package >= 0 ? t.packages[n.package].osIndex : -1) << ", " << n.cores
              << " cores, " << n.pus << " PUs, " << (n.memoryBytes >> 20) << " MiB";
    if (!n.cpuset.empty()) std::cout << ", cpuset " << n.cpuset;
    std::cout << "\n";
  }
  std::vector<topo::DeviceRef> devs;
  std::vector<std::string> names;
  for (size_t i = 0; i < t.gpus.size(); ++i) {
    devs.push_back({0, topo::DevKind::kGpu, int(i)});
    names.push_back("GPU" + std::to_string(i));
  }
  for (size_t i = 0; i < t.nics.size(); ++i) {
    devs.push_back({0, topo::DevKind::kNic, int(i)});
    names.push_back("NIC" + std::to_string(i));
  }
  if (!devs.empty()) {
    std::cout << "\n" << std::setw(8) << "";
    for (const auto& n : names) std::cout << std::setw(7) << n;
    std::cout << "  NUMA\n";
    for (size_t i = 0; i < devs.size(); ++i) {
      std::cout << std::setw(8) << std::left << names[i] << std::right;
      for (size_t j = 0; j < devs.size(); ++j) {
        std::cout << std::setw(7)
                  << (i == j ? "X" : topo::pathBetween(t, devs[i], devs[j]).label());
      }
      int numa = devs[i].kind == topo::DevKind::kGpu ? t.numaOfPci(t.gpus[devs[i].index].pci)
                                                     : t.nics[devs[i].index].numa;
      std::cout << "  " << (numa >= 0 ? std::to_string(t.numaNodes[numa].osIndex) : "N/A") << "\n";
    }
    std::cout << "\nLegend: X self, NV# NVLink (# links), PIX one PCIe switch, PXB several PCIe "
                 "switches, PHB host bridge, NODE same NUMA node, SYS across NUMA/sockets\n\n";
    for (size_t i = 0; i < t.gpus.size(); ++i) {
      const auto& g = t.gpus[i];
      std::cout << "  GPU" << i << ": " << t.gpuBusId(int(i)) << " "
                << (g.vendor == topo::GpuVendor::kAmd ? "AMD" : "NVIDIA")
                << (g.model.empty() ? "" : " " + g.model);
      int nic = topo::nearestNic(t, int(i));
      if (nic >= 0) {
        auto p =
            topo::pathBetween(t, {0, topo::DevKind::kGpu, int(i)}, {0, topo::DevKind::kNic, nic});
        std::cout << ", nearest NIC" << nic << " (" << p.label() << ")";
      }
      std::cout << "\n";
    }
    for (size_t i = 0; i < t.nics.size(); ++i) {
      const auto& n = t.nics[i];
      std::cout << "  NIC" << i << ": " << (n.pci >= 0 ? t.pci[n.pci].busId : "-") << " "
                << nicLabel(t, int(i)) << " " << topo::nicKindName(n.kind);
      if (n.speedMbps) std::cout << " " << *n.speedMbps / 1000 << " Gb/s";
      if (n.ports > 1) std::cout << " x" << n.ports << " ports";
      std::cout << "\n";
    }
  }
  if (!t.nvSwitches.empty()) std::cout << "  NVSwitches: " << t.nvSwitches.size() << "\n";
  if (ranks <= 0)
    ranks = t.gpus.empty() ? static_cast<int>(t.numaNodes.size()) : int(t.gpus.size());
  if (ranks >= 2) {
    auto rdevs = topo::devicesForRanks(t, ranks);
    auto ring = topo::bestRing(t, rdevs);
    auto s = topo::scoreRing(t, rdevs, ring);
    std::cout << "\nRing for " << ranks << " ranks:";
    for (int r : ring) std::cout << " " << r;
    std::cout << "\n  bottleneck " << s.bottleneckMBps / 1000.0 << " GB/s, " << s.slowEdges
              << " SYS/NET edges, " << s.socketChanges << " socket/host changes, total "
              << s.totalMBps / 1000.0 << " GB/s\n";
    // The trees the tree algorithms build over this ring (rank r = device r).
    for (const auto& nt : tutti::algo::patterns::treesForOrder(ring, ranks))
      std::cout << "Tree " << tutti::algo::patterns::treeLine(nt) << "\n";
  }
  auto warnings = topo::topologyWarnings(t);
  if (!warnings.empty()) {
    std::cout << "\nWarnings:\n";
    for (const auto& w : warnings) std::cout << "  - " << w << "\n";
  }
}

void printBinding(const topo::CpuLayout& layout, int n, topo::BindMode mode) {
  std::cout << "CPU binding for " << n << " ranks per host (TUTTI_BIND=" << topo::bindModeName(mode)
            << "), " << layout.nodes.size() << " NUMA node(s), " << layout.cpuCount()
            << " CPU(s):\n";
  auto plan = topo::planBinding(layout, n, mode);
  if (plan.empty()) {
    std::cout << "  (no CPUs known: the file has no NUMA cpusets)\n";
    return;
  }
  for (int i = 0; i < n; ++i)
    std::cout << "  local rank " << i << ": NUMA node " << plan[i].nodeOsIndex << ", CPUs "
              << topo::cpuListString(plan[i].cpus) << "\n";
  if (n > layout.cpuCount())
    std::cout << "  note: " << n << " ranks share " << layout.cpuCount()
              << " CPUs (oversubscribed: waiting ranks yield, see docs/tuning.md)\n";
  if (layout.nodes.size() > 1 && mode == topo::BindMode::kNone)
    std::cout
        << "  advice: several NUMA nodes: TUTTI_BIND=numa keeps ring neighbours on one node\n";
}

// A rank count 1..max for `flag`; prints the error and returns false otherwise.
bool parseCount(const char* flag, const char* text, long max, int* out) {
  char* end = nullptr;
  long v = std::strtol(text, &end, 10);
  if (*end != '\0' || v < 1 || v > max) {
    std::cerr << "tutti-topo: " << flag << " needs a positive integer, got '" << text << "'\n";
    return false;
  }
  *out = static_cast<int>(v);
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  std::string file;
  bool json = false;
  int ranks = 0;
  int bindRanks = 0;
  topo::BindMode bindMode = topo::BindMode::kNuma;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--file" && i + 1 < argc) {
      file = argv[++i];
    } else if (a == "--json") {
      json = true;
    } else if (a == "--ranks" && i + 1 < argc) {
      if (!parseCount("--ranks", argv[++i], 1 << 20, &ranks)) return 2;
    } else if (a == "--bind" && i + 1 < argc) {
      if (!parseCount("--bind", argv[++i], 1 << 16, &bindRanks)) return 2;
    } else if (a == "--bind-mode" && i + 1 < argc) {
      try {
        bindMode = topo::parseBindMode(argv[++i]);
      } catch (const std::exception& e) {
        std::cerr << "tutti-topo: --bind-mode: " << e.what() << "\n";
        return 2;
      }
    } else if (a == "--help" || a == "-h") {
      usage(std::cout);
      return 0;
    } else {
      std::cerr << "tutti-topo: unknown argument '" << a << "'\n";
      usage(std::cerr);
      return 2;
    }
  }
  try {
    if (bindRanks > 0) {
      topo::CpuLayout layout =
          file.empty() ? topo::liveCpuLayout() : topo::cpuLayoutOf(topo::loadTopologyFile(file));
      printBinding(layout, bindRanks, bindMode);
      return 0;
    }
    topo::Topology t = file.empty() ? topo::discoverTopology() : topo::loadTopologyFile(file);
    if (json) {
      std::cout << topo::topologyJson(t, ranks);
    } else {
      printText(t, ranks);
    }
  } catch (const std::exception& e) {
    std::cerr << "tutti-topo: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
