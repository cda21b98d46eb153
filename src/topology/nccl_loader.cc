// NCCL topology XML: <system version=><cpu ...><pci ...><gpu ..><nvlink ../></gpu></pci>
// <pci ..><nic><net ../></nic></pci></cpu></system>.
#include <bit>
#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <map>

#include "common/error.h"
#include "topology/binding.h"
#include "topology/loaders.h"

namespace tutti::topo::detail {
namespace {

struct PendingLink {
  int gpu;
  std::string target;
  int count;
  int tclass;
  int line;
};

class NcclLoader {
 public:
  NcclLoader(std::string_view name) : name_(name) {}

  Topology run(const xml::Document& doc) {
    const xml::Element& sys = *doc.root;
    if (sys.name != "system") {
      err(sys.line, "root element is <" + sys.name + ">, expected <system> (NCCL topology XML)");
    }
    const std::string* ver = sys.attr("version");
    if (!ver) err(sys.line, "<system> has no version attribute");
    parseInteger(*ver, 10, name_, sys.line, "system version");
    t_.source = Source::kNcclXml;
    t_.origin = std::string(name_);
    for (const auto& c : sys.children) {
      if (c->name == "cpu") {
        cpu(*c);
      } else {
        t_.loadWarnings.push_back(std::string(name_) + ":" + std::to_string(c->line) +
                                  ": ignored element <" + c->name + "> under <system>");
      }
    }
    resolveLinks();
    return std::move(t_);
  }

 private:
  [[noreturn]] void err(int line, const std::string& what) {
    fail(tuttiInvalidArgument, "topology file ", std::string(name_), ":", line, ": ", what);
  }
  const std::string& need(const xml::Element& e, std::string_view key) {
    const std::string* v = e.attr(key);
    if (!v) err(e.line, "<" + e.name + "> has no " + std::string(key) + " attribute");
    return *v;
  }
  int hexAttr(const xml::Element& e, std::string_view key) {
    const std::string* v = e.attr(key);
    if (!v) return -1;
    return static_cast<int>(parseInteger(*v, 16, name_, e.line, key));
  }

  void cpu(const xml::Element& e) {
    int numaId = static_cast<int>(parseInteger(need(e, "numaid"), 10, name_, e.line, "numaid"));
    for (const auto& n : t_.numaNodes) {
      if (n.osIndex == numaId)
        err(e.line, "two <cpu> elements with numaid " + std::to_string(numaId));
    }
    Package pkg;
    pkg.osIndex = numaId;
    if (const auto* v = e.attr("vendor")) pkg.vendor = *v;
    if (const auto* f = e.attr("familyid")) {
      pkg.model = "family " + *f;
      if (const auto* m = e.attr("modelid")) pkg.model += " model " + *m;
    }
    if (const auto* a = e.attr("arch")) t_.arch = *a;
    NumaNode node;
    node.osIndex = numaId;
    node.package = static_cast<int>(t_.packages.size());
    if (const auto* aff = e.attr("affinity")) {
      node.cpuset = *aff;
      int pus = 0;
      for (char c : *aff) {
        if (c == ',') continue;
        if (!std::isxdigit(static_cast<unsigned char>(c))) {
          err(e.line, "affinity '" + *aff + "' is not a hex cpu mask");
        }
        int d =
            std::isdigit(static_cast<unsigned char>(c)) ? c - '0' : (std::tolower(c) - 'a' + 10);
        pus += std::popcount(static_cast<unsigned>(d));
      }
      try {
        (void)parseCpuset(*aff);  // what CPU binding reads later (words of 8 digits)
      } catch (const Error& x) {
        err(e.line, "affinity: " + std::string(x.what()));
      }
      node.pus = pus;
      node.cores = pus;  // NCCL files do not tell cores from threads
    }
    pkg.cores = node.cores;
    t_.packages.push_back(pkg);
    int numaIndex = static_cast<int>(t_.numaNodes.size());
    t_.numaNodes.push_back(node);
    for (const auto& c : e.children) {
      if (c->name == "pci") {
        pci(*c, -1, numaIndex);
      } else if (c->name == "nic") {
        nic(*c, -1, numaIndex);
      } else {
        t_.loadWarnings.push_back(std::string(name_) + ":" + std::to_string(c->line) +
                                  ": ignored element <" + c->name + "> under <cpu>");
      }
    }
  }

