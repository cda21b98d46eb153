// hwloc loaders: live discovery and XML v1/v2 import, both through libhwloc, into the model.
#include <dlfcn.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>
#include <map>
#include <memory>
#include <optional>
#include <type_traits>

#include "common/error.h"
#include "common/log.h"
#include "topology/loaders.h"
#include "topology/probe_cache.h"
#include "tutti/config.h"

#if TUTTI_HAVE_HWLOC
#include <hwloc.h>
#include <hwloc/distances.h>
#include <hwloc/export.h>
#endif

namespace tutti::topo::detail {

#if TUTTI_HAVE_HWLOC
namespace {

struct TopoHandle {
  hwloc_topology_t t = nullptr;
  TopoHandle() {
    if (hwloc_topology_init(&t) != 0) throwSystemError("hwloc_topology_init");
  }
  ~TopoHandle() { hwloc_topology_destroy(t); }
  TopoHandle(const TopoHandle&) = delete;
  TopoHandle& operator=(const TopoHandle&) = delete;
};

std::string busIdOf(const hwloc_obj_attr_u::hwloc_pcidev_attr_s& p) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%04x:%02x:%02x.%x", static_cast<unsigned>(p.domain),
                static_cast<unsigned>(p.bus), static_cast<unsigned>(p.dev),
                static_cast<unsigned>(p.func));
  return buf;
}

// An enum field as hwloc stored it: hwloc copies numbers from the XML (bridge_type="5-1",
// osdev_type="99") into enum fields without a range check, and loading an enum outside its
// values is undefined, so such fields are read as their bytes.
template <class E>
std::underlying_type_t<E> rawEnum(const E& field) {
  std::underlying_type_t<E> v;
  std::memcpy(&v, &field, sizeof v);
  return v;
}

const char* infoOf(hwloc_obj_t o, const char* name) {
  const char* v = hwloc_obj_get_info_by_name(o, name);
  return v ? v : "";
}

std::string bitmapString(hwloc_const_bitmap_t b) {
  char* s = nullptr;
  if (hwloc_bitmap_asprintf(&s, b) < 0 || !s) return "";
  std::string r(s);
  free(s);
  return r;
}

class HwlocConverter {
 public:
  HwlocConverter(hwloc_topology_t topo, Topology& out) : topo_(topo), t_(out) {}

  void run() {
    hwloc_obj_t root = hwloc_get_root_obj(topo_);
    t_.hostName = infoOf(root, "HostName");
    t_.arch = infoOf(root, "Architecture");
    packages();
    numaNodes();
    pciTree();
    nvlinks();
  }

 private:
  void packages() {
    int n = hwloc_get_nbobjs_by_type(topo_, HWLOC_OBJ_PACKAGE);
    for (int i = 0; i < n; ++i) {
      hwloc_obj_t o = hwloc_get_obj_by_type(topo_, HWLOC_OBJ_PACKAGE, i);
      Package p;
      p.osIndex = o->os_index == HWLOC_UNKNOWN_INDEX ? i : static_cast<int>(o->os_index);
      p.vendor = infoOf(o, "CPUVendor");
      p.model = infoOf(o, "CPUModel");
      if (p.model.empty() && *infoOf(o, "CPUModelNumber")) {
        p.model = std::string("model ") + infoOf(o, "CPUModelNumber");
      }
      p.cores = hwloc_get_nbobjs_inside_cpuset_by_type(topo_, o->cpuset, HWLOC_OBJ_CORE);
      if (p.cores <= 0) {
        p.cores = hwloc_get_nbobjs_inside_cpuset_by_type(topo_, o->cpuset, HWLOC_OBJ_PU);
      }
      t_.packages.push_back(p);
      pkgObjs_.push_back(o);
    }
    if (t_.packages.empty()) {
      // Some XML files (and some VMs) have no Package: one pseudo package for the machine.
      hwloc_obj_t root = hwloc_get_root_obj(topo_);
      Package p;
      p.osIndex = 0;
      p.cores = hwloc_get_nbobjs_by_type(topo_, HWLOC_OBJ_CORE);
      if (p.cores <= 0) p.cores = hwloc_get_nbobjs_by_type(topo_, HWLOC_OBJ_PU);
      t_.packages.push_back(p);
      pkgObjs_.push_back(root);
    }
  }

