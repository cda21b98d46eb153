// CommOptions: a communicator's settings, read once where the communicator is made (the C
// API's init reads the environment and the config; split and shrink pass their parent's on),
// so nothing below looks at the environment again. Defaults are the environment's (docs/env.md).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace tutti {

struct CommOptions {
  double timeoutSec = 60.0;             // TUTTI_TIMEOUT
  bool deterministic = false;           // TUTTI_DETERMINISTIC
  std::string algo;                     // TUTTI_ALGO syntax; empty = automatic
  const char* algoFrom = "TUTTI_ALGO";  // where algo came from (named when it is invalid)
  std::string transport;                // TUTTI_TRANSPORT: force one; empty = by priority
  std::string name;                     // config.commName
  bool checkCalls = false;              // TUTTI_CHECK_CALLS: compare every call across ranks
  int64_t traceCalls = 64;              // TUTTI_TRACE_CALLS: the flight recorder's calls
  std::string traceFile;                // TUTTI_TRACE_FILE: where a failure appends the trace
  std::string dumpSignal;               // TUTTI_DUMP_SIGNAL: the trace on a signal (off)
  bool inspect = true;                  // TUTTI_INSPECT: answer tutti-inspect
  std::string inspectDir;               // TUTTI_INSPECT_DIR: the job file's ("": default)
  int64_t shmWindowBytes = 4 << 20;     // TUTTI_SHM_WINDOW_BYTES: <= 0 = no shared window
  int64_t chunkBytes = 256 << 10;       // TUTTI_CHUNK_BYTES: direct algorithms' chunk
  int64_t spinUs = 50;                  // TUTTI_SPIN_US
  std::string spinYield = "auto";       // TUTTI_SPIN_YIELD: auto, 0 or 1
  bool topoReorder = true;              // TUTTI_TOPO_REORDER
  std::string bind = "none";            // TUTTI_BIND (the process's first communicator binds)
  bool selfTune = true;                 // TUTTI_TUNE
  std::string tuningCacheDir;           // TUTTI_TUNING_CACHE resolved: "" = no cache
  bool tuningFileSet = false;           // TUTTI_TUNING_FILE names a model (not calibrated then)
  int64_t tuneCandidates = 8;           // TUTTI_TUNE_CANDIDATES
  int64_t tuneExploreAfter = 64;        // TUTTI_TUNE_EXPLORE_AFTER
  double tuneExploreShare = 0.125;      // TUTTI_TUNE_EXPLORE_SHARE
  int64_t tuneConfirmJobs = 1;          // TUTTI_TUNE_CONFIRM_JOBS
  int64_t streamLanes = 1;              // TUTTI_STREAM_LANES (src/api/comm_lanes.h)
  bool cudaDirect = false;              // TUTTI_CUDA_DIRECT (device_allreduce.h)
  int64_t cudaDirectBytes = 32 << 20;   // TUTTI_CUDA_DIRECT_BYTES
  int64_t cudaDirectMinBytes = -1;      // TUTTI_CUDA_DIRECT_MIN_BYTES (-1: automatic)
  int64_t cudaTwoShotBytes = -1;        // TUTTI_CUDA_TWO_SHOT_BYTES (-1: automatic)
  bool cudaStreamMemOps = true;         // TUTTI_CUDA_STREAM_MEMOPS
};

// Reads every field from the environment (the env registry; TUTTI_TIMEOUT checked there).
CommOptions commOptionsFromEnv();
// Throws tuttiInvalidArgument, naming the setting, for a value out of range: the communicator
// checks before any rendezvous.
void checkCommOptions(const CommOptions& o);

}  // namespace tutti