  static double parseSpeed(const std::string& s) {
    // "16 GT/s", "16.0 GT/s PCIe", "2.5 GT/s", "Unknown"
    char* end = nullptr;
    double v = std::strtod(s.c_str(), &end);
    if (end == s.c_str()) return 0;
    return v;
  }

  void pci(const xml::Element& e, int parent, int numaIndex) {
    const std::string& raw = need(e, "busid");
    auto bus = normaliseBusId(raw);
    if (!bus) err(e.line, "busid '" + raw + "' is not a PCI bus id (dddd:bb:dd.f)");
    PciNode n;
    n.busId = *bus;
    n.parent = parent;
    n.numa = parent < 0 ? numaIndex : -1;
    int cls = hexAttr(e, "class");
    if (cls > 0xffff) cls >>= 8;  // NCCL writes the 24-bit class code
    n.classId = cls;
    n.vendorId = hexAttr(e, "vendor");
    n.deviceId = hexAttr(e, "device");
    double gt = 0;
    int width = 0;
    if (const auto* s = e.attr("link_speed")) gt = parseSpeed(*s);
    if (const auto* w = e.attr("link_width")) {
      width = static_cast<int>(parseInteger(*w, 10, name_, e.line, "link_width"));
    }
    n.linkGBps = pcieGBps(gt, width);
    const xml::Element* gpuEl = nullptr;
    const xml::Element* nicEl = nullptr;
    bool hasPciChildren = false;
    for (const auto& c : e.children) {
      if (c->name == "gpu")
        gpuEl = c.get();
      else if (c->name == "nic")
        nicEl = c.get();
      else if (c->name == "pci")
        hasPciChildren = true;
    }
    if (n.classId < 0 && gpuEl) n.classId = 0x0302;
    bool isBridge = (n.classId >> 8) == 0x06 && n.classId != 0x0680;
    n.kind =
        (isBridge || (hasPciChildren && !gpuEl && !nicEl)) ? PciKind::kBridge : PciKind::kDevice;
    int idx = static_cast<int>(t_.pci.size());
    for (const auto& p : t_.pci) {
      if (p.busId == n.busId) err(e.line, "busid " + n.busId + " appears twice");
    }
    t_.pci.push_back(n);
    if (parent >= 0) t_.pci[parent].children.push_back(idx);

    if (gpuEl || (n.kind == PciKind::kDevice && isGpuPci(n.classId, n.vendorId, n.deviceId))) {
      Gpu g;
      g.pci = idx;
      g.vendor = n.vendorId == 0x1002 ? GpuVendor::kAmd : GpuVendor::kNvidia;
      g.vendorAssumed = n.vendorId < 0;
      int gi = static_cast<int>(t_.gpus.size());
      if (gpuEl) {
        if (const auto* sm = gpuEl->attr("sm")) {
          g.sm = static_cast<int>(parseInteger(*sm, 10, name_, gpuEl->line, "sm"));
        }
        for (const auto& l : gpuEl->children) {
          if (l->name != "nvlink") continue;
          PendingLink pl;
          pl.gpu = gi;
          pl.target = need(*l, "target");
          pl.count = static_cast<int>(parseInteger(need(*l, "count"), 10, name_, l->line, "count"));
          pl.tclass = hexAttr(*l, "tclass");
          pl.line = l->line;
          links_.push_back(pl);
        }
      }
      t_.gpus.push_back(g);
    } else if (nicEl || (n.kind == PciKind::kDevice && isNicClass(n.classId))) {
      if (nicEl) {
        nic(*nicEl, idx, -1);
      } else {
        Nic x;
        x.pci = idx;
        t_.nics.push_back(x);
      }
    }
    for (const auto& c : e.children) {
      if (c->name == "pci") pci(*c, idx, numaIndex);
    }
  }

