#include "topology/model.h"

#include <cctype>
#include <cstdio>

namespace tutti::topo {
namespace {

bool parseHex(std::string_view s, unsigned long& out) {
  if (s.empty() || s.size() > 8) return false;
  unsigned long v = 0;
  for (char c : s) {
    int d;
    if (c >= '0' && c <= '9')
      d = c - '0';
    else if (c >= 'a' && c <= 'f')
      d = c - 'a' + 10;
    else if (c >= 'A' && c <= 'F')
      d = c - 'A' + 10;
    else
      return false;
    v = v * 16 + static_cast<unsigned long>(d);
  }
  out = v;
  return true;
}

}  // namespace

std::optional<std::string> normaliseBusId(std::string_view text) {
  // [domain:]bus:dev.fn
  size_t dot = text.rfind('.');
  if (dot == std::string_view::npos) return std::nullopt;
  std::string_view fn = text.substr(dot + 1);
  std::string_view head = text.substr(0, dot);
  size_t c2 = head.rfind(':');
  if (c2 == std::string_view::npos) return std::nullopt;
  std::string_view dev = head.substr(c2 + 1);
  std::string_view head2 = head.substr(0, c2);
  std::string_view bus, dom = "0";
  size_t c1 = head2.rfind(':');
  if (c1 == std::string_view::npos) {
    bus = head2;
  } else {
    bus = head2.substr(c1 + 1);
    dom = head2.substr(0, c1);
  }
  unsigned long d, b, v, f;
  if (!parseHex(dom, d) || !parseHex(bus, b) || !parseHex(dev, v) || !parseHex(fn, f)) {
    return std::nullopt;
  }
  if (b > 0xff || v > 0x1f || f > 7) return std::nullopt;
  char buf[32];
  std::snprintf(buf, sizeof buf, "%04lx:%02lx:%02lx.%lx", d, b, v, f);
  return std::string(buf);
}

const char* nicKindName(NicKind kind) {
  switch (kind) {
    case NicKind::kInfiniBand:
      return "InfiniBand";
    case NicKind::kRoCE:
      return "RoCE";
    case NicKind::kEfa:
      return "EFA";
    case NicKind::kEthernet:
      return "Ethernet";
    case NicKind::kWireless:
      return "Wireless";
    case NicKind::kOther:
      return "Other";
  }
  return "Other";
}

int Topology::totalCores() const {
  int n = 0;
  for (const auto& p : packages) n += p.cores;
  if (n == 0) {
    for (const auto& m : numaNodes) n += m.cores;
  }
  return n;
}

int Topology::numaOfPci(int pciIndex) const {
  for (int i = pciIndex; i >= 0; i = pci[i].parent) {
    if (pci[i].numa >= 0) return pci[i].numa;
  }
  return -1;
}

int Topology::socketOfNuma(int numaIndex) const {
  if (numaIndex < 0) return -1;
  int p = numaNodes[numaIndex].package;
  return p >= 0 ? p : numaIndex;
}

int Topology::findGpu(std::string_view busId) const {
  for (size_t i = 0; i < gpus.size(); ++i) {
    if (pci[gpus[i].pci].busId == busId) return static_cast<int>(i);
  }
  return -1;
}

int Topology::findNic(std::string_view busId) const {
  for (size_t i = 0; i < nics.size(); ++i) {
    if (nics[i].pci >= 0 && pci[nics[i].pci].busId == busId) return static_cast<int>(i);
  }
  return -1;
}

bool isGpuPci(int classId, int vendorId, int deviceId) {
  // 0x0300 VGA, 0x0302 3D controller, 0x0380 display other, 0x1200 processing accelerator.
  bool displayClass = classId == 0x0300 || classId == 0x0302 || classId == 0x0380;
  if (vendorId == 0x10de) return displayClass;
  if (vendorId == 0x1002) {
    if (classId == 0x0302 || classId == 0x0380 || classId == 0x1200) return true;
    // VGA class: only GCN and later parts (device id >= 0x6600). Older ids are BMC/legacy
    // VGA chips such as the ES1000 (0x515e) found on server boards.
    return classId == 0x0300 && deviceId >= 0x6600;
  }
  // Vendor unknown (partial NCCL files): a 3D controller is a compute GPU; a VGA device is
  // not trusted (BMC chips such as ASPEED/Matrox are VGA class).
  if (vendorId < 0) return classId == 0x0302;
  return false;
}

bool isNvSwitchPci(int classId, int vendorId, std::string_view subtype) {
  if (subtype == "NVSwitch") return true;
  return vendorId == 0x10de && classId == 0x0680;
}

bool isNicClass(int classId) {
  return (classId >= 0 && (classId >> 8) == 0x02) || classId == 0x0c06;
}

int nvlinkGenFromDeviceId(int id) {
  if (id >= 0x15f0 && id <= 0x15ff) return 1;                                      // GP100
  if ((id >= 0x1db0 && id <= 0x1dbf) || (id >= 0x1df0 && id <= 0x1dff)) return 2;  // GV100
  if ((id >= 0x20b0 && id <= 0x20bf) || (id >= 0x20f0 && id <= 0x20ff)) return 3;  // GA100
  if (id >= 0x2320 && id <= 0x234f) return 4;                                      // GH100
  if (id >= 0x2900 && id <= 0x29ff) return 5;                                      // GB100
  return 0;
}

int nvlinkGenFromSm(int sm) {
  if (sm >= 100) return 5;
  if (sm >= 90) return 4;
  if (sm >= 80) return 3;
  if (sm >= 70) return 2;
  if (sm >= 60) return 1;
  return 0;
}

int64_t nvlinkPerLinkMBps(int gen) {
  switch (gen) {
    case 1:
      return 20000;
    case 2:
      return 25000;
    case 3:
      return 25000;
    case 4:
      return 25000;
    case 5:
      return 50000;
    default:
      return 20000;
  }
}

double pcieGBps(double gt, int width) {
  if (gt <= 0 || width <= 0) return 0;
  // Gen1/2 use 8b/10b, Gen3+ 128b/130b.
  double enc = gt < 8.0 ? 0.8 : 128.0 / 130.0;
  return gt * width * enc / 8.0;
}

}  // namespace tutti::topo