  void numaNodes() {
    int n = hwloc_get_nbobjs_by_type(topo_, HWLOC_OBJ_NUMANODE);
    for (int i = 0; i < n; ++i) {
      hwloc_obj_t o = hwloc_get_obj_by_type(topo_, HWLOC_OBJ_NUMANODE, i);
      NumaNode m;
      m.osIndex = o->os_index == HWLOC_UNKNOWN_INDEX ? i : static_cast<int>(o->os_index);
      m.memoryBytes = o->attr ? o->attr->numanode.local_memory : 0;
      if (o->cpuset) {
        m.cores = hwloc_get_nbobjs_inside_cpuset_by_type(topo_, o->cpuset, HWLOC_OBJ_CORE);
        m.pus = hwloc_get_nbobjs_inside_cpuset_by_type(topo_, o->cpuset, HWLOC_OBJ_PU);
        m.cpuset = bitmapString(o->cpuset);
        for (size_t p = 0; p < pkgObjs_.size(); ++p) {
          if (pkgObjs_[p]->cpuset && hwloc_bitmap_intersects(pkgObjs_[p]->cpuset, o->cpuset)) {
            m.package = static_cast<int>(p);
            break;
          }
        }
      }
      if (m.package < 0) m.package = 0;
      numaByOs_[m.osIndex] = static_cast<int>(t_.numaNodes.size());
      t_.numaNodes.push_back(m);
    }
  }

  int numaOfObj(hwloc_obj_t o) {
    hwloc_obj_t anc = hwloc_get_non_io_ancestor_obj(topo_, o);
    if (!anc || !anc->nodeset) return t_.numaNodes.empty() ? -1 : 0;
    int first = hwloc_bitmap_first(anc->nodeset);
    auto it = numaByOs_.find(first);
    return it == numaByOs_.end() ? -1 : it->second;
  }

  void pciTree() {
    // Host bridges and bridges first (depth order keeps parents before children).
    for (hwloc_obj_t o = hwloc_get_next_bridge(topo_, nullptr); o;
         o = hwloc_get_next_bridge(topo_, o)) {
      addPci(o);
    }
    for (hwloc_obj_t o = hwloc_get_next_pcidev(topo_, nullptr); o;
         o = hwloc_get_next_pcidev(topo_, o)) {
      addPci(o);
    }
    // Children lists and devices.
    for (size_t i = 0; i < t_.pci.size(); ++i) {
      if (t_.pci[i].parent >= 0) t_.pci[t_.pci[i].parent].children.push_back(static_cast<int>(i));
    }
    for (size_t i = 0; i < t_.pci.size(); ++i) classify(static_cast<int>(i));
  }

  int indexOf(hwloc_obj_t o) {
    auto it = pciIndex_.find(o);
    if (it != pciIndex_.end()) return it->second;
    return addPci(o);
  }

  int addPci(hwloc_obj_t o) {
    auto it = pciIndex_.find(o);
    if (it != pciIndex_.end()) return it->second;
    PciNode n;
    if (o->type == HWLOC_OBJ_BRIDGE) {
      const auto& b = o->attr->bridge;
      if (rawEnum(b.upstream_type) == HWLOC_OBJ_BRIDGE_HOST) {
        n.kind = PciKind::kHostBridge;
        char buf[48];
        std::snprintf(buf, sizeof buf, "hostbridge %04x:[%02x-%02x]",
                      static_cast<unsigned>(b.downstream.pci.domain),
                      static_cast<unsigned>(b.downstream.pci.secondary_bus),
                      static_cast<unsigned>(b.downstream.pci.subordinate_bus));
        n.name = buf;
      } else {
        n.kind = PciKind::kBridge;
        fillPci(n, b.upstream.pci);
      }
    } else {
      n.kind = PciKind::kDevice;
      fillPci(n, o->attr->pcidev);
    }
    if (o->subtype) n.subtype = o->subtype;
    const char* model = hwloc_obj_get_info_by_name(o, "PCIDevice");
    if (model) n.name = model;
    hwloc_obj_t parent = o->parent;
    if (parent && (parent->type == HWLOC_OBJ_BRIDGE || parent->type == HWLOC_OBJ_PCI_DEVICE)) {
      n.parent = indexOf(parent);
    } else {
      n.numa = numaOfObj(o);
    }
    int idx = static_cast<int>(t_.pci.size());
    t_.pci.push_back(std::move(n));
    pciIndex_[o] = idx;
    objs_.push_back(o);
    return idx;
  }