  void nic(const xml::Element& e, int pciIndex, int numaIndex) {
    Nic x;
    x.pci = pciIndex;
    x.numa = numaIndex;
    for (const auto& c : e.children) {
      if (c->name != "net") continue;
      x.names.push_back(need(*c, "name"));
      ++x.ports;
      if (const auto* s = c->attr("speed")) {
        int64_t v = parseInteger(*s, 10, name_, c->line, "speed");
        if (!x.speedMbps || v > *x.speedMbps) x.speedMbps = v;
      }
    }
    t_.nics.push_back(x);
  }

  void resolveLinks() {
    for (const auto& pl : links_) {
      auto bus = normaliseBusId(pl.target);
      if (!bus) err(pl.line, "nvlink target '" + pl.target + "' is not a PCI bus id");
      NvLink l;
      l.gpu = pl.gpu;
      l.links = pl.count;
      int cls = pl.tclass > 0xffff ? pl.tclass >> 8 : pl.tclass;
      int peerGpu = t_.findGpu(*bus);
      if (cls == 0x0680) {
        l.peerKind = LinkPeer::kNvSwitch;
        l.peer = -1;
        for (size_t i = 0; i < t_.nvSwitches.size(); ++i) {
          if (t_.nvSwitches[i].busId == *bus) l.peer = static_cast<int>(i);
        }
        if (l.peer < 0) {
          NvSwitch s;
          s.busId = *bus;
          for (size_t i = 0; i < t_.pci.size(); ++i) {
            if (t_.pci[i].busId == *bus) s.pci = static_cast<int>(i);
          }
          l.peer = static_cast<int>(t_.nvSwitches.size());
          t_.nvSwitches.push_back(s);
        }
      } else if (peerGpu >= 0) {
        l.peerKind = LinkPeer::kGpu;
        l.peer = peerGpu;
        if (peerGpu == pl.gpu) continue;  // some hand-made files link a GPU to itself
      } else if ((cls >> 8) == 0x06) {
        l.peerKind = LinkPeer::kCpu;
        l.peer = t_.numaNodes[t_.numaOfPci(t_.gpus[pl.gpu].pci)].package;
      } else {
        t_.loadWarnings.push_back(std::string(name_) + ":" + std::to_string(pl.line) +
                                  ": nvlink target " + *bus + " is not a GPU, NVSwitch or CPU");
        continue;
      }
      // GPU-GPU links appear on both GPUs: keep one.
      if (l.peerKind == LinkPeer::kGpu) {
        bool dup = false;
        for (const auto& o : t_.nvlinks) {
          if (o.peerKind == LinkPeer::kGpu && o.gpu == l.peer && o.peer == l.gpu) dup = true;
        }
        if (dup) continue;
      }
      t_.nvlinks.push_back(l);
    }
  }

  std::string_view name_;
  Topology t_;
  std::vector<PendingLink> links_;
};

}  // namespace

long long parseInteger(std::string_view text, int base, std::string_view file, int line,
                       std::string_view what) {
  std::string s(text);
  size_t b = s.find_first_not_of(" \t");
  if (b == std::string::npos) {
    fail(tuttiInvalidArgument, "topology file ", std::string(file), ":", line, ": ",
         std::string(what), " is empty");
  }
  s = s.substr(b);
  if (base == 16 && s.size() > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) s = s.substr(2);
  char* end = nullptr;
  errno = 0;
  long long v = std::strtoll(s.c_str(), &end, base);
  if (end == s.c_str() || *end != '\0' || errno == ERANGE) {
    fail(tuttiInvalidArgument, "topology file ", std::string(file), ":", line, ": ",
         std::string(what), " '", std::string(text), "' is not a ",
         base == 16 ? "hexadecimal" : "decimal", " number");
  }
  return v;
}

Topology loadNcclXml(const xml::Document& doc, std::string_view name) {
  Topology t = NcclLoader(name).run(doc);
  finalise(t);
  return t;
}

}  // namespace tutti::topo::detail
