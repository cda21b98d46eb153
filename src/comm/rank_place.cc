#include "comm/rank_place.h"

#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>
#include <mutex>
#include <sstream>

#include "comm/place_topology.h"
#include "common/env.h"
#include "common/error.h"
#include "common/host_name.h"
#include "common/log.h"
#include "topology/binding.h"
#include "topology/json.h"
#include "topology/load.h"
#include "topology/paths.h"
#include "topology/rings.h"
#include "tutti/config.h"
#if TUTTI_HAVE_CUDA
#include "reduce/cuda/cuda_probe.h"
#endif

namespace tutti {
namespace {

// One host topology with what the places need from it, made once per process and source.
struct HostTopology {
  topo::Topology t;
  std::string origin;
  int nic = -1;  // the NIC the host's cross-host traffic leaves through (-1 none)
  // Device rings: position of each GPU / NUMA node (by index) in the best ring over them.
  std::vector<int> gpuPos, numaPos;
};

// The best NIC of the topology for which `eligible(nic)` holds: RDMA NICs first, then the
// fastest port, then the lowest index; -1 when none qualifies.
template <typename Eligible>
int bestNic(const topo::Topology& t, Eligible eligible) {
  auto key = [](const topo::Nic& x) {
    return std::make_pair(x.rdma ? 0 : 1, -x.speedMbps.value_or(0));
  };
  int best = -1;
  for (int i = 0; i < static_cast<int>(t.nics.size()); ++i)
    if (eligible(t.nics[i]) && (best < 0 || key(t.nics[i]) < key(t.nics[best]))) best = i;
  return best;
}

int hostNic(const topo::Topology& t) {
  return bestNic(t, [](const topo::Nic&) { return true; });
}

std::unique_ptr<HostTopology> makeHostTopology(topo::Topology t, std::string origin) {
  auto h = std::make_unique<HostTopology>();
  h->t = std::move(t);
  h->origin = std::move(origin);
  h->nic = hostNic(h->t);
  h->gpuPos = topo::devicePositions(h->t, topo::DevKind::kGpu);
  h->numaPos = topo::devicePositions(h->t, topo::DevKind::kCpu);
  return h;
}

// A probed host's origin: "hwloc" and a digest of its hardware (host name and memory sizes
// left out), so ranks on identical machines share one cost model and ranks on different
// machines never do (each rank models every host by its own topology).
std::string probeOrigin(const topo::Topology& probed) {
  topo::Topology t = probed;
  t.hostName.clear();
  t.origin.clear();
  for (auto& n : t.numaNodes) n.memoryBytes = 0;
  std::string json = topo::topologyJson(t);
  uint64_t h = 1469598103934665603ull;  // FNV-1a
  for (unsigned char c : json) h = (h ^ c) * 1099511628211ull;
  char text[32];
  std::snprintf(text, sizeof text, "hwloc#%016llx", static_cast<unsigned long long>(h));
  return text;
}

// topo::discoverTopology() (TUTTI_TOPO_FILE's topology, else this machine's through hwloc;
// TUTTI_TOPO_DUMP_FILE written), once per process and file; nullptr when probing failed
// (warned once). Load errors of a file throw.
const HostTopology* hostTopology() {
  static std::mutex mutex;
  static std::map<std::string, std::unique_ptr<HostTopology>> cache;
  static bool probeFailed = false;
  std::string file = env::getString("TUTTI_TOPO_FILE");
  std::lock_guard<std::mutex> lock(mutex);
  auto it = cache.find(file);
  if (it != cache.end()) return it->second.get();
  if (!file.empty()) {
    // A file that does not load fails every init with the same message (loaded once).
    static std::map<std::string, std::string> failed;
    auto f = failed.find(file);
    if (f == failed.end()) {
      try {
        auto h = makeHostTopology(topo::discoverTopology(), file);
        return cache.emplace(file, std::move(h)).first->second.get();
      } catch (const std::exception& e) {
        f = failed.emplace(file, e.what()).first;
      }
    }
    fail(tuttiInvalidArgument, "TUTTI_TOPO_FILE=", file,
         " is not a topology tutti can load: ", f->second);
  }
  if (probeFailed) return nullptr;
  try {
    topo::Topology t = topo::discoverTopology();
    std::string origin = probeOrigin(t);
    auto h = makeHostTopology(std::move(t), std::move(origin));
    return cache.emplace(file, std::move(h)).first->second.get();
  } catch (const std::exception& e) {
    probeFailed = true;
    TUTTI_WARN(kTopo,
               "topology probe failed (" << e.what() << "); rings follow host and rank order only");
    return nullptr;
  }
}

bool parseIndex(std::string_view s, int* out) {
  if (s.empty()) return false;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), *out);
  return ec == std::errc() && end == s.data() + s.size() && *out >= 0;
}

