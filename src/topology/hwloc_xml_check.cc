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

// hwloc's libxml import compares the DOCTYPE's system id without checking that there is one:
// `<!DOCTYPEo><topology/>` crashed it (strcmp on NULL; found by the hwloc fuzz target). hwloc
// writes `<!DOCTYPE topology SYSTEM "hwloc.dtd">` (v1) or "hwloc2.dtd" (v2): a DOCTYPE must be
// one of those.
void checkHwlocDoctype(std::string_view content, std::string_view name) {
  const size_t at = content.find("<!DOCTYPE");
  if (at == std::string_view::npos) return;
  const size_t end = content.find('>', at);
  std::string decl(content.substr(at, end == std::string_view::npos ? 80 : end + 1 - at));
  std::string words;  // the declaration with runs of whitespace as one space
  for (char c : decl) {
    const bool space = c == ' ' || c == '\t' || c == '\n' || c == '\r';
    if (!space)
      words += c;
    else if (!words.empty() && words.back() != ' ')
      words += ' ';
  }
  if (words == "<!DOCTYPE topology SYSTEM \"hwloc.dtd\">" ||
      words == "<!DOCTYPE topology SYSTEM \"hwloc2.dtd\">")
    return;
  fail(tuttiInvalidArgument, "topology file ", std::string(name), ": the DOCTYPE ",
       decl.substr(0, 80),
       " is not hwloc's (<!DOCTYPE topology SYSTEM \"hwloc2.dtd\">, or \"hwloc.dtd\" for v1): "
       "export the topology with lstopo");
}

}  // namespace tutti::topo::detail
