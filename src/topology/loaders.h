// Format-specific loaders behind load.h. Each returns a filled Topology or throws
// tutti::Error naming the file and the problem.
#pragma once

#include <string>
#include <string_view>

#include "topology/model.h"
#include "topology/xml.h"

namespace tutti::topo::detail {

// NCCL topology XML (<system version=..>), already parsed.
Topology loadNcclXml(const xml::Document& doc, std::string_view name);

// Refuses hwloc XML that libhwloc would crash or leak on (a CPU-side <object> without its
// four sets), naming the file, the line and the missing attribute.
// The DOCTYPE of an hwloc file, if any, is the one hwloc writes.
void checkHwlocDoctype(std::string_view content, std::string_view name);
void checkHwlocXml(const xml::Document& doc, std::string_view name);

// hwloc XML v1 (no version attribute) or v2 (version="2.x"): hwloc parses `content`.
// Throws tuttiUnsupported when the library was built without hwloc.
Topology loadHwlocXml(std::string_view content, std::string_view name);

// Live discovery through hwloc. When dumpPath is not empty, hwloc exports its XML there.
Topology probeHwloc(const std::string& dumpPath);

// Finishing steps shared by all loaders: GPU NVLink generations, NIC NUMA, sorting.
void finalise(Topology& t);

// Integer parsing helpers with error messages naming file and line.
long long parseInteger(std::string_view text, int base, std::string_view file, int line,
                       std::string_view what);

}  // namespace tutti::topo::detail