// The local rank a launcher gave this process, -1 if none did.
int launcherLocalRank() {
  for (const char* name :
       {"LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID", "SLURM_LOCALID"}) {
    const char* v = std::getenv(name);
    int r = -1;
    if (v != nullptr && parseIndex(v, &r)) return r;
  }
  return -1;
}

struct DeviceId {
  topo::DevKind kind = topo::DevKind::kCpu;
  int index = -1;
};

std::string deviceName(DeviceId d) {
  if (d.index < 0) return "";
  return (d.kind == topo::DevKind::kGpu ? "gpu:" : "numa:") + std::to_string(d.index);
}

DeviceId parseDeviceName(const std::string& s) {
  DeviceId d;
  int i = -1;
  if (s.rfind("gpu:", 0) == 0 && parseIndex(std::string_view(s).substr(4), &i)) {
    d = {topo::DevKind::kGpu, i};
  } else if (s.rfind("numa:", 0) == 0 && parseIndex(std::string_view(s).substr(5), &i)) {
    d = {topo::DevKind::kCpu, i};
  }
  return d;
}

// TUTTI_TOPO_DEVICE: "gpu:N", "numa:N", "N" (a GPU when the topology has GPUs, else a NUMA
// node), a GPU's PCI bus id, or "local" (the launcher's local rank, modulo the device count).
DeviceId deviceFromSetting(const topo::Topology& t, const std::string& spec,
                           const std::string& origin) {
  const int gpus = static_cast<int>(t.gpus.size());
  const int nodes = static_cast<int>(t.numaNodes.size());
  auto bad = [&](const std::string& why) {
    fail(tuttiInvalidArgument, "TUTTI_TOPO_DEVICE=", spec, ": ", why, " (topology ", origin, ": ",
         gpus, " GPU(s), ", nodes, " NUMA node(s))");
  };
  DeviceId d = parseDeviceName(spec);
  int i = -1;
  if (spec == "local") {
    int local = launcherLocalRank();
    if (local < 0) bad("no local rank (LOCAL_RANK, OMPI_COMM_WORLD_LOCAL_RANK, SLURM_LOCALID)");
    if (gpus > 0) return {topo::DevKind::kGpu, local % gpus};
    if (nodes > 0) return {topo::DevKind::kCpu, local % nodes};
    bad("the topology has neither GPUs nor NUMA nodes");
  } else if (parseIndex(spec, &i)) {
    d = gpus > 0 ? DeviceId{topo::DevKind::kGpu, i} : DeviceId{topo::DevKind::kCpu, i};
  } else if (d.index < 0) {
    auto bus = topo::normaliseBusId(spec);
    if (!bus) bad("use gpu:N, numa:N, N, a GPU's PCI bus id or local");
    d = {topo::DevKind::kGpu, t.findGpu(*bus)};
    if (d.index < 0) bad("no GPU with that bus id");
  }
  if (d.kind == topo::DevKind::kGpu && d.index >= gpus) bad("no such GPU");
  if (d.kind == topo::DevKind::kCpu && d.index >= nodes) bad("no such NUMA node");
  return d;
}

// The NUMA node holding every CPU this thread may run on, -1 when it spans several.
int numaOfAffinity(const topo::Topology& t) {
  std::vector<int> mine = topo::currentAffinity();
  if (mine.empty()) return -1;
  for (int n = 0; n < static_cast<int>(t.numaNodes.size()); ++n) {
    std::vector<int> cpus = topo::parseCpuset(t.numaNodes[n].cpuset);
    std::sort(cpus.begin(), cpus.end());
    if (std::all_of(mine.begin(), mine.end(),
                    [&](int c) { return std::binary_search(cpus.begin(), cpus.end(), c); }))
      return n;
  }
  return -1;
}

// The topology's GPU that this process drives (its current or only active CUDA context),
// found by PCI bus id as NCCL does; index -1 when it drives none or the topology lacks it.
DeviceId drivenGpu(const topo::Topology& t, const std::string& origin) {
#if TUTTI_HAVE_CUDA
  std::string why;
  std::string busText = drivenGpuBusId(&why);
  if (busText.empty()) {
    TUTTI_TRACE(kTopo, "no GPU driven by this process (" << why << ")");
    return {};
  }
  auto bus = topo::normaliseBusId(busText);
  int index = bus ? t.findGpu(*bus) : -1;
  if (index < 0) {
    TUTTI_INFO(kTopo, "this process drives the GPU at "
                          << busText << ", which topology " << origin
                          << " does not list: placed by its NUMA node");
    return {};
  }
  return {topo::DevKind::kGpu, index};
#else
  (void)t;
  (void)origin;
  return {};
#endif
}

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> out;
  std::string cur;
  std::istringstream in(s);
  while (std::getline(in, cur, sep)) out.push_back(cur);
  if (!s.empty() && s.back() == sep) out.emplace_back();
  return out;
}

}  // namespace

