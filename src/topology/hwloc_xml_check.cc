// Checks on hwloc XML before libhwloc imports it. libhwloc 2.9 trusts its own exports: a
// CPU-side object without one of its four sets crashes it (a NUMANode without
// complete_nodeset: NULL dereference in hwloc_bitmap_or) or makes it leak. hwloc writes all four
// on every such object, v1 and v2 alike, so a file without them did not come from hwloc. And it
// reads a type by prefix ("Ma", "NU", "Co" ...), which skips these checks and crashed it
// (`<object type="NU" cpuset=""/>`: NULL dereference after "Topology became empty"): hwloc
// writes full type names, so only those are accepted.
#include <string>

#include "common/error.h"
#include "topology/loaders.h"

namespace tutti::topo::detail {
namespace {

// The CPU-side types of hwloc v1 and v2 (I/O and Misc objects carry no sets).
bool isCpuSideType(const std::string& type) {
  static constexpr const char* kTypes[] = {"System",   "Machine",  "Package",  "Socket",  "Die",
                                           "NUMANode", "Group",    "Core",     "PU",      "Cache",
                                           "L1Cache",  "L2Cache",  "L3Cache",  "L4Cache", "L5Cache",
                                           "L1iCache", "L2iCache", "L3iCache", "MemCache"};
  for (const char* t : kTypes)
    if (type == t) return true;
  return false;
}

bool isIoOrMiscType(const std::string& type) {
  return type == "Bridge" || type == "PCIDev" || type == "OSDev" || type == "Misc";
}

void checkObjects(const xml::Element& e, std::string_view name) {
  if (e.name == "object") {
    const std::string* type = e.attr("type");
    if (type == nullptr) {
      fail(tuttiInvalidArgument, "topology file ", std::string(name), ":", e.line,
           ": <object> has no type attribute");
    }
    if (!isCpuSideType(*type) && !isIoOrMiscType(*type)) {
      fail(tuttiInvalidArgument, "topology file ", std::string(name), ":", e.line,
           ": <object type=\"", *type,
           "\"> is not an hwloc object type (hwloc writes Machine, Package, Core, PU, NUMANode, "
           "L1Cache ..., Bridge, PCIDev, OSDev, Misc: export the topology with lstopo)");
    }
    if (isCpuSideType(*type)) {
      for (const char* set : {"cpuset", "complete_cpuset", "nodeset", "complete_nodeset"}) {
        if (e.attr(set) == nullptr) {
          fail(tuttiInvalidArgument, "topology file ", std::string(name), ":", e.line,
               ": <object type=\"", *type, "\"> has no ", set,
               " attribute (hwloc writes cpuset, complete_cpuset, nodeset and complete_nodeset "
               "on every CPU-side object; export the topology with lstopo)");
        }
      }
    }
  }
  for (const auto& c : e.children) checkObjects(*c, name);
}

}  // namespace

void checkHwlocXml(const xml::Document& doc, std::string_view name) {
  checkObjects(*doc.root, name);
}

}  // namespace tutti::topo::detail
