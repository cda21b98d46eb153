// Fuzz target: NCCL topology XML (TUTTI_TOPO_FILE=<nccl file>). The bytes are a file's
// content: the strict XML reader, format detection and the NCCL loader must load it or refuse
// it with tuttiInvalidArgument naming the file; a loaded model must be consistent and usable.
#include <string_view>

#include "fuzz_util.h"
#include "topology/load.h"
#include "topology_checks.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace tutti;
  std::string_view content(reinterpret_cast<const char*>(data), size);
  constexpr std::string_view kName = "fuzz-nccl.xml";
  topo::FileFormat format{};
  if (!fuzz::refusesCleanly([&] { format = topo::detectFormat(content, kName); },
                            tuttiInvalidArgument, kName))
    return 0;
  if (format != topo::FileFormat::kNccl) return 0;  // hwloc files: topology_hwloc_fuzz
  topo::Topology t;
  if (fuzz::refusesCleanly([&] { t = topo::loadTopologyBuffer(content, kName); },
                           tuttiInvalidArgument, kName))
    fuzz::exerciseTopology(t);
  return 0;
}
