// The alpha-beta-gamma cost model shared by the tuner (automatic algorithm choice) and
// tutti-sim, and the tuning file that tutti-tune writes and TUTTI_TUNING_FILE loads.
// docs/tuning.md describes the model and the file format.
#pragma once

#include <functional>
#include <string>

namespace tutti::tuning {

struct LinkCost {
  double alpha;  // seconds per message
  double beta;   // seconds per byte
};

struct CostModel {
  LinkCost intraHost{3e-6, 1.0 / 8.0e9};   // shm: pipelined FIFO pair, ~8 GB/s
  LinkCost interHost{40e-6, 1.0 / 1.0e9};  // tcp: ~1 GB/s
  double gammaPerByte = 1.0 / 10.0e9;      // local reduction, AVX2 in cache (a copy: half)
  // A round that only waits on the shared window (direct algorithms: a store and a futex,
  // no FIFO header, no doorbell, no payload copy) costs this fraction of intraHost.alpha.
  double windowSyncFactor = 0.3;
  // Seconds per byte of reading another rank's shared window, measured by calibration (a direct
  // all-reduce: whether such a read is a hit in a shared cache or a trip through memory depends
  // on the machine). <= 0: not measured; then reads of a window whose chunks fit in 1 MiB cost
  // nothing beyond the local work, and larger ones intraHost.beta (timed_sim.cc).
  double windowReadBeta = -1;  // > 0 when measured
  // ... and the same price measured on calls of kWindowReadSmallBytes (> 0 when measured):
  // there a peer's window data is often still in a cache the reading core shares, and the
  // price of the 1 MiB call (windowReadBeta) would overprice `direct` several times
  // (windowReadPrice interpolates between the two).
  double windowReadBetaSmall = -1;
  // Inter-host links per host: the inter-host bytes that all ranks of a host move in one
  // round share them (contention), so a round's inter-host time is at least
  // host bytes / nicsPerHost * beta.
  int nicsPerHost = 1;
  // > 0: cores per host doing shm copies; with L ranks on a host the intra-host byte time is
  // multiplied by max(1, L / coresPerHost). 0: unlimited.
  int coresPerHost = 0;
  // Optional per-pair intra-host cost by global rank (topology-aware: NVLink, PCIe, SYS);
  // empty: intraHost for every pair on one host.
  std::function<LinkCost(int rankA, int rankB)> intraPair;
  std::string origin = "built-in";  // "built-in" or the tuning file it came from

  // The built-in planning values, replaced by the values of TUTTI_TUNING_FILE when it is set
  // (the file is read once per distinct path; a bad file throws tutti::Error).
  CostModel();
  static CostModel builtin();

 private:
  struct BuiltinTag {};
  explicit CostModel(BuiltinTag) {}
};

// The message sizes (bytes per rank) of the window-read prices' calibration calls.
constexpr size_t kWindowReadSmallBytes = size_t{64} << 10;
constexpr size_t kWindowReadLargeBytes = size_t{1} << 20;

// The price of reading a byte of another rank's window in a call of `callBytes` per rank:
// windowReadBetaSmall up to kWindowReadSmallBytes, windowReadBeta from kWindowReadLargeBytes,
// between them interpolated on log scales (size and price); windowReadBeta at every size when
// the small one is not measured. <= 0: not measured.
double windowReadPrice(const CostModel& m, size_t callBytes);

// Reads a tuning file ("key value" lines, '#' comments) on top of the built-in values.
// Keys: shm.alpha_us shm.gbps tcp.alpha_us tcp.gbps gamma.gbps window.read_gbps
// window.read_small_gbps nics_per_host cores_per_host.
// Throws tutti::Error naming the file, the line and the problem.
CostModel loadTuningFile(const std::string& path);
// Writes m in the same format; `comment` lines are prefixed with '#'.
void writeTuningFile(const CostModel& m, const std::string& path, const std::string& comment);
// The model's values in the tuning-file format.
std::string tuningFileText(const CostModel& m);

}  // namespace tutti::tuning