  static void fillPci(PciNode& n, const hwloc_obj_attr_u::hwloc_pcidev_attr_s& p) {
    n.busId = busIdOf(p);
    n.classId = p.class_id;
    n.vendorId = p.vendor_id;
    n.deviceId = p.device_id;
    n.linkGBps = p.linkspeed;
  }

  void classify(int idx) {
    PciNode& n = t_.pci[idx];
    if (n.kind != PciKind::kDevice) return;
    hwloc_obj_t o = objs_[idx];
    if (isNvSwitchPci(n.classId, n.vendorId, n.subtype)) {
      NvSwitch s;
      s.busId = n.busId;
      s.pci = idx;
      switchByPci_[idx] = static_cast<int>(t_.nvSwitches.size());
      t_.nvSwitches.push_back(s);
      return;
    }
    if (isGpuPci(n.classId, n.vendorId, n.deviceId)) {
      Gpu g;
      g.pci = idx;
      g.vendor = n.vendorId == 0x1002 ? GpuVendor::kAmd : GpuVendor::kNvidia;
      for (hwloc_obj_t c = o->io_first_child; c; c = c->next_sibling) {
        if (c->type != HWLOC_OBJ_OS_DEVICE || !c->name) continue;
        g.osDevices.push_back(c->name);
        const char* m = hwloc_obj_get_info_by_name(c, "GPUModel");
        if (m && g.model.empty()) g.model = m;
        const char* cc = hwloc_obj_get_info_by_name(c, "CUDAComputeCapability");
        if (cc) {
          int maj = 0, min = 0;
          if (std::sscanf(cc, "%d.%d", &maj, &min) == 2) g.sm = maj * 10 + min;
        }
      }
      if (g.model.empty()) g.model = n.name;
      gpuByPci_[idx] = static_cast<int>(t_.gpus.size());
      t_.gpus.push_back(std::move(g));
      return;
    }
    if (isNicClass(n.classId)) {
      Nic x;
      x.pci = idx;
      bool ethernetLinkLayer = false;
      for (hwloc_obj_t c = o->io_first_child; c; c = c->next_sibling) {
        if (c->type != HWLOC_OBJ_OS_DEVICE || !c->name) continue;
        if (rawEnum(c->attr->osdev.type) == HWLOC_OBJ_OSDEV_OPENFABRICS) {
          x.rdma = true;
          x.names.insert(x.names.begin(), c->name);  // RDMA device first
          std::string ll = infoOf(c, "Port1LinkLayer");
          if (ll == "Ethernet") ethernetLinkLayer = true;
        } else if (rawEnum(c->attr->osdev.type) == HWLOC_OBJ_OSDEV_NETWORK) {
          x.names.push_back(c->name);
        }
      }
      if (ethernetLinkLayer) x.kind = NicKind::kRoCE;
      t_.nics.push_back(std::move(x));
    }
  }

