// CPU binding of host-memory ranks (TUTTI_BIND): which CPUs each of the L ranks of one host
// should run on, so that neighbouring ranks (adjacent in rings, partners in the first butterfly
// rounds) share a NUMA node and its memory, and ranks do not migrate across nodes.
//   none  leave the process where the launcher put it (default)
//   numa  block distribution over NUMA nodes: local rank i -> node floor(i * K / L), all its CPUs
//   core  the same node, then a share of that node's cores (at least one, shared when L > cores)
// The plan is a pure function of the CPU layout (tested on synthetic and file layouts); the
// layout of this machine comes from hwloc, restricted to the CPUs this process may use.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "topology/model.h"

namespace tutti::topo {

enum class BindMode { kNone, kNuma, kCore };

// Parses "none" | "numa" | "core"; throws tutti::Error (invalid argument) otherwise.
BindMode parseBindMode(std::string_view s);
const char* bindModeName(BindMode m);

// NUMA nodes in order, each a list of cores, each a list of OS CPU (PU) indices.
struct CpuLayout {
  struct Node {
    int osIndex = -1;
    std::vector<std::vector<int>> cores;
  };
  std::vector<Node> nodes;
  int cpuCount() const;
};

struct Binding {
  int node = -1;          // index into CpuLayout::nodes
  int nodeOsIndex = -1;   // the node's OS index
  std::vector<int> cpus;  // OS CPU indices, ascending
};

// One binding per local rank (empty for kNone or an empty layout).
std::vector<Binding> planBinding(const CpuLayout& layout, int localRanks, BindMode mode);

// This machine through hwloc (cores grouped by NUMA node), else one node of the CPUs; both
// restricted to the CPUs in this process's affinity mask.
CpuLayout liveCpuLayout();
// From a loaded topology: each NUMA node's cpuset, one "core" per CPU (files keep no cores).
CpuLayout cpuLayoutOf(const Topology& topo);
// Parses a hex cpuset as hwloc and NCCL write it ("0x000000ff,0xffff0000", "ffff,ffffffff").
std::vector<int> parseCpuset(std::string_view hex);
// "0-3,8-11"
std::string cpuListString(const std::vector<int>& cpus);

// Binds every thread of this process to `cpus` (sched_setaffinity per task); throws on failure.
void applyBinding(const std::vector<int>& cpus);
// The CPUs this thread may run on.
std::vector<int> currentAffinity();

}  // namespace tutti::topo
