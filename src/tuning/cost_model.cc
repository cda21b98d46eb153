#include "tuning/cost_model.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <fstream>
#include <mutex>
#include <sstream>

#include "common/env.h"
#include "common/error.h"
#include "tuning/tuning_cache.h"

namespace tutti::tuning {

CostModel CostModel::builtin() { return CostModel(BuiltinTag{}); }

namespace {

// The model of TUTTI_TUNING_FILE, cached per path.
CostModel fromEnvironment() {
  static std::mutex mu;
  static std::string cachedPath;
  static CostModel cached = CostModel::builtin();
  std::string path = env::getString("TUTTI_TUNING_FILE");
  std::lock_guard<std::mutex> lock(mu);
  if (path != cachedPath) {
    cached = path.empty() ? CostModel::builtin() : loadTuningFile(path);
    cachedPath = path;
  }
  return cached;
}

}  // namespace

CostModel::CostModel() : CostModel(fromEnvironment()) {}

CostModel loadTuningFile(const std::string& path) {
  std::ifstream in(path);
  if (!in)
    fail(tuttiInvalidArgument, "tuning file ", path, ": cannot open (",
         std::string(std::strerror(errno)), ")");
  std::stringstream text;
  text << in.rdbuf();
  if (in.bad())
    fail(tuttiSystemError, "tuning file ", path, ": read error (",
         std::string(std::strerror(errno)), ")");
  CostModel m = parseTuningRecord(text.str(), path).model;
  m.origin = path;
  return m;
}

std::string tuningFileText(const CostModel& m) {
  std::ostringstream os;
  os.precision(6);
  os << "shm.alpha_us " << m.intraHost.alpha * 1e6 << "\n"
     << "shm.gbps " << 1e-9 / m.intraHost.beta << "\n"
     << "tcp.alpha_us " << m.interHost.alpha * 1e6 << "\n"
     << "tcp.gbps " << 1e-9 / m.interHost.beta << "\n"
     << "gamma.gbps " << 1e-9 / m.gammaPerByte << "\n"
     << "nics_per_host " << m.nicsPerHost << "\n"
     << "cores_per_host " << m.coresPerHost << "\n";
  if (m.windowReadBeta > 0) os << "window.read_gbps " << 1e-9 / m.windowReadBeta << "\n";
  if (m.windowReadBetaSmall > 0)
    os << "window.read_small_gbps " << 1e-9 / m.windowReadBetaSmall << "\n";
  return os.str();
}

double windowReadPrice(const CostModel& m, size_t callBytes) {
  const double large = m.windowReadBeta, small = m.windowReadBetaSmall;
  if (large <= 0 || small <= 0 || callBytes >= kWindowReadLargeBytes) return large;
  if (callBytes <= kWindowReadSmallBytes) return small;
  const double at = std::log(static_cast<double>(callBytes) / kWindowReadSmallBytes) /
                    std::log(static_cast<double>(kWindowReadLargeBytes) / kWindowReadSmallBytes);
  return std::exp(std::log(small) + at * (std::log(large) - std::log(small)));
}

void writeTuningFile(const CostModel& m, const std::string& path, const std::string& comment) {
  std::ofstream out(path);
  if (!out)
    fail(tuttiSystemError, "tuning file ", path, ": cannot write (",
         std::string(std::strerror(errno)), ")");
  std::istringstream lines(comment);
  for (std::string l; std::getline(lines, l);) out << "# " << l << "\n";
  out << tuningFileText(m);
  if (!out.flush())
    fail(tuttiSystemError, "tuning file ", path, ": write failed (",
         std::string(std::strerror(errno)), ")");
}

}  // namespace tutti::tuning
