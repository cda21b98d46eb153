#include "topology/binding.h"

#include <dirent.h>
#include <sched.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <set>

#include "common/error.h"
#include "tutti/config.h"

#if TUTTI_HAVE_HWLOC
#include <hwloc.h>
#endif

namespace tutti::topo {

BindMode parseBindMode(std::string_view s) {
  if (s.empty() || s == "none") return BindMode::kNone;
  if (s == "numa") return BindMode::kNuma;
  if (s == "core") return BindMode::kCore;
  fail(tuttiInvalidArgument, "TUTTI_BIND=", s, ": use none, numa or core");
}

const char* bindModeName(BindMode m) {
  switch (m) {
    case BindMode::kNuma:
      return "numa";
    case BindMode::kCore:
      return "core";
    default:
      return "none";
  }
}

int CpuLayout::cpuCount() const {
  int n = 0;
  for (const Node& node : nodes)
    for (const auto& core : node.cores) n += static_cast<int>(core.size());
  return n;
}

std::vector<Binding> planBinding(const CpuLayout& layout, int localRanks, BindMode mode) {
  std::vector<Binding> out;
  std::vector<int> usable;  // nodes with at least one CPU
  for (size_t i = 0; i < layout.nodes.size(); ++i)
    if (!layout.nodes[i].cores.empty()) usable.push_back(static_cast<int>(i));
  if (mode == BindMode::kNone || localRanks <= 0 || usable.empty()) return out;
  const int k = static_cast<int>(usable.size());
  std::vector<int> nodeOf(localRanks), firstOnNode(k, -1), countOnNode(k, 0);
  for (int i = 0; i < localRanks; ++i) {
    int j = static_cast<int>(static_cast<long>(i) * k / localRanks);
    nodeOf[i] = j;
    if (firstOnNode[j] < 0) firstOnNode[j] = i;
    ++countOnNode[j];
  }
  for (int i = 0; i < localRanks; ++i) {
    const int j = nodeOf[i];
    const CpuLayout::Node& node = layout.nodes[usable[j]];
    Binding b;
    b.node = usable[j];
    b.nodeOsIndex = node.osIndex;
    const long cores = static_cast<long>(node.cores.size());
    long lo = 0, hi = cores;
    if (mode == BindMode::kCore) {
      const long m = i - firstOnNode[j], c = countOnNode[j];
      if (c <= cores) {
        lo = m * cores / c;
        hi = (m + 1) * cores / c;
      } else {  // more ranks than cores: ranks share cores, evenly
        lo = m * cores / c;
        hi = lo + 1;
      }
    }
    for (long core = lo; core < hi; ++core)
      b.cpus.insert(b.cpus.end(), node.cores[core].begin(), node.cores[core].end());
    std::sort(b.cpus.begin(), b.cpus.end());
    out.push_back(std::move(b));
  }
  return out;
}

std::vector<int> parseCpuset(std::string_view hex) {
  // Comma-separated 32-bit words, most significant first; each may carry "0x". A set written
  // as one long word ("0xffffffffffff") is read as its 8-digit groups from the right.
  std::vector<std::string_view> words;
  size_t start = 0;
  for (;;) {
    size_t comma = hex.find(',', start);
    std::string_view w = hex.substr(start, comma == std::string_view::npos ? comma : comma - start);
    if (w.starts_with("0x") || w.starts_with("0X")) w.remove_prefix(2);
    words.push_back(w);
    if (comma == std::string_view::npos) break;
    start = comma + 1;
  }
  if (words.size() == 1 && words[0].size() > 8) {
    std::string_view w = words[0];
    words.clear();
    for (size_t end = w.size(); end > 0; end = end > 8 ? end - 8 : 0)
      words.insert(words.begin(), w.substr(end > 8 ? end - 8 : 0, end > 8 ? 8 : end));
  }
  std::vector<int> cpus;
  int base = 0;
  for (auto it = words.rbegin(); it != words.rend(); ++it, base += 32) {
    if (it->empty()) continue;
    std::string s(*it);
    char* end = nullptr;
    unsigned long v = std::strtoul(s.c_str(), &end, 16);
    if (!end || *end != '\0' || s.size() > 8)
      fail(tuttiInvalidArgument, "cpuset '", hex, "': word '", s, "' is not 32-bit hexadecimal");
    for (int bit = 0; bit < 32; ++bit)
      if (v & (1ul << bit)) cpus.push_back(base + bit);
  }
  std::sort(cpus.begin(), cpus.end());
  return cpus;
}

std::string cpuListString(const std::vector<int>& cpus) {
  std::string out;
  for (size_t i = 0; i < cpus.size();) {
    size_t j = i;
    while (j + 1 < cpus.size() && cpus[j + 1] == cpus[j] + 1) ++j;
    if (!out.empty()) out += ",";
    out += std::to_string(cpus[i]);
    if (j > i) out += "-" + std::to_string(cpus[j]);
    i = j + 1;
  }
  return out;
}

std::vector<int> currentAffinity() {
  std::vector<int> cpus;
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof set, &set) != 0) throwSystemError("sched_getaffinity");
  for (int c = 0; c < CPU_SETSIZE; ++c)
    if (CPU_ISSET(c, &set)) cpus.push_back(c);
  return cpus;
}

