// Entry points: build a Topology from this machine or from a file.
//   discoverTopology()  honours TUTTI_TOPO_FILE (load a file instead of probing) and
//                       TUTTI_TOPO_DUMP_FILE (write what was detected); the communicator calls it.
//   probeTopology()     live discovery through hwloc (PCI and OS devices kept).
//   loadTopologyFile()  hwloc XML v1/v2 or NCCL topology XML, detected from the content.
// Errors throw tutti::Error naming the file and the problem (malformed or truncated XML with
// its line, an unsupported hwloc XML version, a build without hwloc for hwloc XML).
#pragma once

#include <string>
#include <string_view>

#include "topology/model.h"

namespace tutti::topo {

enum class FileFormat { kHwlocV1, kHwlocV2, kNccl };

Topology discoverTopology();
Topology probeTopology(const std::string& hwlocDumpPath = "");
Topology loadTopologyFile(const std::string& path);
// Same as loadTopologyFile on content already in memory; `name` labels errors.
Topology loadTopologyBuffer(std::string_view content, std::string_view name);
// The format of `content` (throws when it is neither hwloc v1/v2 nor NCCL XML).
FileFormat detectFormat(std::string_view content, std::string_view name);

// Writes the model as JSON (the `tutti-topo --json` document) to `path`.
void dumpTopologyJson(const Topology& topo, const std::string& path);

}  // namespace tutti::topo