  void nvlinks() {
    unsigned nr = 1;
    hwloc_distances_s* d = nullptr;
    if (hwloc_distances_get_by_name(topo_, "NVLinkBandwidth", &nr, &d, 0) != 0 || nr == 0) return;
    struct Peer {
      LinkPeer kind;
      int index;
    };
    auto resolve = [&](hwloc_obj_t o) -> std::optional<Peer> {
      if (!o) return std::nullopt;
      if (o->type == HWLOC_OBJ_PACKAGE) {
        for (size_t p = 0; p < pkgObjs_.size(); ++p) {
          if (pkgObjs_[p] == o) return Peer{LinkPeer::kCpu, static_cast<int>(p)};
        }
        return std::nullopt;
      }
      hwloc_obj_t pciObj = o;
      while (pciObj && pciObj->type == HWLOC_OBJ_OS_DEVICE) pciObj = pciObj->parent;
      if (!pciObj) return std::nullopt;
      auto it = pciIndex_.find(pciObj);
      if (it == pciIndex_.end()) return std::nullopt;
      if (auto g = gpuByPci_.find(it->second); g != gpuByPci_.end()) {
        return Peer{LinkPeer::kGpu, g->second};
      }
      if (auto s = switchByPci_.find(it->second); s != switchByPci_.end()) {
        return Peer{LinkPeer::kNvSwitch, s->second};
      }
      return std::nullopt;
    };
    unsigned n = d->nbobjs;
    for (unsigned i = 0; i < n; ++i) {
      for (unsigned j = i + 1; j < n; ++j) {
        uint64_t v = d->values[i * n + j];
        uint64_t w = d->values[j * n + i];
        uint64_t bw = v > w ? v : w;
        if (bw == 0) continue;
        auto a = resolve(d->objs[i]);
        auto b = resolve(d->objs[j]);
        if (!a || !b) continue;
        if (a->kind != LinkPeer::kGpu) std::swap(a, b);
        if (a->kind != LinkPeer::kGpu) continue;  // switch-switch trunks are not modelled
        NvLink l;
        l.gpu = a->index;
        l.peerKind = b->kind;
        l.peer = b->index;
        l.bandwidthMBps = static_cast<int64_t>(bw);
        t_.nvlinks.push_back(l);
      }
    }
    hwloc_distances_release(topo_, d);
  }

  hwloc_topology_t topo_;
  Topology& t_;
  std::vector<hwloc_obj_t> pkgObjs_;
  std::map<int, int> numaByOs_;
  std::map<hwloc_obj_t, int> pciIndex_;
  std::vector<hwloc_obj_t> objs_;
  std::map<int, int> gpuByPci_;
  std::map<int, int> switchByPci_;
};

void keepIo(hwloc_topology_t t) {
  hwloc_topology_set_io_types_filter(t, HWLOC_TYPE_FILTER_KEEP_ALL);
}

}  // namespace

Topology loadHwlocXml(std::string_view content, std::string_view name) {
  TopoHandle h;
  keepIo(h.t);
  if (hwloc_topology_set_xmlbuffer(h.t, content.data(), static_cast<int>(content.size()) + 0) !=
      0) {
    fail(tuttiInvalidArgument, "topology file ", std::string(name),
         ": hwloc refused the XML (hwloc_topology_set_xmlbuffer: ",
         std::string(std::strerror(errno)), ")");
  }
  errno = 0;
  if (hwloc_topology_load(h.t) != 0) {
    // hwloc does not always set errno (it prints its reason on stderr then).
    const int err = errno;
    fail(tuttiInvalidArgument, "topology file ", std::string(name),
         ": hwloc could not import the XML (hwloc_topology_load",
         err != 0 ? std::string(": ") + std::strerror(err) : std::string(),
         "); check that it is a complete hwloc v1/v2 export");
  }
  Topology t;
  t.source = Source::kHwlocXml;
  t.origin = std::string(name);
  HwlocConverter(h.t, t).run();
  finalise(t);
  return t;
}

// hwloc's PCI plugin (Debian builds it as a module) loads libpciaccess, whose global state
// outlives hwloc_topology_destroy, which unloads the plugin: with the library gone, that state
// is unreachable memory to LeakSanitizer, and a suppression cannot name the module. Kept
// loaded once the first probe brought it in (a no-op when hwloc has PCI built in).
static void keepPciaccessLoaded() {
  static void* const pinned = dlopen("libpciaccess.so.0", RTLD_NOW | RTLD_NOLOAD | RTLD_NODELETE);
  (void)pinned;
}

constexpr const char* kStampInfo = "TuttiProbeStamp";

