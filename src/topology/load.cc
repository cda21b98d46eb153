#include "topology/load.h"

#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <sstream>
#include <thread>

#include "common/env.h"
#include "common/error.h"
#include "common/log.h"
#include "topology/json.h"
#include "topology/loaders.h"
#include "topology/xml.h"
#include "tutti/config.h"

namespace tutti::topo {
namespace {

std::string readFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throwSystemError("cannot open topology file " + path);
  std::ostringstream ss;
  ss << in.rdbuf();
  if (in.bad()) throwSystemError("cannot read topology file " + path);
  return ss.str();
}

FileFormat formatOf(const xml::Element& root, std::string_view name) {
  if (root.name == "system") return FileFormat::kNccl;
  if (root.name != "topology") {
    fail(tuttiInvalidArgument, "topology file ", std::string(name), ":", root.line,
         ": unknown format: root element <", root.name,
         "> (expected <topology> for hwloc XML or <system> for NCCL topology XML)");
  }
  const std::string* v = root.attr("version");
  if (!v) return FileFormat::kHwlocV1;
  if (v->rfind("1.", 0) == 0 || *v == "1") return FileFormat::kHwlocV1;
  if (v->rfind("2.", 0) == 0 || *v == "2") return FileFormat::kHwlocV2;
  fail(tuttiInvalidArgument, "topology file ", std::string(name), ":", root.line,
       ": hwloc XML version \"", *v,
       "\" is not supported (tutti reads hwloc XML v1 and v2, as hwloc 2.x does; export the "
       "topology with hwloc 2.x: `lstopo topo.xml`)");
}

#if !TUTTI_HAVE_HWLOC
// Minimal CPU-only model when hwloc is missing: one package and one NUMA node.
Topology fallbackTopology() {
  Topology t;
  t.origin = "fallback (built without hwloc)";
  Package p;
  p.osIndex = 0;
  p.cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  t.packages.push_back(p);
  NumaNode n;
  n.osIndex = 0;
  n.package = 0;
  n.cores = n.pus = p.cores;
  t.numaNodes.push_back(n);
  t.loadWarnings.push_back(
      "built without hwloc: CPU-only fallback model (1 package, 1 NUMA node, no PCI devices)");
  return t;
}
#endif

}  // namespace

FileFormat detectFormat(std::string_view content, std::string_view name) {
  xml::Document doc = xml::parse(content, name);
  return formatOf(*doc.root, name);
}

Topology loadTopologyBuffer(std::string_view content, std::string_view name) {
  // Our own strict parse first: malformed or truncated files get a line number, whatever
  // the format, before hwloc sees them.
  xml::Document doc = xml::parse(content, name);
  FileFormat f = formatOf(*doc.root, name);
  if (f != FileFormat::kNccl) {
    detail::checkHwlocDoctype(content, name);
    detail::checkHwlocXml(doc, name);
  }
  Topology t =
      f == FileFormat::kNccl ? detail::loadNcclXml(doc, name) : detail::loadHwlocXml(content, name);
  TUTTI_INFO(kTopo, "loaded " << name << ": " << t.gpus.size() << " GPUs, " << t.nics.size()
                              << " NICs, " << t.numaNodes.size() << " NUMA nodes");
  return t;
}

Topology loadTopologyFile(const std::string& path) {
  std::string content = readFile(path);
  return loadTopologyBuffer(content, path);
}

Topology probeTopology(const std::string& hwlocDumpPath) {
#if TUTTI_HAVE_HWLOC
  return detail::probeHwloc(hwlocDumpPath);
#else
  (void)hwlocDumpPath;
  return fallbackTopology();
#endif
}

Topology discoverTopology() {
  std::string file = env::getString("TUTTI_TOPO_FILE");
  std::string dump = log::expandPath(env::getString("TUTTI_TOPO_DUMP_FILE"));
  Topology t;
  bool dumped = false;
  if (!file.empty()) {
    t = loadTopologyFile(file);
  } else {
    // hwloc writes its own XML when probing, unless a .json dump was asked for.
    bool wantJson = dump.size() >= 5 && dump.compare(dump.size() - 5, 5, ".json") == 0;
    bool hwlocDump = TUTTI_HAVE_HWLOC && !dump.empty() && !wantJson;
    t = probeTopology(hwlocDump ? dump : "");
    dumped = hwlocDump;
  }
  if (!dump.empty() && !dumped) {
    dumpTopologyJson(t, dump);
    TUTTI_INFO(kTopo, "topology written to " << dump << " (tutti JSON)");
  }
  for (const auto& w : t.loadWarnings) TUTTI_WARN(kTopo, w);
  return t;
}

void dumpTopologyJson(const Topology& topo, const std::string& path) {
  // Written next to the target and renamed over it (see probeHwloc).
  const std::string tmp = path + ".tmp." + std::to_string(::getpid());
  std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
  if (!out) throwSystemError("cannot open " + path + " for writing (TUTTI_TOPO_DUMP_FILE)");
  out << topologyJson(topo);
  out.flush();
  out.close();
  if (!out || std::rename(tmp.c_str(), path.c_str()) != 0) {
    std::remove(tmp.c_str());
    throwSystemError("cannot write " + path + " (TUTTI_TOPO_DUMP_FILE)");
  }
}

}  // namespace tutti::topo
