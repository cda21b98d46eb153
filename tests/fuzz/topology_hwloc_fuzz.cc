// Fuzz target: hwloc XML v1/v2 (TUTTI_TOPO_FILE=<lstopo export>). The bytes are a file's
// content: tutti's strict XML reader runs first, then libhwloc imports the XML; either may
// refuse it, always with tuttiInvalidArgument naming the file. A loaded model must be
// consistent and usable.
#include <string_view>

#include "fuzz_util.h"
#include "topology/load.h"
#include "topology_checks.h"
#include "tutti/config.h"

// No leak detection here: libhwloc 2.9.0 leaks a few bytes importing some malformed files
// (lstopo under valgrind too), and without frame pointers in libhwloc a suppression by module
// needs the slow unwinder on every malloc (5x fewer executions). The XML reader and the model
// code this target shares with topology_nccl are leak-checked there.
extern "C" const char* __asan_default_options() { return "detect_leaks=0"; }

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace tutti;
  std::string_view content(reinterpret_cast<const char*>(data), size);
  constexpr std::string_view kName = "fuzz-hwloc.xml";
  topo::FileFormat format{};
  if (!fuzz::refusesCleanly([&] { format = topo::detectFormat(content, kName); },
                            tuttiInvalidArgument, kName))
    return 0;
  if (format == topo::FileFormat::kNccl) return 0;  // NCCL files: topology_nccl_fuzz
  // Without hwloc, hwloc XML is refused as unsupported (naming the file).
  const tuttiResult_t refusal = TUTTI_HAVE_HWLOC ? tuttiInvalidArgument : tuttiUnsupported;
  topo::Topology t;
  if (fuzz::refusesCleanly([&] { t = topo::loadTopologyBuffer(content, kName); }, refusal, kName))
    fuzz::exerciseTopology(t);
  return 0;
}