CpuLayout cpuLayoutOf(const Topology& topo) {
  CpuLayout l;
  for (const NumaNode& n : topo.numaNodes) {
    CpuLayout::Node node;
    node.osIndex = n.osIndex;
    if (!n.cpuset.empty())
      for (int c : parseCpuset(n.cpuset)) node.cores.push_back({c});
    l.nodes.push_back(std::move(node));
  }
  return l;
}

CpuLayout liveCpuLayout() {
  std::vector<int> allowedList = currentAffinity();
  std::set<int> allowed(allowedList.begin(), allowedList.end());
  CpuLayout l;
#if TUTTI_HAVE_HWLOC
  hwloc_topology_t t = nullptr;
  if (hwloc_topology_init(&t) == 0) {
    if (hwloc_topology_load(t) == 0) {
      int nn = hwloc_get_nbobjs_by_type(t, HWLOC_OBJ_NUMANODE);
      for (int i = 0; i < std::max(nn, 1); ++i) {
        hwloc_obj_t numa =
            nn > 0 ? hwloc_get_obj_by_type(t, HWLOC_OBJ_NUMANODE, i) : hwloc_get_root_obj(t);
        CpuLayout::Node node;
        node.osIndex = nn > 0 ? static_cast<int>(numa->os_index) : 0;
        int nc = hwloc_get_nbobjs_inside_cpuset_by_type(t, numa->cpuset, HWLOC_OBJ_CORE);
        bool byPu = nc <= 0;
        int count =
            byPu ? hwloc_get_nbobjs_inside_cpuset_by_type(t, numa->cpuset, HWLOC_OBJ_PU) : nc;
        for (int c = 0; c < count; ++c) {
          hwloc_obj_t core = hwloc_get_obj_inside_cpuset_by_type(
              t, numa->cpuset, byPu ? HWLOC_OBJ_PU : HWLOC_OBJ_CORE, c);
          std::vector<int> pus;
          unsigned id;
          hwloc_bitmap_foreach_begin(id, core->cpuset) {
            if (allowed.count(static_cast<int>(id))) pus.push_back(static_cast<int>(id));
          }
          hwloc_bitmap_foreach_end();
          if (!pus.empty()) node.cores.push_back(std::move(pus));
        }
        l.nodes.push_back(std::move(node));
      }
    }
    hwloc_topology_destroy(t);
  }
#endif
  if (l.cpuCount() == 0) {
    l.nodes.assign(1, {});
    l.nodes[0].osIndex = 0;
    for (int c : allowedList) l.nodes[0].cores.push_back({c});
  }
  return l;
}

void applyBinding(const std::vector<int>& cpus) {
  if (cpus.empty()) fail(tuttiInvalidArgument, "applyBinding: no CPUs");
  cpu_set_t set;
  CPU_ZERO(&set);
  for (int c : cpus) {
    if (c < 0 || c >= CPU_SETSIZE) fail(tuttiInvalidArgument, "applyBinding: CPU ", c);
    CPU_SET(c, &set);
  }
  // Every thread of the process (threads started earlier keep their own mask otherwise).
  DIR* dir = opendir("/proc/self/task");
  bool any = false;
  if (dir) {
    while (dirent* e = readdir(dir)) {
      if (e->d_name[0] == '.') continue;
      pid_t tid = static_cast<pid_t>(std::atoi(e->d_name));
      if (tid > 0 && sched_setaffinity(tid, sizeof set, &set) == 0) any = true;
    }
    closedir(dir);
  }
  if (!any && sched_setaffinity(0, sizeof set, &set) != 0)
    throwSystemError("sched_setaffinity(" + cpuListString(cpus) + ")");
}

}  // namespace tutti::topo
