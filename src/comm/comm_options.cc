#include "comm/comm_options.h"

#include "comm/trace_dump_signal.h"
#include "common/clock.h"
#include "common/env.h"
#include "common/error.h"
#include "topology/binding.h"
#include "tuning/tuning_cache.h"

namespace tutti {
namespace {
// Upper bound of TUTTI_SHM_WINDOW_BYTES (a window per rank, all mapped by every rank).
constexpr int64_t kMaxWindowBytes = int64_t{1} << 30;
constexpr int64_t kMaxTraceCalls = 65536;
}  // namespace

CommOptions commOptionsFromEnv() {
  CommOptions o;
  o.timeoutSec = timeoutFromEnv();
  o.deterministic = env::getBool("TUTTI_DETERMINISTIC");
  o.algo = env::getString("TUTTI_ALGO");
  o.transport = env::getString("TUTTI_TRANSPORT");
  o.checkCalls = env::getBool("TUTTI_CHECK_CALLS");
  o.traceCalls = env::getInt("TUTTI_TRACE_CALLS");
  o.traceFile = env::getString("TUTTI_TRACE_FILE");
  o.dumpSignal = env::getString("TUTTI_DUMP_SIGNAL");
  o.inspect = env::getBool("TUTTI_INSPECT");
  o.inspectDir = env::getString("TUTTI_INSPECT_DIR");
  o.shmWindowBytes = env::getInt("TUTTI_SHM_WINDOW_BYTES");
  o.chunkBytes = env::getInt("TUTTI_CHUNK_BYTES");
  o.spinUs = env::getInt("TUTTI_SPIN_US");
  o.spinYield = env::getString("TUTTI_SPIN_YIELD");
  o.topoReorder = env::getBool("TUTTI_TOPO_REORDER");
  o.bind = env::getString("TUTTI_BIND");
  o.selfTune = env::getBool("TUTTI_TUNE");
  o.tuningCacheDir = tuning::tuningCacheDir();
  o.tuningFileSet = !env::getString("TUTTI_TUNING_FILE").empty();
  o.tuneCandidates = env::getInt("TUTTI_TUNE_CANDIDATES");
  o.tuneExploreAfter = env::getInt("TUTTI_TUNE_EXPLORE_AFTER");
  o.tuneExploreShare = env::getDouble("TUTTI_TUNE_EXPLORE_SHARE");
  o.tuneConfirmJobs = env::getInt("TUTTI_TUNE_CONFIRM_JOBS");
  o.streamLanes = env::getInt("TUTTI_STREAM_LANES");
  o.cudaDirect = env::getBool("TUTTI_CUDA_DIRECT");
  o.cudaDirectBytes = env::getInt("TUTTI_CUDA_DIRECT_BYTES");
  o.cudaDirectMinBytes = env::getInt("TUTTI_CUDA_DIRECT_MIN_BYTES");
  o.cudaTwoShotBytes = env::getInt("TUTTI_CUDA_TWO_SHOT_BYTES");
  o.cudaStreamMemOps = env::getBool("TUTTI_CUDA_STREAM_MEMOPS");
  return o;
}

void checkCommOptions(const CommOptions& o) {
  TUTTI_CHECK_ARG(o.traceCalls >= 0 && o.traceCalls <= kMaxTraceCalls,
                  "TUTTI_TRACE_CALLS=", o.traceCalls,
                  " is out of range: use 0 (off) to 65536 recorded calls");
  TUTTI_CHECK_ARG(o.shmWindowBytes <= kMaxWindowBytes, "TUTTI_SHM_WINDOW_BYTES=", o.shmWindowBytes,
                  " is more than the limit ", kMaxWindowBytes, " (1 GiB per rank)");
  TUTTI_CHECK_ARG(o.spinYield == "auto" || o.spinYield == "0" || o.spinYield == "1",
                  "TUTTI_SPIN_YIELD=", o.spinYield, ": use auto, 0 or 1");
  topo::parseBindMode(o.bind);           // throws naming TUTTI_BIND
  TraceDumpSignal::parse(o.dumpSignal);  // throws naming TUTTI_DUMP_SIGNAL
  TUTTI_CHECK_ARG(o.cudaDirectBytes >= 4096 && o.cudaDirectBytes <= (int64_t{1} << 34),
                  "TUTTI_CUDA_DIRECT_BYTES=", o.cudaDirectBytes,
                  " is out of range: use 4096 to 17179869184");
  TUTTI_CHECK_ARG(o.cudaTwoShotBytes >= -1, "TUTTI_CUDA_TWO_SHOT_BYTES=", o.cudaTwoShotBytes,
                  ": use -1 (automatic) or a byte count");
  TUTTI_CHECK_ARG(o.cudaDirectMinBytes >= -1, "TUTTI_CUDA_DIRECT_MIN_BYTES=", o.cudaDirectMinBytes,
                  ": use -1 (automatic) or a byte count");
  TUTTI_CHECK_ARG(o.tuneCandidates >= 1 && o.tuneCandidates <= 16,
                  "TUTTI_TUNE_CANDIDATES=", o.tuneCandidates, " is out of range: use 1 to 16");
  TUTTI_CHECK_ARG(o.tuneExploreAfter >= 0 && o.tuneExploreAfter <= 1000000,
                  "TUTTI_TUNE_EXPLORE_AFTER=", o.tuneExploreAfter,
                  " is out of range: use 0 to 1000000 calls");
  TUTTI_CHECK_ARG(o.tuneExploreShare > 0 && o.tuneExploreShare <= 1,
                  "TUTTI_TUNE_EXPLORE_SHARE=", o.tuneExploreShare,
                  " is out of range: use a share above 0, at most 1");
  TUTTI_CHECK_ARG(o.tuneConfirmJobs >= 1 && o.tuneConfirmJobs <= 100,
                  "TUTTI_TUNE_CONFIRM_JOBS=", o.tuneConfirmJobs,
                  " is out of range: use 1 to 100 jobs");
  TUTTI_CHECK_ARG(o.streamLanes >= 1 && o.streamLanes <= 16, "TUTTI_STREAM_LANES=", o.streamLanes,
                  " is out of range: use 1 to 16");
}

}  // namespace tutti