RankPlace describeLocalPlace() {
  RankPlace p;
  rlimit lim{};
  if (::getrlimit(RLIMIT_NOFILE, &lim) == 0 && lim.rlim_cur != RLIM_INFINITY)
    p.fdLimit = static_cast<long>(lim.rlim_cur);
  std::string spec = env::getString("TUTTI_TOPO_DEVICE");
  const HostTopology* h = hostTopology();
  if (h == nullptr) {
    TUTTI_CHECK_ARG(spec.empty(), "TUTTI_TOPO_DEVICE=", spec,
                    " needs a topology (TUTTI_TOPO_FILE, or hwloc)");
    return p;
  }
  p.origin = h->origin;
  p.cpus = topo::cpuListString(topo::currentAffinity());
  DeviceId d;
  if (!spec.empty()) {
    d = deviceFromSetting(h->t, spec, h->origin);
  } else {
    d = drivenGpu(h->t, h->origin);
    if (d.index < 0) d = {topo::DevKind::kCpu, numaOfAffinity(h->t)};
  }
  if (d.index < 0) return p;
  p.device = deviceName(d);
  p.devicePos = d.kind == topo::DevKind::kGpu ? h->gpuPos[d.index] : h->numaPos[d.index];
  int near = -1;
  if (d.kind == topo::DevKind::kGpu) {
    near = topo::nearestNic(h->t, d.index);
  } else {
    near = bestNic(h->t, [&](const topo::Nic& n) { return n.numa == d.index; });
  }
  if (near < 0) near = h->nic;
  if (near >= 0) {
    const topo::Nic& n = h->t.nics[near];
    p.nearNics = n.names;
    p.nearNic = (n.names.empty() ? "nic" + std::to_string(near) : n.names.front()) + " " +
                topo::nicKindName(n.kind) +
                (n.speedMbps ? " " + std::to_string(*n.speedMbps) + " Mb/s" : "");
  }
  if (h->nic >= 0) {
    topo::Path path =
        topo::pathBetween(h->t, {0, d.kind, d.index}, {0, topo::DevKind::kNic, h->nic});
    p.nicClass = static_cast<int>(path.cls);
    const auto& names = h->t.nics[h->nic].names;
    p.nic = names.empty() ? "nic" + std::to_string(h->nic) : names.front();
  }
  return p;
}

const topo::Topology* localTopology() {
  const HostTopology* h = hostTopology();
  return h == nullptr ? nullptr : &h->t;
}

std::optional<topo::DeviceRef> deviceOfPlace(const RankPlace& place, int host) {
  DeviceId d = parseDeviceName(place.device);
  if (d.index < 0) return std::nullopt;
  return topo::DeviceRef{host, d.kind, d.index};
}

std::string encodePlace(const RankPlace& p) {
  std::ostringstream os;
  os << p.device << '|' << p.devicePos << '|' << p.nicClass << '|' << p.nic << '|' << p.cpus << '|'
     << p.nearNic << '|' << p.fdLimit << '|' << p.origin;
  std::string s = os.str();
  std::replace(s.begin(), s.end(), '\n', ' ');
  return s;
}

RankPlace decodePlace(const std::string& text, int rank) {
  std::vector<std::string> f = split(text, '|');
  RankPlace p;
  if (f.size() < 8) fail(tuttiInternalError, "malformed place record from rank ", rank, ": ", text);
  p.device = f[0];
  try {
    p.devicePos = std::stoi(f[1]);
    p.nicClass = std::stoi(f[2]);
    p.fdLimit = std::stol(f[6]);
  } catch (const std::exception&) {
    fail(tuttiInternalError, "malformed place record from rank ", rank, ": ", text);
  }
  p.nic = f[3];
  p.cpus = f[4];
  p.nearNic = f[5];
  // The origin (a file name) may itself hold '|'.
  p.origin = f[7];
  for (size_t i = 8; i < f.size(); ++i) p.origin += "|" + f[i];
  return p;
}

std::string localHopClass(const std::string& deviceA, const std::string& deviceB) {
  DeviceId a = parseDeviceName(deviceA), b = parseDeviceName(deviceB);
  if (a.index < 0 || b.index < 0) return "?";
  const HostTopology* h = hostTopology();
  if (h == nullptr) return "?";
  auto valid = [&](DeviceId d) {
    return d.index < static_cast<int>(d.kind == topo::DevKind::kGpu ? h->t.gpus.size()
                                                                    : h->t.numaNodes.size());
  };
  if (!valid(a) || !valid(b)) return "?";
  return topo::pathBetween(h->t, {0, a.kind, a.index}, {0, b.kind, b.index}).label();
}

std::string hardwareIdentity(const RankPlace& p) {
  if (!p.origin.empty()) return p.origin;
  return "host:" + hostName();
}

}  // namespace tutti