// This host's cached probe (probe_cache.h), imported as this system's topology; null when
// there is none, or it does not load or carries another stamp (then the caller probes).
std::unique_ptr<TopoHandle> loadCachedProbe(const std::string& file, const std::string& stamp) {
  std::ifstream in(file, std::ios::binary);
  if (!in) return nullptr;
  std::string xml((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  auto h = std::make_unique<TopoHandle>();
  keepIo(h->t);
  if (hwloc_topology_set_xmlbuffer(h->t, xml.data(), static_cast<int>(xml.size())) != 0 ||
      hwloc_topology_set_flags(h->t, HWLOC_TOPOLOGY_FLAG_IS_THISSYSTEM) != 0 ||
      hwloc_topology_load(h->t) != 0) {
    TUTTI_WARN(kTopo, "the cached topology " << file << " does not load; probing again");
    return nullptr;
  }
  const char* kept = hwloc_obj_get_info_by_name(hwloc_get_root_obj(h->t), kStampInfo);
  if (kept == nullptr || stamp != kept) return nullptr;  // another boot, cgroup or version
  return h;
}

void storeProbe(hwloc_topology_t t, const std::string& file, const std::string& stamp) {
  hwloc_obj_add_info(hwloc_get_root_obj(t), kStampInfo, stamp.c_str());
  char* buf = nullptr;
  int len = 0;
  if (hwloc_topology_export_xmlbuffer(t, &buf, &len, 0) != 0) return;
  std::string xml(buf, len > 0 ? static_cast<size_t>(len - 1) : 0);  // len counts the NUL
  hwloc_free_xmlbuffer(t, buf);
  if (!writeFileAtomically(file, xml))
    TUTTI_INFO(kTopo, "could not write the topology cache " << file << " (TUTTI_TOPO_CACHE)");
}

Topology probeHwloc(const std::string& dumpPath) {
  const std::string cache = probeCacheFile();
  const std::string stamp = cache.empty() ? std::string() : probeStamp();
  std::unique_ptr<TopoHandle> cached = cache.empty() ? nullptr : loadCachedProbe(cache, stamp);
  std::unique_ptr<TopoHandle> live;
  if (!cached) {
    live = std::make_unique<TopoHandle>();
    keepIo(live->t);
    if (hwloc_topology_load(live->t) != 0) throwSystemError("hwloc_topology_load (live discovery)");
    keepPciaccessLoaded();
    if (!cache.empty()) storeProbe(live->t, cache, stamp);
  }
  TopoHandle& h = cached ? *cached : *live;
  if (!dumpPath.empty()) {
    // Written next to the target and renamed over it: ranks of one host that share the path
    // replace a complete file, never write into each other's.
    const std::string tmp = dumpPath + ".tmp." + std::to_string(::getpid());
    if (hwloc_topology_export_xml(h.t, tmp.c_str(), 0) != 0 ||
        std::rename(tmp.c_str(), dumpPath.c_str()) != 0) {
      std::remove(tmp.c_str());
      throwSystemError("hwloc_topology_export_xml to " + dumpPath + " (TUTTI_TOPO_DUMP_FILE)");
    }
    TUTTI_INFO(kTopo, "topology written to " << dumpPath << " (hwloc XML)");
  }
  Topology t;
  t.source = Source::kHwlocLive;
  t.origin = cached ? "hwloc live discovery (kept in " + cache + ")" : "hwloc live discovery";
  HwlocConverter(h.t, t).run();
  finalise(t);
  return t;
}

#else  // !TUTTI_HAVE_HWLOC

Topology loadHwlocXml(std::string_view, std::string_view name) {
  fail(tuttiUnsupported, "topology file ", std::string(name),
       ": is hwloc XML, but tutti was built without hwloc (configure with "
       "TUTTI_WITH_HWLOC=ON after apt-get install libhwloc-dev); NCCL topology XML still works");
}

Topology probeHwloc(const std::string&) {
  fail(tuttiUnsupported,
       "topology discovery: tutti was built without hwloc; set TUTTI_TOPO_FILE to an NCCL "
       "topology XML, or rebuild with libhwloc-dev");
}

#endif

}  // namespace tutti::topo::detail
